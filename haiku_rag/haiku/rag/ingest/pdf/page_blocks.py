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
    marker always starts a new run. Off-axis lines (vertical stamps) become their own runs.

    A run crosses PyMuPDF's blocks only between one-line blocks that continue each other
    (``_continues_across``): MuPDF starts a block for every line once the line pitch
    reaches ~1.6 times the font size, so a page set with loose leading (a report's
    1.8x) came out as one block per line, each line read as a paragraph (or a heading)
    of its own."""
    blocks: list[Block] = []
    current: list[Line] = []
    one_line_blocks = _one_line_blocks(lines)
    body = _body_size(lines) if one_line_blocks else 0.0
    right_edges = _right_edges(lines, one_line_blocks)

    def close() -> None:
        if current:
            blocks.append(text_block(current, page_no))

    previous: Line | None = None
    for line in lines:
        if previous is None or (
            _starts_new_run(previous, line)
            and not _continues_across(previous, line, one_line_blocks, body, right_edges)
        ):
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


def _one_line_blocks(lines: list[Line]) -> set[int]:
    """The PyMuPDF blocks (by number) that hold one printed line."""
    counts: dict[int, int] = {}
    for line in lines:
        counts[line.source_block] = counts.get(line.source_block, 0) + 1
    return {number for number, count in counts.items() if count == 1}


def _body_size(lines: list[Line]) -> float:
    """The font size most of the lines' characters are set in."""
    chars: dict[float, int] = {}
    for line in lines:
        size = round(line.size, 1)
        chars[size] = chars.get(size, 0) + len(line.text)
    return max(chars, key=lambda size: chars[size]) if chars else 0.0


WRAPPED_MIN_WORDS = 4  # a body-sized line shorter than this is a label, not a wrapped line


def _right_edges(lines: list[Line], one_line_blocks: set[int]) -> dict[int, float]:
    """The rightmost end of the one-line blocks' lines starting at each left edge (by the
    point): where a line that starts there can run to (its column's right edge)."""
    edges: dict[int, float] = {}
    for line in lines:
        if line.source_block in one_line_blocks:
            key = round(line.box[0])
            edges[key] = max(edges.get(key, line.box[2]), line.box[2])
    return edges


def _continues_across(
    previous: Line, line: Line, one_line_blocks: set[int], body: float, right_edges: dict[int, float]
) -> bool:
    """Whether ``line``, the one line of its PyMuPDF block, is the next line of the
    paragraph whose last line, alone in its block, is ``previous``: the same style, the
    same left edge, on the next baseline (closer than the gap that ends a run within a
    block), not a list item, and ``previous`` wrapped into it (``_wrapped``: no contents
    entry, label or short last line of a paragraph). A line of body size or smaller holds
    ``WRAPPED_MIN_WORDS`` words or more (stacked labels, "Nipple" over "Areola", stay
    apart); a larger one may be a word ("Net-zero" over "carbon", a title)."""
    if (
        line.source_block == previous.source_block
        or line.source_block not in one_line_blocks
        or previous.source_block not in one_line_blocks
        or line.on_axis != previous.on_axis
        or line.direction != (1, 0)
        or previous.direction != (1, 0)
    ):
        return False
    size = max(line.size, previous.size)
    if abs(line.size - previous.size) > 0.6 or line.bold != previous.bold:
        return False
    if abs(line.box[0] - previous.box[0]) > 0.5 * size or LIST_MARKER.match(line.text):
        return False
    if previous.size <= 1.1 * body and len(previous.text.split()) < WRAPPED_MIN_WORDS:
        return False
    if (line.box[1] + line.box[3]) / 2 <= previous.box[3]:
        return False  # beside or above it, not below
    if line.box[1] - previous.box[3] > 0.9 * size:
        return False
    left = round(previous.box[0])
    right = max(right_edges.get(key, 0.0) for key in (left - 1, left, left + 1))
    return _wrapped(previous, line, max(right, previous.box[2], line.box[2]))


