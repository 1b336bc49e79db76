"""The chat pane driven as a user would: type, send, watch the answer stream in, click chips."""

from __future__ import annotations

import asyncio
import json

import pytest
from capabilities.scripting import answer, cite_top, search
from PySide6.QtCore import QUrl
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QLineEdit, QWidget
from pytestqt.qtbot import QtBot
from qt_helpers import run_until

from app.chat_helpers import StreamingScript, chat_library_fixtures, make_chat_pane
from haiku.rag.capabilities.compaction import COMPACTION_CAPABILITY_ID
from haiku.rag.capabilities.policy import POLICY_CAPABILITY_ID
from haiku.rag.capabilities.rag import RAG_CAPABILITY_ID
from haiku.rag.citations import Citation
from haiku_desk.services.conversations import Turn
from haiku_desk.services.notifications import Notifications
from haiku_desk.views.chat_pane import ChatPane, TurnWidget

QUESTION = "Why were the night convoys delayed?"
ANSWER = "A kerosene shortage delayed the night convoys."


built, library, app_config = chat_library_fixtures("pane-library")


def make_pane(qtbot: QtBot, library, app_config) -> ChatPane:
    return make_chat_pane(qtbot, library, app_config, size=(900, 700))


def cited_script() -> StreamingScript:
    return StreamingScript().play(search("kerosene otters"), cite_top(2), answer(ANSWER))


def ask(qloop, pane: ChatPane, question: str) -> None:
    before = len(pane.chat.current.turns) if pane.chat.current else 0
    pane.input.setPlainText(question)
    pane.send_button.click()
    run_until(
        qloop,
        lambda: (
            not pane.chat.busy
            and pane.chat.current is not None
            and len(pane.chat.current.turns) > before
        ),
    )


def test_a_cited_answer_streams_into_the_pane_with_chips_sources_and_a_badge(
    qloop, qtbot, library, app_config, built
):
    pane = make_pane(qtbot, library, app_config)
    pane.models.use_model_instance(cited_script().model)
    shown: list[str] = []  # what the answer view showed while the answer was streaming
    steps = []

    def started(question):
        question.text_delta.connect(
            lambda text: shown.append(pane.turn_widgets[-1].answer.toPlainText())
        )
        question.step_added.connect(lambda s: steps.append(pane.turn_widgets[-1].steps.text()))

    pane.chat.question_started.connect(started)

    ask(qloop, pane, QUESTION)

    (widget,) = pane.turn_widgets
    assert len(shown) > 2 and shown[-1] != ANSWER  # it grew as the deltas came in
    assert "Searching “kerosene otters”" in steps[0]
    assert widget.answer.toPlainText().strip() == ANSWER
    assert "Supported" in widget.badge.text() and widget.badge.isVisible()  # nothing to doubt
    citations = widget.turn.citations
    assert [c.index for c in citations] == [1, 2]
    assert [chip.text() for chip in widget.chips] == ["1", "2"]
    assert all(chip.isVisible() for chip in widget.chips)
    assert widget.chips[0].accessibleName().startswith("Citation 1: ")
    assert len(widget.source_cards) == 2
    assert citations[0].document_title in widget.source_cards[0].text()
    assert any(c.document_id == built.report_id for c in citations)
    assert pane.token_meter.text().endswith(" tokens")  # compaction is off: nothing saved
    assert pane.input.toPlainText() == ""

    activated = []
    pane.citation_activated.connect(activated.append)
    qtbot.mouseClick(widget.chips[1], qtbot_button())
    assert activated == [citations[1]]
    widget.source_cards[0].activate()
    assert activated[-1] == citations[0]


def qtbot_button():
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton


def test_the_toolbar_toggles_change_the_capabilities_of_the_next_run(
    qloop, qtbot, library, app_config
):
    pane = make_pane(qtbot, library, app_config)
    pane.models.use_model_instance(StreamingScript().play(answer("One.")).model)
    ask(qloop, pane, "First?")
    assert pane.chat.last_capability_ids == (RAG_CAPABILITY_ID,)

    pane.compaction_toggle.click()
    pane.policy_toggle.click()
    assert pane.chat.current.toggles.evidence_compaction
    pane.models.use_model_instance(StreamingScript().play(answer("Two.")).model)
    ask(qloop, pane, "Second?")
    agent_ids = set(pane.chat.last_capability_ids)
    assert {COMPACTION_CAPABILITY_ID, POLICY_CAPABILITY_ID} <= agent_ids

    pane.policy_toggle.click()
    pane.models.use_model_instance(StreamingScript().play(answer("Three.")).model)
    ask(qloop, pane, "Third?")
    agent_ids = set(pane.chat.last_capability_ids)
    assert COMPACTION_CAPABILITY_ID in agent_ids and POLICY_CAPABILITY_ID not in agent_ids
    names = {w.accessibleName() for w in pane.findChildren(QWidget)}
    assert {"Evidence compaction", "Citation policy", "Analysis mode"} <= names


