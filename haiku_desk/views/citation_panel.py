"""The citation panel, the app's reader: a cited PDF's pages scrolled continuously with the
matched text painted strong and its context faint; a text source's own text with the passage
highlighted; zoom, fit-width, find-in-document (Ctrl+F), open original.

Its header names the source author–year–page ("[1] Sørensen et al., 2021, p. 4") when the
document has authors, else by title; Copy citation (Ctrl+Shift+C) copies the quoted passage
with that citation. A document opened from the library (``show_document``) is shown the same
way, for reading, with nothing highlighted. Every citation opens fitted to the width and
scrolled to its passage (the last one's zoom does not carry over). A citation of a document
deleted since says so and keeps its quote.

The reader can take more of the window: the ⤢ button (and View › Reader, Ctrl+Shift+R)
asks the main window for reader mode (``reader_mode_requested``).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, Qt, QUrl, Signal
from PySide6.QtGui import QAction, QDesktopServices, QImage, QKeySequence
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QStackedWidget,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from haiku_desk.citations import (
    citation_title,
    cited_pages,
    heading_path,
    opening_page,
    passage_blocks,
    snippet_source,
)
from haiku_desk.emphasis import plain_emphasis
from haiku_desk.services.pages import REMOVED_MESSAGE, PagesService
from haiku_desk.views.find_bar import FindBar
from haiku_desk.views.markdown_tables import (
    PassageView,
    colour_document,
    passage_html,
    shown_passage,
    tidy_tables,
)
from haiku_desk.views.page_reader import DEFAULT_ZOOM, ZOOM_STEP, PageReader, table_rows
from haiku_desk.views.text_reader import TextReader
from haiku_desk.views.theme import current_tokens
from haiku_desk.views.widgets import ElidedLabel

if TYPE_CHECKING:
    from PySide6.QtWidgets import QAbstractScrollArea

    from haiku_desk.citations import Citation
    from haiku_desk.services.bibliography import BibliographyService
    from haiku_desk.services.pages import DocumentLayout, FindHit, PageRender

__all__ = ["DEFAULT_ZOOM", "ZOOM_STEP", "CitationPanel", "cited_pages"]

HINT = "Click a citation to see the cited page."
READ_HINT = "Or double-click a document in the library to read it."
COPY_CITATION_SHORTCUT = "Ctrl+Shift+C"
FIND_SHORTCUT = "Ctrl+F"
# the page label's words ("p. 4/12 · cited") give way to "4/12" below this panel width
COMPACT_PAGE_LABEL_WIDTH = 300
# a page printing another number than its sheet: "p. 22 (PDF 36/352) · cited" needs this width,
# "p. 22 (36/352) •" below it
PRINTED_PAGE_LABEL_WIDTH = 360


def no_viewer_message(path: str) -> str:
    from pathlib import PurePath

    suffix = PurePath(path).suffix.lstrip(".").upper()
    kind = f"{suffix} files" if suffix else "this file"
    return f"No application on this computer opens {kind}, so the original could not be opened. It is at {path}"


class CitationPanel(QWidget):
    page_shown = Signal(int)  # page number, once its image (with highlights) is on screen
    document_shown = Signal(str)  # "pages", "text" or "removed": the document is laid out
    cleared = Signal()  # back to the hint: nothing to read (a new chat, another conversation)
    opened = Signal()  # a citation or a document opens (the panel is no longer empty)
    original_requested = Signal(str)  # path opened in the system viewer
    copied = Signal(str)  # what Copy citation put on the clipboard
    reader_mode_requested = Signal(bool)  # the ⤢ button: the reader wants (or gives back) room

    def __init__(
        self,
        pages: PagesService,
        parent: QWidget | None = None,
        *,
        bibliography: BibliographyService | None = None,
        open_url: Callable[[QUrl], bool] | None = None,
    ) -> None:
        super().__init__(parent)
        self.pages = pages
        self.bibliography = bibliography
        if bibliography is not None:
            bibliography.records_changed.connect(self._records_changed)
        self.setAccessibleName("Citation panel")
        self.citation: Citation | None = None
        # True while a library document is open for reading (no cited passage): the header is
        # its title, nothing is highlighted and there is no citation to copy.
        self.reading = False
        self.conversation_id: str | None = None  # the conversation whose citations it shows
        self._last_shown: dict[str, Citation] = {}  # per conversation: the citation last shown
        self.cited: list[int] = []
        self.page = 0
        self.layout_info: DocumentLayout | None = None
        self.current_render: PageRender | None = None
        self.current_image: QImage | None = None  # the page as shown, highlights painted
        self._layout_request = 0
        self._find_request = 0
        self._announce: int | None = None  # the page whose drawing page_shown reports
        self._scaling = False
        self._last_page_width = 595.0
        self._message: tuple[str, str, str] | None = None  # what the message shows (headline, quote, title)
        self.open_in_system_viewer = True  # tests turn this off
        # how a file is opened in the system's viewer (False: no application for it)
        self.open_url: Callable[[QUrl], bool] = open_url or QDesktopServices.openUrl

        self.title = ElidedLabel(HINT)
        self.title.setAccessibleName("Cited document")
        self.headings = ElidedLabel(READ_HINT)  # until a citation is shown: the second hint
        self.headings.setAccessibleName("Heading path")

        def button(text: str, name: str, tip: str, shortcut: str | None = None) -> QToolButton:
            b = QToolButton()
            b.setText(text)
            b.setAccessibleName(name)
            b.setToolTip(tip + (f" ({shortcut})" if shortcut else ""))
            if shortcut:
                b.setShortcut(QKeySequence(shortcut))
            return b

        self.prev_button = button("◀", "Previous page", "Previous page")
        self.next_button = button("▶", "Next page", "Next page")
        self.page_label = QLabel()
        self.page_label.setAccessibleName("Page number")
        self.zoom_out_button = button("−", "Zoom out", "Zoom out (−, Ctrl+wheel)")
        self.zoom_in_button = button("+", "Zoom in", "Zoom in (+, Ctrl+wheel)")
        # "Fit", not "Fit width": the page row must stay whole in a 1024×640 window's panel
        self.fit_button = button("Fit", "Fit width", "Fit the page to the panel width")
        self.fit_button.setCheckable(True)
        self.fit_button.setChecked(True)
        self.reader_button = button("⤢", "Reader mode", "Give the reader the room of the library and the conversation list")
        self.reader_button.setCheckable(True)
        self.open_button = button("Open original", "Open original", "Open the original file in the system viewer")
        self.copy_button = button(
            "Copy citation",
            "Copy citation",
            "Copy the cited passage with its author–year–page citation",
            COPY_CITATION_SHORTCUT,
        )
        # In a narrow panel the two show their icons only (names and tooltips kept), rather
        # than words elided to "Cop…ion" (see _fit_header)
        from haiku_desk.views.icons import set_icon

        for b, icon_name in ((self.copy_button, "copy"), (self.open_button, "open-external")):
            set_icon(b, icon_name)
            b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.compact = False  # True while the header's buttons show icons only
        self._short_page_label = False  # "4/12 •" rather than "p. 4/12 · cited"
        self._narrow_printed_label = False  # "p. 22 (36/352) •" rather than "p. 22 (PDF 36/352) · cited"

        self.reader = PageReader(pages)
        self.text_reader = TextReader()
        self.message = QTextBrowser()  # a removed document, a failure: words, wrapped
        self.message.setAccessibleName("Reader message")
        self.message.setOpenLinks(False)
        self.stack = QStackedWidget()
        for widget in (self.reader, self.text_reader, self.message):
            self.stack.addWidget(widget)
        self._no_label = QLabel()  # image_label when no page is laid out

        # "No application opens PDF files": said in the panel, where the button was pressed
        self.notice = QLabel()
        self.notice.setAccessibleName("Reader notice")
        self.notice.setWordWrap(True)
        self.notice.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notice_row = QWidget()
        self.notice_row.setObjectName("reader-notice")  # a warning's tint, readable in light and dark
        self.notice_row.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.notice_row.setStyleSheet("#reader-notice { background: rgba(230, 160, 0, 0.18); border-radius: 4px; }")
        dismiss = button("✕", "Dismiss", "Dismiss")
        dismiss.setAutoRaise(True)
        dismiss.clicked.connect(lambda: self.notice_row.hide())
        notice_layout = QHBoxLayout(self.notice_row)
        notice_layout.setContentsMargins(6, 4, 2, 4)
        notice_layout.addWidget(self.notice, 1)
        notice_layout.addWidget(dismiss, 0, Qt.AlignmentFlag.AlignTop)
        self.notice_row.hide()

        self.find_bar = FindBar()
        self.find_bar.hide()

        # A long passage scrolls in its few lines instead of being cut off mid-line; its
        # tables are drawn as tables and scroll sideways when wider than the panel.
        self.snippet = PassageView()
        self.snippet.setAccessibleName("Cited passage")
        self.snippet.setMaximumHeight(120)
        self.snippet.hide()

        # The header (author–year–page, or the title) has the panel's whole width; "Copy
        # citation" and "Open original" belong to the document, on the line beneath beside its
        # title or heading path, and so does reader mode (⤢); the page row keeps its width for
        # navigation and zoom (a 1024×640 window's panel has no room for more). Find is Ctrl+F
        # and the page's context menu.
        title_row = QHBoxLayout()
        title_row.addWidget(self.title, 1)
        # the heading path has a line of its own (beside the buttons it was squeezed to "N…")
        source_row = QVBoxLayout()
        source_row.setSpacing(2)
        source_row.addWidget(self.headings)
        buttons_row = self.buttons_row = QHBoxLayout()
        buttons_row.addWidget(self.copy_button)
        buttons_row.addWidget(self.open_button)
        buttons_row.addStretch(1)
        buttons_row.addWidget(self.reader_button)
        source_row.addLayout(buttons_row)
        self.nav = QWidget()
        nav = QHBoxLayout(self.nav)
        nav.setContentsMargins(0, 0, 0, 0)
        nav.setSpacing(2)
        for w in (self.prev_button, self.page_label, self.next_button):
            nav.addWidget(w)
        nav.addStretch(1)
        for w in (self.zoom_out_button, self.zoom_in_button, self.fit_button):
            nav.addWidget(w)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(title_row)
        layout.addLayout(source_row)
        layout.addWidget(self.notice_row)
        layout.addWidget(self.find_bar)
        layout.addWidget(self.nav)
        layout.addWidget(self.stack, 1)
        layout.addWidget(self.snippet)

        self.prev_button.clicked.connect(lambda: self.go_to_page(self.page - 1))
        self.next_button.clicked.connect(lambda: self.go_to_page(self.page + 1))
        self.zoom_in_button.clicked.connect(lambda: self.set_zoom(self.zoom * ZOOM_STEP))
        self.zoom_out_button.clicked.connect(lambda: self.set_zoom(self.zoom / ZOOM_STEP))
        self.fit_button.toggled.connect(self.set_fit_width)
        self.open_button.clicked.connect(self.open_original)
        self.copy_button.clicked.connect(self.copy_citation)
        self.reader_button.toggled.connect(self.reader_mode_requested.emit)
        self.find_bar.search.connect(self.find_text)
        self.find_bar.step.connect(self.step_find)
        self.find_bar.closed.connect(self._find_closed)
        self.reader.page_changed.connect(self._page_changed)
        self.reader.page_drawn.connect(self._page_drawn)
        self.reader.page_failed.connect(self._page_drawing_failed)
        self.reader.scale_changed.connect(self._scale_changed)
        pages.layout_ready.connect(self._layout_ready)
        pages.page_failed.connect(self._layout_failed)
        pages.found.connect(self._found)
        pages.original_ready.connect(self._original_ready)

        def shortcut(keys: str | QKeySequence.StandardKey, slot: Callable[[], object], name: str) -> QAction:
            action = QAction(name, self)
            action.setShortcut(QKeySequence(keys))
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.triggered.connect(slot)
            self.addAction(action)
            return action

        self.find_action = shortcut(FIND_SHORTCUT, self.open_find, "Find in document…")
        zoom_in = shortcut("Ctrl++", lambda: self.zoom_in_button.click(), "Zoom in")
        shortcut("Ctrl+=", lambda: self.zoom_in_button.click(), "Zoom in")
        zoom_out = shortcut("Ctrl+-", lambda: self.zoom_out_button.click(), "Zoom out")
        fit = shortcut("Ctrl+0", lambda: self.set_fit_width(True), "Fit width")
        # the page's context menu: find, zoom (a text source's menu adds find to its own)
        self.reader.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        for action in (self.find_action, zoom_in, zoom_out, fit):
            self.reader.addAction(action)
        self.text_reader.extra_actions.append(self.find_action)
        self.clear()  # the hint

    # --- fitting the header to the width -----------------------------------------------------------

    def _full_header_width(self) -> int:
        """The width the buttons' row needs with their words shown."""
        spacing = max(0, self.buttons_row.spacing())
        needed = 0
        for b in (self.copy_button, self.open_button, self.reader_button):
            if b.isHidden():
                continue
            style = b.toolButtonStyle()
            if b is not self.reader_button:
                b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
            needed += b.sizeHint().width() + spacing
            b.setToolButtonStyle(style)
        return needed

    def _fit_header(self) -> None:
        """Icons only (tooltips and accessible names kept) when the words do not fit whole."""
        layout = self.layout()
        margins = layout.contentsMargins() if layout is not None else None
        inner = self.width() - (margins.left() + margins.right() if margins is not None else 0)
        compact = inner < self._full_header_width()
        style = Qt.ToolButtonStyle.ToolButtonIconOnly if compact else Qt.ToolButtonStyle.ToolButtonTextBesideIcon
        for b in (self.copy_button, self.open_button):
            if b.toolButtonStyle() != style:
                b.setToolButtonStyle(style)
        self.compact = compact
        short = self.width() < COMPACT_PAGE_LABEL_WIDTH
        narrow = self.width() < PRINTED_PAGE_LABEL_WIDTH
        if short != self._short_page_label or narrow != self._narrow_printed_label:
            self._short_page_label = short
            self._narrow_printed_label = narrow
            self._update_controls()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_header()

    # --- compatibility with the one-page panel's callers -------------------------------------------

    @property
    def scroll(self) -> QAbstractScrollArea:  # type: ignore[override]  # QWidget.scroll (a method) is not used
        """The view that scrolls: the pages, or a text source's text."""
        widget = self.stack.currentWidget()
        return widget if widget is not None else self.reader  # type: ignore[return-value]

    @property
    def image_label(self) -> QLabel:
        """The current page's image (its text says why when it could not be drawn)."""
        labels = self.reader._labels
        if self.stack.currentWidget() is self.reader and 1 <= self.page <= len(labels):
            return labels[self.page - 1]
        return self._no_label

    @property
    def page_count(self) -> int:
        return self.reader.page_count if self._shows_pages() else 0

    @property
    def zoom(self) -> float:
        return self.reader.scale_for(self.page) if self._shows_pages() and self.page else self.reader.zoom

    @property
    def fit_width(self) -> bool:
        return self.reader.fit

    def _available_width(self) -> int:
        return self.reader.available_width()

    def _shows_pages(self) -> bool:
        return self.layout_info is not None and self.layout_info.kind == "pages"

    # --- showing ----------------------------------------------------------------------------

    def follow_conversation(self, record: object | None) -> None:
        """Show the citation last shown in the conversation now shown (``record``, with an
        ``id``), or nothing: a page cited elsewhere must not look like this one's."""
        conversation_id = getattr(record, "id", None)
        if conversation_id == self.conversation_id and conversation_id is not None:
            return
        self.conversation_id = conversation_id
        if self.reading:  # a document opened from the library belongs to no conversation
            return
        last = self._last_shown.get(conversation_id) if conversation_id else None
        if last is not None:
            self.show_citation(last)
        else:
            self.clear()

    def clear(self) -> None:
        """Back to the hint: no citation, no page."""
        self.citation = None
        self.reading = False
        self.cited = []
        self.page = 0
        self.layout_info = None
        self.current_render = None
        self.current_image = None
        self._layout_request = 0
        self._announce = None
        self.reader.clear()
        self.stack.setCurrentWidget(self.reader)
        self.title.setFont(self.font())
        self.title.set_full_text(HINT)
        self.headings.set_full_text(READ_HINT)
        # the hint is read in full, wrapped, in the reader's place (one-line labels clipped it)
        self.title.hide()
        self.headings.hide()
        self._message = None
        self.message.setHtml(f"<p>{html.escape(HINT)}</p><p>{html.escape(READ_HINT)}</p>")
        self.stack.setCurrentWidget(self.message)
        self.notice_row.hide()
        self._close_find_quietly()
        self.snippet.setText("")
        self.snippet.hide()
        self._update_controls()
        self.cleared.emit()

    def show_citation(self, citation: Citation) -> None:
        """Open ``citation``'s document at its passage (highlighted), fitted to the width."""
        if self.conversation_id is not None:
            self._last_shown[self.conversation_id] = citation
        self.reading = False
        self.citation = citation
        self.cited = cited_pages(citation)
        self.page = opening_page(citation)  # the match, not the context before it
        self._open()

    def show_document(self, document_id: str, title: str, page: int = 1) -> None:
        """Open a library document for reading at ``page``: its pages, nothing highlighted.

        The panel's page machinery works on a citation, so the document is shown through one
        that cites nothing (no boxes, no passage); ``reading`` keeps it from being worded or
        copied as a citation.
        """
        from haiku_desk.citations import reading_citation

        self.citation = reading_citation(document_id, title)
        self.reading = True
        self.cited = []
        self.page = max(1, page)
        self._open()

    def _open(self) -> None:
        citation = self.citation
        assert citation is not None
        self.opened.emit()
        self.layout_info = None
        self.current_render = None
        self.current_image = None
        self.notice_row.hide()
        self.title.show()
        self._close_find_quietly()
        bold = self.title.font()  # plain while the panel only shows its hint
        bold.setBold(True)
        self.title.setFont(bold)
        self._name_source()
        if self.reading:
            self.headings.set_full_text("")
            self.headings.setVisible(False)
            self.snippet.setText("")
            self.snippet.hide()
        else:
            self.snippet.setText(shown_passage(snippet_source(citation)))
            self.snippet.show()
            self.snippet.verticalScrollBar().setValue(0)
            self.snippet.horizontalScrollBar().setValue(0)
        self._update_controls()  # Copy citation and Open original work before the page is drawn
        layout = self.pages.cached_layout(citation.document_id)
        if layout is not None:  # a prefetched citation: shown before the event loop runs again
            self._layout_request = 0
            self._apply_layout(layout)
        else:
            from haiku_desk.citations import page_place

            self.page_label.setText(f"{page_place(self.page, citation.page_labels)} …")
            self._layout_request = self.pages.request_layout(citation.document_id)

    def _layout_ready(self, request_id: int, layout: DocumentLayout) -> None:
        if request_id == self._layout_request and self.citation is not None:
            self._layout_request = 0
            self._apply_layout(layout)

    def _layout_failed(self, request_id: int, message: str) -> None:
        if request_id == self._layout_request and request_id:
            self._layout_request = 0
            self._show_message("This document could not be opened.", message)

    def _apply_layout(self, layout: DocumentLayout) -> None:
        citation = self.citation
        assert citation is not None
        self.layout_info = layout
        if layout.kind == "removed":
            quote = "" if self.reading else snippet_source(citation)
            self._show_message(f"{REMOVED_MESSAGE}.", quote, citation_title(citation))
            self.document_shown.emit("removed")
            return
        if layout.kind == "text":
            self._name_source()  # no pages to name
            self.stack.setCurrentWidget(self.text_reader)
            found = self.text_reader.show_text(layout.text, "" if self.reading else snippet_source(citation))
            # the passage is highlighted in the text; shown beneath only when it was not found
            self.snippet.setVisible(not self.reading and not found)
            self._update_controls()
            self.document_shown.emit("text")
            return
        self.stack.setCurrentWidget(self.reader)
        boxes = [] if self.reading else list(citation.boxes)
        self.page = max(1, min(self.page, layout.page_count))
        self._announce = self.page
        self._scaling = True
        try:
            self.reader.set_document(
                layout, boxes, [] if self.reading else list(citation.context_boxes), self._focus(citation, boxes)
            )
            self.reader.show_page(self.page, passage=bool(boxes))
        finally:
            self._scaling = False
        self._update_controls()
        self.document_shown.emit("pages")
        self._announce_if_drawn()

    @staticmethod
    def _focus(citation: Citation, boxes: list) -> list:
        """What of the passage the reader keeps in view when all of it does not fit: a table
        chunk's cited rows (its boxes are the header's first, maybe far above them)."""
        blocks = passage_blocks(snippet_source(citation)) if boxes else []
        return table_rows(boxes) if any(not isinstance(b, str) and b.rows for b in blocks) else []

    def _show_message(self, headline: str, quote: str = "", title: str = "") -> None:
        self._message = (headline, quote, title)
        self._draw_message()
        self.stack.setCurrentWidget(self.message)
        self.snippet.hide()  # the quote is in the message
        self._update_controls()

    def _draw_message(self) -> None:
        """The message in the scheme's colours (drawn again when the scheme changes)."""
        if self._message is None:
            return
        headline, quote, title = self._message
        parts = [f"<p style='font-size: large;'><b>{html.escape(headline)}</b></p>"]
        if quote:
            parts.append("<p>The cited passage:</p>")
            if all(isinstance(block, str) for block in passage_blocks(quote)):
                quote = plain_emphasis(" ".join(quote.split()))  # a document's "**" is no text to read
                parts.append(f"<blockquote><i>“{html.escape(quote)}”</i></blockquote>")
            else:  # its tables as tables (its lines joined, their pipes showed as text)
                parts.append(f"<blockquote><i>{passage_html(shown_passage(quote))}</i></blockquote>")
        if title:  # secondary, in the scheme's AA colour (grey was 3.6:1 on the light window)
            secondary = current_tokens().text_secondary
            parts.append(f"<p style='color: {secondary};'>Cited as {html.escape(title)}</p>")
        self.message.setHtml("".join(parts))
        tidy_tables(self.message.document())  # short cells whole, a wide table scrolls sideways
        colour_document(self.message.document())  # its table in the scheme's colours

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self.stack.currentWidget() is self.message:
            self._draw_message()  # View › Appearance: the message's colours follow

    def message_text(self) -> str:
        return self.message.toPlainText() if self.stack.currentWidget() is self.message else ""

    def _name_source(self) -> None:
        """The header: author–year–page when the document has authors (its title moves to the
        heading line), else the title and the cited pages (none for a source without pages)."""
        citation = self.citation
        if citation is None:
            return
        if self.reading:
            title = self.bibliography.title(citation.document_id) if self.bibliography else None
            self.title.set_full_text(title or citation.document_title or "")
            return
        from haiku_desk.citations import has_authors

        record = self.bibliography.record(citation.document_id) if self.bibliography else None
        title = (self.bibliography.title(citation.document_id) if self.bibliography else None) or citation_title(citation)
        # the place is plain text: a document's "**" in its headings dropped, as on source cards
        title = plain_emphasis(title)
        headings = [h for h in map(plain_emphasis, heading_path(citation)) if h]
        if has_authors(record):
            assert self.bibliography is not None
            self.title.set_full_text(f"[{citation.index}] {self.bibliography.label(citation)}")
            self.headings.set_full_text(" › ".join([title, *headings]))
            self.headings.setVisible(True)
            return
        from haiku_desk.citations import reader_pages

        # the pages of the cited text itself (as printed, with the PDF's numbers when they
        # differ: "p. 22 (PDF 36)"); the pages of its widened context (``cited``) are the
        # ones the panel pages through
        text_source = self.layout_info is not None and self.layout_info.kind != "pages"
        pages = "" if text_source else reader_pages(citation)
        self.title.set_full_text(f"[{citation.index}] {title}", f" — {pages}" if pages else "")
        self.headings.set_full_text(" › ".join(headings))
        self.headings.setVisible(bool(headings))

    def _records_changed(self, document_ids: list[str]) -> None:
        if self.citation is not None and self.citation.document_id in document_ids:
            self._name_source()

    def copy_citation(self) -> str:
        """Put the cited passage, quoted, and its author–year–page citation on the clipboard."""
        from PySide6.QtWidgets import QApplication

        from haiku_desk.citations import quoted_citation

        if self.citation is None or self.reading:
            return ""
        # the passage as the panel shows it: a document's "**" / "__" dropped
        quoted = self.citation.model_copy(
            update={
                "content": plain_emphasis(self.citation.content),
                "matched_text": plain_emphasis(self.citation.matched_text) if self.citation.matched_text else None,
            }
        )
        if self.bibliography is not None:
            text = self.bibliography.citation_text(quoted)
        else:
            text = quoted_citation(quoted, None)
        QApplication.clipboard().setText(text)
        self.copied.emit(text)
        return text

    # --- pages, zoom --------------------------------------------------------------------------------

    def go_to_page(self, page: int) -> None:
        if not self._shows_pages() or page < 1 or page > self.page_count:
            return
        self.page = page
        self._announce = page
        self.reader.show_page(page)
        self._update_controls()
        self._announce_if_drawn()

    def set_zoom(self, zoom: float) -> None:
        self._scale(False, zoom)

    def set_fit_width(self, on: bool) -> None:
        self._scale(on, None if on else self.zoom)

    def _scale(self, fit: bool, zoom: float | None) -> None:
        self._announce = self.page
        self._scaling = True  # announced here, not again by scale_changed
        try:
            self.reader.set_scale(fit, zoom)
        finally:
            self._scaling = False
        self._announce_if_drawn()

    def render_zoom(self) -> float:
        """The zoom the next citation's page will be rendered at (fitted: pixels per point,
        device pixel ratio included), for rendering it ahead."""
        shown = self.stack.currentWidget() is self.reader
        outer = None if shown else self.stack.contentsRect().width()  # its width once shown
        return self.reader.fit_scale(self._last_page_width, outer) * self.devicePixelRatioF()

    def _scale_changed(self) -> None:
        self.fit_button.blockSignals(True)
        self.fit_button.setChecked(self.reader.fit)
        self.fit_button.blockSignals(False)
        if self._announce is None and self._shows_pages() and not self._scaling:
            self._announce = self.page  # Ctrl+wheel, +/-: the page is shown again, redrawn
            self._announce_if_drawn()

    def _page_changed(self, page: int) -> None:
        self.page = page
        drawn = self.reader.drawn.get(page)
        if drawn is not None:
            self.current_render, self.current_image = drawn[1], drawn[2]
        self._update_controls()
        self._announce_if_drawn()

    def _page_drawn(self, page: int) -> None:
        if page == self.page:
            drawn = self.reader.drawn[page]
            self.current_render, self.current_image = drawn[1], drawn[2]
            self._last_page_width = drawn[1].width_pt
        self._announce_if_drawn()

    def _page_drawing_failed(self, page: int, _message: str) -> None:
        if page == self.page:
            self.current_render = None
            self.current_image = None
            self._update_controls()

    def _announce_if_drawn(self) -> None:
        page = self._announce
        if page is None or page != self.page:
            return
        drawn = self.reader.drawn.get(page)
        if drawn is None or drawn[0] != self.reader.key_for(page):
            return
        self._announce = None
        self.current_render, self.current_image = drawn[1], drawn[2]
        self._last_page_width = drawn[1].width_pt
        self._update_controls()
        self.page_shown.emit(page)

    def _update_controls(self) -> None:
        has = self.citation is not None
        pages = self._shows_pages()
        waiting = has and self.layout_info is None
        # Until a citation is shown there is nothing to page through: only the hint shows. A
        # source without pages has no page controls at all.
        removed = self.layout_info is not None and self.layout_info.kind == "removed"
        # a source without pages has no page controls at all
        self.nav.setVisible(has and (pages or waiting))
        self.reader_button.setVisible(has)
        self.open_button.setVisible(has and not removed)
        self.copy_button.setVisible(has and not self.reading)
        if has:
            self._fit_header()  # a button shown or hidden: the words may fit now, or not
        self.find_action.setEnabled(has and not removed)
        for b in (self.zoom_in_button, self.zoom_out_button, self.fit_button):
            b.setEnabled(pages)
        self.open_button.setEnabled(has)
        self.copy_button.setEnabled(has and not self.reading)
        self.prev_button.setEnabled(pages and self.page > 1)
        self.next_button.setEnabled(pages and self.page < self.page_count)
        if pages:
            cited = " · cited" if self.page in self.cited else ""
            # the page as printed when it prints another number: "p. 22 (PDF 36/352)"
            printed = self.layout_info.page_labels.get(self.page) if self.layout_info is not None else None
            if self._short_page_label:  # the words give way to the numbers
                self.page_label.setText(f"{self.page}/{self.page_count}{' •' if cited else ''}")
            elif printed and self._narrow_printed_label:  # the longer words give way first
                self.page_label.setText(f"p. {printed} ({self.page}/{self.page_count}){' •' if cited else ''}")
            elif printed:
                self.page_label.setText(f"p. {printed} (PDF {self.page}/{self.page_count}){cited}")
            else:
                self.page_label.setText(f"p. {self.page}/{self.page_count}{cited}")
            where = f"{self.page} of {self.page_count}" + (f", printed {printed}" if printed else "")
            self.page_label.setToolTip(f"Page {where}" + (", cited" if cited else ""))
            self.page_label.setAccessibleDescription(f"page {where}" + (", cited" if cited else ""))
        elif not waiting:
            self.page_label.setText("")

    # --- find-in-document ---------------------------------------------------------------------

    def open_find(self) -> None:
        if self.citation is None or (self.layout_info is not None and self.layout_info.kind == "removed"):
            return
        self.find_bar.open_bar()

    def find_text(self, text: str) -> None:
        """Mark ``text`` in the document: a PDF's pages searched by the pages service (its
        stored original), a text source's text here."""
        if self.layout_info is None or self.citation is None:
            return
        if self.layout_info.kind == "text":
            total = self.text_reader.find_text(text)
            self.find_bar.show_count(self.text_reader.find_index, total)
        elif self.layout_info.kind == "pages":
            if not text:
                self._find_request = 0
                self.reader.set_find_hits([])
                self.find_bar.show_count(-1, 0)
                return
            self._find_request = self.pages.request_find(self.citation.document_id, text)

    def _found(self, request_id: int, hits: list[FindHit]) -> None:
        if request_id != self._find_request or not self._shows_pages():
            return
        self._find_request = 0
        self.reader.set_find_hits(hits, from_page=self.page)
        self.find_bar.show_count(self.reader.find_index, len(hits))
        self._update_controls()

    def step_find(self, step: int) -> None:
        if self.layout_info is None:
            return
        if self.layout_info.kind == "text":
            self.text_reader.step_find(step)
            self.find_bar.show_count(self.text_reader.find_index, len(self.text_reader.find_hits))
        else:
            self.reader.step_find(step)
            self.find_bar.show_count(self.reader.find_index, len(self.reader.find_hits))

    def _find_closed(self) -> None:
        self._find_request = 0
        if self.layout_info is not None and self.layout_info.kind == "text":
            self.text_reader.find_text("")
        elif self._shows_pages():
            self.reader.set_find_hits([])
        self.scroll.setFocus(Qt.FocusReason.OtherFocusReason)

    def _close_find_quietly(self) -> None:
        self.find_bar.blockSignals(True)
        self.find_bar.close_bar()
        self.find_bar.edit.clear()
        self.find_bar.blockSignals(False)
        self._find_request = 0

    # --- the original file ----------------------------------------------------------------------

    def open_original(self) -> None:
        if self.citation is not None:
            self.notice_row.hide()
            self.pages.request_original(self.citation.document_id)

    def _original_ready(self, document_id: str, path: str) -> None:
        if self.citation is None or document_id != self.citation.document_id:
            return
        self.original_requested.emit(path)
        if self.open_in_system_viewer:
            # No #page fragment: several system openers take it as part of the file name.
            if not self.open_url(QUrl.fromLocalFile(path)):
                self.notice.setText(no_viewer_message(path))
                self.notice_row.show()
