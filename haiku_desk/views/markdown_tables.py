"""Markdown tables shown as tables, wherever the app shows evidence or answers.

Table chunks are Markdown tables (a header line, a compact separator ``|-|-|``, a line per row,
with their caption). The citation panel draws a passage's tables as real tables
(``passage_html``); the answer view's Markdown gets its tables from Qt's own reader. Either
way ``tidy_tables`` then gives every column at least the width of its short cells whole and of
its longest word, so a 25-column table scrolls sideways instead of wrapping one letter per
line ("T e x a s"), and ``colour_tables`` draws the tables in the scheme's colours (Qt's rich
text gives a table no colours of its own: its cells took whatever the widget's palette was, a
white block with black text in the dark scheme, and its border a fixed grey); the views that
show tables draw them again in the new colours when the scheme changes.
"""

from __future__ import annotations

import html
import re

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFontMetricsF,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextFrame,
    QTextLength,
    QTextOption,
    QTextTable,
    QTextTableFormat,
)
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser, QWidget

from haiku_desk.citations import passage_blocks
from haiku_desk.emphasis import plain_emphasis
from haiku_desk.views.theme import Tokens, current_tokens

SHORT_CELL = 12  # characters: a cell this short (or of one word: "21,550") is never wrapped
# a column of longer cells is this many line heights wide at most (or its longest word):
# they wrap at word boundaries ("Inference time" over "(secs)")
LONG_CELL_LINES = 6
CELL_PADDING = 3


def passage_html(text: str) -> str:
    """``text`` as rich text: its prose as written (lines kept), its Markdown tables as tables
    with a header row. Plain text, so a document's ``**`` / ``__`` are dropped (paired or not:
    ``plain_emphasis``, as the chat's source cards do)."""
    parts: list[str] = []
    for block in passage_blocks(text):
        if isinstance(block, str):
            if block.strip():
                parts.append(
                    f"<p style='white-space: pre-wrap'>{html.escape(plain_emphasis(block.strip(chr(10))))}</p>"
                )
            continue
        rows = []
        if any(block.header):  # a header row of the table's own (``colour_tables`` shades it)
            rows.append(
                "<thead><tr>"
                + "".join(f"<th>{html.escape(plain_emphasis(name))}</th>" for name in block.header)
                + "</tr></thead>"
            )
        for row in block.rows:
            rows.append(
                "<tr>" + "".join(f"<td>{html.escape(plain_emphasis(value))}</td>" for value in row) + "</tr>"
            )
        parts.append(
            f"<table border='1' cellspacing='0' cellpadding='{CELL_PADDING}' "
            f"style='border-collapse: collapse'>{''.join(rows)}</table>"
        )
    return "".join(parts)


_QUOTE = re.compile(r"^[>\s]*")


def with_table_breaks(markdown: str) -> str:
    """``markdown`` with an empty line before each table that follows a line of text (a
    caption): Qt's Markdown reader, like CommonMark's, takes a table only as a block of its
    own, and the table would show as lines of pipes."""
    lines = markdown.split("\n")
    out: list[str] = []
    in_code = False  # a fenced code block is shown as written
    for i, line in enumerate(lines):
        prefix = _QUOTE.match(line).group()  # type: ignore[union-attr]
        body = line[len(prefix) :]
        if body.startswith(("```", "~~~")):
            in_code = not in_code
        following = lines[i + 1][len(prefix) :] if i + 1 < len(lines) else ""
        if (
            not in_code
            and out
            and out[-1][len(prefix) :].strip()
            and not _is_row(out[-1][len(prefix) :])
            and _is_row(body)
            and _is_separator_row(following)
        ):
            out.append(prefix.rstrip())
        out.append(line)
    return "\n".join(out)


def _is_row(line: str) -> bool:
    line = line.strip()
    return len(line) >= 2 and line.startswith("|") and line.endswith("|")


def _is_separator_row(line: str) -> bool:
    return _is_row(line) and all(
        re.fullmatch(r"\s*:?-+:?\s*", cell) for cell in line.strip()[1:-1].split("|")
    )


