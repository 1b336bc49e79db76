"""The chat pane from the keyboard and with document text's stray Markdown (issue 34, tester):
Tab reaches the latest answer's citation chips and source cards, Return opens one; emphasis
markers a PDF's text carries never show raw nor make the rest of an answer bold."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.chat_helpers import chat_library_fixtures, make_chat_pane, passage_citation
from haiku.rag.citations import Citation
from haiku_desk.services.conversations import Turn
from haiku_desk.views.chat_pane import ChatPane, TurnWidget

built, library, app_config = chat_library_fixtures("keyboard-library")


@pytest.fixture
def pane(qtbot: QtBot, library, app_config) -> ChatPane:
    pane = make_chat_pane(qtbot, library, app_config, size=(700, 500))
    qtbot.waitExposed(pane)
    return pane


def bold(document, text: str) -> bool:
    cursor = document.find(text)
    assert not cursor.isNull(), text
    return cursor.charFormat().fontWeight() >= QFont.Weight.Bold


def answered(index: int, count: int = 2, answer: str | None = None) -> Turn:
    citations = [passage_citation(n, f"Passage {n} of answer {index}.", page=n + 1) for n in range(1, count + 1)]
    text = answer or f"Answer {index}: " + " ".join(f"claim {n} [{n}]." for n in range(1, count + 1))
    return Turn(question=f"Question {index}?", answer=text, citations=citations, grounding="grounded")


def test_tab_from_the_question_box_reaches_the_latest_answer_s_chip_and_return_opens_it(qtbot, pane):
    for index in range(3):  # two earlier answers: Tab passes them by
        pane._add_turn_widget(answered(index))
    latest = pane.turn_widgets[-1]
    opened: list[Citation] = []
    pane.citation_activated.connect(opened.append)
    pane.input.setFocus(Qt.FocusReason.OtherFocusReason)
    qtbot.waitUntil(pane.input.hasFocus)

    chips_reached = []
    for _ in range(40):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        focused = QApplication.focusWidget()
        if focused in [chip for turn in pane.turn_widgets for chip in turn.chips]:
            chips_reached.append(focused)
            break
    assert chips_reached == [latest.chips[0]]  # the latest answer's chip 1, no older one first
    chip = latest.chips[0]
    assert chip.accessibleName() == "Citation 1: Table Structure Recognition — 2 Related work — p. 2"
    assert chip.property("citationChip") is True  # the stylesheet's chip, with its focus ring
    qtbot.keyClick(chip, Qt.Key.Key_Return)
    assert [(c.index, c.content) for c in opened] == [(1, "Passage 1 of answer 2.")]
    qtbot.keyClick(chip, Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is latest.chips[1]
    qtbot.keyClick(latest.chips[1], Qt.Key.Key_Space)
    qtbot.keyClick(latest.chips[1], Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is latest.source_cards[0]
    qtbot.keyClick(latest.source_cards[0], Qt.Key.Key_Return)
    assert [c.index for c in opened] == [1, 2, 1]


def test_shift_tab_from_the_question_box_reaches_the_last_source_card_scrolled_into_view(qtbot, pane):
    long_answer = " ".join(["The convoys waited for kerosene at the depot [1]."] * 30)
    for index in range(4):
        pane._add_turn_widget(answered(index, 3, long_answer))
    latest = pane.turn_widgets[-1]
    bar = pane.scroll.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0)
    bar.triggerAction(bar.SliderAction.SliderToMinimum)  # the reader scrolled to the top
    qtbot.waitUntil(lambda: bar.value() == 0)
    card = latest.source_cards[-1]
    viewport = pane.scroll.viewport()
    assert card.mapTo(viewport, card.rect().topLeft()).y() > viewport.height()  # out of view

    pane.input.setFocus(Qt.FocusReason.OtherFocusReason)
    qtbot.waitUntil(pane.input.hasFocus)
    qtbot.keyClick(pane.input, Qt.Key.Key_Tab, Qt.KeyboardModifier.ShiftModifier)
    assert QApplication.focusWidget() is card

    def in_view() -> bool:
        top = card.mapTo(viewport, card.rect().topLeft()).y()
        return top >= 0 and top + card.height() <= viewport.height()

    qtbot.waitUntil(in_view)
    opened: list[Citation] = []
    pane.citation_activated.connect(opened.append)
    qtbot.keyClick(card, Qt.Key.Key_Space)
    assert [c.index for c in opened] == [3]


STRAY = "**Multiple (multiple types of cells)"


def test_a_stray_emphasis_marker_in_an_answer_shows_no_asterisks_and_bolds_nothing_after_it(qtbot):
    text = f"The table's first cell reads {STRAY} and the rest of the answer follows [1]. **Note**: one more."
    widget = TurnWidget(Turn(question="What does the table list?", answer=text,
                             citations=[passage_citation(1, STRAY + " | 12", page=2)], grounding="grounded"))
    qtbot.addWidget(widget)
    widget.resize(600, 400)
    widget.show()

    document = widget.answer.document()
    shown = document.toPlainText()
    assert "*" not in shown
    assert "Multiple (multiple types of cells) and the rest of the answer follows" in shown
    assert not bold(document, "the rest of the answer")
    assert bold(document, "Note")  # a balanced pair still renders as emphasis


def test_search_only_passages_drop_stray_markers_in_prose_and_table_cells(qtbot):
    from haiku.rag.citations import snippet

    table = f"Table 1: Cell types\n\n| Type | Count |\n|-|-|\n| {STRAY} | 12 |\n| **Single** | 4 |"
    cited = passage_citation(1, table, page=2)
    prose = passage_citation(2, f"{STRAY} were found in the second table, with **balanced** words.", page=3)
    lines = ["The best passages from your library:", ""]
    lines += [f"{c.index}. **Table Structure Recognition — p. {c.index}**: {snippet(c.content)} [{c.index}]"
              for c in (cited, prose)]  # the library's words for them
    turn = Turn(question="Which cell types were found?", answer="\n".join(lines), citations=[cited, prose],
                grounding="grounded", rests_on="search-results", mode="search-only")
    widget = TurnWidget(turn)
    qtbot.addWidget(widget)
    widget.resize(600, 600)
    widget.show()

    document = widget.answer.document()
    shown = document.toPlainText()
    assert "*" not in shown
    assert "Multiple (multiple types of cells)" in shown and "were found in the second table" in shown
    assert not bold(document, "were found in the second table")
    assert bold(document, "balanced") and bold(document, "Single")


def test_a_source_card_shows_no_stray_markers_and_its_headings_on_lines_of_their_own(qtbot):
    content = (
        "Field study of loop compilation\nMethod\nWe measured hot loops in twelve programs, "
        f"{STRAY} included.\nFindings\nTraced loops ran 4.2 times faster."
    )
    cited = Citation(index=1, document_id="doc-2", chunk_id="chunk-9", document_uri="file:///notes/loops.docx",
                     document_title="Field study of loop compilation", page_numbers=[],
                     headings=["Field study of loop compilation", "Method"], content=content)
    widget = TurnWidget(Turn(question="How much faster were traced loops?",
                             answer="They ran 4.2 times faster [1].", citations=[cited], grounding="grounded"))
    qtbot.addWidget(widget)
    widget.resize(600, 400)
    widget.show()

    (card,) = widget.source_cards
    snippet = card.snippet_label.text()
    assert "*" not in snippet and "Multiple (multiple types of cells) included." in snippet
    # the heading path is the card's place line; the snippet starts with the text, and a
    # heading inside the passage stands on a line of its own
    assert "Method" in card.place.text()
    assert snippet.startswith("We measured hot loops")
    assert "\nFindings\n" in snippet
    qtbot.waitUntil(lambda: card.snippet_label.height() > 0)
    assert card.snippet_label.y() >= card.place.y() + card.place.height()  # below, not over it


def test_the_turn_shown_at_the_top_stays_there_when_the_chat_narrows(qtbot, pane):
    """Tester 20:15, 1024x640: a click on a source card opened the reader, the chat narrowed,
    its answers rewrapped taller and the same scroll position showed turns from earlier: the
    answer whose source was opened was out of view. The turn at the top stays at the top when
    the chat's width changes, until the person scrolls."""
    long_answer = " ".join(["The convoys waited for kerosene at the depot [1]."] * 12)
    for index in range(6):
        pane._add_turn_widget(answered(index, 2, long_answer))
    bar = pane.scroll.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0)
    fourth = pane.turn_widgets[4]
    for _ in range(3):
        QApplication.processEvents()
    top = fourth.mapTo(pane.transcript, fourth.rect().topLeft()).y()
    bar.triggerAction(bar.SliderAction.SliderMove)  # the person's scrolling, to that turn
    bar.setValue(top)
    assert bar.value() == top

    pane.resize(420, 500)  # the reader opens beside the chat

    def fourth_at_top() -> bool:
        now = fourth.mapTo(pane.transcript, fourth.rect().topLeft()).y()
        return now != top and abs(bar.value() - now) <= 2

    qtbot.waitUntil(fourth_at_top)
    for _ in range(5):
        QApplication.processEvents()
    assert fourth_at_top()