def test_a_reopened_conversation_in_a_new_pane_keeps_history_state_and_toggles(
    qloop, qtbot, library, app_config
):
    pane = make_pane(qtbot, library, app_config)
    pane.new_chat()
    pane.compaction_toggle.click()
    pane.models.use_model_instance(
        StreamingScript().play(search("kerosene shortage"), cite_top(1), answer(ANSWER)).model
    )
    ask(qloop, pane, QUESTION)
    record = pane.chat.current
    saved_citations = record.turns[0].citations

    again = make_pane(qtbot, library, app_config)  # a new service and pane: a new window
    assert again.chat.current is None and again.conversation_list.count() == 1
    item = again.conversation_list.item(0)
    assert item.text() == QUESTION
    again.conversation_list.itemClicked.emit(item)
    assert again.chat.current.id == record.id
    assert again.compaction_toggle.isChecked() and not again.policy_toggle.isChecked()
    (widget,) = again.turn_widgets
    assert widget.turn.citations == saved_citations and len(widget.chips) == 1
    assert again.chat.current.conversation == record.conversation
    assert again.chat.current.model_messages() == record.model_messages()

    script = StreamingScript().play(
        search("lantern otters glass eels"), cite_top(1), answer("Eels.")
    )
    again.models.use_model_instance(script.model)
    ask(qloop, again, "What do lantern otters hunt?")
    new = again.turn_widgets[-1].turn.citations[0]
    assert "glass eels" in new.content and new.index == 2  # indexes run on from the saved state
    assert "Evidence cited earlier in this conversation" in script.seen[0].text()


def test_search_only_answers_with_citations_and_says_how_to_connect(
    qloop, qtbot, library, app_config
):
    pane = make_pane(qtbot, library, app_config)
    assert "search only" in pane.model_label.text()
    ask(qloop, pane, "kerosene shortage night convoys")
    (widget,) = pane.turn_widgets
    assert widget.chips and widget.source_cards
    assert "Settings → Models…" in widget.answer.toPlainText()
    assert "Search results" in widget.badge.text() and "Grounded" not in widget.badge.text()
    commands = []
    pane.command_requested.connect(commands.append)
    widget.answer.anchorClicked.emit(QUrl("haiku:models"))  # the help is a working link
    assert commands == ["models"]
    assert "haiku:models" in widget.answer.toHtml()
    activated = []
    pane.citation_activated.connect(activated.append)
    widget.answer.anchorClicked.emit(QUrl("cite:1"))  # an inline [1] marker
    assert activated == [widget.turn.citations[0]]


def test_conversations_new_rename_search_delete_and_shortcuts(qloop, qtbot, library, app_config):
    pane = make_pane(qtbot, library, app_config)
    assert pane.new_chat_action.shortcut() == QKeySequence(QKeySequence.StandardKey.New)
    assert pane.stop_action.shortcut() == QKeySequence("Esc")
    assert QKeySequence("Ctrl+Return") in pane.send_action.shortcuts()

    pane.new_chat_action.trigger()
    first = pane.chat.current.id
    pane.rename_current("Convoy questions")
    pane.new_chat_action.trigger()
    pane.rename_current("Otter notes")
    assert pane.conversation_list.count() == 2
    pane.conversation_search.setText("convoy")
    assert [
        pane.conversation_list.item(i).text() for i in range(pane.conversation_list.count())
    ] == ["Convoy questions"]
    pane.conversation_search.setText("")
    pane.delete_current(confirm=False)
    assert pane.conversation_list.count() == 1 and pane.chat.current is None
    assert pane.conversation_list.item(0).data(0x0100) == first