def tables(document: QTextDocument) -> list[QTextTable]:
    """Every table in ``document``, in order (tables inside lists and quotes too)."""
    found: list[QTextTable] = []

    def walk(frame: QTextFrame) -> None:
        for child in frame.childFrames():
            if isinstance(child, QTextTable):
                found.append(child)
            walk(child)

    walk(document.rootFrame())
    return found


def mark_header_rows(document: QTextDocument) -> None:
    """A Markdown table's first line is its header (the syntax has no table without one); Qt's
    Markdown reader makes it bold but does not say so in the table's format, which
    ``colour_tables`` reads."""
    for table in tables(document):
        table_format = table.format()
        if table_format.headerRowCount() == 0 and table.rows() > 1:
            table_format.setHeaderRowCount(1)
            table.setFormat(table_format)


def colour_tables(document: QTextDocument, tokens: Tokens | None = None) -> None:
    """Every table of ``document`` in the scheme's colours (default: the scheme applied now):
    its cells on the surface colour, a header row on the sunken one, their text in the text
    colour (a link keeps its own) and the borders in the strong border colour. Called again
    when the scheme changes, it recolours the same tables."""
    with _one_edit(document):
        _colour_tables(document, tokens or current_tokens())


def _colour_tables(document: QTextDocument, t: Tokens) -> None:
    text = QBrush(QColor(t.text))
    for table in tables(document):
        table_format = table.format()
        table_format.setBorderBrush(QBrush(QColor(t.border_strong)))
        table.setFormat(table_format)
        header_rows = table_format.headerRowCount()
        for row in range(table.rows()):
            background = QBrush(QColor(t.sunken if row < header_rows else t.surface))
            for column in range(table.columns()):
                cell = table.cellAt(row, column)
                if cell.row() != row or cell.column() != column:
                    continue  # a spanned cell, coloured from its first row and column
                cell_format = cell.format()
                cell_format.setBackground(background)
                cell.setFormat(cell_format)
                _colour_text(document, cell.firstPosition(), cell.lastPosition(), text, links=False)


def _colour_text(document: QTextDocument, start: int, end: int, colour: QBrush, *, links: bool) -> None:
    """The links (``links``) or the rest of the text from ``start`` to ``end`` in ``colour``."""
    spans: list[tuple[int, int]] = []  # gathered first: a change splits and merges fragments
    block = document.findBlock(start)
    while block.isValid() and block.position() <= end:
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.isValid() and fragment.charFormat().isAnchor() == links:
                low = max(start, fragment.position())
                high = min(end, fragment.position() + fragment.length())
                if high > low:
                    spans.append((low, high))
            it += 1
        block = block.next()
    char_format = QTextCharFormat()
    char_format.setForeground(colour)
    for low, high in spans:
        cursor = QTextCursor(document)
        cursor.setPosition(low)
        cursor.setPosition(high, QTextCursor.MoveMode.KeepAnchor)
        cursor.mergeCharFormat(char_format)


class _one_edit:  # noqa: N801 (used as a ``with`` block)
    """The changes made inside, one edit of ``document``: laid out (and ``contentsChanged``)
    once at the end rather than once per cell, which an answer's wide table made take
    seconds; and kept off the undo stack (a read-only view has nothing to undo)."""

    def __init__(self, document: QTextDocument) -> None:
        self.document = document
        self.cursor = QTextCursor(document)
        self.undo = document.isUndoRedoEnabled()

    def __enter__(self) -> None:
        self.document.setUndoRedoEnabled(False)
        self.cursor.beginEditBlock()

    def __exit__(self, *exc: object) -> None:
        self.cursor.endEditBlock()
        self.document.setUndoRedoEnabled(self.undo)


CODE_BLOCK = QTextFormat.Property.UserProperty.value + 1  # a block format's mark: a code block's line


