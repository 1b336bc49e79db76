"""Filling a table: cell after cell, each stored as soon as it is answered.

``fill`` is an async stream of events (``FillStarted``, then ``CellStarted``/``CellFilled`` per
cell, last ``FillFinished``), so a host shows cells as they arrive and counts them (done /
total). Without ``recompute`` only the cells not yet filled are answered: a fill stopped by a
quit or a cancel continues where it stopped. With ``recompute`` the selected cells (one cell,
one row, one column) are answered again, and nothing else is touched.

``cancel`` (``haiku.rag.operations.CancelToken``) is checked before every cell; the cells done
so far are stored and ``OperationCancelled`` is raised. A host that also cancels the task
(the app's ``Operation`` does) loses only the cell in flight, which was not written.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from haiku.rag.extraction import storage
from haiku.rag.extraction.cells import FillOptions, answer_cell
from haiku.rag.extraction.models import Cell, ExtractionTable
from haiku.rag.operations import (
    CancelToken,
    Progress,
    ProgressCallback,
    Stage,
    check_cancelled,
    report,
)

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG


@dataclass(frozen=True)
class FillStarted:
    table_id: str
    total: int  # the cells this fill answers
    already: int  # selected cells already filled and left as they are
    name: str = ""  # the table's name


@dataclass(frozen=True)
class CellStarted:
    document_id: str
    column_id: str
    index: int  # 0-based, among this fill's cells
    total: int
    column_name: str = ""


@dataclass(frozen=True)
class CellFilled:
    cell: Cell
    done: int
    total: int
    stored: bool = True  # False: the row or column went, the column changed, or a hand edit
    # was made meanwhile (the cell was not written)


@dataclass(frozen=True)
class FillFinished:
    table_id: str
    done: int
    total: int


FillEvent = FillStarted | CellStarted | CellFilled | FillFinished


def _to_answer(
    table: ExtractionTable,
    rows: Sequence[str] | None,
    columns: Sequence[str] | None,
    recompute: bool,
    keep_edited: bool,
) -> list[tuple[str, str]]:
    rows_list = None if rows is None else list(rows)
    columns_list = None if columns is None else list(columns)
    if not recompute:
        return table.missing(rows_list, columns_list)
    chosen = table.selection(rows_list, columns_list)
    if keep_edited:
        chosen = [(r, c) for r, c in chosen if (cell := table.cell(r, c)) is None or cell.status != "edited"]
    return chosen


async def fill(
    client: HaikuRAG,
    table: str,
    options: FillOptions | None = None,
    *,
    rows: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    recompute: bool = False,
    keep_edited: bool = True,
    cancel: CancelToken | None = None,
) -> AsyncIterator[FillEvent]:
    """Answer the table's missing cells (or, with ``recompute``, the selected ones) as events."""
    if isinstance(rows, str) or isinstance(columns, str):
        raise TypeError("rows and columns are lists of ids, not one string")
    options = options or FillOptions()
    loaded: ExtractionTable = await client._store_thread(storage.load_table, client.store, table)
    todo = _to_answer(loaded, rows, columns, recompute, keep_edited)
    selected = len(loaded.selection(None if rows is None else list(rows), None if columns is None else list(columns)))
    total = len(todo)
    yield FillStarted(loaded.id, total, selected - total, loaded.name)
    done = 0
    for index, (document_id, column_id) in enumerate(todo):
        check_cancelled(cancel)
        column = loaded.column(column_id)
        yield CellStarted(document_id, column_id, index, total, column.name)
        cell = await answer_cell(client, document_id, column, options)
        stored: bool = await client._store_thread(
            storage.put_cell, client.store, loaded.id, cell,
            over_edited=not keep_edited, question=column.prompt,
        )  # fmt: skip
        done += 1
        yield CellFilled(cell, done, total, stored)
    # one settings-table write per cell leaves a small fragment each: compacted when due, as
    # an ingest pass does (nothing happens while too few have piled up)
    await client.maintain_indexes()
    yield FillFinished(loaded.id, done, total)


async def fill_table(
    client: HaikuRAG,
    table: str,
    options: FillOptions | None = None,
    *,
    on_event: Callable[[FillEvent], None] | None = None,
    progress: ProgressCallback | None = None,
    rows: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    recompute: bool = False,
    keep_edited: bool = True,
    cancel: CancelToken | None = None,
) -> ExtractionTable:
    """``fill`` to the end; the table as stored afterwards. ``on_event`` sees each event;
    ``progress`` gets ``Progress(Stage.EXTRACTING, table name, cells done, cells total, column
    name)`` before each cell and once at the end."""
    table_id, name = table, table
    async for event in fill(
        client, table, options, rows=rows, columns=columns, recompute=recompute,
        keep_edited=keep_edited, cancel=cancel,
    ):  # fmt: skip
        if isinstance(event, FillStarted):
            table_id, name = event.table_id, event.name
        elif isinstance(event, CellStarted):
            report(progress, Progress(Stage.EXTRACTING, name, event.index, event.total, event.column_name))
        elif isinstance(event, FillFinished):
            report(progress, Progress(Stage.EXTRACTING, name, event.done, event.total))
        if on_event is not None:
            on_event(event)
    loaded: ExtractionTable = await client._store_thread(storage.load_table, client.store, table_id)
    return loaded