def test_stop_keeps_the_partial_answer_marked_stopped_with_ask_again(
    qloop, qtbot, library, app_config
):
    pane = make_pane(qtbot, library, app_config)
    script = StreamingScript(gate=asyncio.Event()).play(answer("This will never finish."))
    pane.models.use_model_instance(script.model)
    pane.input.setPlainText("Slow question")
    pane.send_button.click()
    run_until(qloop, lambda: bool(pane.turn_widgets) and pane.turn_widgets[-1].text)
    assert pane.stop_button.isEnabled() and not pane.send_button.isEnabled()
    pane.stop_button.click()
    run_until(qloop, lambda: not pane.chat.busy)

    (widget,) = pane.turn_widgets
    assert widget.answer.toPlainText().strip() == "This"  # the partial answer stays
    assert "Stopped" in widget.status.text() and widget.status.isVisible()
    assert not widget.badge.isVisible()  # not "Grounded", nor any verdict on a partial answer
    assert widget.ask_again_button.isVisible() and widget.ask_again_button.isEnabled()
    (turn,) = pane.chat.current.turns
    assert turn.stopped and turn.answer == "This "
    assert pane.chat.current.conversation is None  # not part of the model's history
    assert pane.send_button.isEnabled()

    # one click asks it again, in the same conversation
    pane.models.use_model_instance(StreamingScript().play(answer("Finished now.")).model)
    qtbot.mouseClick(widget.ask_again_button, qtbot_button())
    run_until(qloop, lambda: not pane.chat.busy and len(pane.chat.current.turns) == 2)
    again = pane.turn_widgets[-1]
    assert again.turn.question == "Slow question" and again.turn.answer == "Finished now."
    assert not again.ask_again_button.isVisible()
    assert pane.chat.current.model_messages()  # this one is in the history

    # reopened, the stopped answer still reads as stopped
    pane.chat.open_conversation(pane.chat.current.id)
    pane._show_record(pane.chat.current)
    first = pane.turn_widgets[0]
    assert first.turn.stopped and "Stopped" in first.status.text()
    assert not first.ask_again_button.isHidden()


def test_export_writes_markdown_and_page_images(qloop, qtbot, library, app_config, tmp_path):
    pane = make_pane(qtbot, library, app_config)
    pane.models.use_model_instance(cited_script().model)
    ask(qloop, pane, QUESTION)
    operation = pane.export_to(str(tmp_path / "export"))
    run_until(qloop, lambda: not operation.running)
    assert operation.error is None
    text = operation.result.read_text()
    assert ANSWER in text and "![Source 2, page" in text  # source 1 is a Markdown note
    assert list((tmp_path / "export").glob("*-pages/*.png"))


def test_analysis_mode_shows_the_executed_code_and_its_output(qloop, qtbot, library, app_config):
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    pane = make_pane(qtbot, library, app_config)
    pane.analysis_toggle.click()
    assert pane.analysis_panel.isVisible() and pane.chat.toggles.analysis
    code = "print(6 * 7)"
    script = StreamingScript().play(
        ModelResponse(parts=[ToolCallPart("analysis_execute_code", {"code": code})]),
        answer("The answer is 42."),
    )
    pane.models.use_model_instance(script.model)
    ask(qloop, pane, "What is six times seven?")
    assert pane.chat.last_capability_ids[-1] == "haiku-rag-analysis"
    assert "analysis_execute_code" in script.seen[0].tool_names
    assert "Running analysis…" in pane.turn_widgets[-1].steps.text()
    (step,) = pane.analysis_panel.steps
    assert step.detail == code and "42" in step.output
    assert pane.analysis_panel.header.text() == "Analysis (1 run)"
    pane.analysis_panel.header.click()
    assert pane.analysis_panel.expanded and code in pane.analysis_panel.log.toPlainText()


def history(record) -> str:
    """The answering module's conversation of ``record`` (history, state, numbering)."""
    return json.dumps(record.conversation, sort_keys=True, default=str)


def answered_turns(record) -> int:
    return sum(1 for t in record.turns if not t.stopped)


def stop_at_first_step(pane: ChatPane) -> None:
    """Stop the next question the moment its first step (a search) begins."""

    def started(question):
        question.step_added.connect(lambda step: pane.stop_button.click())
        pane.chat.question_started.disconnect(started)

    pane.chat.question_started.connect(started)


