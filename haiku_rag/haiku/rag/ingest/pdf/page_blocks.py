"""Cutting one page into blocks with ``fast`` heuristics (runs of same-styled lines, raster
pictures) and putting a page's blocks, from either mode, into reading order."""

from __future__ import annotations

import re

from haiku.rag.ingest.pdf.blocks import (
    BULLET_CHARS,
    LIST_MARKER,
    Block,
    Line,
    PageGeometry,
    text_block,
)
from haiku.rag.ingest.pdf.geometry import Bbox, area, boxes_touch, intersect, union

MIN_PICTURE_SIDE = 24.0  # points; smaller images are icons, bullets, rules
PICTURE_JOIN_GAP = 12.0  # images closer than this belong to the same figure
MARKER_ONLY = re.compile(rf"^(?:[{re.escape(BULLET_CHARS)}]|\(?(?:\d{{1,3}}|[a-z])[.)])$")


def runs(lines: list[Line], page_no: int) -> list[Block]:
    """Cut each PyMuPDF block into runs of consistently styled, adjacent lines; a list
    marker always starts a new run. Off-axis lines (vertical stamps) become their own runs."""
    blocks: list[Block] = []
    current: list[Line] = []

    def close() -> None:
        if current:
            blocks.append(text_block(current, page_no))

    previous: Line | None = None
    for line in lines:
        if previous is None or _starts_new_run(previous, line):
            close()
            current = []
        if previous is not None and current and MARKER_ONLY.match(previous.text) and (
            len(current) == 1 and _same_row(previous, line)
        ):
            # A bullet glyph extracted as its own line: fold it into the text line.
            line = _merge_marker(previous, line)
            current = []
        current.append(line)
        previous = line
    close()
    return blocks


def _starts_new_run(previous: Line, line: Line) -> bool:
    if line.source_block != previous.source_block or line.on_axis != previous.on_axis:
        return True
    if MARKER_ONLY.match(previous.text) and _same_row(previous, line):
        return False
    if abs(line.size - previous.size) > 0.6 or line.bold != previous.bold:
        return True
    if LIST_MARKER.match(line.text):
        return True
    gap = line.box[1] - previous.box[3]
    return gap > 0.9 * max(line.size, previous.size)


def _same_row(a: Line, b: Line) -> bool:
    overlap = min(a.box[3], b.box[3]) - max(a.box[1], b.box[1])
    return overlap > 0.5 * min(a.box[3] - a.box[1], b.box[3] - b.box[1])


def _merge_marker(marker: Line, line: Line) -> Line:
    return Line(
        text=f"{marker.text} {line.text}",
        box=union((marker.box, line.box)),
        unrotated=union((marker.unrotated, line.unrotated)),
        display=union((marker.display, line.display)),
        size=line.size,
        bold=line.bold,
        source_block=line.source_block,
        direction=line.direction,
        on_axis=line.on_axis,
    )


def big_enough(box: Bbox) -> bool:
    """Whether an image (clipped to the page) is at least ``MIN_PICTURE_SIDE`` each way."""
    return box[2] - box[0] >= MIN_PICTURE_SIDE and box[3] - box[1] >= MIN_PICTURE_SIDE


def picture_blocks(
    images: list[Bbox], page_box: Bbox, geometry: PageGeometry, lines: list[Line]
) -> list[Block]:
    """Raster images big enough to be figures; a full-page image behind text (a scanned page
    with an OCR layer, a background) is not a figure."""
    has_text = bool(lines)
    page_area = area(page_box)
    kept: list[Bbox] = []
    for box in sorted(images, key=area, reverse=True):
        box = intersect(box, page_box)
        if not big_enough(box):
            continue
        if has_text and area(box) >= 0.8 * page_area:
            continue
        kept.append(box)
    return [geometry.block("picture", box) for box in _merge_nearby(kept, PICTURE_JOIN_GAP)]


def _merge_nearby(boxes: list[Bbox], gap: float) -> list[Bbox]:
    """Union boxes that overlap or lie within ``gap`` of each other: one figure made of
    several images (tiles, panels, an image and its soft mask) is one picture."""
    merged: list[Bbox] = []
    for box in boxes:
        touching = [m for m in merged if boxes_touch(m, box, slack=gap)]
        for other in touching:
            merged.remove(other)
        merged.append(union([box, *touching]))
    return merged


def order_blocks(blocks: list[Block]) -> list[Block]:
    """Reading order for one page: split the page into horizontal bands at blocks that span
    the column gutter (titles, wide figures, one-column paragraphs), and inside each band
    read the left column top to bottom, then the right column. Off-axis text goes last."""
    axis = [b for b in blocks if _is_on_axis(b)]
    off_axis = [b for b in blocks if not _is_on_axis(b)]
    if not axis:
        return off_axis
    # The columns are where the text is: a figure bleeding to the page edge must not move
    # the middle (it put a right column's left edge left of the middle: read as spanning).
    text_blocks = [b for b in axis if b.lines] or axis
    left_edge = min(b.box[0] for b in text_blocks)
    right_edge = max(b.box[2] for b in text_blocks)
    middle = (left_edge + right_edge) / 2
    slack = 0.02 * (right_edge - left_edge)

    def column_of(block: Block) -> str:
        if block.box[2] <= middle + slack:
            return "left"
        if block.box[0] >= middle - slack:
            return "right"
        return "spanning"

    sides = {id(b): column_of(b) for b in axis}
    in_columns = [b for b in axis if sides[id(b)] != "spanning"]
    for block in axis:
        if sides[id(block)] == "spanning" and _beside_column_text(block, in_columns):
            # Two figures side by side merged into one wide picture, with column text
            # running beside it: it sits in a column, it does not cut the page.
            sides[id(block)] = "left" if block.box[0] < middle - slack else "right"

    def side(block: Block) -> str:
        return sides[id(block)]

    ordered: list[Block] = []
    band: list[Block] = []

    def flush_band() -> None:
        left = sorted((b for b in band if side(b) == "left"), key=top_left)
        right = sorted((b for b in band if side(b) == "right"), key=top_left)
        if left and right:
            ordered.extend(left + right)
        else:
            ordered.extend(sorted(band, key=top_left))
        band.clear()

    for block in sorted(axis, key=top_left):
        if side(block) == "spanning":  # it closes the band of columns above it
            flush_band()
            ordered.append(block)
        else:
            band.append(block)
    flush_band()
    return ordered + sorted(off_axis, key=top_left)


def _beside_column_text(block: Block, in_columns: list[Block]) -> bool:
    """Whether a column's text block runs beside ``block`` (overlapping it vertically by a
    quarter of its own height, or 10 pt, without lying inside it, as a figure's labels do)."""
    if block.lines:
        return False  # text that crosses the gutter is one-column prose or a title
    x0, y0, x1, y1 = block.box
    for other in in_columns:
        ox0, oy0, ox1, oy1 = other.box
        if not other.lines or (ox0 >= x0 and ox1 <= x1 and oy0 >= y0 and oy1 <= y1):
            continue
        overlap = min(y1, oy1) - max(y0, oy0)
        if overlap > min(10.0, 0.25 * (oy1 - oy0)):
            return True
    return False


def _is_on_axis(block: Block) -> bool:
    return not block.lines or any(line.on_axis for line in block.lines)


def top_left(block: Block) -> tuple[float, float]:
    """Sort key: top to bottom, then left to right; the top is rounded to 0.1 pt so that
    blocks on one row are ordered by x, not by float noise in y."""
    return (round(block.box[1], 1), block.box[0])
