"""The citation panel: the cited page rendered from the stored file, with the matched text
painted strong and its context faint; previous/next page, zoom, fit-width, open original.

Its header names the source author–year–page ("[1] Sørensen et al., 2021, p. 4") when the
document has authors, else by title; Copy citation (Ctrl+Shift+C) copies the quoted passage
with that citation. A document opened from the library (``show_document``) is shown the same
way, for reading, with nothing highlighted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QImage, QKeySequence, QPixmap
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from haiku_desk.citations import (
    citation_title,
    cited_pages,
    heading_path,
    opening_page,
    snippet_source,
)
from haiku_desk.services.pages import MAX_ZOOM, MIN_ZOOM, PageRender, PagesService, paint_highlights
from haiku_desk.views.markdown_tables import PassageView, shown_passage
from haiku_desk.views.widgets import ElidedLabel

if TYPE_CHECKING:
    from haiku_desk.citations import Citation
    from haiku_desk.services.bibliography import BibliographyService

HINT = "Click a citation to see the cited page."
READ_HINT = "Or double-click a document in the library to read it."
ZOOM_STEP = 1.25
DEFAULT_ZOOM = 1.25
COPY_CITATION_SHORTCUT = "Ctrl+Shift+C"


class CitationPanel(QWidget):
    scroll: QScrollArea  # type: ignore[assignment]  # the page's scroll area (QWidget.scroll, a method, is not used)
    page_shown = Signal(int)  # page number, once its image (with highlights) is on screen
    original_requested = Signal(str)  # path opened in the system viewer
    copied = Signal(str)  # what Copy citation put on the clipboard

    def __init__(
        self, pages: PagesService, parent: QWidget | None = None, *, bibliography: BibliographyService | None = None
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
        self.page_count = 0
        self.zoom = DEFAULT_ZOOM
        self.fit_width = True
        self.current_render: PageRender | None = None
        # Page widths seen so far, (document id, page) -> points: fitting needs the width
        # before the page is drawn, and pages differ (a scan of a book page, then a poster).
        self._page_widths: dict[tuple[str, int], float] = {}
        self.current_image: QImage | None = None  # the page as shown, highlights painted
        self._request = 0
        self.open_in_system_viewer = True  # tests turn this off

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
        self.zoom_out_button = button("−", "Zoom out", "Zoom out")
        self.zoom_in_button = button("+", "Zoom in", "Zoom in")
        # "Fit", not "Fit width": the page row must stay whole in a 1024×640 window's panel
        self.fit_button = button("Fit", "Fit width", "Fit the page to the panel width")
        self.fit_button.setCheckable(True)
        self.fit_button.setChecked(True)
        self.open_button = button("Open original", "Open original", "Open the original file in the system viewer")
        self.copy_button = button(
            "Copy citation",
            "Copy citation",
            "Copy the cited passage with its author–year–page citation",
            COPY_CITATION_SHORTCUT,
        )

        self.image_label = QLabel()
        self.image_label.setAccessibleName("Cited page")
        self.image_label.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.image_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        self.scroll = QScrollArea()
        self.scroll.setWidget(self.image_label)
        self.scroll.setWidgetResizable(False)
        self.scroll.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        self.scroll.setAccessibleName("Page view")

        # A long passage scrolls in its few lines instead of being cut off mid-line; its
        # tables are drawn as tables and scroll sideways when wider than the panel.
        self.snippet = PassageView()
        self.snippet.setAccessibleName("Cited passage")
        self.snippet.setMaximumHeight(120)
        self.snippet.hide()

        # The header (author–year–page, or the title) has the panel's whole width; "Copy
        # citation" and "Open original" belong to the document, on the line beneath beside
        # its title or heading path: the page row keeps its width for navigation and zoom.
        title_row = QHBoxLayout()
        title_row.addWidget(self.title, 1)
        source_row = QHBoxLayout()
        source_row.addWidget(self.headings, 1)
        source_row.addWidget(self.copy_button)
        source_row.addWidget(self.open_button)
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
        layout.addWidget(self.nav)
        layout.addWidget(self.scroll, 1)
        layout.addWidget(self.snippet)

        self.prev_button.clicked.connect(lambda: self.go_to_page(self.page - 1))
        self.next_button.clicked.connect(lambda: self.go_to_page(self.page + 1))
        self.zoom_in_button.clicked.connect(lambda: self.set_zoom(self.zoom * ZOOM_STEP))
        self.zoom_out_button.clicked.connect(lambda: self.set_zoom(self.zoom / ZOOM_STEP))
        self.fit_button.toggled.connect(self.set_fit_width)
        self.open_button.clicked.connect(self.open_original)
        self.copy_button.clicked.connect(self.copy_citation)
        pages.page_ready.connect(self._page_ready)
        pages.page_failed.connect(self._page_failed)
        pages.original_ready.connect(self._original_ready)
        self._refit = QTimer(self)
        self._refit.setSingleShot(True)
        self._refit.setInterval(120)
        self._refit.timeout.connect(self._render)
        self._update_controls()

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
        self.page_count = 0
        self.current_render = None
        self.current_image = None
        self._request = 0
        self.title.setFont(self.font())
        self.title.set_full_text(HINT)
        self.headings.set_full_text(READ_HINT)
        self.headings.show()
        self.image_label.setPixmap(QPixmap())
        self.image_label.setText("")
        # The label keeps the size of the page it showed (the scroll area does not resize it):
        # left so, a narrower window would scroll an empty panel.
        self.image_label.resize(0, 0)
        self.snippet.setText("")
        self.snippet.hide()
        self._update_controls()

    def show_citation(self, citation: Citation) -> None:
        """Show the first cited page of ``citation`` with its boxes highlighted."""
        if self.conversation_id is not None:
            self._last_shown[self.conversation_id] = citation
        self.reading = False
        self.citation = citation
        self.cited = cited_pages(citation)
        self.page = opening_page(citation)  # the match, not the context before it
        self.page_count = 0
        bold = self.title.font()  # plain while the panel only shows its hint
        bold.setBold(True)
        self.title.setFont(bold)
        self._name_source()
        passage = snippet_source(citation)
        self.snippet.setText(shown_passage(passage))
        self.snippet.show()
        self.snippet.verticalScrollBar().setValue(0)
        self.snippet.horizontalScrollBar().setValue(0)
        self._update_controls()  # Copy citation and Open original work before the page is drawn
        self._render()

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
        self.page_count = 0
        bold = self.title.font()
        bold.setBold(True)
        self.title.setFont(bold)
        self._name_source()  # its title as edited in the library, else ``title``
        self.headings.set_full_text("")
        self.headings.setVisible(True)  # holds the row of Open original
        self.snippet.setText("")
        self.snippet.hide()
        self._update_controls()
        self._render()

    def _name_source(self) -> None:
        """The header: author–year–page when the document has authors (its title moves to the
        heading line), else the title and the cited pages."""
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
        headings = heading_path(citation)
        if has_authors(record):
            assert self.bibliography is not None
            self.title.set_full_text(f"[{citation.index}] {self.bibliography.label(citation)}")
            self.headings.set_full_text(" › ".join([title, *headings]))
            self.headings.setVisible(True)
            return
        from haiku_desk.citations import matched_pages

        # the pages of the cited text itself; the pages of its widened context (``cited``)
        # are the ones the panel pages through
        pages = ", ".join(map(str, matched_pages(citation)))
        self.title.set_full_text(f"[{citation.index}] {title}", f" — p. {pages}" if pages else "")
        self.headings.set_full_text(" › ".join(headings))
        self.headings.setVisible(True)  # holds the row of Copy citation and Open original

    def _records_changed(self, document_ids: list[str]) -> None:
        if self.citation is not None and self.citation.document_id in document_ids:
            self._name_source()

    def copy_citation(self) -> str:
        """Put the cited passage, quoted, and its author–year–page citation on the clipboard."""
        from PySide6.QtWidgets import QApplication

        from haiku_desk.citations import quoted_citation

        if self.citation is None or self.reading:
            return ""
        if self.bibliography is not None:
            text = self.bibliography.citation_text(self.citation)
        else:
            text = quoted_citation(self.citation, None)
        QApplication.clipboard().setText(text)
        self.copied.emit(text)
        return text

    def go_to_page(self, page: int) -> None:
        if self.citation is None or page < 1 or (self.page_count and page > self.page_count):
            return
        self.page = page
        self._render()

    def set_zoom(self, zoom: float) -> None:
        self.fit_width = False
        self.fit_button.blockSignals(True)
        self.fit_button.setChecked(False)
        self.fit_button.blockSignals(False)
        self.zoom = max(MIN_ZOOM, min(MAX_ZOOM, zoom))
        self._render()

    def set_fit_width(self, on: bool) -> None:
        self.fit_width = on
        self.fit_button.setChecked(on)
        self._render()

    def _available_width(self) -> int:
        """The viewport's width with the vertical scroll bar shown (a fitted page is taller
        than wide), so fitting does not change when the bar appears."""
        bar = self.scroll.verticalScrollBar()
        reserve = 0 if bar.isVisible() else self.style().pixelMetric(self.style().PixelMetric.PM_ScrollBarExtent)
        return self.scroll.viewport().width() - reserve - 4

    def _page_width(self) -> float:
        """The shown page's width in points: known once any render of it arrived, else the
        last page's (documents mostly keep one size), else A4's."""
        if self.citation is not None:
            known = self._page_widths.get((self.citation.document_id, self.page))
            if known is not None:
                return known
        return self.current_render.width_pt if self.current_render is not None else 595.0

    def _target_zoom(self) -> float:
        if self.fit_width:
            width = self._available_width()
            page_width = self._page_width()
            if width > 50:
                return max(MIN_ZOOM, min(MAX_ZOOM, width / page_width))
        return self.zoom

    def render_zoom(self) -> float:
        """The zoom a page is rendered at now (pixels per point, device pixel ratio included)."""
        return self._target_zoom() * self.devicePixelRatioF()

    def _render(self) -> None:
        if self.citation is None:
            return
        zoom = self._target_zoom()
        self.zoom = zoom
        dpr = self.devicePixelRatioF()
        document_id = self.citation.document_id
        cached = self.pages.cached(document_id, self.page, zoom * dpr)
        self._request = 0
        if cached is not None:  # no round trip through the event loop
            self._display(cached)
            return
        self.page_label.setText(f"p. {self.page}{f'/{self.page_count}' if self.page_count else ''} …")
        self._request = self.pages.request(document_id, self.page, zoom * dpr)

    def _page_ready(self, request_id: int, render: PageRender) -> None:
        if request_id == self._request:
            self._display(render)

    def _page_failed(self, request_id: int, message: str) -> None:
        if request_id != self._request:
            return
        self.current_render = None
        self.current_image = None
        self.image_label.setPixmap(QPixmap())
        self.image_label.setText(message)
        self.image_label.adjustSize()
        self._update_controls()

    def _display(self, render: PageRender) -> None:
        assert self.citation is not None
        guessed = (render.document_id, render.page) not in self._page_widths
        self._page_widths[(render.document_id, render.page)] = render.width_pt
        if guessed and self.fit_width and self._refit_page(render):
            return
        self.current_render = render
        self.page_count = render.page_count
        image = paint_highlights(render, self.citation.boxes, self.citation.context_boxes)
        image.setDevicePixelRatio(self.devicePixelRatioF())
        self.current_image = image
        self.image_label.setPixmap(QPixmap.fromImage(image))
        self.image_label.resize(image.deviceIndependentSize().toSize())
        self._scroll_to_match(render)
        self._update_controls()
        self.page_shown.emit(render.page)

    def _refit_page(self, render: PageRender) -> bool:
        """Whether ``render`` was drawn for another page width than its own (the first page of
        a document of another size than the last one shown) and is asked for again, fitted."""
        fitted = PagesService.zoom_key(self._target_zoom() * self.devicePixelRatioF())
        if abs(fitted - render.zoom) <= 0.01 * render.zoom:
            return False
        self._render()
        return True

    def _scroll_to_match(self, render: PageRender) -> None:
        assert self.citation is not None
        boxes = [b for b in self.citation.boxes if b.page == render.page]
        if not boxes:
            return
        scale = self.devicePixelRatioF()
        top = min(render.to_pixels(b).top() for b in boxes) / scale
        self.scroll.verticalScrollBar().setValue(int(max(0, top - 40)))

    def _update_controls(self) -> None:
        has = self.citation is not None
        # Until a citation is shown there is nothing to page through: only the hint shows.
        self.nav.setVisible(has)
        self.open_button.setVisible(has)
        self.copy_button.setVisible(has and not self.reading)
        for b in (self.zoom_in_button, self.zoom_out_button, self.fit_button, self.open_button, self.copy_button):
            b.setEnabled(has)
        self.copy_button.setEnabled(has and not self.reading)
        self.prev_button.setEnabled(has and self.page > 1)
        self.next_button.setEnabled(has and (not self.page_count or self.page < self.page_count))
        if has:
            cited = " · cited" if self.page in self.cited else ""
            total = f"/{self.page_count}" if self.page_count else ""
            self.page_label.setText(f"p. {self.page}{total}{cited}")
            self.page_label.setAccessibleDescription(
                f"page {self.page}" + (f" of {self.page_count}" if self.page_count else "") + (", cited" if cited else "")
            )
        else:
            self.page_label.setText("")

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.fit_width and self.citation is not None:
            self._refit.start()

    # --- the original file ----------------------------------------------------------------------

    def open_original(self) -> None:
        if self.citation is not None:
            self.pages.request_original(self.citation.document_id)

    def _original_ready(self, document_id: str, path: str) -> None:
        if self.citation is None or document_id != self.citation.document_id:
            return
        self.original_requested.emit(path)
        if self.open_in_system_viewer:
            # No #page fragment: several system openers take it as part of the file name.
            QDesktopServices.openUrl(QUrl.fromLocalFile(path))
