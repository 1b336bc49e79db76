"""Answers that read well and failures that help (issue 34): Markdown answers that always wrap,
the calm state before the first words, source cards, the model-unreachable turn with its
passages one click away, and one banner per problem, gone once it is solved."""

from __future__ import annotations

import socket

from capabilities.scripting import answer, cite_top, search
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from pytestqt.qtbot import QtBot
from qt_helpers import run_until

from app.chat_helpers import (
    StreamingScript,
    chat_library_fixtures,
    make_chat_pane,
    passage_citation,
)
from haiku.rag.citations import Citation
from haiku_desk.services.conversations import Turn
from haiku_desk.services.models import ChatModelChoice
from haiku_desk.services.notifications import Notifications
from haiku_desk.views.chat_pane import ChatPane, TurnWidget
from haiku_desk.views.notification_area import NotificationArea

QUESTION = "Why were the night convoys delayed?"
LONG_URL = "https://example.org/" + "/".join(["averyveryverylongpathsegment"] * 12)


built, library, app_config = chat_library_fixtures("answers-library")


def make_pane(qtbot: QtBot, library, app_config) -> tuple[ChatPane, NotificationArea]:
    pane = make_chat_pane(qtbot, library, app_config, size=(700, 700))
    area = NotificationArea(pane.services.notifications)
    qtbot.addWidget(area)
    return pane, area


def ask(qloop, pane: ChatPane, question: str) -> None:
    pane.input.setPlainText(question)
    pane.send_button.click()
    run_until(qloop, lambda: not pane.chat.busy, timeout=120)


def closed_port() -> int:
    with socket.socket() as probe:  # a port nothing listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_markdown_answers_wrap_long_lines_and_code_and_never_widen_the_transcript(
    qloop, qtbot, library, app_config
):
    pane, _ = make_pane(qtbot, library, app_config)
    text = (
        "Two findings:\n\n- the convoys were late [1]\n- *fuel* ran short\n\n"
        f"```\nconvoy_delay = '{'x' * 240}'\n```\n\nSee {LONG_URL} for the log [1]."
    )
    turn = Turn(question=QUESTION, answer=text, citations=[passage_citation(1, "The convoys were late.")],
                grounding="grounded")
    widget = pane._add_turn_widget(turn)
    qtbot.waitExposed(widget)
    qtbot.waitUntil(lambda: widget.answer.width() > 0)
    document = widget.answer.document()

    lists = {QTextCursor(document.findBlock(i)).currentList() for i in range(document.characterCount())}
    assert [lst.count() for lst in lists if lst is not None] == [2]  # a list of two items
    code = document.find("convoy_delay").block()
    assert code.blockFormat().background().style() != Qt.BrushStyle.NoBrush  # a code block
    assert code.layout().lineCount() > 1  # …that wraps
    # Everything wraps: the answer needs no more than its view, the turn no more than the pane.
    assert document.idealWidth() <= widget.answer.viewport().width()
    qtbot.waitUntil(lambda: pane.transcript.width() <= pane.scroll.viewport().width())
    assert widget.answer.horizontalScrollBar().maximum() == 0


def test_before_the_first_words_the_turn_says_thinking_then_searching_never_an_empty_box(
    qloop, qtbot, library, app_config
):
    pane, _ = make_pane(qtbot, library, app_config)
    pane.models.use_model_instance(
        StreamingScript().play(search("kerosene otters"), cite_top(1), answer("Kerosene ran short [1].")).model
    )
    seen: list[tuple[str, bool, bool]] = []  # (status line, status shown, answer box shown)

    def look() -> None:
        widget = pane.turn_widgets[-1]
        seen.append((widget.pending.text(), widget.pending.isVisible(), widget.answer.isVisible()))

    def started(question) -> None:
        look()  # the pane shows the turn first (connected before this)
        question.step_added.connect(lambda _step: look())

    pane.chat.question_started.connect(started)
    ask(qloop, pane, QUESTION)

    assert seen[0] == ("Thinking…", True, False)
    assert ("Searching…", True, False) in seen[1:]
    (widget,) = pane.turn_widgets
    assert not widget.pending.isVisible() and widget.answer.isVisible()
    assert widget.answer.toPlainText().strip() == "Kerosene ran short [1]."
    question = widget.question
    assert question.height() >= question.heightForWidth(question.width())  # the question whole


