"""Markdown tables shown as tables, wherever the app shows evidence or answers.

Table chunks are Markdown tables (a header line, a compact separator ``|-|-|``, a line per row,
with their caption). The citation panel draws a passage's tables as real tables
(``passage_html``); the answer view's Markdown gets its tables from Qt's own reader. Either
way ``tidy_tables`` then gives every column at least the width of its short cells whole and of
its longest word, so a 25-column table scrolls sideways instead of wrapping one letter per
line ("T e x a s").
"""

from __future__ import annotations

import html
import re

from PySide6.QtCore import Qt
from PySide6.QtGui import (
    QFontMetricsF,
    QTextCursor,
    QTextDocument,
    QTextFrame,
    QTextLength,
    QTextOption,
    QTextTable,
    QTextTableFormat,
)
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser, QWidget

from haiku_desk.citations import passage_blocks
from haiku_desk.views.emphasis import plain_emphasis

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
        if any(block.header):
            rows.append(
                "<tr>" + "".join(f"<th>{html.escape(plain_emphasis(name))}</th>" for name in block.header) + "</tr>"
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


def cell_text(table: QTextTable, row: int, column: int) -> str:
    cell = table.cellAt(row, column)
    cursor = cell.firstCursorPosition()
    cursor.setPosition(cell.lastCursorPosition().position(), cursor.MoveMode.KeepAnchor)
    return cursor.selectedText().replace("\u2029", " ")


def tidy_tables(document: QTextDocument) -> None:
    """Give each table's columns a width that keeps short cells on one line and long ones
    wrapping at word boundaries only; the document then grows wider than its view (which
    scrolls sideways) rather than breaking a word into letters."""
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

    def text(self) -> str:
        return self._text


def shown_passage(text: str, limit: int = 4000) -> str:
    """``text`` cut to about ``limit`` characters at a line's end, so a table loses whole rows
    rather than being cut inside one (its pipes would then show)."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    if cut < limit // 2:
        cut = limit
    return text[:cut].rstrip() + "\n…"