def test_stop_then_ask_again_repeatedly_and_stop_during_a_search(qloop, qtbot, library, app_config):
    pane = make_pane(qtbot, library, app_config)
    notifications = pane.services.notifications
    pane.models.use_model_instance(cited_script().model)
    ask(qloop, pane, QUESTION)
    record = pane.chat.current

    for cycle in range(2):
        kept = history(record)
        script = StreamingScript(gate=asyncio.Event()).play(answer("This will never finish."))
        pane.models.use_model_instance(script.model)
        pane.input.setPlainText(f"Slow question {cycle}")
        pane.send_button.click()
        run_until(qloop, lambda: pane.turn_widgets[-1].text)
        pane.stop_button.click()
        run_until(qloop, lambda: not pane.chat.busy)
        stopped = pane.turn_widgets[-1]
        assert "Stopped" in stopped.status.text() and stopped.status.isVisible()
        assert pane.send_button.isEnabled() and not pane.stop_button.isEnabled()
        assert history(record) == kept
        assert answered_turns(record) == 1 + cycle and record.turns[-1].stopped

        pane.models.use_model_instance(cited_script().model)
        ask(qloop, pane, QUESTION)
        assert pane.turn_widgets[-1].chips and answered_turns(record) == 2 + cycle

    # Stop while the agent runs rag_search (the moment its step appears)
    before = (history(record), answered_turns(record))
    pane.models.use_model_instance(cited_script().model)
    stop_at_first_step(pane)
    pane.input.setPlainText("Search and stop")
    pane.send_button.click()
    run_until(qloop, lambda: not pane.chat.busy)
    widget = pane.turn_widgets[-1]
    assert "Searching" in widget.steps.text() and "Stopped" in widget.status.text()
    assert (history(record), answered_turns(record)) == before
    assert pane.send_button.isEnabled()
    assert [n.message for n in notifications.history if n.level == "error"] == []


def test_rag_and_analysis_citations_get_different_numbers_in_one_answer(
    qloop, qtbot, library, app_config, built
):
    pytest.importorskip("haiku.rag.capabilities.analysis")
    pane = make_pane(qtbot, library, app_config)
    pane.analysis_toggle.click()
    script = StreamingScript().play(
        search("kerosene shortage night convoys"),
        cite_top(1),
        search("lantern otters glass eels", tool="analysis_search"),
        cite_top(1, search_tool="analysis_search", tool="analysis_cite"),
        answer("Kerosene ran short [1], and the otters hunt eels."),
    )
    pane.models.use_model_instance(script.model)
    ask(qloop, pane, QUESTION)

    (widget,) = pane.turn_widgets
    rag, analysis = widget.turn.citations
    assert rag.document_id == built.report_id and analysis.document_id == built.notes_id
    state = pane.chat.current.conversation["state"]  # each capability numbered its own 1
    assert state["rag"]["citation_index"][rag.chunk_id]["index"] == 1
    assert state["analysis"]["citation_index"][analysis.chunk_id]["index"] == 1
    assert [chip.text() for chip in widget.chips] == ["1", "2"]
    assert widget.chips[1].accessibleName().startswith("Citation 2: Lantern Otters")
    assert [card.text()[:3] for card in widget.source_cards] == [
        "[1]",
        "[2]",
    ]

    activated = []
    pane.citation_activated.connect(activated.append)
    qtbot.mouseClick(widget.chips[0], qtbot_button())
    qtbot.mouseClick(widget.chips[1], qtbot_button())
    assert [c.chunk_id for c in activated] == [rag.chunk_id, analysis.chunk_id]
    assert [c.index for c in activated] == [1, 2]
    widget.source_cards[1].activate()
    widget.answer.anchorClicked.emit(QUrl("cite:1"))  # the inline [1] marker
    assert [c.chunk_id for c in activated[2:]] == [analysis.chunk_id, rag.chunk_id]


# --- how sources read ------------------------------------------------------------------------

LONG_TITLE = (
    "Night-Time Drip Irrigation Reduces Evaporative Loss Without a Yield Penalty in "
    "Semi-Arid Almond Orchards"
)
MERGED_PASSAGE = (
    "3 Results Night irrigation consistently lost less water to evaporation. Kernel yield did "
    "not differ between schedules in any season."
)


def merged_citation(index: int, matched_text: str) -> Citation:
    """A citation of one chunk of a passage context expansion merged from several chunks; its
    first heading repeats the title (with other spacing and case), as a paper's does."""
    return Citation(
        index=index,
        chunk_id=f"chunk-{index}",
        chunk_ids=["chunk-1", "chunk-2"],
        document_id="document",
        document_uri="file:///papers/night-irrigation-almonds.pdf",
        document_title=LONG_TITLE,
        content=MERGED_PASSAGE,
        matched_text=matched_text,
        headings=["  night-time drip irrigation reduces evaporative loss without a yield penalty "
                  "in semi-arid almond   orchards", "3 Results"],
        page_numbers=[1, 2],
    )