def test_sources_are_cards_reached_with_tab_and_opened_with_enter_or_a_click(
    qloop, qtbot, library, app_config
):
    pane, _ = make_pane(qtbot, library, app_config)
    pane.models.use_model_instance(
        StreamingScript().play(search("kerosene otters"), cite_top(2), answer("Kerosene ran short [1] [2].")).model
    )
    ask(qloop, pane, QUESTION)
    (widget,) = pane.turn_widgets
    first, second = widget.source_cards
    assert first.objectName() == "sourceCard" and first.property("card") is True
    assert first.number.text() == "1" and first.title_label.text()
    assert first.snippet_label.text() and second.snippet_label.text()
    assert any(" — p" in card.place.text() for card in (first, second))  # the PDF's page
    assert first.accessibleName().startswith("Source 1: ")
    opened: list[Citation] = []
    pane.citation_activated.connect(opened.append)

    first.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(first.hasFocus)
    qtbot.keyClick(pane.window(), Qt.Key.Key_Tab)  # the next card, from the keyboard
    qtbot.waitUntil(second.hasFocus)
    qtbot.keyClick(second, Qt.Key.Key_Return)
    qtbot.mouseClick(first, Qt.MouseButton.LeftButton)
    assert [c.index for c in opened] == [2, 1]


def test_a_document_s_own_reference_number_in_search_results_is_not_a_link(qtbot):
    citations = [passage_citation(i, f"Passage {i} about table structure.") for i in range(1, 11)]
    citations[0] = passage_citation(1, "TableFormer [9] predicts the table structure.")
    lines = ["The best passages from your library:", ""]
    lines += [f"{c.index}. **Table Structure Recognition — p. {c.index}**: {c.content} [{c.index}]"
              for c in citations]
    turn = Turn(question="How is table structure predicted?", answer="\n".join(lines),
                citations=citations, grounding="grounded", rests_on="search-results", mode="search-only")
    widget = TurnWidget(turn)
    qtbot.addWidget(widget)
    widget.show()

    shown = widget.answer.toHtml()
    assert "cite:1" in shown and "cite:10" in shown  # each passage's own number is a link
    assert shown.count("cite:9") == 1  # only passage 9's: the document's "[9]" stays text
    assert "TableFormer [9]" in widget.answer.toPlainText()


def test_an_unreachable_model_offers_the_passages_one_banner_and_success_clears_it(
    qloop, qtbot, library, app_config, monkeypatch
):
    """The real OpenAI-compatible path to a closed port on loopback (requests allowed for this
    test only: the socket guard keeps them on 127.0.0.1)."""
    import pydantic_ai.models

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    pane, area = make_pane(qtbot, library, app_config)
    port = closed_port()
    pane.models.choose(
        ChatModelChoice(provider="openai-compatible", name="stub-model", base_url=f"http://127.0.0.1:{port}/v1")
    )

    ask(qloop, pane, QUESTION)
    ask(qloop, pane, "And the mountain pass?")

    first, failed = pane.turn_widgets
    for widget in (first, failed):
        assert widget.failure.isVisible() and widget.failed
        assert widget.failure_message.text() == (
            "The model isn't reachable — show the matching passages instead?"
        )
        assert f"127.0.0.1:{port}" in widget.failure_detail.text()
        assert widget.passages_button.isVisible() and widget.passages_button.isEnabled()
    assert len(area.visible_notices) == 1  # two failures, one problem: one banner
    assert "cannot reach the chat model" in area.visible_notices[0].notice.message

    # both kept in the conversation with why (they were lost at the next start)
    assert [t.basis for t in pane.chat.current.turns] == ["not-answered", "not-answered"]
    qtbot.mouseClick(failed.passages_button, Qt.MouseButton.LeftButton)  # one click
    run_until(qloop, lambda: not pane.chat.busy and pane.chat.current.turns[-1].failure is None, timeout=120)
    # the passages take the failed question's place in the conversation too
    assert [t.basis for t in pane.chat.current.turns] == ["not-answered", "search-results"]
    passages = pane.turn_widgets[-1]
    assert failed not in pane.turn_widgets  # the passages take the failed turn's place
    assert passages.turn.question == "And the mountain pass?" and passages.turn.mode == "search-only"
    assert passages.turn.citations and passages.source_cards and passages.chips
    assert "Search results" in passages.badge.text()
    assert "isn't reachable" in passages.answer.toPlainText()  # why these are passages
    # one full stop after the link's words (it ended "Settings → Models…." : four dots)
    assert passages.answer.toPlainText().rstrip().endswith("Settings → Models.")
    assert "…." not in passages.answer.toPlainText()
    assert len(area.visible_notices) == 1  # the model is still unreachable

    pane.models.use_model_instance(  # the model is back
        StreamingScript().play(search("kerosene otters"), cite_top(1), answer("Kerosene ran short [1].")).model
    )
    qtbot.mouseClick(first.retry_button, Qt.MouseButton.LeftButton)  # the first one, asked again
    run_until(qloop, lambda: not pane.chat.busy and pane.chat.current.turns[-1].mode == "tools", timeout=120)
    assert [t.basis for t in pane.chat.current.turns] == ["search-results", "grounded"]
    assert first not in pane.turn_widgets
    answered = pane.turn_widgets[-1]
    assert (answered.turn.question, answered.turn.mode) == (QUESTION, "tools")
    assert answered.answer.toPlainText().startswith("Kerosene ran short") and answered.turn.citations
    assert area.visible_notices == []  # solved: its banner is gone


