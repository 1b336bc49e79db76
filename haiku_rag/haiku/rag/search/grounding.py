"""Visual grounding: render cited pages from the stored file, with the boxes to highlight.

Qt-free on purpose: the app wraps ``PageImage.samples`` in a QImage and paints the boxes
itself; the CLI writes PNGs with the highlight blended in. Boxes come from the store (PDF
points, top-left origin) and are scaled by ``dpi / 72`` into pixels; the text is never
searched for again at render time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from haiku.rag.errors import DamagedDocumentError
from haiku.rag.ingest.records import Box
from haiku.rag.mupdf import MUPDF_LOCK, import_pymupdf

# RGB fill and blend strength per kind: matched text strong, context faint.
HIGHLIGHT_STYLE = {"match": ((255, 170, 0), 0.38), "context": ((255, 235, 80), 0.16)}


@dataclass(frozen=True, slots=True)
class PixelBox:
    kind: Literal["match", "context"]
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

    def highlighted_rgb(self) -> np.ndarray:
        """An (h, w, 3) uint8 array with the boxes blended in (context first, matches on top)."""
        image = np.frombuffer(self.samples, dtype=np.uint8).reshape(self.height, self.width, 3).copy()
        for kind in ("context", "match"):
            color, alpha = HIGHLIGHT_STYLE[kind]
            for box in (b for b in self.boxes if b.kind == kind):
                region = image[box.y0 : box.y1, box.x0 : box.x1].astype(np.float32)
                blended = region * (1 - alpha) + np.array(color, np.float32) * alpha
                image[box.y0 : box.y1, box.x0 : box.x1] = blended.astype(np.uint8)
        return image

    def to_png(self, highlight: bool = True) -> bytes:
        pymupdf = import_pymupdf()

        data = self.highlighted_rgb().tobytes() if highlight else self.samples
        with MUPDF_LOCK:
            pixmap = pymupdf.Pixmap(pymupdf.csRGB, self.width, self.height, data, 0)
            return pixmap.tobytes("png")


def to_pixels(box: Box, kind: Literal["match", "context"], dpi: float, width: int, height: int) -> PixelBox:
    scale = dpi / 72.0
    pad = 1  # a pixel of air so the highlight does not clip glyph edges
    return PixelBox(
        kind,
        max(0, int(box.x0 * scale) - pad),
        max(0, int(box.y0 * scale) - pad),
        min(width, int(np.ceil(box.x1 * scale)) + pad),
        min(height, int(np.ceil(box.y1 * scale)) + pad),
    )


def render_page(
    pdf_bytes: bytes,
    page: int,
    *,
    matched: list[Box] = (),  # type: ignore[assignment]
    context: list[Box] = (),  # type: ignore[assignment]
    dpi: float = 150,
) -> PageImage:
    """Render one page (1-based) of a stored PDF with the boxes that fall on it."""
    pymupdf = import_pymupdf()

    with MUPDF_LOCK:
        try:
            with pymupdf.open(stream=pdf_bytes, filetype="pdf") as doc:
                if not 1 <= page <= doc.page_count:
                    raise ValueError(f"page {page} is outside the document (1–{doc.page_count})")
                pixmap = doc[page - 1].get_pixmap(dpi=dpi, alpha=False)
        except (pymupdf.FileDataError, RuntimeError) as exc:
            raise DamagedDocumentError(f"cannot render page {page}: {exc}") from exc
        if pixmap.n != 3:
            pixmap = pymupdf.Pixmap(pymupdf.csRGB, pixmap)
        width, height = pixmap.width, pixmap.height
        samples = bytes(pixmap.samples) if pixmap.stride == width * 3 else _pack(pixmap)
    boxes = [to_pixels(b, "context", dpi, width, height) for b in context if b.page == page]
    boxes += [to_pixels(b, "match", dpi, width, height) for b in matched if b.page == page]
    return PageImage(page=page, width=width, height=height, dpi=dpi, samples=samples, boxes=boxes)


def _pack(pixmap: Any) -> bytes:
    """RGB rows without the padding PyMuPDF may add at the end of each row (``stride``)."""
    rows = np.frombuffer(pixmap.samples, dtype=np.uint8).reshape(pixmap.height, pixmap.stride)
    row_bytes = int(pixmap.width) * 3
    return rows[:, :row_bytes].tobytes()


def pages_to_render(matched: list[Box], context: list[Box], page_numbers: list[int]) -> list[int]:
    pages = sorted({b.page for b in matched} | {b.page for b in context})
    return pages or sorted(set(page_numbers))