def test_sources_show_the_title_once_elided_then_the_heading_path_and_each_ones_own_snippet(
    qtbot: QtBot,
):
    citations = [
        merged_citation(1, "Night irrigation consistently lost less water to evaporation."),
        merged_citation(2, "Kernel yield did not differ between schedules in any season."),
    ]
    turn = Turn(question="Does night irrigation save water?", answer="Yes [1], at no cost [2].",
                citations=citations, grounding="grounded")
    widget = TurnWidget(turn)
    qtbot.addWidget(widget)
    widget.resize(420, 700)
    widget.show()
    qtbot.waitExposed(widget)

    first, second = widget.source_cards
    for card, citation in zip((first, second), citations, strict=True):
        text = card.text()
        assert text.count("Night-Time") == 1  # the heading equal to the title is dropped
        assert "3 Results — pp. 1–2" in card.place.text()
        assert citation.matched_text in card.snippet_label.text()  # the cited chunk's own text
        # The title is elided to one line; the whole title is in the tooltip.
        title = card.title_label
        assert "…" in card.shown_title() and card.number.text() == str(citation.index)
        assert title.fontMetrics().horizontalAdvance(title.text()) <= title.contentsRect().width()
        assert LONG_TITLE in card.toolTip() and LONG_TITLE in card.accessibleName()
    assert "Kernel yield" not in first.text() and "consistently" not in second.text()
    assert widget.chips[0].toolTip() == f"{LONG_TITLE} — 3 Results — pp. 1–2"


def test_long_conversation_titles_end_in_an_ellipsis_with_the_whole_title_as_tooltip(
    qloop, qtbot, library, app_config
):
    pane = make_pane(qtbot, library, app_config)
    pane.new_chat()
    title = "Does irrigating almond orchards at night reduce water loss, and does it cost yield?"
    pane.rename_current(title)
    item = pane.conversation_list.item(0)
    assert item.text() == title and item.toolTip().startswith(title)
    assert pane.conversation_list.horizontalScrollBar().maximum() == 0  # never scrolls sideways


def test_the_analysis_panel_is_hidden_at_start_and_counts_runs_only_once_there_are_some(
    qloop, qtbot, library, app_config
):
    pane = make_pane(qtbot, library, app_config)
    assert pane.chat.current is None and not pane.analysis_panel.isVisible()
    assert pane.analysis_panel.header.text() == "Analysis"
    pane.analysis_toggle.click()
    assert pane.analysis_panel.isVisible() and pane.analysis_panel.header.text() == "Analysis"