def test_a_search_only_passage_holding_a_table_shows_a_table_not_pipes_or_words(qtbot):
    from haiku.rag.citations import snippet
    from haiku_desk.views.markdown_tables import cell_text, tables

    table = "Table 2: Convoys by month\n\n| Month | Convoys | Delay (days) |\n|-|-|-|\n| May | 12 | 0 |\n| June | 4 | 21 |"
    cited = passage_citation(1, table)
    prose = passage_citation(2, "The kerosene shortage delayed the night convoys.")
    lines = ["The best passages from your library:", ""]
    lines += [f"{c.index}. **Table Structure Recognition — p. {c.index}**: {snippet(c.content)} [{c.index}]"
              for c in (cited, prose)]
    turn = Turn(question="How many convoys ran in June?", answer="\n".join(lines) + "\n\n*No model.*",
                citations=[cited, prose], grounding="grounded", rests_on="search-results", mode="search-only")
    widget = TurnWidget(turn)
    qtbot.addWidget(widget)
    widget.resize(600, 600)
    widget.show()

    document = widget.answer.document()
    (shown,) = tables(document)
    assert (shown.rows(), shown.columns()) == (3, 3)
    assert [cell_text(shown, 2, c) for c in range(3)] == ["June", "4", "21"]
    text = widget.answer.toPlainText()
    assert "|" not in text and "Month: June" not in text  # neither pipes nor the words
    assert "Table 2: Convoys by month" in text and "kerosene shortage" in text
    assert text.rstrip().endswith("No model.")  # why these are passages, after them
    assert "cite:1" in widget.answer.toHtml() and "cite:2" in widget.answer.toHtml()


def test_in_a_narrowed_pane_each_part_of_a_turn_sits_below_the_last(qloop, qtbot, library, app_config):
    """A long verdict badge and an answer that wraps to many lines: narrowing the pane must give
    the turn the height its parts need (the chips and sources were drawn over the answer)."""
    from haiku.rag.answering.support import SentenceCheck, SupportCheck

    pane, _ = make_pane(qtbot, library, app_config)
    pane.resize(1000, 700)
    flagged = SentenceCheck(text="x", start=0, end=1, markers=[1], claims=["3 weeks"], missing=["3 weeks"],
                            status="unsupported")
    support = SupportCheck(verdict="partly-supported", sentences=[flagged] * 3).model_dump(mode="json")
    text = (
        "The convoys were late [1].\n\n- fuel ran short for three weeks [1]\n- the pass was closed\n\n"
        "| Month | Convoys |\n|-|-|\n| May | 12 |\n\n```\nprint('late convoys')\n```\n\nSource: " + LONG_URL
    )
    turn = Turn(question=QUESTION, answer=text, citations=[passage_citation(1, "The convoys were late.")],
                grounding="grounded", support=support)
    widget = pane._add_turn_widget(turn)
    after = pane._add_turn_widget(Turn(question="And then?", answer="Nothing more."))
    assert "Partly supported" in widget.badge.text()

    def stacked() -> bool:
        answer, chips, card = widget.answer.geometry(), widget.chip_bar.geometry(), widget.source_cards[0].geometry()
        return (
            chips.top() > answer.bottom()
            and card.top() > chips.bottom()
            and widget.height() >= widget.heightForWidth(widget.width())
            and after.geometry().top() > widget.geometry().bottom()
        )

    qtbot.waitUntil(stacked)
    pane.resize(480, 700)  # the chat column about 280 px wide: the answer wraps to many lines
    qtbot.waitUntil(lambda: widget.answer.width() < 320)
    qtbot.waitUntil(stacked)
    assert pane.transcript.width() <= pane.scroll.viewport().width()