_LEADER_END = re.compile(r"(?:\.\s?){4,}\s*\S*$")  # a contents entry's dot leader (and page)


def _wrapped(previous: Line, line: Line, right: float) -> bool:
    """Whether ``previous`` is a line that wrapped: the first word of ``line`` would not have
    fit in the room left at its end (up to ``right``, its column's right edge, less two
    characters; the word's width estimated from ``line``'s mean character width), and it
    does not end in a dot leader."""
    if _LEADER_END.search(previous.text):
        return False
    words = line.text.split(maxsplit=1)
    if not words:
        return False
    char_width = (line.box[2] - line.box[0]) / max(len(line.text), 1)
    # ragged right: the column's edge is its longest line, up to a couple of letters past
    # the others' room ("due" beside 18 pt of room under a 926 pt edge did wrap)
    return previous.box[2] + char_width * len(words[0]) > right - 2 * char_width


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


def order_blocks(blocks: list[Block], page_box: Bbox | None = None) -> list[Block]:
    """Reading order for one page: split the page into horizontal bands at blocks that span
    the column gutter (titles, wide figures, one-column paragraphs), and inside each band
    read the left column top to bottom, then the right column. Off-axis text goes last;
    blocks already known as page furniture (a header first, a footer last) stay out of the
    columns.

    A page of three columns or more (``_gutters``: the gaps between its paragraphs' columns)
    is read the same way with those columns: the middle of the page would cut its middle
    column, whose lines were read in turn with the right column's.

    ``page_box`` (the page in the reading frame), when given, finds a row of links across
    the top or bottom edge (``mark_edge_rows``) before the columns are read."""
    if page_box is not None:
        mark_edge_rows(blocks, page_box)
    header = sorted((b for b in blocks if b.kind == "header"), key=top_left)
    footer = sorted((b for b in blocks if b.kind == "footer"), key=top_left)
    axis = [b for b in blocks if b.kind not in ("header", "footer") and _is_on_axis(b)]
    off_axis = [b for b in blocks if b.kind not in ("header", "footer") and not _is_on_axis(b)]
    if not axis:
        return header + off_axis + footer
    # The columns are where the text is: a figure bleeding to the page edge must not move
    # the middle (it put a right column's left edge left of the middle: read as spanning).
    text_blocks = [b for b in axis if b.lines] or axis
    left_edge = min(b.box[0] for b in text_blocks)
    right_edge = max(b.box[2] for b in text_blocks)
    slack = 0.02 * (right_edge - left_edge)
    gutters = _gutters(text_blocks, left_edge, right_edge)
    if len(gutters) < 2:
        gutters = [(left_edge + right_edge) / 2]

    def column_of(block: Block) -> int | None:
        for index, gutter in enumerate(gutters):
            if block.box[2] <= gutter + slack:
                return index if index == 0 or block.box[0] >= gutters[index - 1] - slack else None
        return len(gutters) if block.box[0] >= gutters[-1] - slack else None

    columns = {id(b): column_of(b) for b in axis}
    in_columns = [b for b in axis if columns[id(b)] is not None]
    if len(gutters) == 1:
        for block in axis:
            if columns[id(block)] is None and _beside_column_text(block, in_columns):
                # Two figures side by side merged into one wide picture, with column text
                # running beside it: it sits in a column, it does not cut the page.
                columns[id(block)] = 0 if block.box[0] < gutters[0] - slack else 1

    ordered: list[Block] = []
    band: list[Block] = []

    def flush_band() -> None:
        used = sorted({columns[id(b)] or 0 for b in band})  # a band's blocks are all in columns
        if len(used) > 1:
            for column in used:
                ordered.extend(sorted((b for b in band if columns[id(b)] == column), key=top_left))
        else:
            ordered.extend(sorted(band, key=top_left))
        band.clear()

    for block in sorted(axis, key=top_left):
        if columns[id(block)] is None:  # it closes the band of columns above it
            flush_band()
            ordered.append(block)
        else:
            band.append(block)
    flush_band()
    return header + ordered + sorted(off_axis, key=top_left) + footer