def test_stop_during_a_no_tools_answer_restores_the_conversation_and_the_idle_pane(
    qloop, qtbot, library, app_config
):
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    pane = make_pane(qtbot, library, app_config)
    pane.models.use_model_instance(
        StreamingScript().play(answer("The kerosene shortage [1].")).model, supports_tools=False
    )
    ask(qloop, pane, QUESTION)
    record = pane.chat.current
    assert record.turns[0].mode == "fallback" and record.turns[0].citations
    before = (history(record), answered_turns(record))

    reading = asyncio.Event()  # the model has the passages
    never = asyncio.Event()  # ... and answers only when Stop has ended the run

    async def blocked(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        reading.set()
        await never.wait()
        return ModelResponse(parts=[TextPart("Too late [1].")])

    pane.models.use_model_instance(FunctionModel(blocked), supports_tools=False)
    cancelled: list[str] = []
    pane.chat.question_started.connect(
        lambda question: question.cancelled.connect(
            lambda: cancelled.append(question.conversation_id)
        )
    )
    pane.input.setPlainText("What do lantern otters hunt?")
    pane.send_button.click()
    run_until(qloop, reading.is_set)
    assert pane.chat.busy and pane.stop_button.isEnabled()
    pane.stop_button.click()
    run_until(qloop, lambda: bool(cancelled) and not pane.chat.busy)

    assert cancelled == [record.id]
    assert (history(record), answered_turns(record)) == before
    saved = json.loads(pane.chat.store.path_of(record.id).read_text())
    assert saved["conversation"] == record.conversation
    stopped = pane.turn_widgets[-1]
    assert "Stopped" in stopped.status.text() and stopped.status.isVisible()
    assert pane.send_button.isEnabled() and not pane.stop_button.isEnabled()
    errors = [n.message for n in pane.services.notifications.history if n.level == "error"]
    assert errors == []

    # Stop as the search begins (before the model is asked): the same
    stop_at_first_step(pane)
    pane.input.setPlainText("Stop while searching")
    pane.send_button.click()
    run_until(qloop, lambda: len(cancelled) == 2 and not pane.chat.busy)
    assert (history(record), answered_turns(record)) == before
    assert "Stopped" in pane.turn_widgets[-1].status.text() and pane.send_button.isEnabled()

    # and the conversation goes on
    pane.models.use_model_instance(
        StreamingScript().play(answer("Glass eels [1].")).model, supports_tools=False
    )
    ask(qloop, pane, "What do lantern otters hunt?")
    assert answered_turns(record) == 2
    assert pane.turn_widgets[-1].turn.answer.startswith("Glass eels")


def test_two_citations_of_one_widened_section_show_the_part_each_claim_rests_on(qtbot: QtBot):
    # No matched_text: each chunk was widened to the same section on its own, not merged.
    section = (
        "3 Results Night irrigation consistently lost less water to evaporation, 9.8 % against "
        "14.3 % at midday, about 95 mm per season. " + "The soil probes logged every hour. " * 12
        + "Kernel yield did not differ between schedules in any season: 2,410 against "
        "2,385 kg/ha, and kernel weight and doubles were the same."
    )
    citations = [
        merged_citation(1, "").model_copy(update={"content": section, "matched_text": None}),
        merged_citation(2, "").model_copy(update={"content": section, "matched_text": None}),
    ]
    turn = Turn(
        question="Does night irrigation save water, and does it cost yield?",
        answer="Night irrigation lost less water to evaporation [1]. Kernel yield did not "
        "differ between the schedules [2].",
        citations=citations,
        grounding="grounded",
    )
    widget = TurnWidget(turn)
    qtbot.addWidget(widget)
    first, second = (label.snippet for label in widget.source_cards)
    assert first != second
    assert "evaporation" in first and "Kernel yield" in second


def test_the_citation_panel_header_elides_the_title_and_shows_the_chunks_own_text(
    qtbot: QtBot, library
):
    from haiku_desk.services.pages import PagesService
    from haiku_desk.views.citation_panel import CitationPanel

    pages = PagesService(library, Notifications())
    panel = CitationPanel(pages)
    panel.open_in_system_viewer = False
    qtbot.addWidget(panel)
    panel.resize(300, 700)
    panel.show()
    qtbot.waitExposed(panel)
    own = "Kernel yield did not differ between schedules in any season."
    citation = merged_citation(2, own)
    try:
        panel.show_citation(citation)
        assert panel.title.is_elided() and panel.title.text().endswith(" — pp. 1–2")
        assert panel.title.toolTip() == f"[2] {LONG_TITLE} — pp. 1–2"
        shown = panel.title.fontMetrics().horizontalAdvance(panel.title.text())
        assert shown <= panel.title.contentsRect().width()
        assert panel.headings.text() == "3 Results"  # the heading equal to the title is dropped
        assert panel.snippet.text() == own
    finally:
        pages.close()


# --- controls that say what they are ---------------------------------------------------------


def test_toggles_are_check_boxes_that_keep_their_kind_and_state_at_the_minimum_width(
    qloop, qtbot, library, app_config
):
    from PySide6.QtWidgets import QCheckBox, QToolBar

    pane = make_pane(qtbot, library, app_config)
    pane.policy_toggle.click()
    pane.no_tools_toggle.click()
    wide = {box.text(): box.isChecked() for box in pane.toggles}
    main = pane.splitter.widget(1)
    for width in (900, pane.minimumSizeHint().width()):
        pane.resize(width, 700)
        qtbot.waitUntil(lambda w=width: pane.width() == w)
        qloop.run_until_complete(asyncio.sleep(0.05))
        assert pane.findChildren(QToolBar) == []  # no toolbar, so no "»" overflow menu
        for box in pane.toggles:
            assert isinstance(box, QCheckBox) and box.isVisible()
            where = box.geometry().translated(pane.toggle_row.mapTo(main, box.pos()) - box.pos())
            assert 0 <= where.left() and where.right() <= main.width()  # whole, in the pane
            assert box.width() >= box.sizeHint().width()  # its text is not cut
        assert {box.text(): box.isChecked() for box in pane.toggles} == wide
    assert wide == {
        "Evidence compaction": False,
        "Citation policy": True,
        "Analysis mode": False,
        "Answer without tools": True,
    }


def test_a_toggle_on_the_empty_first_window_creates_no_conversation_and_is_remembered(
    qloop, qtbot, library, app_config
):
    pane = make_pane(qtbot, library, app_config)
    assert pane.chat.current is None
    pane.compaction_toggle.click()
    pane.policy_toggle.click()
    assert pane.chat.current is None and pane.conversation_list.count() == 0
    assert list(pane.chat.store.directory.glob("*.json")) == []
    assert pane.compaction_toggle.isChecked() and pane.policy_toggle.isChecked()

    pane.new_chat()  # a new conversation starts from the last choice
    assert pane.chat.current.toggles.evidence_compaction
    assert pane.chat.current.toggles.citation_policy
    pane.policy_toggle.click()
    assert not pane.chat.current.toggles.citation_policy

    later = make_pane(qtbot, library, app_config)  # the choice outlives the window
    assert later.compaction_toggle.isChecked() and not later.policy_toggle.isChecked()
    later.new_chat()
    assert later.chat.current.toggles.evidence_compaction
    assert not later.chat.current.toggles.citation_policy


def test_tab_in_the_question_box_moves_the_focus(qloop, qtbot, library, app_config):
    from PySide6.QtCore import Qt

    pane = make_pane(qtbot, library, app_config)
    pane.activateWindow()
    pane.input.setFocus()
    qtbot.waitUntil(pane.input.hasFocus)
    qtbot.keyClick(pane.input, Qt.Key.Key_Tab)
    assert pane.input.toPlainText() == "" and not pane.input.hasFocus()


# --- the answer flow -------------------------------------------------------------------------


def test_search_only_answers_have_their_own_badge_and_continue_the_numbering(
    qloop, qtbot, library, app_config
):
    pane = make_pane(qtbot, library, app_config)
    ask(qloop, pane, "kerosene shortage night convoys")
    ask(qloop, pane, "lantern otters glass eels")
    first, second = pane.turn_widgets
    for widget in (first, second):
        assert widget.turn.basis == "search-results"
        assert "Search results" in widget.badge.text() and "Grounded" not in widget.badge.text()
        assert "not be relevant" in widget.badge.toolTip()
    numbers = {c.chunk_id: c.index for c in first.turn.citations}
    assert sorted(numbers.values()) == list(range(1, len(numbers) + 1))
    for citation in second.turn.citations:  # a passage keeps its number; new ones continue
        if citation.chunk_id in numbers:
            assert citation.index == numbers[citation.chunk_id]
        else:
            assert citation.index > len(numbers)
    assert any(c.index > len(numbers) for c in second.turn.citations)
    assert [chip.text() for chip in second.chips] == [str(c.index) for c in second.turn.citations]
    shown = second.answer.toPlainText()
    assert all(f"[{c.index}]" in shown for c in second.turn.citations)


def test_an_analysis_answer_that_computed_and_cited_nothing_says_so(
    qloop, qtbot, library, app_config
):
    pytest.importorskip("haiku.rag.capabilities.analysis")
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    pane = make_pane(qtbot, library, app_config)
    pane.analysis_toggle.click()
    script = StreamingScript().play(
        ModelResponse(parts=[ToolCallPart("analysis_execute_code", {"code": "print(6 * 7)"})]),
        answer("The answer is 42."),
    )
    pane.models.use_model_instance(script.model)
    ask(qloop, pane, "What is six times seven?")
    (widget,) = pane.turn_widgets
    assert widget.turn.citations == [] and widget.turn.basis == "computed"
    assert "Computed" in widget.badge.text() and "Ungrounded" not in widget.badge.text()
    assert "code run over your library" in widget.badge.toolTip()


def test_an_earlier_answer_exports_from_its_context_menu(
    qloop, qtbot, library, app_config, tmp_path, monkeypatch
):
    from PySide6.QtWidgets import QFileDialog

    pane = make_pane(qtbot, library, app_config)
    pane.models.use_model_instance(cited_script().model)
    ask(qloop, pane, QUESTION)
    pane.models.use_model_instance(StreamingScript().play(answer("Hello again.")).model)
    ask(qloop, pane, "And then?")
    first = pane.turn_widgets[0]

    folder = tmp_path / "first"
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(folder))
    menu = first.context_menu()
    (export,) = [a for a in menu.actions() if a.text() == "Export this answer…"]
    assert export.isEnabled()
    export.trigger()
    operation = pane.export_operation
    run_until(qloop, lambda: not operation.running)
    assert operation.error is None
    text = operation.result.read_text()
    assert ANSWER in text and QUESTION in text
    assert "Hello again." not in text and "And then?" not in text  # only that answer
    assert list(folder.glob("*-pages/*.png"))


