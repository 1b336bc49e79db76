"""A page without a usable text layer, read by OCR: the page is rendered as PyMuPDF displays
it, recognised (``haiku.rag.ingest.ocr``), and each recognised line becomes a ``Line`` like
one extracted from a text layer, with its box in display space (pixels divided by the render
scale) and in the unrotated space (through the page's derotation matrix), so provenance,
reading order and highlights work on scans exactly as on text pages."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from haiku.rag.ingest.ocr import OcrLine, OcrResult
from haiku.rag.ingest.pdf.blocks import Line
from haiku.rag.ingest.pdf.geometry import IDENTITY, Matrix, as_matrix, clamp, transform, union

# 150 dpi: the recogniser scales every line to 48 px high anyway, so a higher resolution
# mostly costs detection time; measured in docs/pdf-layout.md ("OCR").
DEFAULT_OCR_DPI = 150
# A render is capped at this many pixels on its longer side (a poster-size page at 150 dpi
# would otherwise make a gigapixel image).
MAX_RENDER_SIDE = 4000


@dataclass(frozen=True, slots=True)
class RenderedPage:
    """A page rendered for OCR, with what the rest of the OCR path needs to know of the
    page, read while rendering: after ``render_page`` nothing calls MuPDF for it, so the
    render can run on another thread than the one that reads its lines."""

    image: Any  # RGB, H x W x 3, uint8
    width: float  # display space, points
    height: float
    rotation: int  # the page's /Rotate
    rotation_matrix: Matrix  # unrotated -> display
    derotation: Matrix  # display -> unrotated


def render_page(page: Any, dpi: int) -> RenderedPage:
    """Render ``page`` (a ``pymupdf.Page``) as PyMuPDF displays it, at ``dpi``. Every MuPDF
    call here: hold ``MUPDF_LOCK`` around it when another thread may call MuPDF."""
    import numpy as np
    import pymupdf

    display = page.rect
    zoom = dpi / 72.0
    longest = max(display.width, display.height) * zoom
    if longest > MAX_RENDER_SIDE:
        zoom *= MAX_RENDER_SIDE / longest
    pixmap = page.get_pixmap(
        matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csRGB, alpha=False
    )
    image = np.frombuffer(pixmap.samples, dtype=np.uint8).reshape(pixmap.h, pixmap.w, pixmap.n)
    angle = page.rotation
    return RenderedPage(
        image=image[..., :3],
        width=display.width,
        height=display.height,
        rotation=angle,
        rotation_matrix=as_matrix(page.rotation_matrix) if angle else IDENTITY,
        derotation=as_matrix(page.derotation_matrix) if angle else IDENTITY,
    )


def rendered_lines(rendered: RenderedPage, result: OcrResult) -> list[Line]:
    """The recognised lines of a rendered page, in display space."""
    height, width = rendered.image.shape[:2]
    return lines_from_ocr(
        result.lines,
        scale_x=rendered.width / width,
        scale_y=rendered.height / height,
        page_size=(rendered.width, rendered.height),
        derotation=rendered.derotation,
    )


def lines_from_ocr(
    ocr_lines: list[OcrLine],
    *,
    scale_x: float,
    scale_y: float,
    page_size: tuple[float, float],
    derotation: Matrix,
) -> list[Line]:
    """``Line`` records (display and unrotated boxes; ``box`` and ``source_block`` are set
    later by ``orient_lines`` and ``group_lines``)."""
    width, height = page_size
    heights = [line.height * scale_y for line in ocr_lines]
    body = statistics.median(heights) if heights else 0.0
    lines: list[Line] = []
    for line, line_height in zip(ocr_lines, heights, strict=True):
        x0, y0, x1, y1 = line.upright_box  # not the skewed quad's bounding box
        box = clamp((x0 * scale_x, y0 * scale_y, x1 * scale_x, y1 * scale_y), width, height)
        # Measured heights of body lines vary by a few percent; one size for all of them
        # keeps a paragraph in one run (runs split where sizes differ), while headings in
        # a clearly larger type keep their own size.
        size = body if 0.75 * body <= line_height <= 1.35 * body else line_height
        unrotated = transform(box, derotation)
        lines.append(
            Line(
                text=line.text,
                # as for a text layer's lines (``extract``): the box and the writing
                # direction in the unrotated space, which ``orient_lines`` turns into the
                # reading frame. The display-space direction, given as it was, read a page
                # shown with /Rotate 270 (or a page turned upside down by it) last line
                # first.
                box=unrotated,
                unrotated=unrotated,
                display=box,
                size=round(size, 1),
                bold=False,
                source_block=0,
                direction=_turned(line.direction, derotation),
            )
        )
    return lines


def _turned(direction: tuple[int, int], matrix: Matrix) -> tuple[int, int]:
    """An axis direction mapped by the linear part of ``matrix`` (a quarter-turn rotation)."""
    if matrix == IDENTITY:
        return direction
    a, b, c, d, _, _ = matrix
    dx, dy = direction
    x, y = a * dx + c * dy, b * dx + d * dy
    return (round(x), round(y))


def merge_row_fragments(lines: list[Line]) -> list[Line]:
    """Join pieces of one printed line that detection returned separately (it cuts a line
    at wide gaps): in the reading frame, on the same row and less than 0.8 line height
    apart, left to right."""
    merged: list[Line] = []
    for line in sorted(lines, key=lambda item: item.box[0]):
        for index, other in enumerate(merged):
            overlap = min(line.box[3], other.box[3]) - max(line.box[1], other.box[1])
            tall = min(line.box[3] - line.box[1], other.box[3] - other.box[1])
            gap = line.box[0] - other.box[2]
            if overlap > 0.6 * tall and -0.2 * tall < gap < 0.8 * max(line.size, other.size):
                merged[index] = _joined(other, line)
                break
        else:
            merged.append(line)
    return merged


def _joined(left: Line, right: Line) -> Line:
    return Line(
        text=f"{left.text} {right.text}",
        box=union((left.box, right.box)),
        unrotated=union((left.unrotated, right.unrotated)),
        display=union((left.display, right.display)),
        size=max(left.size, right.size) if abs(left.size - right.size) > 0.6 else left.size,
        bold=False,
        source_block=0,
        direction=left.direction,
        on_axis=left.on_axis,
    )


def group_lines(lines: list[Line]) -> list[Line]:
    """Group OCR lines into blocks (what PyMuPDF's blocks are for a text layer) and return
    them block by block, top to bottom inside a block.

    Works in the reading frame (``line.box``, set by ``orient_lines``): a line joins the
    block whose last line lies just above it (a gap under 1.2 line heights) and overlaps
    it horizontally by half the narrower line; otherwise it starts a block. Columns thus
    become separate blocks, which ``order_blocks`` then reads column by column."""
    blocks: list[list[Line]] = []
    for line in sorted(lines, key=lambda item: (item.box[1], item.box[0])):
        target = None
        for block in blocks:
            last = block[-1]
            gap = line.box[1] - last.box[3]
            tall = max(line.size, last.size)
            overlap = min(line.box[2], last.box[2]) - max(line.box[0], last.box[0])
            narrower = min(line.box[2] - line.box[0], last.box[2] - last.box[0])
            if -0.5 * tall < gap < 1.2 * tall and overlap > 0.5 * narrower:
                target = block
                break
        if target is None:
            blocks.append([line])
        else:
            target.append(line)
    ordered: list[Line] = []
    for number, block in enumerate(blocks):
        for line in block:
            line.source_block = number
            ordered.append(line)
    return ordered
