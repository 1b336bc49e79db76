"""The one page renderer: a stored PDF's page as RGB pixels, and the highlight of the boxes to
show on it, for every caller (the CLI's ``visualize`` PNGs, exports, the MCP server and the
app's citation panel, which adds only its cache and the conversion to a QImage).

Qt-free. Boxes come from the store (PDF points, top-left origin, the unrotated display space
PyMuPDF renders) and are scaled by ``zoom`` (pixels per point; ``dpi / 72``); the text is never
searched for again at render time. The highlight colours are defined here and only here.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from haiku.rag.errors import DamagedDocumentError
from haiku.rag.ingest.records import Box
from haiku.rag.mupdf import MUPDF_LOCK, import_pymupdf

HighlightKind = Literal["match", "context"]

# RGB fill and blend strength per kind: the matched passage strong, its context faint.
HIGHLIGHT_STYLE: dict[str, tuple[tuple[int, int, int], float]] = {
    "match": ((255, 170, 0), 0.38),
    "context": ((255, 235, 80), 0.16),
}
# A bar in the margin left of each match, so a match on a coloured background still shows.
MATCH_OUTLINE: tuple[tuple[int, int, int], float] = ((230, 120, 0), 0.78)
OUTLINE_GAP, OUTLINE_WIDTH = 3, 2  # pixels between the bar and the box, and the bar's width
BOX_PAD = 1  # a pixel of air so the highlight does not clip glyph edges


@dataclass(frozen=True, slots=True)
class PixelBox:
    kind: HighlightKind
    x0: int
    y0: int
    x1: int
    y1: int


@dataclass(slots=True)
class PageImage:
    page: int  # 1-based
    width: int
    height: int
    dpi: float
    samples: bytes  # packed RGB, stride = width * 3, no highlight painted
    boxes: list[PixelBox] = field(default_factory=list)
    page_count: int = 0
    width_pt: float = 0.0  # the page in PDF points (display space, rotation applied)
    height_pt: float = 0.0

    @property
    def zoom(self) -> float:
        """Pixels per PDF point."""
        return self.dpi / 72.0

    def with_boxes(self, matched: Iterable[Box] = (), context: Iterable[Box] = ()) -> PageImage:
        """The same pixels with the boxes of ``matched`` and ``context`` that fall on this page."""
        boxes = [to_pixels(b, "context", self.zoom, self.width, self.height) for b in context if b.page == self.page]
        boxes += [to_pixels(b, "match", self.zoom, self.width, self.height) for b in matched if b.page == self.page]
        return PageImage(
            self.page, self.width, self.height, self.dpi, self.samples, boxes,
            self.page_count, self.width_pt, self.height_pt,
        )

    def highlighted_rgb(self) -> np.ndarray:
        """An (h, w, 3) uint8 array with the boxes blended in (context first, matches on top,
        each match with its bar in the margin)."""
        image = np.frombuffer(self.samples, dtype=np.uint8).reshape(self.height, self.width, 3).copy()
        for kind in ("context", "match"):
            color, alpha = HIGHLIGHT_STYLE[kind]
            for box in (b for b in self.boxes if b.kind == kind):
                _blend(image, box.x0, box.y0, box.x1, box.y1, color, alpha)
                if kind == "match":
                    left = box.x0 - OUTLINE_GAP
                    _blend(image, left, box.y0, left + OUTLINE_WIDTH, box.y1, *MATCH_OUTLINE)
        return image

    def to_png(self, highlight: bool = True) -> bytes:
        pymupdf = import_pymupdf()

        data = self.highlighted_rgb().tobytes() if highlight else self.samples
        with MUPDF_LOCK:
            pixmap = pymupdf.Pixmap(pymupdf.csRGB, self.width, self.height, data, 0)
            return pixmap.tobytes("png")


def _blend(image: np.ndarray, x0: int, y0: int, x1: int, y1: int, color: tuple[int, int, int], alpha: float) -> None:
    height, width = image.shape[:2]
    x0, y0, x1, y1 = max(0, x0), max(0, y0), min(width, x1), min(height, y1)
    if x0 >= x1 or y0 >= y1:
        return
    region = image[y0:y1, x0:x1].astype(np.float32)
    blended = region * (1 - alpha) + np.array(color, np.float32) * alpha
    image[y0:y1, x0:x1] = np.rint(blended).astype(np.uint8)


def to_pixels(box: Box, kind: HighlightKind, zoom: float, width: int, height: int) -> PixelBox:
    """A stored box in the pixels of a page rendered at ``zoom`` (padded, clipped to the page)."""
    return PixelBox(
        kind,
        max(0, int(box.x0 * zoom) - BOX_PAD),
        max(0, int(box.y0 * zoom) - BOX_PAD),
        min(width, int(np.ceil(box.x1 * zoom)) + BOX_PAD),
        min(height, int(np.ceil(box.y1 * zoom)) + BOX_PAD),
    )


class PageRenderer:
    """Renders pages, keeping the last few documents open so the next page of one is quick.

    Not thread-safe on its own (MuPDF is not): every call takes the library's MuPDF lock; use
    one renderer per thread that renders (the app keeps one on its render thread)."""

    def __init__(self, keep_open: int = 8) -> None:
        self.keep_open = keep_open
        self._open: OrderedDict[Any, Any] = OrderedDict()

    def render(self, key: Any, pdf_bytes: bytes, page: int, zoom: float) -> PageImage:
        """Page ``page`` (1-based) of the PDF ``pdf_bytes`` (kept open under ``key``, e.g. a
        document id and generation) at ``zoom`` pixels per point, without highlights."""
        pymupdf = import_pymupdf()
        with MUPDF_LOCK:
            doc = None
            try:
                doc = self._document(pymupdf, key, pdf_bytes)
                if not 1 <= page <= doc.page_count:
                    raise ValueError(f"page {page} is outside the document (1–{doc.page_count})")
                pdf_page = doc[page - 1]
                pixmap = pdf_page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
                if pixmap.n != 3:
                    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pixmap)
                width, height = pixmap.width, pixmap.height
                samples = bytes(pixmap.samples) if pixmap.stride == width * 3 else _pack(pixmap)
                rect = pdf_page.rect  # display space: what get_pixmap renders, rotation applied
                return PageImage(
                    page=page, width=width, height=height, dpi=zoom * 72.0, samples=samples,
                    page_count=doc.page_count, width_pt=rect.width, height_pt=rect.height,
                )
            except (pymupdf.FileDataError, RuntimeError) as exc:
                self._open.pop(key, None)  # closed below; reopened on the next call
                raise DamagedDocumentError(f"cannot render page {page}: {exc}") from exc
            finally:
                if doc is not None and key not in self._open:
                    doc.close()  # not kept open (keep_open=0, or forgotten after an error)

    def _document(self, pymupdf: Any, key: Any, pdf_bytes: bytes) -> Any:
        doc = self._open.get(key)
        if doc is not None:
            self._open.move_to_end(key)
            return doc
        doc = pymupdf.open(stream=pdf_bytes, filetype="pdf")
        if self.keep_open <= 0:
            return doc
        self._open[key] = doc
        while len(self._open) > self.keep_open:
            _, old = self._open.popitem(last=False)
            old.close()
        return doc

    def close(self) -> None:
        with MUPDF_LOCK:
            for doc in self._open.values():
                doc.close()
            self._open.clear()


def render_page(
    pdf_bytes: bytes,
    page: int,
    *,
    matched: Iterable[Box] = (),
    context: Iterable[Box] = (),
    dpi: float = 150,
) -> PageImage:
    """Render one page (1-based) of a stored PDF with the boxes that fall on it."""
    renderer = PageRenderer(keep_open=0)
    return renderer.render(None, pdf_bytes, page, dpi / 72.0).with_boxes(matched, context)


def _pack(pixmap: Any) -> bytes:
    """RGB rows without the padding PyMuPDF may add at the end of each row (``stride``)."""
    rows = np.frombuffer(pixmap.samples, dtype=np.uint8).reshape(pixmap.height, pixmap.stride)
    row_bytes = int(pixmap.width) * 3
    return rows[:, :row_bytes].tobytes()