def test_the_view_follows_a_finished_answer_to_its_sources(qloop, qtbot, library, app_config):
    pane = make_pane(qtbot, library, app_config)
    pane.resize(700, 420)  # a short window: an answer with sources does not fit
    long_answer = " ".join(["The kerosene shortage delayed the night convoys."] * 30)
    for _ in range(2):
        pane.models.use_model_instance(
            StreamingScript().play(search("kerosene otters"), cite_top(2), answer(long_answer)).model
        )
        ask(qloop, pane, QUESTION)
    widget = pane.turn_widgets[-1]
    viewport = pane.scroll.viewport()

    def sources_in_view() -> bool:
        last = widget.source_cards[-1]
        top = last.mapTo(viewport, last.rect().topLeft()).y()
        bottom = last.mapTo(viewport, last.rect().bottomLeft()).y()
        return last.isVisible() and top >= 0 and bottom <= viewport.height()

    qtbot.waitUntil(sources_in_view)
    assert pane.scroll.verticalScrollBar().value() > 0


def test_the_token_meter_shows_what_compaction_saved_and_a_redirect_shows_in_the_steps(
    qloop, qtbot, library, app_config
):
    pane = make_pane(qtbot, library, app_config)
    pane.compaction_toggle.click()
    pane.policy_toggle.click()
    # two searches, one cited: later, the uncited one goes on the wire as a short receipt
    pane.models.use_model_instance(
        StreamingScript()
        .play(search("kerosene shortage night convoys"), search("convoys"), cite_top(1))
        .play(answer(ANSWER))
        .model
    )
    ask(qloop, pane, QUESTION)
    first = pane.turn_widgets[-1].turn
    assert first.saved_tokens == 0  # nothing earlier to compact yet
    assert "saved by compaction" not in pane.token_meter.text()

    # the next question: the earlier search's passages go on the wire compacted; the model
    # answers without declaring its sources, and the policy asks it to
    script = StreamingScript().play(
        search("lantern otters glass eels"), answer("Glass eels."), cite_top(1), answer("Glass eels.")
    )
    pane.models.use_model_instance(script.model)
    ask(qloop, pane, "What do lantern otters hunt?")
    widget = pane.turn_widgets[-1]
    turn = widget.turn
    assert turn.saved_tokens and turn.saved_tokens > 0 and turn.input_tokens
    text = pane.token_meter.text()
    assert text.endswith(" saved by compaction") and " tokens, " in text
    saved = text.split(", ")[1].split(" ")[0]
    assert saved in (str(turn.saved_tokens), f"{turn.saved_tokens / 1000:.1f}k".replace(".0k", "k"))
    steps = widget.steps.text()
    assert "Asked the model to declare the sources of its answer" in steps
    assert "Compacted earlier evidence" in steps
    assert turn.grounding == "grounded"


def test_the_rename_box_holds_a_question_length_title_whole(qloop, qtbot, library, app_config):
    """Tester 17:13: the rename dialog was ~200 px wide (its field showed ~25 characters, its
    window title clipped 'Renam…-desk') and the default title itself ended in a baked-in '…'
    (a question cut at 60 characters). A conversation is named by its whole question, and the
    box is wide enough to read it."""
    pane = make_pane(qtbot, library, app_config)
    pane.models.use_model_instance(cited_script().model)
    question = "How far did the Rhone Glacier retreat between 1990 and 2020, and what drove it?"
    ask(qloop, pane, question)
    assert pane.chat.current.title == question  # whole, no "…"
    pane.rename_button.click()
    dialog = pane.rename_dialog
    assert dialog.isVisible() and dialog.textValue() == question
    (field,) = dialog.findChildren(QLineEdit)
    qtbot.waitUntil(lambda: field.width() > 0)
    assert field.width() >= field.fontMetrics().horizontalAdvance(question)  # read whole
    dialog.setTextValue("Glacier retreat")
    dialog.accept()
    assert pane.chat.current.title == "Glacier retreat"
    assert pane.conversation_list.item(0).text() == "Glacier retreat"
