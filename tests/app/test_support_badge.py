"""Issue 30 in the window: the badge says whether the cited text holds what the answer states.

A scripted model answers from a real library holding a short filing; the pane shows Supported,
Partly supported (with the unsupported sentence marked) or Cited but unsupported.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Iterator

import pytest
from pydantic_ai.messages import ModelResponse, TextPart
from qt_helpers import run_until

from app.chat_helpers import (
    BuiltLibrary,
    StreamingScript,
    build_library,
    make_chat_pane,
    open_library,
)
from haiku.rag.client import HaikuRAG
from haiku_desk.bridge import install_event_loop
from haiku_desk.views.chat_pane import UNSUPPORTED_MARK, ChatPane

FILING = (
    "# Zephyr Freight quarterly results\n\nZephyr Freight reported revenue of $2,100 million "
    "for the three months ended March 31, 2023. Net income was $310 million."
)
QUESTION = "What was Zephyr Freight's revenue in the quarter ended March 31, 2023?"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[BuiltLibrary, str]:
    built = build_library(tmp_path_factory.mktemp("support-library"))

    async def add() -> str:
        async with HaikuRAG(built.db_path, built.config) as client:
            document = await client.create_document(
                FILING, uri="notes://zephyr", title="Zephyr Freight results"
            )
            return document.id

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        filing_id = pool.submit(asyncio.run, add()).result()
    return built, filing_id


@pytest.fixture(scope="module")
def library(built, qapp) -> Iterator[object]:
    service = open_library(built[0], install_event_loop(qapp))
    yield service
    service.close()


def make_pane(qtbot, library, built, tmp_path) -> ChatPane:
    config = built[0].config.model_copy(deep=True)
    config.storage.data_dir = tmp_path / "app-data"
    pane = make_chat_pane(qtbot, library, config, size=(900, 700))
    pane.chat.set_scope([built[1]])  # the filing alone: passage [1] is its text
    return pane


def answered(qloop, qtbot, library, built, tmp_path, reply: str, script=None):
    pane = make_pane(qtbot, library, built, tmp_path)
    script = script or StreamingScript()
    script.play(ModelResponse(parts=[TextPart(reply)]))
    pane.models.use_model_instance(script.model, supports_tools=False)
    pane.input.setPlainText(QUESTION)
    pane.send_button.click()
    run_until(qloop, lambda: not pane.chat.busy and bool(pane.chat.current and pane.chat.current.turns))
    return pane, pane.turn_widgets[-1]


def test_a_number_not_in_the_cited_passage_is_not_shown_as_supported(
    qloop, qtbot, library, built, tmp_path
):
    pane, widget = answered(qloop, qtbot, library, built, tmp_path, "Revenue was $3.4 billion [1].")
    assert widget.turn.grounding == "grounded"  # what the model declared: the ledger's
    assert widget.turn.support["verdict"] == "cited-unsupported"
    assert "Cited but unsupported" in widget.badge.text() and widget.badge.isVisible()
    assert "Supported" not in widget.badge.text() and "Grounded" not in widget.badge.text()
    assert "$3.4 billion" in widget.badge.toolTip()
    assert widget.answer.toPlainText().strip().endswith(UNSUPPORTED_MARK.strip())
    # the verdict is saved with the conversation and shown again when it is reopened
    reopened = pane.chat.store.load(pane.chat.current.id)
    assert reopened.turns[-1].support_check.verdict == "cited-unsupported"


def test_a_supported_answer_stays_supported(qloop, qtbot, library, built, tmp_path):
    _, widget = answered(
        qloop, qtbot, library, built, tmp_path,
        "Revenue was $2.1 billion for the quarter ended March 31, 2023 [1].",
    )  # fmt: skip
    assert widget.turn.support["verdict"] == "supported"
    # the step line is rich text: the escaped question's apostrophe shows as one, not &#x27;
    from PySide6.QtCore import Qt

    assert "Freight&#x27;s" in widget.steps.text()  # escaped ...
    assert widget.steps.textFormat() == Qt.TextFormat.RichText  # ... and rendered
    assert "Supported" in widget.badge.text() and "unsupported" not in widget.badge.text()
    assert UNSUPPORTED_MARK.strip() not in widget.answer.toPlainText()


def test_partly_supported_says_how_many_and_marks_the_sentence(
    qloop, qtbot, library, built, tmp_path
):
    _, widget = answered(
        qloop, qtbot, library, built, tmp_path,
        "Revenue was $2,100 million [1]. Net income was $910 million [1].",
    )  # fmt: skip
    assert "Partly supported (1 sentence unsupported)" in widget.badge.text()
    shown = widget.answer.toPlainText()
    assert f"Net income was $910 million [1].{UNSUPPORTED_MARK}" in shown
    assert f"$2,100 million [1].{UNSUPPORTED_MARK}" not in shown


def test_a_model_that_cannot_call_tools_gets_the_small_profile_in_the_app(
    qloop, qtbot, library, built, tmp_path
):
    from haiku.rag.answering.fallback import FALLBACK_INSTRUCTIONS, SMALL_INSTRUCTIONS

    script = StreamingScript()
    answered(qloop, qtbot, library, built, tmp_path, "Revenue was $2,100 million [1].", script)
    assert SMALL_INSTRUCTIONS in script.seen[0].instructions
    assert FALLBACK_INSTRUCTIONS not in script.seen[0].instructions


def test_an_answer_without_citations_says_so_and_a_documents_reference_number_is_not_a_link(
    qloop, qtbot, library, built, tmp_path
):
    from haiku_desk.views.chat_pane import linked_markers

    _, widget = answered(qloop, qtbot, library, built, tmp_path, "It rained in Oslo City.")
    assert "No citations" in widget.badge.text() and "Missing" not in widget.badge.text()
    assert "cites no passage" in widget.badge.toolTip()
    assert linked_markers("TableFormer [9] is slower [1].", {1}) == (
        "TableFormer \\[9\\] is slower [[1]](cite:1)."
    )