def colour_document(document: QTextDocument, tokens: Tokens | None = None) -> None:
    """What of ``document`` has colours of its own in the scheme's (default: the scheme applied
    now): its tables (``colour_tables``), its links (Qt's Markdown reader gives a link the
    palette's link colour of the moment it reads it: pale on the light scheme after a switch
    from dark) and its code blocks' quiet background (blocks marked ``CODE_BLOCK``)."""
    t = tokens or current_tokens()
    document.setProperty(_COLOURED, t.name)
    with _one_edit(document):
        _colour_tables(document, t)
        code = QBrush(QColor(t.sunken))
        block = document.begin()
        while block.isValid():
            if block.blockFormat().property(CODE_BLOCK):
                block_format = block.blockFormat()
                block_format.setBackground(code)
                QTextCursor(block).setBlockFormat(block_format)
            block = block.next()
        _colour_text(document, 0, document.characterCount(), QBrush(QColor(t.link)), links=True)


_COLOURED = "haiku_scheme"  # the document's property: the scheme it was coloured in


def follows_scheme(event: QEvent, document: QTextDocument) -> None:
    """For a view's ``changeEvent``: ``document`` drawn again in the scheme's colours when the
    scheme (the palette) changes. A switch sends a view several PaletteChanges (the palette,
    then the stylesheet's polish): it is coloured at the first only."""
    if event.type() == QEvent.Type.PaletteChange and document.property(_COLOURED) != current_tokens().name:
        colour_document(document)


def cell_text(table: QTextTable, row: int, column: int) -> str:
    cell = table.cellAt(row, column)
    cursor = cell.firstCursorPosition()
    cursor.setPosition(cell.lastCursorPosition().position(), cursor.MoveMode.KeepAnchor)
    return cursor.selectedText().replace("\u2029", " ")


def tidy_tables(document: QTextDocument) -> None:
    """Give each table's columns a width that keeps short cells on one line and long ones
    wrapping at word boundaries only; the document then grows wider than its view (which
    scrolls sideways) rather than breaking a word into letters. One edit of the document: a
    change per cell laid an answer out again per cell (a 25 × 20 table took half a minute)."""
    with _one_edit(document):
        _tidy_tables(document)


def _tidy_tables(document: QTextDocument) -> None:
    for table in tables(document):
        widths: list[float] = []
        for column in range(table.columns()):
            needed = 0.0
            for row in range(table.rows()):
                cell = table.cellAt(row, column)
                if cell.columnSpan() > 1:
                    continue
                text = cell_text(table, row, column).strip()
                if not text:
                    continue
                cursor = cell.firstCursorPosition()
                probe = QTextCursor(cursor)
                probe.movePosition(QTextCursor.MoveOperation.NextCharacter)  # the cell's own font
                metrics = QFontMetricsF(probe.charFormat().font())
                if len(text) <= SHORT_CELL or len(text.split()) == 1:
                    block_format = cursor.blockFormat()
                    block_format.setNonBreakableLines(True)
                    cursor.setBlockFormat(block_format)
                    width = metrics.horizontalAdvance(text)
                else:
                    width = max(metrics.horizontalAdvance(word) for word in text.split())
                    width = max(
                        width,
                        min(metrics.horizontalAdvance(text), LONG_CELL_LINES * metrics.height()),
                    )
                needed = max(needed, width)
            widths.append(needed + 2 * CELL_PADDING + 4)
        table_format: QTextTableFormat = table.format()
        table_format.setColumnWidthConstraints(
            [QTextLength(QTextLength.Type.FixedLength, w) for w in widths]
        )
        table_format.setCellPadding(CELL_PADDING)
        table_format.setCellSpacing(0)
        table.setFormat(table_format)


class PassageView(QTextBrowser):
    """A passage's text as the panel shows it: prose wrapping to the width, tables as tables
    that scroll sideways when wider. ``text()`` is the passage as given."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._text = ""
        self.setOpenLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def setText(self, text: str) -> None:  # noqa: N802 (QLabel's name, kept for its callers)
        self._text = text
        self.setHtml(passage_html(text))
        tidy_tables(self.document())
        colour_document(self.document())

    def text(self) -> str:
        return self._text

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        follows_scheme(event, self.document())


def shown_passage(text: str, limit: int = 4000) -> str:
    """``text`` cut to about ``limit`` characters at a line's end, so a table loses whole rows
    rather than being cut inside one (its pipes would then show)."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    if cut < limit // 2:
        cut = limit
    return text[:cut].rstrip() + "\n…"
