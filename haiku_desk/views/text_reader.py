"""A source without pages (Markdown, HTML, Word, EPUB…) read as its text: the library's stored
Markdown drawn as formatted text, the cited passage highlighted and scrolled to, and
find-in-document's matches marked. No page controls: there are no pages.

The passage is found in the drawn text by its letters and digits alone (case folded): a chunk's
text differs from the document's in its Markdown marks, list bullets and line breaks, never in
its words. When a chunk was cut mid-table or reworded, its longest opening that is in the text
is highlighted instead.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QColor, QTextCharFormat, QTextCursor, QTextDocument
from PySide6.QtWidgets import QFrame, QTextBrowser, QTextEdit, QWidget

from haiku_desk.emphasis import balanced_emphasis
from haiku_desk.views.markdown_tables import colour_document, follows_scheme, mark_header_rows

PASSAGE_COLOUR = QColor(255, 222, 160)  # the page highlight's orange, blended on white
FIND_COLOUR = QColor(200, 220, 255)
FIND_CURRENT_COLOUR = QColor(120, 170, 250)
PASSAGE_TOP = 40
MIN_PREFIX = 24  # letters: a shorter opening is no evidence of where the passage is
MAX_FIND_HITS = 2000


def plain_markdown(markdown: str) -> str:
    """Markdown's text as drawn, without its marks."""
    document = QTextDocument()
    document.setMarkdown(markdown)
    return document.toPlainText()


def _folded(text: str) -> tuple[str, list[int]]:
    """``text``'s letters and digits, case folded, with where each came from in ``text``."""
    letters: list[str] = []
    where: list[int] = []
    for index, char in enumerate(text):
        if char.isalnum():
            folded = char.casefold()
            letters.append(folded)
            where.extend([index] * len(folded))
    return "".join(letters), where


def locate(text: str, passage: str) -> tuple[int, int] | None:
    """Where ``passage`` is in ``text`` (start, end), compared by letters and digits only; else
    where its longest opening of at least MIN_PREFIX letters is, as long as the passage."""
    haystack, where = _folded(text)
    needle, _ = _folded(passage)
    if not needle or not haystack:
        return None
    found = haystack.find(needle)
    length = len(needle)
    if found < 0:
        low, high = MIN_PREFIX, len(needle) - 1  # the longest prefix found (found for low)
        if low > high or haystack.find(needle[:low]) < 0:
            return None
        while low < high:
            middle = (low + high + 1) // 2
            if haystack.find(needle[:middle]) >= 0:
                low = middle
            else:
                high = middle - 1
        found = haystack.find(needle[:low])
    end = min(len(haystack), found + length) - 1
    return where[found], where[end] + 1