def test_the_end_of_the_transcript_stays_in_view_when_the_chat_gets_shorter(qtbot, pane):
    """Tester 19:40: a banner appearing under the panes (the chat shorter) left the last
    answer's end out of view."""
    long_answer = " ".join(["The convoys waited for kerosene at the depot [1]."] * 12)
    for index in range(4):
        pane._add_turn_widget(answered(index, 2, long_answer))
    bar = pane.scroll.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0)
    bar.triggerAction(bar.SliderAction.SliderToMaximum)  # the person reads the last answer
    qtbot.waitUntil(lambda: bar.value() == bar.maximum())
    pane.resize(pane.width(), pane.height() - 120)
    qtbot.waitUntil(lambda: bar.value() == bar.maximum() and bar.maximum() > 0)
    for _ in range(5):
        QApplication.processEvents()
    assert bar.value() == bar.maximum()


def test_a_source_card_says_when_its_document_was_removed_from_the_library(qtbot, pane):
    """Tester 19:40: after a cited source was deleted, its card looked live until clicked."""
    from haiku_desk.services.entries import DocumentState, LibraryEntry
    from haiku_desk.views.chat_pane import SourceCard

    library = pane.services.library
    turn = answered(1, 2)
    for citation in turn.citations:  # the cited document is in the library
        library.rows.set(LibraryEntry(key=citation.document_uri, name="Table Structure Recognition", state=DocumentState.HYBRID))
    pane._add_turn_widget(turn)
    cards = pane.transcript.findChildren(SourceCard)
    uri = cards[0].citation.document_uri
    assert cards and not any("Removed from the library" in card.text() for card in cards)
    library.entry_removed.emit(uri)  # what the library says when the document is deleted
    assert all(card.place.text().startswith("Removed from the library") for card in cards)
    library.entry_changed.emit(LibraryEntry(key=uri, name="Table Structure Recognition", state=DocumentState.HYBRID))
    assert not any("Removed from the library" in card.text() for card in cards)  # added back
    for citation in turn.citations:  # the library as the other tests found it
        library.rows.remove(citation.document_uri)


def test_a_restored_answer_s_card_says_its_document_was_removed_in_an_earlier_session(qtbot, pane):
    """Tester 21:10: a source deleted in an earlier session looked live on the restored
    conversation's card until clicked (only a delete in this session marked it)."""
    from haiku_desk.views.chat_pane import SourceCard

    library = pane.services.library
    turn = answered(1, 2)
    gone = {"document_uri": "file:///tmp/deleted-last-week.pdf", "document_id": "deleted-last-week"}
    turn.citations = [c.model_copy(update=gone) for c in turn.citations]
    assert not library.is_opening  # open, and the cited file is not (no longer) listed
    assert all(library.entry(c.document_uri) is None for c in turn.citations)
    pane._add_turn_widget(turn)
    cards = pane.transcript.findChildren(SourceCard)
    assert cards and all(card.place.text().startswith("Removed from the library") for card in cards)
