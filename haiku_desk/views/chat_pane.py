"""The chat pane: conversations, streamed answers with citation chips and sources, toggles.

It talks only to ``ChatService`` (and reads the model's name from ``ModelsService``); a question
streams in through its own ``Question`` operation. Clicking a chip or a source emits
``citation_activated`` with the haiku.rag ``Citation``, which the main window shows in its
citation panel; a ``haiku:`` link in an answer (add files, model settings) emits
``command_requested``.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, QSize, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QAction,
    QColor,
    QKeySequence,
    QPainter,
    QPalette,
    QPen,
    QResizeEvent,
    QTextCursor,
    QTextDocument,
    QTextOption,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QCheckBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLayout,
    QLayoutItem,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from haiku_desk.citations import citation_location, citation_place, citation_title, snippet_source
from haiku_desk.emphasis import balanced_emphasis, plain_emphasis
from haiku_desk.services.conversations import ConversationRecord, ToolStep, Turn
from haiku_desk.views.analysis_panel import AnalysisPanel
from haiku_desk.views.icons import icon_only, set_icon
from haiku_desk.views.markdown_tables import (
    CODE_BLOCK,
    colour_document,
    follows_scheme,
    mark_header_rows,
    tidy_tables,
    with_table_breaks,
)
from haiku_desk.views.notification_area import breakable
from haiku_desk.views.theme import badge_kind, set_flag
from haiku_desk.views.widgets import ElidedLabel, compact_button

if TYPE_CHECKING:
    from haiku_desk.bridge import Operation
    from haiku_desk.citations import Citation
    from haiku_desk.services import AppServices
    from haiku_desk.services.bibliography import BibliographyService
    from haiku_desk.services.chat import FailedAnswer, Question

CONVERSATIONS_WIDTH = 165  # the list's default width: titles end in "…", the chat gets the room
CONVERSATIONS_MIN_WIDTH = 150
INPUT_MAX_HEIGHT = 110  # the question box's height on a desktop window
INPUT_HEIGHT_SHARE = 7  # at most 1/7 of the pane's height (3 lines at 1024×640)
TOOLBAR_SLACK = 8  # a little room beyond the toggle row's own hint, against rounding
# What an answer rests on (Turn.basis): badge text, colour, tooltip. None: no badge.
BADGES: dict[str, tuple[str, str, str] | None] = {
    "grounded": ("Grounded", "#2e7d32", "The answer declared evidence from your library."),
    "ungrounded": (
        "Ungrounded",
        "#b26a00",
        "The answer declared that nothing in your library supports it.",
    ),
    "missing": (
        "No sources declared",
        "#c62828",
        "The answer declared no evidence: treat it with suspicion.",
    ),
    "search-results": (
        "Search results",
        "#1565c0",
        "No model wrote this: these are the passages that matched best. Read them yourself; "
        "some may not be relevant.",
    ),
    "computed": (
        "Computed",
        "#6a1b9a",
        "The answer rests on code run over your library (shown in the analysis panel); it "
        "cites no passage.",
    ),
    "stopped": None,  # the status says it, beside Ask again
    "no-documents": None,  # nothing to search: the answer says why, no badge
}
# Whether the cited text holds the answer's claims (Turn.support, haiku.rag's SupportCheck):
# badge colour and tooltip; it replaces the declared grounding's badge for answers a model wrote.
SUPPORT_BADGES: dict[str, tuple[str, str]] = {
    "supported": (
        "#2e7d32",
        "Every figure, date, name and quotation the answer states is in the passage it cites.",
    ),
    "partly-supported": (
        "#b26a00",
        "Some sentences state figures, dates, names or quotations that their citation does not "
        "hold, or cite nothing: they are marked ⚠ in the answer.",
    ),
    "cited-unsupported": (
        "#c62828",
        "The answer cites passages, but what it states is not in them: check it against the "
        "sources before you rely on it.",
    ),
    "cited-unchecked": (
        "#5f6368",
        "The answer cites passages but states no figure, date, name or quotation that could be "
        "checked against them: read it beside its sources.",
    ),
    "ungrounded": (
        "#b26a00",
        "The answer declared that nothing in your library supports it.",
    ),
    "missing": (
        "#c62828",
        "The answer cites no passage of your library, and none of its sentences could be "
        "matched to the passages it was given: nothing shows where it comes from. Treat it "
        "with suspicion and check the sources yourself.",
    ),
}
UNSUPPORTED_MARK = " ⚠"
CITE_SCHEME = "cite"
COMMAND_SCHEME = "haiku"


def marked_unsupported(text: str, support: object) -> str:
    """``text`` with ``UNSUPPORTED_MARK`` after each sentence the support check flagged (its
    offsets are the answer's as checked)."""
    flagged = getattr(support, "flagged", None) or []
    ends = sorted({s.end for s in flagged if 0 < s.end <= len(text)}, reverse=True)
    for end in ends:
        text = text[:end] + UNSUPPORTED_MARK + text[end:]
    return text


def support_badge(turn: Turn) -> tuple[str, str, str] | None:
    """The support verdict's badge (label, colour, tooltip) for an answer a model wrote, or
    None where the basis badge says more (search results, computed, stopped, no documents)."""
    check = turn.support_check
    if check is None or turn.basis not in ("grounded", "ungrounded", "missing"):
        return None
    colour, tip = SUPPORT_BADGES[check.verdict]
    if check.recovered:
        tip += " Its citations were added by matching the answer to the passages it was given."
    flagged = check.flagged
    if flagged:
        listed = "; ".join(
            f"“{_short_sentence(s.text)}” ({'no citation' if s.status == 'uncited' else 'not in its source'}: "
            f"{', '.join(s.missing)})"
            for s in flagged[:5]
        )
        tip += f" Flagged: {listed}"
    return check.label, colour, tip


def _short_sentence(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def linked_markers(markdown: str, known: set[int] | None = None) -> str:
    """``[2]`` / ``[1, 3]`` become links the answer view turns into citation activations; with
    ``known`` (the answer's citation numbers) only those: a reference number quoted from a
    document ("TableFormer [9]") stays text."""
    from haiku_desk.citations import replace_markers

    def link(numbers: list[int]) -> str:
        return " ".join(
            f"[[{n}]]({CITE_SCHEME}:{n})" if known is None or n in known else f"\\[{n}\\]"
            for n in numbers
        )

    return replace_markers(markdown, link)


def linked_passage_markers(markdown: str, known: set[int]) -> str:
    """``linked_markers`` for a list of passages (a search-only answer): each line's own number
    is its last marker; a number inside the quoted passage ("TableFormer [9]") is the
    document's reference, never a link, even when a passage of that number is listed."""
    lines = []
    for line in markdown.split("\n"):
        quoted, own = line, ""
        last = _LAST_MARKER.search(line)
        if last is not None:
            quoted, own = line[: last.start()], line[last.start() :]
        lines.append(linked_markers(quoted, set()) + linked_markers(own, known))
    return "\n".join(lines)


_LAST_MARKER = re.compile(r"\s*\[\d+\]\s*$")
_LISTED = re.compile(r"^\d+\. ")
PASSAGES_HEADER = "The best passages from your library:"
PASSAGE_TABLE_ROWS = 12  # a table passage shows this many rows, then says how many more


def passages_markdown(turn: Turn) -> str:
    """A search-only answer as the pane shows it: each passage under its title and pages with
    its own number; a passage that holds a table shows it as a table (its first rows), prose as
    the part that matched. (The turn keeps the library's text, which reads tables as words for a
    terminal.) A number the document itself writes ("TableFormer [9]") is shown as written but
    is never a citation marker. What the turn adds after the passages (why they are passages)
    follows them."""
    from haiku_desk.citations import citation_pages, citation_title, passage_blocks
    from haiku_desk.services.chat import excerpt

    parts = [PASSAGES_HEADER]
    for citation in turn.citations:
        where = " — ".join(p for p in (citation_title(citation), citation_pages(citation)) if p)
        parts.append(f"**{_inert_markers(plain_emphasis(where))}** [{citation.index}]")
        source = snippet_source(citation)
        blocks = passage_blocks(source)
        table = next((b for b in blocks if not isinstance(b, str)), None)
        if table is None:
            parts.append(balanced_emphasis(_inert_markers(excerpt(source, turn.question, 400))))
            continue
        caption = next((b.strip() for b in blocks if isinstance(b, str) and b.strip()), "")
        if caption:
            parts.append(balanced_emphasis(_inert_markers(excerpt(caption, turn.question, 200))))
        parts.append(_table_markdown(table.header, table.rows))
    paragraphs = [p for p in turn.answer.split("\n\n") if p.strip()]
    tail = paragraphs[-1] if len(paragraphs) > 1 else ""
    if tail and not _LISTED.match(tail) and tail.strip() != PASSAGES_HEADER:
        parts.append(tail)  # the pane's own words after the passages
    return "\n\n".join(parts)


def _inert_markers(text: str) -> str:
    """``text`` with each ``[n]`` written ``[n\\]``: shown the same in Markdown, never read as a
    citation marker."""
    from haiku_desk.citations import replace_markers

    return replace_markers(text, lambda numbers: f"[{', '.join(str(n) for n in numbers)}\\]")


def _table_markdown(header: list[str], rows: list[list[str]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(balanced_emphasis(_inert_markers(c)).replace("|", "\\|") or " " for c in cells) + " |"

    lines = [line(header), "|" + "|".join("-" for _ in header) + "|"]
    lines += [line(row) for row in rows[:PASSAGE_TABLE_ROWS]]
    more = len(rows) - PASSAGE_TABLE_ROWS
    if more > 0:
        lines.append(f"\n*…and {more} more row{'s' if more != 1 else ''}*")
    return "\n".join(lines)


class FlowLayout(QLayout):
    """Lays its widgets out in rows, wrapping to a new row when the width runs out: a row of
    check boxes stays check boxes at any width (a toolbar would move them into "»")."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 12) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._spacing = spacing
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def insert(self, index: int, widget: QWidget) -> None:
        """Put ``widget`` at ``index`` in the flow (addWidget puts it last)."""
        self.addWidget(widget)
        self._items.insert(index, self._items.pop())
        self.invalidate()

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:  # noqa: N802
        """All on one row."""
        width = sum(i.sizeHint().width() for i in self._items)
        width += self._spacing * max(0, len(self._items) - 1)
        height = max((i.sizeHint().height() for i in self._items), default=0)
        margins = self.contentsMargins()
        return QSize(width + margins.left() + margins.right(), height)

    def minimumSize(self) -> QSize:  # noqa: N802
        """One item a row."""
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        margins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def _arrange(self, rect: QRect, *, move: bool) -> int:
        margins = self.contentsMargins()
        area = rect.adjusted(margins.left(), margins.top(), -margins.right(), -margins.bottom())
        x, y, row_height = area.x(), area.y(), 0
        for item in self._items:
            if item.isEmpty():  # a hidden widget takes no room
                continue
            hint = item.sizeHint()
            if x > area.x() and x + hint.width() > area.right() + 1:
                x, y, row_height = area.x(), y + row_height + self._spacing // 2, 0
            if hint.width() > area.width() > 0:  # wider than a row: as wide as a row, wrapped
                hint = QSize(area.width(), item.heightForWidth(area.width()) if item.hasHeightForWidth() else hint.height())
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + self._spacing
            row_height = max(row_height, hint.height())
        return y + row_height - rect.y() + margins.bottom()


class FlowLabel(QLabel):
    """A label in a ``FlowLayout`` row (the grounding badge, an answer's status): on one line
    when the row has room, wrapped when the row is narrower, and never setting the turn's
    minimum width (a long verdict would otherwise widen the turn past its pane)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        # no implicit indent: a QLabel with a frame (a badge's border) indents its text by an
        # "x", which its one-line width below did not count, so "Search results" wrapped onto
        # two lines in its pill when the turn was drawn from a saved conversation (tester 16:39)
        self.setIndent(0)

    def sizeHint(self) -> QSize:  # noqa: N802
        """The text on one line (a wrapping QLabel would hint a narrower, taller shape)."""
        self.ensurePolished()  # the stylesheet's font and padding (a badge's pill) count
        document = QTextDocument()
        document.setDefaultFont(self.font())
        document.setDocumentMargin(0)
        if self.textFormat() == Qt.TextFormat.PlainText:
            document.setPlainText(self.text())
        else:
            document.setHtml(self.text())
        margins = self.contentsMargins()
        width = int(document.idealWidth()) + 2 + 2 * self.margin() + margins.left() + margins.right()
        return QSize(width, self.heightForWidth(width))

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        hint = self.sizeHint()
        return QSize(min(hint.width(), 60), hint.height())


class HeaderLabel(ElidedLabel):
    """A chat header label: its whole text when there is room, elided when the pane is narrow
    (never widening it)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent=parent)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)

    def set_full_text(self, text: str, suffix: str = "") -> None:
        super().set_full_text(text, suffix)
        self.updateGeometry()

    def sizeHint(self) -> QSize:  # noqa: N802
        width = self.fontMetrics().horizontalAdvance(self.full_text + self.suffix) + 4
        return QSize(width, super().sizeHint().height())


class ScopeLabel(HeaderLabel):
    """The header's scope ("· all documents"): in a narrow pane the model name elides first,
    because what the chat searches is what a researcher must not have to guess."""

    KEPT_WIDTH = 160  # px of the scope kept whole before it elides too

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        width = self.fontMetrics().horizontalAdvance(self.full_text + self.suffix) + 4
        return QSize(min(width, self.KEPT_WIDTH), super().minimumSizeHint().height())


_HEADING_MARK = "\ue000"  # around a heading line while the snippet is cut (never in text)
_HEADING_WORDS = 8  # a line this short, ending without punctuation, reads as a heading
_SENTENCE_END = (".", ":", ";", "?", "!", ",", ")", "]")


def card_snippet(citation: Citation, query: str, excerpt: Any, limit: int = 220) -> str:
    """A source card's snippet: the part of the cited text that matched ``query``, cut by
    ``excerpt`` (whitespace collapsed), without the headings the card's heading path already
    shows at its start, and with each heading inside the passage on a line of its own (they
    ran into the text: "Field study of loop compilation Method We measured…")."""
    known = {_normal(h) for h in (*citation.headings, citation_title(citation)) if h.strip()}

    def is_heading(line: str) -> bool:
        stripped = line.strip()
        if not stripped or stripped.startswith("|"):
            return False
        if stripped.startswith("#") or _normal(stripped) in known:
            return True
        return (  # a short line that starts and ends like a title, not a wrapped sentence
            len(stripped.split()) <= _HEADING_WORDS
            and (stripped[0].isupper() or stripped[0].isdigit())
            and not stripped.endswith(_SENTENCE_END)
        )

    lines = snippet_source(citation).split("\n")
    while lines and (not lines[0].strip() or (is_heading(lines[0]) and _normal(lines[0]) in known)):
        lines.pop(0)  # the heading path says these
    text_lines = [line for line in lines if line.strip()]
    marked = "\n".join(
        f"{_HEADING_MARK} {line.strip().lstrip('#').strip()} {_HEADING_MARK}"
        if is_heading(line) and i < len(text_lines) - 1 else line
        for i, line in enumerate(text_lines)
    )
    cut = excerpt(marked, query, limit)
    cut = re.sub(rf"\s*{_HEADING_MARK}\s*(.*?)\s*{_HEADING_MARK}\s*", r"\n\1\n", cut)
    return cut.replace(_HEADING_MARK, "").strip()


def _normal(text: str) -> str:
    return " ".join(text.strip().lstrip("#").split()).casefold()


class CitationChip(QToolButton):
    """An answer's ``[n]`` chip: a Tab stop (the stylesheet's ``citationChip`` focus ring) that
    opens its citation on a click, Return, Enter or Space, and says so to a screen reader
    ("Citation 1: Okafor et al., 2021, p. 2")."""

    focused = Signal(object)  # self, when the focus comes in (the pane scrolls it into view)

    def __init__(self, citation: Citation, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.citation = citation
        self.setProperty("citationChip", True)
        self.setText(str(citation.index))
        self.setAutoRaise(False)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.set_name(citation_place(citation))

    def set_name(self, name: str, tip: str | None = None) -> None:
        """What the chip is called (a tooltip, and the screen reader's name)."""
        self.setToolTip(tip or name)
        self.setAccessibleName(f"Citation {self.citation.index}: {name}")

    def keyPressEvent(self, event: Any) -> None:  # noqa: N802
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not event.isAutoRepeat():
            self.click()  # Space clicks a button already; Return and Enter do the same here
            event.accept()
            return
        super().keyPressEvent(event)

    def focusInEvent(self, event: Any) -> None:  # noqa: N802
        super().focusInEvent(event)
        self.focused.emit(self)


REMOVED_NOTE = "Removed from the library"


class SourceCard(QFrame):
    """One source under an answer, as a compact card: its number, the document's title (one
    line, elided; whole in the tooltip), the heading path and pages, the cited snippet, and a
    badge saying whether the cited text holds what the answer says with it.

    A document with authors is named author–year–page instead ("Sørensen et al., 2021, p. 4",
    see ``set_label``), its title then beside the heading path. The whole card is the link: a
    click, or Enter or Space once Tab has reached it, emits ``activated`` with its citation.
    The stylesheet finds it as ``QFrame#sourceCard`` (property ``card``), its parts as
    ``#sourceNumber``, ``#sourceTitle``, ``#sourcePlace``, ``#sourceSnippet``, ``#sourceBadge``.
    """

    activated = Signal(object)  # Citation
    focused = Signal(object)  # self, when the focus comes in (the pane scrolls it into view)

    def __init__(
        self,
        citation: Citation,
        snippet: str,
        parent: QWidget | None = None,
        *,
        support: str | None = None,
    ) -> None:
        super().__init__(parent)
        self.citation = citation
        self.snippet = plain_emphasis(snippet)  # a PDF's stray "**" is no text to read
        self.title = citation_title(citation)
        self.document_title = self.title  # the place line's title when the card is author–year
        self.author_year = False
        self.support = support  # "supported" / "unsupported" from the answer's support check
        self.removed = False  # its document was deleted from the library (set_removed)
        self.setObjectName("sourceCard")
        self.setProperty("card", True)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        place = citation_place(citation)
        self.setToolTip(place)
        self.setAccessibleName(f"Source {citation.index}: {place}")
        self.number = QLabel(str(citation.index), self)
        self.number.setObjectName("sourceNumber")
        self.number.setProperty("badge", "muted")
        self.number.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.number.setMinimumWidth(self.number.fontMetrics().horizontalAdvance("00") + 6)
        self.title_label = ElidedLabel(parent=self)
        self.title_label.setObjectName("sourceTitle")
        font = self.title_label.font()
        font.setBold(True)
        self.title_label.setFont(font)
        self.badge = QLabel(self)
        self.badge.setObjectName("sourceBadge")
        self.place = QLabel(self)
        self.place.setObjectName("sourcePlace")
        self.place.setProperty("textRole", "secondary")
        self.snippet_label = QLabel(self)
        self.snippet_label.setObjectName("sourceSnippet")
        self.snippet_label.setProperty("textRole", "secondary")
        for label in (self.place, self.snippet_label):
            label.setWordWrap(True)
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        italic = self.snippet_label.font()
        italic.setItalic(True)
        self.snippet_label.setFont(italic)
        top = QHBoxLayout()
        top.setSpacing(6)
        top.addWidget(self.number)
        top.addWidget(self.title_label, 1)
        top.addWidget(self.badge)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 5, 8, 6)
        layout.setSpacing(1)
        layout.addLayout(top)
        layout.addWidget(self.place)
        layout.addSpacing(3)  # the heading path, then the snippet on a line of its own
        layout.addWidget(self.snippet_label)
        self._render()

    def set_removed(self, removed: bool) -> None:
        """Say on the card that its document was deleted from the library (a click shows the
        kept quote): it looked like a live source until clicked (tester 19:40)."""
        if removed != self.removed:
            self.removed = removed
            self._render()

    def shown_title(self) -> str:
        """The title as shown: cut to what fits on one line."""
        return self.title_label.text()

    def set_label(self, label: str, *, author_year: bool, document_title: str | None = None) -> None:
        """Name the source ``label`` (author–year–page, or the document's current title)."""
        self.title = label
        self.author_year = author_year
        self.document_title = document_title or citation_title(self.citation)
        self._render()

    def text(self) -> str:
        """What the card says, a line per part (the title whole)."""
        parts = [f"[{self.citation.index}] {self.title}", self.place.text(), self.snippet, self.badge.text()]
        return "\n".join(p for p in parts if p)

    def _render(self) -> None:
        location = citation_location(self.citation)
        if self.author_year:  # the pages are in the label: the title and heading path beneath
            from haiku_desk.citations import heading_path

            location = " — ".join(p for p in (self.document_title, " › ".join(heading_path(self.citation))) if p)
        self.title_label.set_full_text(self.title)
        location = plain_emphasis(location)
        if self.removed:
            location = " · ".join(p for p in (REMOVED_NOTE, location) if p)
        self.place.setText(location)
        self.place.setVisible(bool(location))
        self.snippet_label.setText(self.snippet)
        self.snippet_label.setVisible(bool(self.snippet))
        badge = SOURCE_BADGES.get(self.support or "")
        if badge is None:
            self.badge.hide()
        else:
            text, role, tip = badge
            self.badge.setText(text)
            self.badge.setProperty("badge", role)
            self.badge.setToolTip(tip)
            self.badge.setAccessibleName(tip)
            self.badge.show()

    def activate(self) -> None:
        self.activated.emit(self.citation)

    def mouseReleaseEvent(self, event: Any) -> None:  # noqa: N802
        if event.button() == Qt.MouseButton.LeftButton and self.rect().contains(event.position().toPoint()):
            self.activate()
            event.accept()
            return
        super().mouseReleaseEvent(event)

    def keyPressEvent(self, event: Any) -> None:  # noqa: N802
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            self.activate()
            event.accept()
            return
        super().keyPressEvent(event)

    def focusInEvent(self, event: Any) -> None:  # noqa: N802
        super().focusInEvent(event)
        self.update()
        self.focused.emit(self)

    def focusOutEvent(self, event: Any) -> None:  # noqa: N802
        super().focusOutEvent(event)
        self.update()

    def paintEvent(self, event: Any) -> None:  # noqa: N802
        super().paintEvent(event)
        app = QApplication.instance()
        styled = isinstance(app, QApplication) and "sourceCard" in app.styleSheet()
        if self.hasFocus() and not styled:  # the stylesheet draws its own focus frame
            painter = QPainter(self)
            pen = QPen(self.palette().color(QPalette.ColorRole.Highlight), 2)
            painter.setPen(pen)
            painter.drawRect(self.rect().adjusted(1, 1, -1, -1))
            painter.end()


# What a source's cited text does for its sentences (the answer's support check): badge text,
# the stylesheet's badge role, tooltip.
SOURCE_BADGES: dict[str, tuple[str, str, str]] = {
    "supported": ("✓ Holds it", "ready", "The figures, dates, names and quotations the answer states with this "
                  "citation are in this passage."),
    "unsupported": ("⚠ Not found here", "failed", "Some figures, dates, names or quotations the answer states with "
                    "this citation are not in this passage: check it."),
}


def source_support(turn: Turn, index: int) -> str | None:
    """``unsupported`` when a sentence citing ``index`` states what its citations do not hold,
    ``supported`` when every checked sentence citing it holds; None when none was checked."""
    check = turn.support_check
    if check is None or turn.basis not in ("grounded", "ungrounded", "missing"):
        return None
    statuses = {s.status for s in check.sentences if index in s.markers}
    if "unsupported" in statuses:
        return "unsupported"
    return "supported" if "supported" in statuses else None


class AnswerView(QTextBrowser):
    """Markdown that grows with its content instead of scrolling on its own; only a table
    wider than the pane scrolls sideways (``markdown_tables``)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.document().contentsChanged.connect(self._fit)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._fit()

    def setMarkdown(self, markdown: str) -> None:  # noqa: N802
        super().setMarkdown(with_table_breaks(markdown))
        wrap_code_blocks(self.document(), self.palette().color(QPalette.ColorRole.AlternateBase))
        tidy_tables(self.document())
        mark_header_rows(self.document())
        colour_document(self.document())  # tables, links and code in the scheme's colours

    def changeEvent(self, event: Any) -> None:  # noqa: N802
        super().changeEvent(event)
        follows_scheme(event, self.document())  # View › Appearance: drawn again in its colours

    def _fit(self) -> None:
        self.document().setTextWidth(self.viewport().width())
        height = int(self.document().size().height()) + 6
        if self.document().size().width() > self.viewport().width() + 1:  # a wide table
            height += self.horizontalScrollBar().sizeHint().height()
        if height != self.height():
            self.setFixedHeight(height)


def wrap_code_blocks(document: QTextDocument, background: QColor) -> None:
    """Code blocks wrap like the text around them, on a quiet background: Qt's Markdown reader
    keeps their lines whole, and one long line would widen the answer past its pane. (Tables
    are left to ``tidy_tables``.)"""
    block = document.begin()
    while block.isValid():
        block_format = block.blockFormat()
        if block_format.nonBreakableLines() and QTextCursor(block).currentTable() is None:
            block_format.setNonBreakableLines(False)
            block_format.setBackground(background)
            block_format.setProperty(CODE_BLOCK, True)  # recoloured with the scheme
            block_format.setLeftMargin(max(block_format.leftMargin(), 4))
            QTextCursor(block).setBlockFormat(block_format)
        block = block.next()


class TurnWidget(QFrame):
    """One question with its steps, streamed answer, citation chips, source cards and badge.

    While nothing of the answer has come, a calm line says what is happening ("Thinking…",
    "Searching…") where the answer will be; a question that failed says why in the turn, with
    the library's passages one click away when the model was the problem."""

    citation_activated = Signal(object)
    command_requested = Signal(str)  # a haiku: link's command, e.g. "models"
    export_requested = Signal(object)  # Turn
    ask_again_requested = Signal(str)  # the question
    passages_requested = Signal(str)  # the question: answer it with the best passages instead
    copied = Signal(str)  # text put on the clipboard by Copy citation / BibTeX / CSL-JSON
    part_focused = Signal(object)  # a chip or source card the keyboard focus came to

    def __init__(
        self, turn: Turn, parent: QWidget | None = None, *, bibliography: BibliographyService | None = None
    ) -> None:
        super().__init__(parent)
        self.turn = turn
        self.failed = False  # the question could not be answered (kept with why: Turn.failure)
        self.failure_reason = ""  # why, as an export says it ("Not answered: <why>")
        self.bibliography = bibliography  # author–year names and the bibliography of the sources
        if bibliography is not None:
            bibliography.records_changed.connect(self._records_changed)
        self.text = turn.answer
        self.chips: list[CitationChip] = []
        self.source_cards: list[SourceCard] = []
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setObjectName("turn")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 8, 4, 8)
        self.question = QLabel(f"<b>{html.escape(turn.question)}</b>", self)
        self.question.setObjectName("turnQuestion")
        self.question.setWordWrap(True)
        self.question.setAccessibleName("Question")
        self.question.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.question.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.steps = QLabel(self)
        self.steps.setAccessibleName("Tool steps")
        self.steps.setWordWrap(True)
        self.steps.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        # the labels are escaped: shown as rich text always, or "Freight's" reads "Freight&#x27;s"
        self.steps.setTextFormat(Qt.TextFormat.RichText)
        self.steps.setStyleSheet("color: palette(placeholder-text); font-size: small;")
        # Until the answer's first words: what is happening, in place of an empty answer box.
        self.pending = QLabel(self)
        self.pending.setObjectName("answerPending")
        self.pending.setProperty("textRole", "secondary")
        self.pending.setAccessibleName("Answer status")
        self.pending.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        italic = self.pending.font()
        italic.setItalic(True)
        self.pending.setFont(italic)
        self.answer = AnswerView(self)
        self.answer.setAccessibleName("Answer")
        self.answer.anchorClicked.connect(self._anchor)
        # A question that could not be answered: why, and what can be done now.
        self.failure = QFrame(self)
        self.failure.setObjectName("answerFailure")
        self.failure.setProperty("card", True)
        self.failure.setFrameShape(QFrame.Shape.StyledPanel)
        self.failure_message = QLabel(self.failure)
        self.failure_message.setAccessibleName("Why it was not answered")
        self.failure_message.setWordWrap(True)
        self.failure_message.setTextFormat(Qt.TextFormat.PlainText)
        bold = self.failure_message.font()
        bold.setBold(True)
        self.failure_message.setFont(bold)
        self.failure_message.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.failure_detail = QLabel(self.failure)
        self.failure_detail.setAccessibleName("Error")
        self.failure_detail.setProperty("textRole", "caption")
        self.failure_detail.setWordWrap(True)
        self.failure_detail.setTextFormat(Qt.TextFormat.PlainText)
        self.failure_detail.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.failure_detail.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.failure_detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.passages_button = compact_button(QPushButton("Show passages", self.failure))
        self.passages_button.setAccessibleName("Show the matching passages instead")
        self.passages_button.setToolTip(
            "Answer this question with the passages of your library that match it best (no model needed)"
        )
        self.passages_button.clicked.connect(lambda: self.passages_requested.emit(self.turn.question))
        self.retry_button = compact_button(QPushButton("Ask again", self.failure))
        self.retry_button.setAccessibleName("Ask again")
        self.retry_button.setToolTip("Ask the model again (once it is running)")
        self.retry_button.clicked.connect(lambda: self.ask_again_requested.emit(self.turn.question))
        failure_buttons = QHBoxLayout()
        failure_buttons.addWidget(self.passages_button)
        failure_buttons.addWidget(self.retry_button)
        failure_buttons.addStretch(1)
        failure_layout = QVBoxLayout(self.failure)
        failure_layout.setContentsMargins(8, 6, 8, 6)
        failure_layout.addWidget(self.failure_message)
        failure_layout.addWidget(self.failure_detail)
        failure_layout.addLayout(failure_buttons)
        self.failure.hide()
        # chips, badge, status: in rows that wrap (many citations never widen the turn)
        self.chip_bar = QWidget(self)
        self.chip_row = FlowLayout(self.chip_bar, spacing=6)
        self.badge = FlowLabel(self)
        self.badge.setAccessibleName("Grounding")
        self.status = FlowLabel(self)
        self.status.setAccessibleName("Answer status")
        self.ask_again_button = compact_button(QPushButton("Ask again", self))
        self.ask_again_button.setAccessibleName("Ask again")
        self.ask_again_button.setToolTip("Ask this question again")
        self.ask_again_button.clicked.connect(
            lambda: self.ask_again_requested.emit(self.turn.question)
        )
        for part in (self.badge, self.status, self.ask_again_button):
            part.setParent(self.chip_bar)
            self.chip_row.addWidget(part)
        self.sources = QVBoxLayout()
        self.sources.setSpacing(4)
        layout.addWidget(self.question)
        layout.addWidget(self.steps)
        layout.addWidget(self.pending)
        layout.addWidget(self.answer)
        layout.addWidget(self.failure)
        layout.addWidget(self.chip_bar)
        layout.addLayout(self.sources)
        self.badge.hide()
        self.status.hide()
        self.ask_again_button.hide()
        self.pending.hide()
        self.answer.setVisible(bool(self.text))
        self.export_action = QAction("Export this answer…", self)
        self.export_action.triggered.connect(lambda: self.export_requested.emit(self.turn))
        self.copy_action = QAction("Copy answer", self)
        self.copy_action.triggered.connect(self._copy)
        self.copy_bibtex_action = QAction("Copy BibTeX of the sources", self)
        self.copy_bibtex_action.triggered.connect(lambda: self.copy_bibliography("bibtex"))
        self.copy_csl_action = QAction("Copy CSL-JSON of the sources", self)
        self.copy_csl_action.triggered.connect(lambda: self.copy_bibliography("csl-json"))
        # The answer view has a context menu of its own (copy, select all): ours extends it.
        self.answer.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.answer.customContextMenuRequested.connect(
            lambda pos: self._context_menu(self.answer.mapToGlobal(pos))
        )
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(lambda pos: self._context_menu(self.mapToGlobal(pos)))
        self._render_timer = QTimer(self)
        self._render_timer.setSingleShot(True)
        self._render_timer.setInterval(0)  # coalesce the deltas of one event-loop pass
        self._render_timer.timeout.connect(self._render)
        self._render_steps()
        if turn.failure is not None:  # not answered: why, and the offer, as when it failed
            from haiku_desk.services.chat import FailedAnswer

            if turn.answer:
                self._render()
            failure = turn.failure
            self.fail(FailedAnswer(failure.message, failure.detail, failure.offer_passages, ""))
        elif turn.answer or turn.stopped:
            self.finish(turn)

    # --- streaming ------------------------------------------------------------------------

    def follow(self, question: Question) -> None:
        """Show ``question`` as it is answered: its text and steps as they come."""
        question.text_delta.connect(self.append)
        question.text_reset.connect(self.reset_text)
        question.step_added.connect(self._step_added)
        self._show_pending()

    def _step_added(self, _step: ToolStep) -> None:
        self._render_steps()
        self._show_pending()

    def _show_pending(self) -> None:
        """Until the first words of the answer: "Searching…" while the library is searched,
        else "Thinking…" (the model is at work); no empty answer box."""
        if self.text:
            self.pending.hide()
            return
        steps = self.turn.steps
        searching = self.turn.mode == "search-only" or (bool(steps) and steps[-1].kind == "search")
        self.pending.setText("Searching…" if searching else "Thinking…")
        self.pending.show()
        self.answer.hide()

    def append(self, text: str) -> None:
        self.text += text
        self._render_timer.start()

    def reset_text(self) -> None:
        self.text = ""
        self._render_timer.start()
        self._show_pending()  # the model went on: back to saying so, not an empty box

    def _render_steps(self) -> None:
        labels = [html.escape(s.label) for s in self.turn.steps]
        self.steps.setText(" · ".join(labels))
        self.steps.setVisible(bool(labels))

    def _render(self) -> None:
        # the answer's own citation numbers are links; a number quoted from a document
        # ("TableFormer [9]") stays text (while streaming, none is known yet: none links)
        known = {c.index for c in self.turn.citations}
        if self.turn.mode == "search-only" and self.turn.citations and self.turn.answer:
            self.answer.setMarkdown(linked_passage_markers(passages_markdown(self.turn), known))
        elif self.turn.mode == "search-only":
            self.answer.setMarkdown(linked_passage_markers(balanced_emphasis(self.text), known))
        else:  # document text the model quoted may carry a stray "**": never raw, never bold on
            self.answer.setMarkdown(linked_markers(balanced_emphasis(self.text), known))
        has_text = bool(self.text.strip())
        self.answer.setVisible(has_text)  # never an empty box
        if has_text:
            self.pending.hide()

    def mark(self, status: str) -> None:
        self.status.setText(f"<i>{html.escape(status)}</i>")
        self.status.show()

    def fail(self, failure: FailedAnswer) -> None:
        """The question could not be answered: say why in the turn and offer what can be
        done now (the matching passages, when the model was the problem; asking again)."""
        from haiku_desk.services.conversations import Failure

        self.failed = True
        self.failure_reason = Failure(message=failure.message, detail=failure.detail).reason
        self._render_timer.stop()
        self.pending.hide()
        self.status.hide()
        self.answer.setVisible(bool(self.text.strip()))
        self.failure_message.setText(failure.message)
        self.failure_detail.setText(breakable(failure.detail) if failure.detail != failure.message else "")
        self.failure_detail.setVisible(failure.detail != failure.message)
        self.passages_button.setVisible(failure.offer_passages)
        self.failure.show()

    # --- the finished answer --------------------------------------------------------------

    def finish(self, turn: Turn) -> None:
        self.turn = turn
        self.text = turn.answer
        if support_badge(turn) is not None:  # the sentences the check flagged, marked ⚠
            self.text = marked_unsupported(turn.answer, turn.support_check)
        self._render_timer.stop()
        self._render()
        self._render_steps()
        self.status.hide()
        self.pending.hide()
        badge = support_badge(turn) or BADGES.get(turn.basis, BADGES["missing"])
        if badge is None:
            self.badge.hide()
        else:
            label, colour, tip = badge
            self.badge.setTextFormat(Qt.TextFormat.PlainText)
            self.badge.setText(label)
            set_flag(self.badge, "badge", badge_kind(colour))  # a pill in the scheme's colours
            self.badge.setToolTip(tip)
            self.badge.setAccessibleDescription(tip)
            self.badge.show()
        if turn.stopped:
            self.mark("Stopped before it was complete" if turn.answer else "Stopped")
            self.status.setToolTip(
                "The partial answer is kept here, not checked or cited, and not part of what the "
                "model reads next"
            )
        self.ask_again_button.setVisible(turn.stopped)
        for chip in self.chips:
            self.chip_row.removeWidget(chip)
            chip.deleteLater()
        self.chips = []
        if self.bibliography is not None and turn.citations:
            self.bibliography.load(c.document_id for c in turn.citations)
        for position, citation in enumerate(turn.citations):
            chip = CitationChip(citation, self.chip_bar)
            chip.clicked.connect(lambda _=False, c=citation: self.citation_activated.emit(c))
            chip.focused.connect(self.part_focused)
            self.chip_row.insert(position, chip)
            self.chips.append(chip)
        for old in self.source_cards:
            old.deleteLater()
        self.source_cards = []
        for citation in turn.citations:
            self._add_source(citation)
        self._name_sources()

    def _name_sources(self, document_ids: set[str] | None = None) -> None:
        """Name each source (and its chip's tooltip) author–year–page when its document has
        authors, else by its current title."""
        if self.bibliography is None:
            return
        from haiku_desk.citations import has_authors

        for card in self.source_cards:
            citation = card.citation
            if document_ids is not None and citation.document_id not in document_ids:
                continue
            record = self.bibliography.record(citation.document_id)
            title = self.bibliography.title(citation.document_id)
            name = self.bibliography.label(citation)
            card.set_label(name, author_year=has_authors(record), document_title=title)
            place = citation_place(citation)
            if has_authors(record):  # "Source 1: Okafor et al., 2021, p. 2" to a screen reader
                card.setAccessibleName(f"Source {citation.index}: {name}")
            for chip in self.chips:
                if chip.citation.index == citation.index:
                    if has_authors(record):
                        chip.set_name(name, f"{name} — {place}")
                    else:
                        chip.set_name(place)

    def _records_changed(self, document_ids: list[str]) -> None:
        self._name_sources(set(document_ids))

    def _add_source(self, citation: Citation) -> None:
        from haiku_desk.services.chat import citing_text, excerpt

        # Centred on what the answer says with this citation, else on the whole exchange
        turn = self.turn
        query = citing_text(turn.answer, citation.index) or f"{turn.question} {turn.answer}"
        card = SourceCard(
            citation,
            card_snippet(citation, query, excerpt),
            self,
            support=source_support(turn, citation.index),
        )
        card.activated.connect(self.citation_activated)
        card.focused.connect(self.part_focused)
        card.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        card.customContextMenuRequested.connect(
            lambda pos, c=card: self._source_menu(c, c.mapToGlobal(pos))
        )
        self.sources.addWidget(card)
        self.source_cards.append(card)

    def citation(self, index: int) -> Citation | None:
        return next((c for c in self.turn.citations if c.index == index), None)

    def keyboard_stops(self) -> list[QWidget]:
        """What Tab stops at in this turn, in reading order: the answer (Tab walks its
        citation links), a failure's buttons, the chips, Ask again, the source cards."""
        return [
            self.answer, self.passages_button, self.retry_button, *self.chips,
            self.ask_again_button, *self.source_cards,
        ]

    def set_tab_stops(self, on: bool) -> None:
        """The latest answer's chips, cards and text are Tab stops; an earlier answer's are
        reached with the mouse (or by scrolling), so Tab never wanders through old answers."""
        policy = Qt.FocusPolicy.StrongFocus if on else Qt.FocusPolicy.ClickFocus
        for part in (self.answer, *self.chips, *self.source_cards):
            part.setFocusPolicy(policy)

    def context_menu(self) -> QMenu:
        """The answer's context menu: export and copy this answer."""
        menu = QMenu(self)
        self.export_action.setEnabled(bool(self.turn.answer))
        menu.addAction(self.export_action)
        menu.addAction(self.copy_action)
        cited = bool(self.turn.citations) and self.bibliography is not None
        self.copy_bibtex_action.setEnabled(cited)
        self.copy_csl_action.setEnabled(cited)
        menu.addSeparator()
        menu.addAction(self.copy_bibtex_action)
        menu.addAction(self.copy_csl_action)
        return menu

    def source_menu(self, card: SourceCard) -> QMenu:
        """A source's context menu: copy its citation (the quoted passage, author–year–page),
        its BibTeX or CSL-JSON."""
        menu = QMenu(self)
        citation = card.citation
        copy = menu.addAction("Copy citation")
        copy.triggered.connect(lambda: self.copy_citation(citation))
        for text, kind in (("Copy BibTeX", "bibtex"), ("Copy CSL-JSON", "csl-json")):
            action = menu.addAction(text)
            action.setEnabled(self.bibliography is not None)
            action.triggered.connect(lambda _=False, k=kind: self.copy_bibliography(k, [citation]))
        return menu

    def _source_menu(self, card: SourceCard, where: QPoint) -> None:
        menu = self.source_menu(card)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.popup(where)

    def copy_citation(self, citation: Citation) -> str:
        """Put the quoted passage and its author–year–page citation on the clipboard."""
        from haiku_desk.citations import quoted_citation

        if self.bibliography is not None:
            text = self.bibliography.citation_text(citation)
        else:
            text = quoted_citation(citation, None)
        self._to_clipboard(text)
        return text

    def copy_bibliography(self, format: str = "bibtex", citations: list[Citation] | None = None) -> Any:
        """Put the BibTeX (or CSL-JSON) of the answer's sources (or of ``citations``) on the
        clipboard, once the library has made it."""
        if self.bibliography is None:
            return None
        future = self.bibliography.bibliography(citations or self.turn.citations, format)

        def done(f: Any) -> None:
            if not f.cancelled() and f.exception() is None:
                self._to_clipboard(f.result())

        future.add_done_callback(done)
        return future

    def _to_clipboard(self, text: str) -> None:
        from PySide6.QtWidgets import QApplication

        QApplication.clipboard().setText(text)
        self.copied.emit(text)

    def _context_menu(self, where: QPoint) -> None:
        menu = self.context_menu()
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.popup(where)

    def _copy(self) -> None:
        from PySide6.QtWidgets import QApplication

        QApplication.clipboard().setText(self.turn.answer)

    def _anchor(self, url: QUrl) -> None:
        self._activate(url.toString())

    def _activate(self, link: str) -> None:
        scheme, _, rest = link.partition(":")
        if scheme == CITE_SCHEME and rest.isdigit():
            citation = self.citation(int(rest))
            if citation is not None:
                self.citation_activated.emit(citation)
        elif scheme == COMMAND_SCHEME and rest:
            self.command_requested.emit(rest)


class _InputKeys(QObject):
    """Ctrl+Enter in the input box sends (Enter alone adds a line)."""

    def __init__(self, pane: ChatPane) -> None:
        super().__init__(pane)
        self.pane = pane

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.KeyPress:
            key, mods = event.key(), event.modifiers()  # type: ignore[attr-defined]
            if (
                key in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
                and mods & Qt.KeyboardModifier.ControlModifier
            ):
                self.pane.send()
                return True
        return False


class ChatPane(QWidget):
    """Conversations on the left; the current conversation, its toggles and the input box."""

    scroll: QScrollArea  # type: ignore[assignment]  # the conversation's (QWidget.scroll, a method, is not used)

    citation_activated = Signal(object)  # haiku.rag Citation
    command_requested = Signal(str)  # "add-files", "models": the window opens them

    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.services = services
        self.chat = services.chat
        self.models = services.models
        self.turn_widgets: list[TurnWidget] = []
        self._live: TurnWidget | None = None
        self._live_question: Question | None = None
        self.export_operation: Operation | None = None
        self.setAccessibleName("Chat")
        self._build()
        self._connect()
        self.refresh_conversations()
        self._show_record(self.chat.current)
        self._show_toggles(self.chat.toggles)
        self._set_busy(self.chat.busy)
        self._update_model_label()
        self._update_scope(self.chat.scope())
        self._show_tokens(*(self.chat.token_meter or (0, 0)))

    # --- building -------------------------------------------------------------------------

    def _build(self) -> None:
        outer = QHBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        outer.addWidget(self.splitter)

        sidebar = QWidget(self)
        side = QVBoxLayout(sidebar)
        side.setContentsMargins(4, 4, 4, 4)
        self.conversation_search = QLineEdit(sidebar)
        self.conversation_search.setPlaceholderText("Search conversations")
        self.conversation_search.setAccessibleName("Search conversations")
        self.conversation_search.setClearButtonEnabled(True)
        self.conversation_list = QListWidget(sidebar)
        self.conversation_list.setAccessibleName("Conversations")
        self.conversation_list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        # Long titles end in "…" (the full title is the tooltip) instead of scrolling sideways.
        self.conversation_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.conversation_list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.conversation_list.setWordWrap(False)
        buttons = QHBoxLayout()
        buttons.setSpacing(4)
        self.new_button = compact_button(QPushButton("New", sidebar))
        self.new_button.setAccessibleName("New chat")
        self.rename_button = compact_button(QPushButton("Rename", sidebar))
        self.rename_button.setAccessibleName("Rename chat")
        self.delete_button = compact_button(QPushButton("Delete", sidebar))
        self.delete_button.setAccessibleName("Delete chat")
        icon_only(self.new_button, "new-chat", "New chat", "New chat (Ctrl+N)")
        icon_only(self.rename_button, "rename", "Rename chat")
        icon_only(self.delete_button, "delete", "Delete chat")
        for b in (self.new_button, self.rename_button, self.delete_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        side.addWidget(self.conversation_search)
        side.addWidget(self.conversation_list, 1)
        side.addLayout(buttons)

        main = QWidget(self)
        column = QVBoxLayout(main)
        column.setContentsMargins(4, 0, 4, 4)
        # Check boxes in rows that wrap: each reads as on or off at any width.
        self.toggle_row = QWidget(main)
        self.toggle_row.setAccessibleName("Chat toggles")
        self.toggle_layout = FlowLayout(self.toggle_row)
        self.compaction_toggle = self._toggle(
            "Evidence compaction",
            "Send earlier questions' evidence as only what was cited (smaller requests)",
        )
        self.policy_toggle = self._toggle(
            "Citation policy", "Require every answer to declare what grounds it"
        )
        self.analysis_toggle = self._toggle(
            "Analysis mode", "Let the model run Python over your library to count and compare"
        )
        self.no_tools_toggle = self._toggle(
            "Answer without tools",
            "Search first, then let the model read numbered passages (for models without tool "
            "calling)",
        )
        self.toggles = (
            self.compaction_toggle,
            self.policy_toggle,
            self.analysis_toggle,
            self.no_tools_toggle,
        )
        self.export_answer_action = QAction("Export last answer…", self)
        self.export_answer_action.setToolTip(
            "Save the last answer as Markdown with its cited pages (right-click an answer to "
            "export that one)"
        )
        self.export_conversation_action = QAction("Export chat…", self)
        self.export_conversation_action.setToolTip(
            "Save this conversation as Markdown with its cited pages"
        )
        export_menu = QMenu(main)
        export_menu.addAction(self.export_answer_action)
        export_menu.addAction(self.export_conversation_action)
        self.export_button = QToolButton(main)
        self.export_button.setText("Export")
        self.export_button.setAccessibleName("Export")
        self.export_button.setToolTip(
            "Save the last answer or this conversation as Markdown (right-click an answer to "
            "export that one)"
        )
        self.export_button.setMenu(export_menu)
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)

        status = QHBoxLayout()
        # The header's labels elide (whole text in the tooltip): they never widen the pane,
        # and the scope stays readable beside a long model name.
        self.model_label = HeaderLabel(main)
        self.model_label.setAccessibleName("Chat model")
        self.scope_label = ScopeLabel(main)
        self.scope_label.setAccessibleName("Search scope")
        self.token_meter = QLabel(main)
        self.token_meter.setAccessibleName("Token meter")
        self.token_meter.setToolTip(
            "Input tokens of the last model request, and what evidence compaction saved on it"
        )
        status.addWidget(self.model_label)
        status.addWidget(self.scope_label)
        status.addStretch(1)
        status.addWidget(self.token_meter)

        self.scroll = QScrollArea(main)
        self.scroll.setAccessibleName("Conversation")
        self.scroll.setWidgetResizable(True)
        # Answers wrap and sources elide to the width: never a sideways scroll bar.
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.transcript = QWidget(self.scroll)
        self.transcript.setObjectName("transcript")  # styled as the conversation's surface
        # Never wider than the view: whatever a turn holds wraps, elides or scrolls inside it
        # (a wide table), so nothing is clipped on the right out of reach.
        self.transcript.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.transcript_layout = QVBoxLayout(self.transcript)
        # turns at the top, the room left below them: a stretch, not the layout's AlignTop,
        # which sizes the column from its turns' widest heights and squeezes narrow ones
        # (their chips then overlap the answer's last lines)
        self.empty_hint = QLabel(EMPTY_HINT, self.transcript)
        self.empty_hint.setAccessibleName("Chat hint")
        # on a first run it says what to do first (add files, connect a model), with links
        self.empty_hint.setTextFormat(Qt.TextFormat.RichText)
        self.empty_hint.linkActivated.connect(self._hint_link)
        self.empty_hint.setWordWrap(True)
        self.empty_hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.transcript_layout.addWidget(self.empty_hint)
        self.transcript_layout.addStretch(1)
        self.scroll.setWidget(self.transcript)
        self._follow_target: TurnWidget | None = None
        self._following = False
        self.transcript.installEventFilter(self)
        # the user's scrolling (wheel, keys, the bar) ends following an answer
        self.scroll.verticalScrollBar().actionTriggered.connect(self._stop_following)
        # What the transcript shows at its top (a turn and how far into it), or its end, kept
        # when the chat's width changes (a citation opening the reader beside it, reader mode,
        # a pane shown): answers rewrap and the same scroll value showed turns from earlier
        # (tester 20:15). Held through the relayout until the user scrolls.
        self._anchor: tuple[TurnWidget, float] | None = None
        self._anchor_at_end = False
        self._anchor_held = False
        self.scroll.verticalScrollBar().valueChanged.connect(self._remember_anchor)
        self.scroll.viewport().installEventFilter(self)  # a banner below: the end stays in view

        self.analysis_panel = AnalysisPanel(main)

        self.input = QPlainTextEdit(main)
        self.input.setAccessibleName("Question")
        self.input.setPlaceholderText("Ask your library… (Ctrl+Enter to send)")
        self.input.setMaximumHeight(INPUT_MAX_HEIGHT)  # less in a short window (_fit_input)
        self.input.setTabChangesFocus(True)  # Tab leaves the box; a question needs no tabs
        self.input.installEventFilter(_InputKeys(self))
        send_row = QHBoxLayout()
        self.send_button = QPushButton("Send", main)
        self.send_button.setAccessibleName("Send question")
        self.send_button.setToolTip("Send (Ctrl+Enter)")
        self.stop_button = QPushButton("Stop", main)
        self.stop_button.setAccessibleName("Stop answering")
        self.stop_button.setToolTip("Stop (Esc): the partial answer is kept")
        self.send_button.setProperty("buttonRole", "primary")
        set_icon(self.send_button, "send", on_accent=True)
        set_icon(self.stop_button, "stop")
        set_icon(self.export_button, "export")
        self.export_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        send_row.addWidget(self.export_button)
        send_row.addStretch(1)
        send_row.addWidget(self.stop_button)
        send_row.addWidget(self.send_button)

        column.addWidget(self.toggle_row)
        column.addLayout(status)
        column.addWidget(self.scroll, 1)
        column.addWidget(self.analysis_panel)
        column.addWidget(self.input)
        column.addLayout(send_row)

        self.splitter.addWidget(sidebar)
        self.splitter.addWidget(main)
        # The list keeps its width when the window grows; the conversation takes the rest.
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setCollapsible(1, False)
        sidebar.setMinimumWidth(max(CONVERSATIONS_MIN_WIDTH, sidebar.minimumSizeHint().width()))
        self.splitter.setSizes([CONVERSATIONS_WIDTH, 520])

        self.send_action = QAction("Send", self)
        self.send_action.setShortcuts([QKeySequence("Ctrl+Return"), QKeySequence("Ctrl+Enter")])
        self.send_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.stop_action = QAction("Stop", self)
        self.stop_action.setShortcut(QKeySequence(Qt.Key.Key_Escape))
        self.stop_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.new_chat_action = QAction("New chat", self)
        self.new_chat_action.setShortcut(QKeySequence.StandardKey.New)
        self.new_chat_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.addActions([self.send_action, self.stop_action, self.new_chat_action])

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._fit_input()

    def _fit_input(self) -> None:
        """The question box takes at most a seventh of the pane's height, never less than
        three lines: in a 1024×640 window the conversation keeps the room (issue 34)."""
        box = self.input
        frame = box.height() - box.viewport().height() if box.isVisible() else 20
        floor = 3 * box.fontMetrics().lineSpacing() + max(frame, 12) + 8
        box.setMaximumHeight(max(floor, min(INPUT_MAX_HEIGHT, self.height() // INPUT_HEIGHT_SHARE)))

    def default_width(self) -> int:
        """The width that shows the conversation list at its default width and every toggle
        on one row."""
        sidebar, chat_column = self.splitter.widget(0), self.splitter.widget(1)
        column_layout = chat_column.layout() if chat_column is not None else None
        assert sidebar is not None and column_layout is not None  # built in __init__
        conversations = max(CONVERSATIONS_WIDTH, sidebar.minimumSizeHint().width())
        margins = column_layout.contentsMargins()
        column = self.toggle_layout.sizeHint().width() + margins.left() + margins.right()
        return conversations + self.splitter.handleWidth() + column + TOOLBAR_SLACK

    def _toggle(self, text: str, tip: str) -> QCheckBox:
        box = QCheckBox(text, self.toggle_row)
        box.setToolTip(tip)
        box.setStatusTip(tip)
        box.setAccessibleName(text)
        box.setAccessibleDescription(tip)
        self.toggle_layout.addWidget(box)
        return box

    def _connect(self) -> None:
        chat = self.chat
        self.send_button.clicked.connect(self.send)
        self.stop_button.clicked.connect(chat.stop)
        self.send_action.triggered.connect(self.send)
        self.stop_action.triggered.connect(chat.stop)
        self.new_chat_action.triggered.connect(self.new_chat)
        self.new_button.clicked.connect(self.new_chat)
        self.rename_button.clicked.connect(self.rename_current)
        self.delete_button.clicked.connect(self.delete_current)
        self.conversation_search.textChanged.connect(lambda _: self.refresh_conversations())
        self.conversation_list.itemActivated.connect(self._open_item)
        self.conversation_list.itemClicked.connect(self._open_item)
        # clicked, not toggled: only the user's click is a choice (showing a conversation's
        # toggles sets the boxes without one)
        self.compaction_toggle.clicked.connect(
            lambda on: chat.set_toggles(evidence_compaction=on)
        )
        self.policy_toggle.clicked.connect(lambda on: chat.set_toggles(citation_policy=on))
        self.analysis_toggle.clicked.connect(lambda on: chat.set_toggles(analysis=on))
        self.no_tools_toggle.clicked.connect(
            lambda on: chat.set_toggles(no_tools=True if on else None)
        )
        self.export_answer_action.triggered.connect(self._export_answer_dialog)
        self.export_conversation_action.triggered.connect(self._export_conversation_dialog)

        chat.conversations_changed.connect(self.refresh_conversations)
        chat.current_changed.connect(self._show_record)
        chat.toggles_changed.connect(self._show_toggles)
        chat.busy_changed.connect(self._set_busy)
        chat.question_started.connect(self._question_started)
        chat.token_meter_changed.connect(self._show_tokens)
        chat.scope_changed.connect(self._update_scope)
        self.models.model_changed.connect(lambda _: self._update_model_label())
        self.models.model_changed.connect(self._update_empty)  # the first run's hint follows
        library = self.services.library
        for signal in (library.entry_changed, library.entry_removed, library.opened):
            signal.connect(self._update_empty)
        # a cited document deleted (or added back): its cards say so
        # (bound methods: disconnected when the pane goes, unlike lambdas)
        self._removed_sources: set[str] = set()
        library.entry_removed.connect(self._source_removed)
        library.entry_changed.connect(self._source_changed)
        library.opened.connect(self._mark_gone_sources)

    def _source_removed(self, key: str) -> None:
        self._removed_sources.add(key)
        self._mark_sources(key, removed=True)

    def _source_changed(self, entry: object) -> None:
        key = str(getattr(entry, "key", ""))
        if key in self._removed_sources:  # (entry_changed comes with every progress step)
            self._removed_sources.discard(key)
            self._mark_sources(key, removed=False)

    def _mark_gone_sources(self, cards: list[SourceCard] | None = None) -> None:
        """Mark the cards (all of the transcript's by default) whose document the library no
        longer lists: deleted in an earlier session, a restored conversation's card looked
        live until clicked (tester 21:10). Nothing is judged while the library is opening."""
        library = self.services.library
        if getattr(library, "is_opening", True):
            return
        for card in self.transcript.findChildren(SourceCard) if cards is None else cards:
            citation = card.citation
            gone = library.entry(citation.document_uri) is None and library.entry_for_document(citation.document_id) is None
            if gone:
                self._removed_sources.add(citation.document_uri)
                card.set_removed(True)

    def _mark_sources(self, key: str, *, removed: bool) -> None:
        for card in self.transcript.findChildren(SourceCard):
            if card.citation.document_uri == key:
                card.set_removed(removed)

    # --- conversations --------------------------------------------------------------------

    def refresh_conversations(self) -> None:
        current = self.chat.current.id if self.chat.current else None
        self.conversation_list.blockSignals(True)
        self.conversation_list.clear()
        for summary in self.chat.conversations(self.conversation_search.text()):
            item = QListWidgetItem(summary.title)
            item.setData(Qt.ItemDataRole.UserRole, summary.id)
            updated = summary.updated.astimezone().strftime("%Y-%m-%d %H:%M")
            item.setToolTip(f"{summary.title}\n{updated}")
            self.conversation_list.addItem(item)
            if summary.id == current:
                item.setSelected(True)
                self.conversation_list.setCurrentItem(item)
        self.conversation_list.blockSignals(False)
        has_current = current is not None
        self.rename_button.setEnabled(has_current)
        self.delete_button.setEnabled(has_current)

    def _open_item(self, item: QListWidgetItem) -> None:
        conversation_id = item.data(Qt.ItemDataRole.UserRole)
        if self.chat.current is None or self.chat.current.id != conversation_id:
            self.chat.open_conversation(conversation_id)

    def new_chat(self) -> None:
        self.chat.new_conversation(reuse_blank=True)  # an empty "New chat" is reused, not repeated
        self.input.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def rename_current(self, title: str | None = None) -> QInputDialog | None:
        """Rename the conversation shown: to ``title``, else as typed in a dialog (returned,
        not blocking) wide enough for a question-length title (it showed ~25 characters and
        clipped its own window title: tester 17:13)."""
        record = self.chat.current
        if record is None:
            return None
        if isinstance(title, str):
            self.chat.rename(record.id, title)
            return None
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Rename chat")
        dialog.setLabelText("Title:")
        dialog.setTextValue(record.title)
        dialog.setAccessibleName("Rename chat")
        metrics = dialog.fontMetrics()
        wanted = min(metrics.horizontalAdvance(record.title) + 80, metrics.averageCharWidth() * 90)
        dialog.resize(max(dialog.sizeHint().width(), metrics.averageCharWidth() * 50, wanted), dialog.sizeHint().height())
        dialog.textValueSelected.connect(lambda text, rid=record.id: self.chat.rename(rid, text))
        dialog.finished.connect(dialog.deleteLater)
        self.rename_dialog = dialog
        dialog.open()
        return dialog

    def delete_current(self, confirm: bool = True) -> None:
        record = self.chat.current
        if record is None:
            return
        if confirm is True and self.isVisible():
            answer = QMessageBox.question(
                self, "Delete chat", f"Delete the conversation “{record.title}”?"
            )
            if answer != QMessageBox.StandardButton.Yes:
                return
        self.chat.delete(record.id)

    def _show_record(self, record: ConversationRecord | None) -> None:
        for widget in self.turn_widgets:
            widget.deleteLater()
        self.turn_widgets = []
        self._follow_target = None
        self._anchor, self._anchor_held = None, False
        self._live = None
        self._live_question = None
        self.analysis_panel.clear()
        if record is not None:
            for turn in record.turns:
                self._add_turn_widget(turn)
                for step in turn.steps:
                    if step.ran_program:
                        self.analysis_panel.add_step(step)
            running = self.chat.running
            if running is not None and running.conversation_id == record.id:
                self._follow(running)  # back to a conversation whose answer is streaming
            elif self.turn_widgets:
                self.follow_to_sources(self.turn_widgets[-1])  # where it was left: the end
        self._show_toggles(self.chat.toggles)
        self._update_empty()
        self.refresh_conversations()
        self._update_exports()
        self._order_tabs()

    def _show_toggles(self, toggles: Any) -> None:
        for box, on in (
            (self.compaction_toggle, toggles.evidence_compaction),
            (self.policy_toggle, toggles.citation_policy),
            (self.analysis_toggle, toggles.analysis),
            (self.no_tools_toggle, toggles.no_tools is True),
        ):
            box.setChecked(bool(on))
        self.analysis_panel.setVisible(bool(toggles.analysis) or bool(self.analysis_panel.steps))

    # --- asking ---------------------------------------------------------------------------

    def send(self) -> None:
        question = self.input.toPlainText().strip()
        if not question or self.chat.busy:
            return
        if self.chat.ask(question) is not None:
            self.input.clear()

    def ask_again(self, question: str, *, search_only: bool = False, turn: TurnWidget | None = None) -> None:
        """Ask a stopped or failed question again, in the conversation shown (``search_only``:
        answered with the best passages, without the model). A failed ``turn`` was never
        saved: the new answer takes its place."""
        if self.chat.busy:
            return
        if self.chat.ask(question, search_only=search_only) is not None:
            if turn is not None and turn.failed and turn in self.turn_widgets:
                self.chat.forget(turn.turn)  # out of the saved transcript too
                self.turn_widgets.remove(turn)
                turn.hide()
                turn.deleteLater()
                self._order_tabs()

    def _question_started(self, question: Question) -> None:
        if self.chat.current is None or self.chat.current.id != question.conversation_id:
            return
        self._follow(question)

    def _follow(self, question: Question) -> None:
        """Show ``question`` in the transcript as it is answered, until its outcome."""
        self._follow_target = None
        self._anchor_held = False
        self._live = self._add_turn_widget(question.turn)
        self._live_question = question
        self._live.follow(question)
        question.text_delta.connect(lambda _text: self._stream_moved(question))
        question.step_finished.connect(lambda step: self._analysis_step(question, step))
        question.succeeded.connect(lambda turn: self._answered(question, turn))
        question.failed.connect(lambda exc: self._not_answered(question, exc))
        question.cancelled.connect(lambda: self._stopped(question))
        self._update_empty()

    def _is_live(self, question: Question) -> bool:
        return self._live is not None and self._live_question is question

    def _stream_moved(self, question: Question) -> None:
        if self._is_live(question):
            self._scroll_to_end()

    def _analysis_step(self, question: Question, step: ToolStep) -> None:
        if self._is_live(question):
            self.analysis_panel.add_step(step)
            self.analysis_panel.show()

    def _answered(self, question: Question, turn: Turn) -> None:
        if self._is_live(question):
            widget = self._live
            widget.finish(turn)  # type: ignore[union-attr]
            self._live = None
            self.follow_to_sources(widget)  # type: ignore[arg-type]
            self._order_tabs()  # its new chips and cards
        self._update_exports()

    def _not_answered(self, question: Question, exc: BaseException) -> None:
        if self._is_live(question):
            widget = self._live
            widget.fail(self.chat.describe_failure(exc))  # type: ignore[union-attr]
            self._live = None
            self.follow_to_sources(widget)  # type: ignore[arg-type]  # why, and what to do
            self._order_tabs()
        self._update_exports()  # a question was asked: the chat can be exported

    def _stopped(self, question: Question) -> None:
        if self._is_live(question):
            self._live.finish(question.turn)  # type: ignore[union-attr]
            self._live = None
            self._order_tabs()
        self._update_exports()

    def _add_turn_widget(self, turn: Turn) -> TurnWidget:
        widget = TurnWidget(turn, self.transcript, bibliography=getattr(self.services, "bibliography", None))
        widget.citation_activated.connect(self.citation_activated)
        widget.command_requested.connect(self.command_requested)
        widget.export_requested.connect(self._export_turn_dialog)
        widget.ask_again_requested.connect(lambda q, w=widget: self.ask_again(q, turn=w))
        widget.passages_requested.connect(
            lambda q, w=widget: self.ask_again(q, search_only=True, turn=w)
        )
        widget.part_focused.connect(self._show_focused)
        self._mark_gone_sources(widget.findChildren(SourceCard))
        self.transcript_layout.insertWidget(self.transcript_layout.count() - 1, widget)  # above the stretch
        self.turn_widgets.append(widget)
        # laid out and shown now: the first frame shows the whole question, not a clipped one
        widget.show()
        self.transcript_layout.activate()
        self._order_tabs()
        return widget

    def _order_tabs(self) -> None:
        """Tab goes toggles → Export → the transcript → the latest answer (its text, chips,
        source cards) → the question box → Send; Shift+Tab from the question box reaches the
        last source card first. Earlier answers are no Tab stops (their parts stay clickable)."""
        latest = self.turn_widgets[-1] if self.turn_widgets else None
        for widget in self.turn_widgets:
            widget.set_tab_stops(widget is latest)
        chain: list[QWidget] = [self.scroll]
        if latest is not None:
            chain += latest.keyboard_stops()
        chain.append(self.input)
        for first, second in zip(chain, chain[1:], strict=False):
            QWidget.setTabOrder(first, second)

    def _show_focused(self, part: QWidget) -> None:
        """A chip or source card the keyboard reached is scrolled into view (and the answer
        no longer followed: the reader is moving on their own)."""
        self._follow_target = None
        self._following = True  # our own move, not the user's scrolling
        self.scroll.ensureWidgetVisible(part, 8, 8)
        self._following = False

    def _set_busy(self, busy: bool) -> None:
        self.send_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)
        for widget in self.turn_widgets:
            for button in (widget.ask_again_button, widget.passages_button, widget.retry_button):
                button.setEnabled(not busy)

    def _show_tokens(self, tokens: int, saved: int = 0) -> None:
        if not tokens:
            self.token_meter.setText("")
            return
        text = f"{_thousands(tokens)} tokens"
        if saved:
            text += f", {_thousands(saved)} saved by compaction"
        self.token_meter.setText(text)

    def _update_model_label(self) -> None:
        self.model_label.set_full_text(self.models.describe())

    def _update_scope(self, document_ids: tuple[str, ...] | None) -> None:
        """The chat header says what the chat searches (chosen in the library's scope control)."""
        text = scope_text(document_ids, self.services.library, self.chat.scope_collection())
        self.scope_label.set_full_text(f"· {text}")
        self.scope_label.setToolTip(  # all of it, when a narrow header elides it
            f"The chat searches {text}. Tick documents or a collection in the library to "
            "choose (kept per conversation)."
        )

    def _update_empty(self, *_: object) -> None:
        self.empty_hint.setText(empty_hint_html(self._library_empty(), self.models.is_configured()))
        self.empty_hint.setVisible(not self.turn_widgets)

    def _library_empty(self) -> bool:
        library = self.services.library
        return not library.is_opening and not library.entries

    def _hint_link(self, link: str) -> None:
        scheme, _, command = link.partition(":")
        if scheme == "haiku" and command:
            self.command_requested.emit(command)

    def relayout_text(self) -> None:
        """Every answer and label of the transcript laid out again, as a resize would: the CJK
        fallback font comes in after the first paint (views/fonts.py), and text laid out
        before it (a saved conversation's Korean answer after a relaunch) was measured with
        other glyphs and drawn clipped at the right edge until the window was resized
        (tester 20:49)."""
        for view in self.transcript.findChildren(AnswerView):
            document = view.document()
            document.markContentsDirty(0, document.characterCount())
            view._fit()
        for label in self.transcript.findChildren(QLabel):
            QApplication.sendEvent(label, QEvent(QEvent.Type.FontChange))
        self.transcript.updateGeometry()

    def _scroll_to_end(self) -> None:
        self._anchor_held = False  # our own move: the end is what is shown now
        bar = self.scroll.verticalScrollBar()
        QTimer.singleShot(0, lambda: bar.setValue(bar.maximum()))

    def follow_to_sources(self, widget: TurnWidget) -> None:
        """Keep a finished answer's chips and sources in view, with as much of the answer above
        them as fits (its question first, when the whole turn fits). Sources wrap and grow
        after their first layout, so this holds while the transcript settles, until the user
        scrolls or another question starts."""
        self._anchor_held = False
        self._follow_target = widget
        QTimer.singleShot(0, self._scroll_to_target)

    def _scroll_to_target(self) -> None:
        widget = getattr(self, "_follow_target", None)
        if widget is None or widget not in self.turn_widgets:
            return
        bar = self.scroll.verticalScrollBar()
        view = self.scroll.viewport().height()
        top = widget.mapTo(self.transcript, QPoint(0, 0)).y()
        bottom = top + widget.height()
        target = top if bottom - top <= view else bottom - view
        self._following = True  # our own move, not the user's
        bar.setValue(max(0, min(bar.maximum(), target)))
        self._following = False

    def _stop_following(self, *_: Any) -> None:
        if not getattr(self, "_following", False):
            self._follow_target = None
            self._anchor_held = False  # the user scrolls: what is shown is theirs

    def _remember_anchor(self, value: int) -> None:
        if self._anchor_held:
            return
        bar = self.scroll.verticalScrollBar()
        self._anchor_at_end = bar.maximum() > 0 and value >= bar.maximum() - 2
        self._anchor = None
        for widget in self.turn_widgets:
            top = widget.mapTo(self.transcript, QPoint(0, 0)).y()
            if top <= value < top + widget.height():
                self._anchor = (widget, (value - top) / max(1, widget.height()))
                break

    def _restore_anchor(self) -> None:
        if not self._anchor_held or self._follow_target is not None:
            return
        bar = self.scroll.verticalScrollBar()
        if self._anchor_at_end:
            target = bar.maximum()
        elif self._anchor is not None and self._anchor[0] in self.turn_widgets:
            widget, into = self._anchor
            target = widget.mapTo(self.transcript, QPoint(0, 0)).y() + int(into * widget.height())
        else:
            return
        self._following = True  # our own move, not the user's
        bar.setValue(max(0, min(bar.maximum(), target)))
        self._following = False

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self.scroll.viewport() and event.type() == QEvent.Type.Resize:
            if getattr(self, "_anchor_at_end", False) and getattr(self, "_follow_target", None) is None:
                self._anchor_held = True  # shorter or taller: still at the end
                QTimer.singleShot(0, self._restore_anchor)
        if watched is self.transcript and event.type() == QEvent.Type.Resize:
            if getattr(self, "_follow_target", None) is not None:
                QTimer.singleShot(0, self._scroll_to_target)
            elif isinstance(event, QResizeEvent) and 0 < event.oldSize().width() != event.size().width():
                self._anchor_held = True  # rewrapping: the same turn at the top afterwards
                QTimer.singleShot(0, self._restore_anchor)
            elif getattr(self, "_anchor_held", False):
                QTimer.singleShot(0, self._restore_anchor)  # still settling (answers regrow)
        return super().eventFilter(watched, event)

    # --- export ---------------------------------------------------------------------------

    def _update_exports(self) -> None:
        """Export chat… for any conversation with a question asked in it (one that could not
        be answered is exported with why); Export last answer… when there is an answer."""
        record = self.chat.current
        asked = bool(record and record.turns)  # a question not answered is kept with why
        answered = record is not None and _last_answer(record) is not None
        self.export_answer_action.setEnabled(answered)
        self.export_conversation_action.setEnabled(asked)
        self.export_button.setEnabled(asked)

    def export_to(
        self, folder: str, *, whole_conversation: bool = True, turn: Turn | None = None
    ) -> Operation | None:
        """Export the conversation, or one answer (``turn``, else the last), into ``folder``,
        off the GUI thread."""
        from haiku_desk.bridge import Operation
        from haiku_desk.export import export_answer, export_conversation
        from haiku_desk.services.notifications import EXPORTED_KEY

        record = self.chat.current
        if record is None:
            return None
        whole = whole_conversation and turn is None
        answer = turn or _last_answer(record)
        if not record.turns or (not whole and answer is None):
            return None  # nothing asked (a last answer: nothing answered)
        client = self.services.library.client
        # the transcript as shown: a question not answered is in it, exported with why
        shown = list(record.turns)

        async def body(token: Any, report: Any) -> Any:
            if whole or answer is None:
                return await export_conversation(record, client, folder, turns=shown)
            return await export_answer(answer, client, folder)

        operation = Operation("Exporting the chat", body, self)
        operation.succeeded.connect(  # stays until closed: where the file went can be read
            lambda path: self.services.notifications.info(f"Exported to {path}", lasting=True, key=EXPORTED_KEY)
        )
        operation.failed.connect(
            lambda exc: self.services.notifications.report_failure("Exporting the chat", exc)
        )
        self.export_operation = operation.start()
        return operation

    def _export_turn_dialog(self, turn: Turn) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export the answer into")
        if folder:
            self.export_to(folder, turn=turn)

    def _export_answer_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export the answer into")
        if folder:
            self.export_to(folder, whole_conversation=False)

    def _export_conversation_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export the chat into")
        if folder:
            self.export_to(folder, whole_conversation=True)


EMPTY_HINT = "Ask a question about your library. Answers cite the exact pages they rest on."


def empty_hint_html(library_empty: bool, model_connected: bool) -> str:
    """What the empty chat says: on a first run what to do first (add files; connect a model
    for written answers), with the window's links; else how to ask (tester 16:49: it said
    'Ask a question about your library' on an empty library with no model)."""
    parts = []
    if library_empty:
        parts.append(
            "Your library is empty. <a href='haiku:add-files'>Add files</a> (Ctrl+O) or drop PDFs "
            "and other documents on the window, then ask about them."
        )
    else:
        parts.append(html.escape(EMPTY_HINT))
    if not model_connected:
        parts.append(
            "No chat model is connected: answers show the best passages. For written answers, "
            "connect one in <a href='haiku:models'>Settings › Models…</a>"
        )
    return "".join(f"<p>{p}</p>" for p in parts)


def _last_answer(record: ConversationRecord) -> Turn | None:
    """The conversation's last answered question (one not answered has nothing to export)."""
    return next((t for t in reversed(record.turns) if t.failure is None), None)


def scope_text(document_ids: tuple[str, ...] | None, library: Any = None, collection: str | None = None) -> str:
    """``all documents``, ``1 document: Title``, ``3 documents`` or ``no documents ticked``;
    for a collection, ``collection “Name” (3 documents)``."""
    if collection is not None and document_ids is not None:
        count = len(document_ids)
        return f"collection “{collection}” ({count} document{'s' if count != 1 else ''})"
    if document_ids is None:
        return "all documents"
    if not document_ids:
        return "no documents ticked"
    if len(document_ids) == 1:
        finder = getattr(library, "entry_for_document", None)
        entry = finder(document_ids[0]) if callable(finder) else None
        title = getattr(entry, "title", None) or getattr(entry, "name", None)
        return f"1 document: {title}" if title else "1 document"
    return f"{len(document_ids)} documents"


def _thousands(count: int) -> str:
    """``5400`` → ``5.4k``; below a thousand, the number."""
    if count < 1000:
        return str(count)
    return f"{count / 1000:.1f}k".replace(".0k", "k")