EDGE_ZONE = 0.1  # a row of links lies in this fraction of the page height at its top or bottom
EDGE_ROW_PIECES = 4
EDGE_ROW_MAX_WORDS = 5


def mark_edge_rows(blocks: list[Block], page_box: Bbox) -> None:
    """A row of short, separate pieces across the top or bottom edge of the page, apart from
    everything else (a report's tab bar: "Introduction  Empowering individuals  …
    Appendix", a footer's links) is page furniture: a header (or footer), even on a
    document's only page, where no repeat gives it away. At least ``EDGE_ROW_PIECES``
    one-line pieces (lines of one block or blocks of their own) of at most
    ``EDGE_ROW_MAX_WORDS`` words, an em or more apart, together across half the text's
    width, in the outer ``EDGE_ZONE`` of the page, with twice the row's height of space
    between the row and the rest of the page."""
    text = [b for b in blocks if b.kind == "text" and b.lines]
    if len(text) < 2:
        return
    top, bottom = page_box[1], page_box[3]
    zone = EDGE_ZONE * (bottom - top)
    left = min(b.box[0] for b in text)
    right = max(b.box[2] for b in text)
    for edge in ("top", "bottom"):
        first = min(text, key=lambda b: b.box[1]) if edge == "top" else max(text, key=lambda b: b.box[3])
        if (edge == "top" and first.box[3] > top + zone) or (edge == "bottom" and first.box[1] < bottom - zone):
            continue
        row_top, row_bottom = first.box[1], first.box[3]
        row = [b for b in text if all(row_top <= (ln.box[1] + ln.box[3]) / 2 <= row_bottom for ln in b.lines)]
        pieces = sorted((line for b in row for line in b.lines), key=lambda line: line.box[0])
        if len(pieces) < EDGE_ROW_PIECES or any(len(p.text.split()) > EDGE_ROW_MAX_WORDS for p in pieces):
            continue
        if any(b.box[0] - a.box[2] < max(a.size, b.size) for a, b in zip(pieces, pieces[1:], strict=False)):
            continue  # pieces of one sentence, not separate labels
        if pieces[-1].box[2] - pieces[0].box[0] < 0.5 * (right - left):
            continue
        height = max(b.box[3] for b in row) - min(b.box[1] for b in row)
        in_row = {id(b) for b in row}
        rest = [b for b in blocks if id(b) not in in_row and (b.lines or b.kind in ("table", "picture"))]
        if edge == "top":
            apart = all(b.box[1] - max(r.box[3] for r in row) >= 2 * height for b in rest)
        else:
            apart = all(min(r.box[1] for r in row) - b.box[3] >= 2 * height for b in rest)
        if apart and rest:
            for b in row:
                b.kind = "header" if edge == "top" else "footer"


MIN_GUTTER = 6.0  # points between two columns of text


def _gutters(text_blocks: list[Block], left_edge: float, right_edge: float) -> list[float]:
    """The middles of the gutters between a page's columns of paragraphs: the gaps left
    between the spans of its text blocks of two lines or more (narrower than half the text,
    so a title or a one-column paragraph does not hide them), each at least ``MIN_GUTTER``
    wide, and crossed by no text narrower than half the text. Fewer than two gutters: the
    page's own middle is used instead."""
    width = right_edge - left_edge
    spans = sorted(
        (b.box[0], b.box[2]) for b in text_blocks
        if len(b.lines) >= 2 and b.box[2] - b.box[0] < 0.5 * width and b.kind != "table"
    )
    if len(spans) < 3:
        return []
    gutters: list[float] = []
    end = spans[0][1]
    for x0, x1 in spans[1:]:
        if x0 - end >= MIN_GUTTER:
            gutters.append((x0 + end) / 2)
        end = max(end, x1)
    # a gutter no narrow text crosses (a diagram's labels do: its boxes are no columns)
    return [
        g for g in gutters
        if not any(b.box[0] < g < b.box[2] and b.box[2] - b.box[0] < 0.5 * width for b in text_blocks)
    ]


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
