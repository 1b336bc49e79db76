"""A fill stopped (cancelled, or the program quit mid-cell) keeps the cells done; filling again
after a relaunch answers only the rest."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from extraction.conftest import COLUMNS, Library, open_client
from extraction.scripted import Extractor
from haiku.rag import extraction as X
from haiku.rag.errors import OperationCancelled
from haiku.rag.operations import CancelToken


async def test_cancel_then_relaunch_fills_only_the_rest(library: Library, tmp_path: Path) -> None:
    token = CancelToken()
    first = Extractor()

    def stop_after_six(event: X.FillEvent) -> None:
        if isinstance(event, X.CellFilled) and event.done == 6:
            token.cancel()

    async with open_client(library, tmp_path) as client:
        table = await X.create_table(client, "Review", COLUMNS, document_ids=library.document_ids)
        with pytest.raises(OperationCancelled):
            await X.fill_table(
                client, table.id, X.FillOptions(mode="fallback", model=first.fallback_model),
                on_event=stop_after_six, cancel=token,
            )  # fmt: skip
        assert first.requests == 6

    # relaunch: a new client over the same library
    async with open_client(library, tmp_path) as client:
        stored = await X.load_table(client, "review")
        assert stored.filled == 6
        before = dict(stored.cells)
        second = Extractor()
        events: list[X.FillEvent] = []
        filled = await X.fill_table(
            client, table.id, X.FillOptions(mode="fallback", model=second.fallback_model), on_event=events.append
        )
        started = [e for e in events if isinstance(e, X.CellStarted)]
        assert len(started) == 34 == second.requests
        assert {(e.document_id, e.column_id) for e in started}.isdisjoint(
            {(c.document_id, c.column_id) for c in before.values()}
        )
        assert filled.filled == 40
        for key, cell in before.items():
            assert filled.cells[key] == cell  # the first six untouched


async def test_quit_while_a_cell_is_answered_loses_only_that_cell(library: Library, tmp_path: Path) -> None:
    inner = Extractor()
    reached = asyncio.Event()
    calls = 0

    async def blocking(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        if calls == 3:  # the third cell: hold it until the task is cancelled (a quit)
            reached.set()
            await asyncio.Event().wait()
        return inner._fallback(messages, info)

    async with open_client(library, tmp_path) as client:
        table = await X.create_table(client, "Review", COLUMNS[:2], document_ids=library.document_ids[:3])
        task = asyncio.create_task(
            X.fill_table(client, table.id, X.FillOptions(mode="fallback", model=FunctionModel(blocking)))
        )
        await reached.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (await X.load_table(client, table.id)).filled == 2

    async with open_client(library, tmp_path) as client:
        resumed = Extractor()
        filled = await X.fill_table(client, table.id, X.FillOptions(mode="fallback", model=resumed.fallback_model))
        assert resumed.requests == 4 and filled.filled == 6
        assert all(c.status == "grounded" for c in filled.cells.values())