def test_a_banner_with_a_long_unbroken_error_wraps_inside_a_narrow_window(qtbot):
    notifications = Notifications()
    area = NotificationArea(notifications)
    qtbot.addWidget(area)
    area.resize(420, 200)
    area.show()
    notifications.error(f"The question could not be answered: cannot reach {LONG_URL}")

    (notice,) = area.visible_notices
    assert area.minimumSizeHint().width() <= 420  # it never widens the window
    label = notice.label
    qtbot.waitUntil(lambda: 0 < label.width() <= 420)
    assert label.heightForWidth(label.width()) > 3 * label.fontMetrics().height()  # wrapped
    assert label.text().replace("\u200b", "").endswith(LONG_URL)  # all of it, as written
    assert LONG_URL in label.toolTip()


def test_the_same_problem_posted_twice_at_once_shows_one_banner(qtbot):
    notifications = Notifications()
    area = NotificationArea(notifications)
    qtbot.addWidget(area)
    notifications.error("The model failed", key="chat-model-failed")
    notifications.error("The model failed again", key="chat-model-failed")  # before any repaint
    notifications.error("Disk full")
    notifications.error("Disk full")
    assert [w.notice.message for w in area.visible_notices] == ["The model failed again", "Disk full"]
    notifications.withdraw("chat-model-failed")
    assert [w.notice.message for w in area.visible_notices] == ["Disk full"]


def test_text_the_model_took_back_leaves_the_waiting_line_not_an_empty_box(qtbot):
    widget = TurnWidget(Turn(question=QUESTION, answer=""))
    qtbot.addWidget(widget)
    widget.show()
    widget.append("Let me search first")  # streamed, then reset: it was not the answer
    qtbot.waitUntil(widget.answer.isVisible)
    widget.reset_text()
    qtbot.waitUntil(lambda: not widget.answer.isVisible())
    assert widget.pending.isVisible() and widget.pending.text() == "Thinking…"


def test_an_exported_chat_keeps_the_failed_question_has_no_in_app_links_and_says_where(
    qloop, qtbot, library, app_config, monkeypatch, tmp_path
):
    """Export › Export chat…: every asked question is in the file (a failed one as "Not
    answered: <why>"), a haiku: link becomes its words, and the window says where it went (a
    notice that stays until closed)."""
    import pydantic_ai.models

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    pane, area = make_pane(qtbot, library, app_config)
    assert "search only" in pane.model_label.text()
    ask(qloop, pane, QUESTION)  # no model: the best passages, with a haiku:models link
    assert "haiku:models" in pane.chat.current.turns[0].answer
    pane.models.choose(
        ChatModelChoice(provider="openai-compatible", name="stub-model", base_url=f"http://127.0.0.1:{closed_port()}/v1")
    )
    ask(qloop, pane, "And the mountain pass?")
    assert pane.turn_widgets[-1].failed and len(pane.chat.current.turns) == 2  # kept with why
    for widget in list(area.visible_notices):
        area.dismiss(widget)

    operation = pane.export_to(str(tmp_path / "export"))
    assert operation is not None
    run_until(qloop, lambda: not operation.running)
    assert operation.error is None
    text = operation.result.read_text()
    assert f"## {QUESTION}" in text
    assert "## And the mountain pass?" in text
    assert "Not answered: The model isn't reachable" in text
    assert text.index(QUESTION) < text.index("And the mountain pass?")
    assert "haiku:" not in text and "Settings → Models…" in text
    (shown,) = [w for w in area.visible_notices if "Exported to" in w.notice.message]
    assert str(operation.result) in shown.notice.message
    assert shown.dismiss_timer is None  # it stays until closed: the path can be read and copied

    again = pane.export_to(str(tmp_path / "export2"))  # a second export: its notice replaces it
    assert again is not None
    run_until(qloop, lambda: not again.running)
    (shown,) = [w for w in area.visible_notices if "Exported to" in w.notice.message]
    assert str(again.result) in shown.notice.message


def test_a_chat_whose_only_question_failed_can_be_exported_with_why(
    qloop, qtbot, library, app_config, monkeypatch, tmp_path
):
    """Export › Export chat… stayed disabled for a conversation whose questions all failed
    (nothing saved yet): it is enabled once a question was asked, and the file lists the
    question as not answered, with why. Export last answer… waits for an answer."""
    import pydantic_ai.models

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    pane, _ = make_pane(qtbot, library, app_config)
    pane.models.choose(
        ChatModelChoice(provider="openai-compatible", name="stub-model", base_url=f"http://127.0.0.1:{closed_port()}/v1")
    )
    assert not pane.export_conversation_action.isEnabled() and not pane.export_button.isEnabled()
    ask(qloop, pane, "And the mountain pass?")
    assert pane.turn_widgets[-1].failed
    assert [t.basis for t in pane.chat.current.turns] == ["not-answered"]

    assert pane.export_conversation_action.isEnabled()
    assert pane.export_button.isEnabled()
    assert not pane.export_answer_action.isEnabled()  # there is no answer to export
    assert pane.export_to(str(tmp_path / "answer"), whole_conversation=False) is None

    operation = pane.export_to(str(tmp_path / "export"))
    assert operation is not None
    run_until(qloop, lambda: not operation.running)
    assert operation.error is None
    text = operation.result.read_text()
    assert "## And the mountain pass?" in text
    assert "Not answered: The model isn't reachable" in text


