"""A PDF's pages one under the other, scrolled continuously: the cited passage highlighted,
find-in-document's matches marked, zoom that keeps what the reader looks at in view.

Pages are laid out from their sizes before any is drawn (``DocumentLayout``), so the scroll bar
is the document's length at once; only the pages near the viewport are rendered (by
``PagesService``, off the GUI thread) and pages far away are dropped again. A page not drawn at
the current zoom yet shows its last image stretched, or blank paper.

Zoom is pixels per point. "Fit width" fits each page to the viewport's width (a book's scan
and a wide table page each fill it); zooming keeps a point fixed in the viewport: the cited
passage when it is on screen, the mouse for Ctrl+wheel, else the viewport's centre.

A passage too large for the viewport keeps its ``focus`` in view: a table chunk's boxes are its
header's and then its rows' (a row low on a page, the header at its top), and the cited rows
are what the reader came for (``table_rows``); without a focus, the passage's top-left.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint, QPointF, QRect, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QImage, QKeyEvent, QPainter, QPalette, QPixmap, QWheelEvent
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QWidget

from haiku_desk.services.pages import MAX_ZOOM, MIN_ZOOM, PagesService, paint_highlights

if TYPE_CHECKING:
    from collections.abc import Sequence

    from haiku_desk.services.pages import DocumentLayout, FindHit, PageRender

PAGE_GAP = 10  # pixels between pages
MARGIN = 8  # pixels around the pages
ZOOM_STEP = 1.25
DEFAULT_ZOOM = 1.25
PASSAGE_TOP = 40  # a passage scrolled to sits this far below the viewport's top
KEEP_AROUND = 2  # drawn pages kept beyond those near the viewport (each way)
FIND_FILL = QColor(40, 110, 235, 60)
FIND_CURRENT_FILL = QColor(40, 110, 235, 120)
FIND_CURRENT_EDGE = QColor(20, 80, 200)


def table_rows(boxes: Sequence) -> list:
    """The boxes of a table passage's rows apart from its header's: the last run of boxes that
    touch each other down the page (the header, or caption and header, come first). Empty when
    the rows follow the header directly (the whole passage is one run)."""
    runs: list[list] = []
    bottom, line = 0.0, 0.0
    for box in boxes:
        height = box.y1 - box.y0
        if not runs or box.page != runs[-1][-1].page or box.y0 > bottom + max(line, height) or box.y1 < runs[-1][0].y0:
            runs.append([])
            bottom, line = box.y1, height
        runs[-1].append(box)
        bottom, line = max(bottom, box.y1), max(line, height)
    return runs[-1] if len(runs) > 1 else []


@dataclass(frozen=True)
class Spot:
    """A point of the document: page (1-based) and PDF points on it."""

    page: int
    x: float
    y: float


class PageReader(QScrollArea):
    """The pages of one PDF, continuous; see the module's docstring."""

    page_changed = Signal(int)  # the page in the middle of the viewport changed (scrolling)
    page_drawn = Signal(int)  # a page's image at the current zoom went on screen
    page_failed = Signal(int, str)  # page, why it could not be drawn
    scale_changed = Signal()  # zoom or fit changed (the panel's buttons follow)

    def __init__(self, pages: PagesService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.pages = pages
        self.document_id: str | None = None
        self.sizes: tuple[tuple[float, float], ...] = ()
        self.fit = True
        self.zoom = DEFAULT_ZOOM
        self.matched: list = []  # Box, strong
        self.context: list = []  # Box, faint
        self.focus: list = []  # Box: the part of the passage kept in view when all of it does not fit
        self.find_hits: list[FindHit] = []
        self.find_index = -1
        self.current = 1
        self._labels: list[QLabel] = []
        self._rects: list[QRect] = []
        self._scales: list[float] = []
        # page -> (zoom key, render, the image shown: highlights and find matches painted)
        self.drawn: dict[int, tuple[float, PageRender, QImage]] = {}
        self._requests: dict[int, tuple[str, int, float]] = {}  # request id -> (document, page, key)
        self._in_flight: set[tuple[str, int, float]] = set()
        self._moving = False  # scrolling on purpose: the current page is set, not guessed

        self.container = QWidget()
        self.container.setAccessibleName("Pages")
        self.setWidget(self.container)
        self.setWidgetResizable(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setAccessibleName("Page view")
        self.verticalScrollBar().setSingleStep(24)
        self.verticalScrollBar().valueChanged.connect(self._scrolled)
        self.horizontalScrollBar().valueChanged.connect(self._scrolled)
        pages.page_ready.connect(self._page_ready)
        pages.page_failed.connect(self._page_failure)
        # while a splitter is dragged the pages stretch; they are drawn anew once it rests
        self._render_soon = QTimer(self)
        self._render_soon.setSingleShot(True)
        self._render_soon.setInterval(120)
        self._render_soon.timeout.connect(self.render_visible)

    # --- the document --------------------------------------------------------------------------

    def clear(self) -> None:
        self.document_id = None
        self.sizes = ()
        self.matched, self.context, self.find_hits, self.find_index = [], [], [], -1
        self.focus = []
        self.drawn.clear()
        self._requests.clear()
        self._in_flight.clear()
        for label in self._labels:
            label.deleteLater()
        self._labels, self._rects, self._scales = [], [], []
        self.container.resize(0, 0)
        self.setBackgroundRole(QPalette.ColorRole.Window)  # no document: no grey desk

    def set_document(
        self, layout: DocumentLayout, matched: Sequence = (), context: Sequence = (), focus: Sequence = ()
    ) -> None:
        """Lay out ``layout``'s pages (fitted to the width: a new document never inherits the
        last one's zoom) with ``matched`` and ``context`` boxes to highlight; ``focus``: the
        matched boxes kept in view when the passage does not fit (see the module's docstring)."""
        same = layout.document_id == self.document_id and layout.page_sizes == self.sizes
        if not same:
            self.clear()
            self.document_id = layout.document_id
            self.sizes = layout.page_sizes
            self.setBackgroundRole(QPalette.ColorRole.Mid)  # pages on a grey desk, as viewers show them
            for number in range(1, len(self.sizes) + 1):
                label = QLabel(self.container)
                label.setScaledContents(True)
                label.setAutoFillBackground(True)
                label.setAlignment(Qt.AlignmentFlag.AlignCenter)
                label.setWordWrap(True)
                palette = label.palette()
                palette.setColor(QPalette.ColorRole.Window, QColor("white"))
                palette.setColor(QPalette.ColorRole.WindowText, QColor(90, 90, 90))
                label.setPalette(palette)
                label.setAccessibleName(f"Page {number}")
                label.show()
                self._labels.append(label)
        self.matched, self.context, self.focus = list(matched), list(context), list(focus)
        self.find_hits, self.find_index = [], -1
        self.fit = True
        for page in list(self.drawn):
            self._compose(page)  # the same pages, other highlights
        self._lay_out()
        self.scale_changed.emit()

    @property
    def page_count(self) -> int:
        return len(self.sizes)

    # --- geometry ------------------------------------------------------------------------------

    def available_width(self, outer_width: int | None = None) -> int:
        """The width a fitted page gets: the viewport's, less the vertical scroll bar (shown or
        about to be: a fitted page is taller than wide) and the margins. ``outer_width``: the
        reader's width once shown (a hidden page of a stack keeps a stale viewport size)."""
        bar = self.verticalScrollBar()
        reserve = 0 if bar.isVisible() else self.style().pixelMetric(self.style().PixelMetric.PM_ScrollBarExtent)
        viewport = self.viewport().width() if outer_width is None else outer_width - 2 * self.frameWidth()
        return viewport - reserve - 2 * MARGIN

    def scale_for(self, page: int) -> float:
        """Pixels per point of ``page`` (1-based) at the current zoom or fit."""
        if self.fit and self.sizes:
            width = self.available_width()
            if width > 50:
                return max(MIN_ZOOM, min(MAX_ZOOM, width / self.sizes[page - 1][0]))
        return self.zoom

    def fit_scale(self, page_width: float = 595.0, outer_width: int | None = None) -> float:
        """The fit-width zoom a page ``page_width`` points wide would get now (or at
        ``outer_width``, see ``available_width``)."""
        width = self.available_width(outer_width)
        return max(MIN_ZOOM, min(MAX_ZOOM, width / page_width)) if width > 50 else DEFAULT_ZOOM

    def key_for(self, page: int) -> float:
        return PagesService.zoom_key(self.scale_for(page) * self.devicePixelRatioF())

    def page_rect(self, page: int) -> QRect:
        """Where ``page`` is in the container (pixels)."""
        return QRect(self._rects[page - 1])

    def _lay_out(self) -> None:
        self._scales = [self.scale_for(p) for p in range(1, len(self.sizes) + 1)]
        rects: list[QRect] = []
        y, widest = MARGIN, 0
        for (w, h), scale in zip(self.sizes, self._scales, strict=True):
            width, height = max(1, round(w * scale)), max(1, round(h * scale))
            rects.append(QRect(0, y, width, height))
            y += height + PAGE_GAP
            widest = max(widest, width)
        full_width = max(self.viewport().width(), widest + 2 * MARGIN)
        for rect in rects:
            rect.moveLeft((full_width - rect.width()) // 2)
        self._rects = rects
        height = (y - PAGE_GAP + MARGIN) if rects else 0
        self.container.resize(full_width, height)
        for label, rect in zip(self._labels, rects, strict=True):
            label.setGeometry(rect)
        # the ranges now, not when the resize event reaches the scroll area (a hidden panel
        # gets it only when shown, and a scroll to the passage would be clamped to 0 meanwhile)
        self._moving = True  # a clamped value is no scroll of the reader's
        try:
            self.horizontalScrollBar().setRange(0, max(0, full_width - self.viewport().width()))
            self.verticalScrollBar().setRange(0, max(0, height - self.viewport().height()))
            self.horizontalScrollBar().setPageStep(self.viewport().width())
            self.verticalScrollBar().setPageStep(self.viewport().height())
        finally:
            self._moving = False

    def view_rect(self) -> QRect:
        """The viewport in container pixels."""
        return QRect(self.horizontalScrollBar().value(), self.verticalScrollBar().value(),
                     self.viewport().width(), self.viewport().height())

    def to_container(self, spot: Spot) -> QPointF:
        rect, scale = self._rects[spot.page - 1], self._scales[spot.page - 1]
        return QPointF(rect.left() + spot.x * scale, rect.top() + spot.y * scale)

    def to_spot(self, point: QPoint) -> Spot:
        """The document point under a container point (the nearest page's, outside pages)."""
        index = self._page_index_at(point.y())
        rect, scale = self._rects[index], self._scales[index]
        return Spot(index + 1, (point.x() - rect.left()) / scale, (point.y() - rect.top()) / scale)

    def _page_index_at(self, y: int) -> int:
        for index, rect in enumerate(self._rects):
            if y < rect.bottom() + PAGE_GAP // 2 + 1:
                return index
        return len(self._rects) - 1

    def box_rect(self, box) -> QRect:
        """A stored box (points on its page) in container pixels."""
        rect, scale = self._rects[box.page - 1], self._scales[box.page - 1]
        return QRectF(rect.left() + box.x0 * scale, rect.top() + box.y0 * scale,
                      (box.x1 - box.x0) * scale, (box.y1 - box.y0) * scale).toAlignedRect()

    def passage_rect(self, page: int | None = None) -> QRect | None:
        """The matched boxes on ``page`` (default: their first page) as one container rect."""
        boxes = [b for b in self.matched if 1 <= b.page <= len(self._rects)]
        if not boxes:
            return None
        page = page if page is not None and any(b.page == page for b in boxes) else min(b.page for b in boxes)
        rect = QRect()
        for box in (b for b in boxes if b.page == page):
            rect = rect.united(self.box_rect(box))
        return rect

    def focus_rect(self, page: int) -> QRect | None:
        """The passage's focus on ``page`` as one container rect (None: no focus there)."""
        boxes = [b for b in self.focus if b.page == page and 1 <= b.page <= len(self._rects)]
        rect = QRect()
        for box in boxes:
            rect = rect.united(self.box_rect(box))
        return rect if boxes else None

    def kept_rect(self, page: int, top: int = 20) -> QRect | None:
        """What of the passage on ``page`` is kept in view: all of it when it fits the viewport
        (``top`` pixels above it, 20 around it), else its focus when it has one, else all of it
        (shown from its top-left)."""
        passage = self.passage_rect(page)
        if passage is None:
            return None
        view = self.view_rect()
        if passage.width() + 40 <= view.width() and passage.height() + top + 20 <= view.height():
            return passage
        focus = self.focus_rect(page)
        return focus if focus is not None else passage

    # --- moving --------------------------------------------------------------------------------

    def _scroll_to(self, x: int, y: int) -> None:
        self._moving = True
        try:
            self.horizontalScrollBar().setValue(x)
            self.verticalScrollBar().setValue(y)
        finally:
            self._moving = False

    def ensure_visible(self, rect: QRect, margin: int = 20) -> None:
        """Scroll the least needed to show ``rect`` (its top-left when it is larger than the view)."""
        view = self.view_rect()
        x, y = view.x(), view.y()
        if rect.width() + 2 * margin > view.width() or rect.left() - margin < x:
            x = rect.left() - margin
        elif rect.right() + margin > view.right():
            x = rect.right() + margin - view.width() + 1
        if rect.height() + 2 * margin > view.height() or rect.top() - margin < y:
            y = rect.top() - margin
        elif rect.bottom() + margin > view.bottom():
            y = rect.bottom() + margin - view.height() + 1
        self._scroll_to(x, y)

    def show_page(self, page: int, passage: bool = False) -> None:
        """Scroll to ``page``'s top, or (``passage``) to the passage on it, PASSAGE_TOP below the
        viewport's top and inside it sideways; then draw what is in view."""
        if not self._rects:
            return
        page = max(1, min(page, len(self._rects)))
        rect = self.kept_rect(page, PASSAGE_TOP) if passage else None
        if rect is not None:
            view = self.view_rect()
            x = view.x()
            if rect.left() < x or rect.right() > view.right():
                x = rect.left() - 20 if rect.width() + 40 > view.width() else rect.center().x() - view.width() // 2
            self._scroll_to(x, rect.top() - PASSAGE_TOP)
        else:
            self._scroll_to(self.horizontalScrollBar().value(), self._rects[page - 1].top() - MARGIN)
        self._set_current(page)
        self.render_visible()

    def set_scale(self, fit: bool, zoom: float | None = None, anchor: QPoint | None = None) -> None:
        """Fit the width, or zoom to ``zoom``, keeping a point in place: ``anchor`` (viewport
        pixels, the mouse), else the passage's centre when any of it is in view, else the
        viewport's centre. A passage in view before stays wholly in view if it fits."""
        if not self._rects:
            self.fit = fit
            if zoom is not None:
                self.zoom = max(MIN_ZOOM, min(MAX_ZOOM, zoom))
            self.scale_changed.emit()
            return
        view = self.view_rect()
        passage = self.passage_rect(self.current)
        keep = passage if passage is not None and passage.intersects(view) else None
        if anchor is None:
            if keep is not None:  # the focus's centre when it is in view (a table's cited row)
                focus = self.focus_rect(self.current)
                centre = (focus if focus is not None and focus.intersects(view) else keep).center()
                anchor = centre - view.topLeft()
            else:
                anchor = QPoint(view.width() // 2, view.height() // 2)
        spot = self.to_spot(view.topLeft() + anchor)
        page = self.current
        self.fit = fit
        if zoom is not None:
            self.zoom = max(MIN_ZOOM, min(MAX_ZOOM, zoom))
        elif not fit:
            self.zoom = self._scales[page - 1]
        self._lay_out()
        point = self.to_container(spot).toPoint() - anchor
        self._scroll_to(point.x(), point.y())
        if keep is not None:
            after = self.kept_rect(self.current)
            if after is not None:
                self.ensure_visible(after)
        self._set_current(page)
        self.render_visible()
        self.scale_changed.emit()

    def zoom_by(self, factor: float, anchor: QPoint | None = None) -> None:
        self.set_scale(False, self._scales[self.current - 1] * factor if self._scales else self.zoom * factor, anchor)

    def _set_current(self, page: int) -> None:
        if page != self.current:
            self.current = page
            self.page_changed.emit(page)

    def _scrolled(self, _value: int = 0) -> None:
        if not self._rects:
            return
        if not self._moving:
            view = self.view_rect()
            self._set_current(self._page_index_at(view.top() + view.height() // 3) + 1)
        self.render_visible()

    def resizeEvent(self, event) -> None:
        if not self._rects:
            super().resizeEvent(event)
            return
        view = self.view_rect()
        # the passage in view stays where it was in the viewport (reader mode widens the
        # panel: the passage must not slide down out of sight); else what is at the top stays
        # (its focus, when all of it does not fit: a table's row, not its header out of view)
        passage = self.passage_rect(self.current)
        kept = passage is not None and passage.intersects(view)
        held = self.kept_rect(self.current) if kept else None
        spot = self.to_spot(held.topLeft() if held is not None else view.topLeft())
        offset = (held.topLeft() - view.topLeft()) if held is not None else QPoint(0, 0)
        page = self.current
        scales = self._scales
        super().resizeEvent(event)
        self._lay_out()
        point = self.to_container(spot).toPoint() - offset
        self._scroll_to(point.x() if not self.fit else 0, point.y())
        if kept:
            after = self.kept_rect(page)
            if after is not None:
                self.ensure_visible(after)
        self._set_current(page)
        self._render_soon.start()
        if scales != self._scales:
            self.scale_changed.emit()  # fitted anew: the pages are drawn again

    # --- input ---------------------------------------------------------------------------------

    def wheelEvent(self, event: QWheelEvent) -> None:
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            steps = event.angleDelta().y() / 120
            if steps:
                self.zoom_by(ZOOM_STEP**steps, event.position().toPoint())
            event.accept()
            return
        super().wheelEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom_by(ZOOM_STEP)
        elif key == Qt.Key.Key_Minus:
            self.zoom_by(1 / ZOOM_STEP)
        elif key in (Qt.Key.Key_Home, Qt.Key.Key_End) and not event.modifiers():
            self.show_page(1 if key == Qt.Key.Key_Home else self.page_count)
        else:
            super().keyPressEvent(event)

    # --- drawing -------------------------------------------------------------------------------

    def _wanted(self) -> list[int]:
        """The pages in the viewport, and those half a viewport above and below."""
        view = self.view_rect()
        band = view.adjusted(0, -view.height() // 2, 0, view.height() // 2)
        return [i + 1 for i, rect in enumerate(self._rects) if rect.intersects(band)]

    def render_visible(self) -> None:
        if self.document_id is None or not self._rects:
            return
        wanted = self._wanted()
        dpr = self.devicePixelRatioF()
        for page in wanted:
            key = self.key_for(page)
            drawn = self.drawn.get(page)
            if drawn is not None and drawn[0] == key:
                continue
            cached = self.pages.cached(self.document_id, page, self._scales[page - 1] * dpr)
            if cached is not None:
                self._put(page, key, cached)
                continue
            ask = (self.document_id, page, key)
            if ask not in self._in_flight:
                self._in_flight.add(ask)
                self._requests[self.pages.request(self.document_id, page, self._scales[page - 1] * dpr)] = ask
        if wanted:  # forget images far from view (a 300-page book is not kept in memory)
            low, high = wanted[0] - KEEP_AROUND, wanted[-1] + KEEP_AROUND
            for page in [p for p in self.drawn if not low <= p <= high]:
                del self.drawn[page]
                self._labels[page - 1].clear()

    def _page_ready(self, request_id: int, render: PageRender) -> None:
        ask = self._requests.pop(request_id, None)
        if ask is None:
            return
        self._in_flight.discard(ask)
        document_id, page, key = ask
        if document_id != self.document_id or page > len(self._rects):
            return
        if key == self.key_for(page):
            self._put(page, key, render)
        else:
            self.render_visible()  # the zoom moved on meanwhile

    def _page_failure(self, request_id: int, message: str) -> None:
        ask = self._requests.pop(request_id, None)
        if ask is None:
            return
        self._in_flight.discard(ask)
        if ask[0] == self.document_id and ask[1] <= len(self._labels):
            self._labels[ask[1] - 1].setText(message)
            self.page_failed.emit(ask[1], message)

    def _put(self, page: int, key: float, render: PageRender) -> None:
        self.drawn[page] = (key, render, QImage())
        self._compose(page)
        self.page_drawn.emit(page)

    def _compose(self, page: int) -> None:
        """Paint the page's highlights and find matches on a copy of its render, and show it."""
        key, render, _ = self.drawn[page]
        image = paint_highlights(render, self.matched, self.context)
        hits = [(i, h) for i, h in enumerate(self.find_hits) if h.page == page]
        if hits:
            painter = QPainter(image)
            zoom = render.zoom
            for index, hit in hits:
                rect = QRectF(hit.x0 * zoom, hit.y0 * zoom, (hit.x1 - hit.x0) * zoom, (hit.y1 - hit.y0) * zoom)
                if index == self.find_index:
                    painter.fillRect(rect, FIND_CURRENT_FILL)
                    painter.setPen(FIND_CURRENT_EDGE)
                    painter.drawRect(rect.adjusted(-1, -1, 1, 1))
                else:
                    painter.fillRect(rect, FIND_FILL)
            painter.end()
        image.setDevicePixelRatio(self.devicePixelRatioF())
        self.drawn[page] = (key, render, image)
        label = self._labels[page - 1]
        label.setText("")
        label.setPixmap(QPixmap.fromImage(image))

    # --- find-in-document ----------------------------------------------------------------------

    def set_find_hits(self, hits: list[FindHit], from_page: int | None = None) -> None:
        """Mark ``hits``; the current one is the first at or after ``from_page``."""
        pages = {h.page for h in self.find_hits} | {h.page for h in hits}
        self.find_hits = list(hits)
        start = from_page if from_page is not None else self.current
        self.find_index = next((i for i, h in enumerate(hits) if h.page >= start), 0) if hits else -1
        for page in pages & set(self.drawn):
            self._compose(page)
        self.show_find_hit()

    def step_find(self, step: int) -> None:
        if not self.find_hits:
            return
        before = self.find_hits[self.find_index].page
        self.find_index = (self.find_index + step) % len(self.find_hits)
        for page in {before, self.find_hits[self.find_index].page} & set(self.drawn):
            self._compose(page)
        self.show_find_hit()

    def find_hit_rect(self) -> QRect | None:
        if not 0 <= self.find_index < len(self.find_hits):
            return None
        return self.box_rect(self.find_hits[self.find_index])

    def show_find_hit(self) -> None:
        rect = self.find_hit_rect()
        if rect is None:
            return
        self.ensure_visible(rect, margin=60)
        self._set_current(self.find_hits[self.find_index].page)
        self.render_visible()