class TextReader(QTextBrowser):
    """One text source; ``show_text`` opens it at the passage."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setAccessibleName("Document text")
        self.document().setDocumentMargin(16)
        self.passage: tuple[int, int] | None = None
        self.find_hits: list[tuple[int, int]] = []
        self.find_index = -1
        self._follow = False  # scroll back to the passage when the width changes, until the user scrolls
        self._moving = False
        self.extra_actions: list[QAction] = []  # added to the context menu (Find in document)
        self.verticalScrollBar().valueChanged.connect(self._scrolled)

    def show_text(self, markdown: str, passage: str = "") -> bool:
        """Show ``markdown`` with ``passage`` highlighted and scrolled to; whether it was found.
        A ``**`` / ``__`` of the document's own that pairs with nothing is dropped (paired ones
        stay emphasis), as in answers; the passage is found by its letters, so it still is."""
        self.setMarkdown(balanced_emphasis(markdown))
        mark_header_rows(self.document())
        colour_document(self.document())  # its tables and links in the scheme's colours
        self.find_hits, self.find_index = [], -1
        self.passage = locate(self.toPlainText(), plain_markdown(passage)) if passage.strip() else None
        self._select()
        self._follow = self.passage is not None
        if self.passage is not None:
            self.scroll_to(self.passage[0])
        else:
            self._move(0)
        return self.passage is not None

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        follows_scheme(event, self.document())  # View › Appearance: drawn again in its colours

    def passage_text(self) -> str:
        if self.passage is None:
            return ""
        return self.toPlainText()[self.passage[0] : self.passage[1]]

    def _span(self, start: int, end: int, colour: QColor) -> QTextEdit.ExtraSelection:
        selection = QTextEdit.ExtraSelection()
        cursor = QTextCursor(self.document())
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        selection.cursor = cursor
        text_format = QTextCharFormat()
        text_format.setBackground(colour)
        text_format.setForeground(QColor("black"))  # light highlights stay readable in dark mode
        selection.format = text_format
        return selection

    def _select(self) -> None:
        selections = []
        if self.passage is not None:
            selections.append(self._span(*self.passage, PASSAGE_COLOUR))
        for index, (start, end) in enumerate(self.find_hits):
            colour = FIND_CURRENT_COLOUR if index == self.find_index else FIND_COLOUR
            selections.append(self._span(start, end, colour))
        self.setExtraSelections(selections)

    def scroll_to(self, position: int) -> None:
        cursor = QTextCursor(self.document())
        cursor.setPosition(position)
        top = self.cursorRect(cursor).top() + self.verticalScrollBar().value()
        self._move(top - PASSAGE_TOP)

    def _move(self, value: int) -> None:
        self._moving = True
        try:
            self.verticalScrollBar().setValue(value)
        finally:
            self._moving = False

    def _scrolled(self, _value: int) -> None:
        if not self._moving:
            self._follow = False

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self._follow and self.passage is not None:
            self.scroll_to(self.passage[0])

    def passage_in_view(self) -> bool:
        if self.passage is None:
            return False
        cursor = QTextCursor(self.document())
        cursor.setPosition(self.passage[0])
        rect = self.cursorRect(cursor)
        return 0 <= rect.top() and rect.bottom() <= self.viewport().height()

    # --- find-in-document ----------------------------------------------------------------------

    def find_text(self, text: str) -> int:
        """Mark every place of ``text`` (case-insensitive); the current is the first after the
        passage (or the top). Returns how many."""
        self.find_hits, self.find_index = [], -1
        if text:
            cursor = QTextCursor(self.document())
            while len(self.find_hits) < MAX_FIND_HITS:
                cursor = self.document().find(text, cursor)
                if cursor.isNull():
                    break
                self.find_hits.append((cursor.selectionStart(), cursor.selectionEnd()))
        if self.find_hits:
            start = self.passage[0] if self.passage is not None else 0
            self.find_index = next((i for i, (s, _) in enumerate(self.find_hits) if s >= start), 0)
        self._select()
        self._show_find_hit()
        return len(self.find_hits)

    def step_find(self, step: int) -> None:
        if not self.find_hits:
            return
        self.find_index = (self.find_index + step) % len(self.find_hits)
        self._select()
        self._show_find_hit()

    def _show_find_hit(self) -> None:
        if not 0 <= self.find_index < len(self.find_hits):
            return
        self._follow = False
        cursor = QTextCursor(self.document())
        start, end = self.find_hits[self.find_index]
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        self._moving = True
        try:
            self.setTextCursor(cursor)
            self.ensureCursorVisible()
        finally:
            self._moving = False
        # the selection would hide the current match's own colour: keep only the caret there
        cursor.clearSelection()
        self.setTextCursor(cursor)

    def contextMenuEvent(self, event) -> None:
        menu = self.createStandardContextMenu(event.pos())
        if self.extra_actions:
            menu.addSeparator()
            menu.addActions(self.extra_actions)
        menu.exec(event.globalPos())
        menu.deleteLater()

    def keyPressEvent(self, event) -> None:
        if event.key() == Qt.Key.Key_Escape:
            event.ignore()
            return
        super().keyPressEvent(event)
