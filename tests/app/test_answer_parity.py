"""The same answer everywhere: the app's ChatService, ``haiku-rag ask`` and the library (and,
for its toggles, the self-test's answering step) give the same answer text, citations and
grounding for the same scripted model and toggles, because they all answer through
``haiku.rag.answering``.

(Here rather than at tests/ top level: the app side needs the app tests' qasync loop fixtures.)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from typing import Any

import pytest
from capabilities.scripting import answer, cite_top, search
from qt_helpers import run_until

from app.chat_helpers import BuiltLibrary, StreamingScript, chat_library_fixtures
from haiku.rag import answering, cli
from haiku.rag.answering import AnswerOptions
from haiku.rag.client import HaikuRAG
from haiku_desk import self_test
from haiku_desk.services.chat import ChatService
from haiku_desk.services.models import ModelsService
from haiku_desk.services.notifications import Notifications

QUESTION = "Why were the night convoys delayed?"
TOOLS_ANSWER = "Kerosene ran short, so the night convoys waited."
FALLBACK_ANSWER = "The convoys waited for kerosene [1] and fog [2]."

# name: (app toggles, CLI flags, AnswerOptions, whether the self-test answers with these toggles)
CASES: dict[str, tuple[dict[str, Any], list[str], AnswerOptions, bool]] = {
    "tools": ({}, [], AnswerOptions(), False),
    "compaction+policy": (
        {"evidence_compaction": True, "citation_policy": True},
        ["--compaction", "--citation-policy"],
        AnswerOptions(evidence_compaction=True, citation_policy=True),
        True,
    ),
    "fallback": ({"no_tools": True}, ["--fallback"], AnswerOptions(mode="fallback"), False),
}


def script_for(case: str) -> StreamingScript:
    if case == "fallback":
        return StreamingScript().play(answer(FALLBACK_ANSWER))
    if case == "compaction+policy":
        # Answers before citing: only the citation policy's redirect gets it cited, so a path the
        # policy toggle did not reach ends "missing" and the paths disagree.
        return StreamingScript().play(
            search("kerosene shortage night convoys"),
            answer(TOOLS_ANSWER),
            cite_top(2),
            answer(TOOLS_ANSWER),
        )
    return StreamingScript().play(
        search("kerosene shortage night convoys"), cite_top(2), answer(TOOLS_ANSWER)
    )


def shape(text: str, citations: Any, grounding: str) -> tuple[Any, ...]:
    return (
        text,
        [
            (c["chunk_id"], c["index"], c["document_id"], c["pages"])
            if isinstance(c, dict)
            else (c.chunk_id, c.index, c.document_id, c.page_numbers)
            for c in citations
        ],
        grounding,
    )


built, library, app_config = chat_library_fixtures("parity-library")


def off_the_app_loop(coroutine_function: Any, *args: Any) -> Any:
    """Run on a thread of its own: the app's qasync loop is this thread's running loop."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(coroutine_function(*args))).result()


def through_the_app(qloop, library, built, tmp_path, case: str) -> tuple[Any, ...]:
    toggles, _, _, _ = CASES[case]
    config = built.config.model_copy(deep=True)
    config.storage.data_dir = tmp_path / "app-data"
    notifications = Notifications()
    models = ModelsService(config, notifications)
    chat = ChatService(library, models, notifications)
    models.use_model_instance(script_for(case).model)
    chat.new_conversation()
    chat.set_toggles(**toggles)
    outcome: list[Any] = []
    question = chat.ask(QUESTION)
    assert question is not None
    question.succeeded.connect(outcome.append)
    question.failed.connect(lambda exc: outcome.append(RuntimeError(str(exc))))
    run_until(qloop, lambda: bool(outcome) and not chat.busy, timeout=120)
    (turn,) = outcome
    if isinstance(turn, Exception):
        raise turn
    return shape(turn.answer, turn.citations, turn.grounding)


def through_the_cli(built, monkeypatch, capsys, case: str) -> tuple[Any, ...]:
    _, flags, _, _ = CASES[case]
    script = script_for(case)
    monkeypatch.setattr("haiku.rag.models.get_model", lambda *a, **k: script.model)
    monkeypatch.setenv("HAIKU_RAG_STORAGE__DATA_DIR", str(built.config.storage.data_dir))
    capsys.readouterr()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        code = pool.submit(
            cli.main, ["--db", str(built.db_path), "ask", QUESTION, "--json", *flags]
        ).result()
    printed = capsys.readouterr().out
    assert code == 0, printed
    data = json.loads(printed)
    return shape(data["answer"], data["citations"], data["grounding"])


async def through_the_library(built: BuiltLibrary, case: str) -> tuple[Any, ...]:
    _, _, options, _ = CASES[case]
    async with HaikuRAG(built.db_path, built.config, read_only=True) as client:
        done = await answering.answer(client, QUESTION, None, options, model=script_for(case).model)
    return shape(done.text, done.citations, done.grounding)


async def through_the_self_test(built: BuiltLibrary, case: str) -> tuple[Any, ...]:
    async with HaikuRAG(built.db_path, built.config, read_only=True) as client:
        done = await self_test.ask(client, QUESTION, answering.Conversation(), script_for(case).model)
    return shape(done.text, done.citations, done.grounding)


@pytest.mark.parametrize("case", list(CASES))
def test_the_app_the_command_and_the_library_give_the_same_answer(
    qloop, library, built, tmp_path, monkeypatch, capsys, case
):
    library_answer = off_the_app_loop(through_the_library, built, case)
    text, citations, grounding = library_answer
    assert grounding == "grounded" and citations  # a real answer, not two empty ones agreeing
    assert through_the_cli(built, monkeypatch, capsys, case) == library_answer
    assert through_the_app(qloop, library, built, tmp_path, case) == library_answer
    if CASES[case][3]:
        assert self_test.answer_options() == CASES[case][2]
        assert off_the_app_loop(through_the_self_test, built, case) == library_answer