def test_a_question_not_answered_is_kept_with_its_offer_after_a_restart(
    qloop, qtbot, library, app_config, monkeypatch
):
    """Tester 16:39: after Quit and relaunch the turns that ended 'The model isn't reachable —
    show the matching passages instead?' were gone from the transcript (they were never saved),
    and so from the export. They are kept in the conversation file with why and the offer, and
    shown so when it is read again; not part of the model's history."""
    import pydantic_ai.models

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    pane, _ = make_pane(qtbot, library, app_config)
    pane.models.choose(
        ChatModelChoice(provider="openai-compatible", name="stub-model", base_url=f"http://127.0.0.1:{closed_port()}/v1")
    )
    ask(qloop, pane, "What benchmarks evaluated TraceMonkey?")
    record = pane.chat.current
    assert pane.turn_widgets[-1].failed

    saved = pane.chat.store.load(record.id)  # what the next start reads
    (turn,) = saved.turns
    assert turn.question == "What benchmarks evaluated TraceMonkey?" and turn.basis == "not-answered"
    assert turn.failure.message == "The model isn't reachable — show the matching passages instead?"
    assert saved.model_messages() == []  # the model's history holds nothing of it
    assert saved.title == "What benchmarks evaluated TraceMonkey?"

    pane.chat.new_conversation()  # away, and back to it: the transcript drawn from the record
    pane.chat.open_conversation(record.id)
    (widget,) = pane.turn_widgets
    qtbot.waitUntil(widget.isVisible)
    assert widget.turn.question == "What benchmarks evaluated TraceMonkey?"
    assert widget.failed and widget.failure.isVisible()
    assert widget.failure_message.text() == "The model isn't reachable — show the matching passages instead?"
    assert widget.passages_button.isVisible() and widget.retry_button.isVisible()
    assert widget.badge.isHidden()


def test_a_saved_answers_badge_keeps_its_words_on_one_line(qtbot, themed):
    """Tester 16:39: after a relaunch every 'Search results' badge wrapped onto two lines in a
    wide pill (one line when the answer had just come). A turn drawn from a saved conversation
    (made before it is shown) measures its badge as the label draws it."""
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from haiku_desk.views import theme

    for scheme in ("light", "dark"):
        theme.apply_theme(themed, scheme)
        holder = QWidget()
        layout = QVBoxLayout(holder)
        turn = Turn(question="Which benchmarks?", answer="The best passages: …", rests_on="search-results", mode="search-only")
        widget = TurnWidget(turn, holder)
        layout.addWidget(widget)
        qtbot.addWidget(holder)
        holder.resize(500, 400)
        holder.show()
        qtbot.waitExposed(holder)
        badge = widget.badge
        assert badge.text() == "Search results"
        one_line = badge.heightForWidth(10_000)
        qtbot.waitUntil(lambda b=badge: b.width() > 0)
        assert badge.heightForWidth(badge.width()) == one_line, (scheme, badge.size())
        assert badge.height() == one_line


def test_files_that_could_not_be_added_share_one_banner_that_says_what_to_do(qtbot):
    """Tester 20:01: two broken files stacked two red banners (~70 px of a 640 px window) that
    stayed until closed one by one, neither saying what to do."""
    from haiku_desk.services.notifications import FAILED_FILES

    notifications = Notifications()
    area = NotificationArea(notifications)
    qtbot.addWidget(area)
    notifications.error("broken.pdf: the PDF has no pages", key="file:///b.pdf", group=FAILED_FILES)
    notifications.error("empty.pdf: the file is empty", key="file:///e.pdf", group=FAILED_FILES)
    notifications.error("Disk full")  # another problem keeps its own banner
    group, disk = area.visible_notices
    text = group.label.text().replace("\u200b", "")
    assert text.startswith("2 files could not be added") and "broken.pdf" in text and "empty.pdf" in text
    assert "Re-ingest" in text and "Delete" in text
    notifications.withdraw("file:///b.pdf")  # that row was dealt with: the other still stands
    assert [w.label.text().replace("\u200b", "") for w in area.visible_notices][0] == "empty.pdf: the file is empty"
    notifications.withdraw("file:///e.pdf")
    assert area.visible_notices == [disk]
