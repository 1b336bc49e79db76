"""Tables drawn as ruled grids, rebuilt from the page's vector rules (``fast`` mode).

PyMuPDF's ``find_tables()`` was measured at 40-700 ms per table page (it turns every
character into a Python dict); the grid is already known from the vector paths collected
with the text, so cells come from the rules directly: each row band x column band is a
slot, and a missing rule between two neighbouring slots merges them (row and column spans).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from docling_core.types.doc import BoundingBox, CoordOrigin, TableCell, TableData

from haiku.rag.ingest.pdf.blocks import Block, Line, PageGeometry
from haiku.rag.ingest.pdf.extract import PageGraphics
from haiku.rag.ingest.pdf.geometry import (
    IDENTITY,
    Bbox,
    Matrix,
    area,
    boxes_touch,
    expand,
    intersect,
    transform,
    union,
)

MAX_PATHS_FOR_TABLES = 5_000  # grid reconstruction is quadratic in rules: skip beyond this
# Share of a ruled grid's cells that must hold text for it to be a table. Measured on the
# real-PDF set: tables 0.56-1.0, vector diagrams and forms 0.0-0.38 (a few UML diagrams more).
MIN_FILLED_CELLS = 0.5

Segment = tuple[float, float, float]  # (position, start, end): a horizontal or vertical rule


def ruled_tables(
    page_box: Bbox,
    graphics: PageGraphics,
    lines: list[Line],
    geometry: PageGeometry,
    warnings: list[str],
) -> list[Block]:
    """The page's ruled tables as blocks; their lines are the text lines inside them."""
    if len(graphics.stroke_paths) + len(graphics.fill_paths) > MAX_PATHS_FOR_TABLES:
        warnings.append(
            f"page {geometry.page_no}: table detection skipped, too many vector paths"
        )
        return []
    # the grid is read in the reading frame, where rows run across: on a page turned 90°
    # the PDF's own x runs down the rendered page, and rows read there came out as columns
    frame = geometry.frame
    rows, columns = _rules(graphics, transform(page_box, frame), frame)
    if len(rows) < 3 or len(columns) < 2:
        return []
    tables = []
    for region in _grid_regions(rows, columns):
        block = _grid_table(region, rows, columns, lines, geometry)
        if block is not None:
            tables.append(block)
    return tables


def _rules(graphics: PageGraphics, page_box: Bbox, frame: Matrix = IDENTITY) -> tuple[list[Segment], list[Segment]]:
    """Horizontal and vertical rules on the page. A rectangle (stroked cell, shaded band)
    contributes its four edges; collinear pieces are joined (tables drawn cell by cell).
    Page frames and crop marks outside the page are ignored."""
    horizontal: list[Segment] = []
    vertical: list[Segment] = []
    max_box_area = 0.5 * area(page_box)
    inset = _inset_shadings(graphics.fill_paths)
    for box in (*graphics.stroke_paths, *graphics.fill_paths):
        if inset and id(box) in inset:
            continue
        x0, y0, x1, y1 = intersect(transform(box, frame), page_box)
        width, height = x1 - x0, y1 - y0
        if height <= 3 and width >= 10:
            horizontal.append(((y0 + y1) / 2, x0, x1))
        elif width <= 3 and height >= 6:
            vertical.append(((x0 + x1) / 2, y0, y1))
        elif width >= 10 and height >= 6 and width * height <= max_box_area:
            horizontal += [(y0, x0, x1), (y1, x0, x1)]
            vertical += [(x0, y0, y1), (x1, y0, y1)]
    return _join_collinear(horizontal), _join_collinear(vertical)


INSET = 8.0  # points: a shaded box this close inside another on every side is its inset shading


def _inset_shadings(boxes: list[Bbox]) -> set[int]:
    """The ids of filled boxes that lie just inside another on all four sides: a cell's
    text shading inset from the cell's own (Word draws both). Their edges are no rules:
    they cut each shaded cell into three columns and three rows of slots."""
    buckets: dict[tuple[int, int], list[Bbox]] = {}
    for box in boxes:
        if box[2] - box[0] >= 10 and box[3] - box[1] >= 6:
            buckets.setdefault((int(box[0] // INSET), int(box[1] // INSET)), []).append(box)
    if len(buckets) < 2:
        return set()
    inset: set[int] = set()
    for (bx, by), members in buckets.items():
        for box in members:
            for dx in (-1, 0):
                for dy in (-1, 0):
                    for outer in buckets.get((bx + dx, by + dy), ()):
                        if outer is not box and all(
                            0 < d <= INSET
                            for d in (
                                box[0] - outer[0], box[1] - outer[1], outer[2] - box[2], outer[3] - box[3]
                            )
                        ):
                            inset.add(id(box))
    return inset


def _join_collinear(segments: list[Segment]) -> list[Segment]:
    """Join segments on the same line (within 1.5 pt) that touch or overlap."""
    joined: list[Segment] = []
    for position, start, end in sorted(segments):
        if joined and abs(joined[-1][0] - position) <= 1.5 and start <= joined[-1][2] + 2:
            last = joined[-1]
            joined[-1] = (last[0], last[1], max(last[2], end))
        else:
            joined.append((position, start, end))
    return joined


def _grid_regions(rows: list[Segment], columns: list[Segment]) -> list[Bbox]:
    """Boxes of the separate grids on the page. A grid needs two or more vertical rules that
    each cross three or more horizontal rules; lone boxes and page frames do not qualify."""
    spines: list[Bbox] = []
    row_positions = [y for y, _, _ in rows]  # ascending: rows come from _join_collinear
    for x, top, bottom in columns:
        within = rows[
            bisect.bisect_left(row_positions, top - 2) : bisect.bisect_right(row_positions, bottom + 2)
        ]
        crossed = [(y, left, right) for y, left, right in within if left - 2 <= x <= right + 2]
        if len({round(y) for y, _, _ in crossed}) >= 3:
            spines.append(union([(x, top, x, bottom)] + [(a, y, b, y) for y, a, b in crossed]))
    regions: list[Bbox] = []
    for spine in spines:  # merge spines of the same grid (their boxes overlap)
        touching = [r for r in regions if boxes_touch(r, spine)]
        for region in touching:
            regions.remove(region)
        regions.append(union([spine, *touching]))
    return regions


def _grid_table(
    region: Bbox,
    rows: list[Segment],
    columns: list[Segment],
    lines: list[Line],
    geometry: PageGeometry,
) -> Block | None:
    inside = expand(region, 2.0)
    rows = [r for r in rows if inside[1] <= r[0] <= inside[3] and r[1] < inside[2] and r[2] > inside[0]]
    rows = _without_text_decorations(rows, lines)
    columns = [c for c in columns if inside[0] <= c[0] <= inside[2] and c[1] < inside[3] and c[2] > inside[1]]
    ys = _cluster_edges(r[0] for r in rows)
    xs = _cluster_edges(c[0] for c in columns)
    n_rows, n_cols = len(ys) - 1, len(xs) - 1
    if n_rows < 2 or n_cols < 2:
        return None  # a framed list or a shaded band, not a table
    cell_of = _merge_unruled_neighbours(ys, xs, rows, columns)
    table_box = (xs[0], ys[0], xs[-1], ys[-1])
    texts: dict[int, list[str]] = {}
    shown: dict[int, list[Bbox]] = {}  # each cell's lines' display boxes (its highlight)
    members = []
    for line in lines:
        cx = (line.box[0] + line.box[2]) / 2
        cy = (line.box[1] + line.box[3]) / 2
        if not (table_box[0] <= cx <= table_box[2] and table_box[1] <= cy <= table_box[3]):
            continue
        members.append(line)
        row = min(max(bisect.bisect_right(ys, cy) - 1, 0), n_rows - 1)
        col = min(max(bisect.bisect_right(xs, cx) - 1, 0), n_cols - 1)
        root = cell_of[row * n_cols + col]
        texts.setdefault(root, []).append(line.text)
        shown.setdefault(root, []).append(line.display)
    if len(texts) < 2 or len(texts) < MIN_FILLED_CELLS * len(set(cell_of)):
        # Mostly empty cells: the boxes and arrows of a diagram, or a form, not a table.
        return None
    spans: dict[int, list[int]] = {}  # root slot -> [row0, row1, col0, col1]
    for index, root in enumerate(cell_of):
        row, col = divmod(index, n_cols)
        span = spans.setdefault(root, [row, row, col, col])
        span[0], span[1] = min(span[0], row), max(span[1], row)
        span[2], span[3] = min(span[2], col), max(span[3], col)
    cells = [
        TableCell(
            bbox=_display_bbox(shown.get(root)),
            text=" ".join(texts.get(root, [])),
            start_row_offset_idx=row0,
            end_row_offset_idx=row1 + 1,
            start_col_offset_idx=col0,
            end_col_offset_idx=col1 + 1,
            row_span=row1 + 1 - row0,
            col_span=col1 + 1 - col0,
            column_header=row0 == 0,
        )
        for root, (row0, row1, col0, col1) in spans.items()
    ]
    cells, n_rows, n_cols = _without_empty_lines(cells, n_rows, n_cols)
    block = geometry.block("table", _unrotated(table_box, geometry.frame), members)
    block.table = TableData(num_rows=n_rows, num_cols=n_cols, table_cells=cells)
    return block


def _without_text_decorations(rows: list[Segment], lines: list[Line]) -> list[Segment]:
    """The horizontal rules that are not a line's strikeout or underline: a rule drawn
    across a text line, no wider than the line, cut a cell's first line from its second
    ("Strikeout (1,0), Zeile 1" / "Hier kommt Zeile 2." became two rows)."""
    if not rows or not lines:
        return rows
    by_top = sorted(lines, key=lambda line: line.box[1])
    tops = [line.box[1] for line in by_top]
    tallest = max(line.box[3] - line.box[1] for line in lines)
    kept = []
    for y, x0, x1 in rows:
        first = bisect.bisect_left(tops, y - tallest)
        last = bisect.bisect_right(tops, y)
        over_text = any(
            line.box[1] + 1 < y < line.box[3] + 0.5 and line.box[0] - 3 <= x0 and x1 <= line.box[2] + 3
            for line in by_top[first:last]
        )
        if not over_text:
            kept.append((y, x0, x1))
    return kept


def _without_empty_lines(cells: list[TableCell], n_rows: int, n_cols: int) -> tuple[list[TableCell], int, int]:
    """The grid without rows and columns that hold no text: a cell's shading inset from
    its border adds rules a few points inside it, and the slots between them are empty
    (a styled three-column table read as nine columns, two empty per real one)."""
    used_rows = sorted({r for c in cells if c.text.strip() for r in range(c.start_row_offset_idx, c.end_row_offset_idx)})
    used_cols = sorted({k for c in cells if c.text.strip() for k in range(c.start_col_offset_idx, c.end_col_offset_idx)})
    if len(used_rows) == n_rows and len(used_cols) == n_cols:
        return cells, n_rows, n_cols
    row_at = {r: i for i, r in enumerate(used_rows)}
    col_at = {k: i for i, k in enumerate(used_cols)}
    kept: list[TableCell] = []
    for cell in cells:
        rows = [row_at[r] for r in range(cell.start_row_offset_idx, cell.end_row_offset_idx) if r in row_at]
        cols = [col_at[k] for k in range(cell.start_col_offset_idx, cell.end_col_offset_idx) if k in col_at]
        if not rows or not cols:
            continue
        kept.append(
            cell.model_copy(
                update={
                    "start_row_offset_idx": rows[0], "end_row_offset_idx": rows[-1] + 1,
                    "start_col_offset_idx": cols[0], "end_col_offset_idx": cols[-1] + 1,
                    "row_span": rows[-1] + 1 - rows[0], "col_span": cols[-1] + 1 - cols[0],
                    "column_header": rows[0] == 0,
                }
            )
        )
    return kept, len(used_rows), len(used_cols)


def _unrotated(box: Bbox, frame: Matrix) -> Bbox:
    """A reading-frame box back in the page's unrotated space."""
    if frame == IDENTITY:
        return box
    a, b, c, d, e, f = frame
    det = a * d - b * c
    inverse = (d / det, -b / det, -c / det, a / det, (c * f - d * e) / det, (b * e - a * f) / det)
    return transform(box, inverse)


def _display_bbox(boxes: list[Bbox] | None) -> BoundingBox | None:
    if not boxes:
        return None
    x0, y0, x1, y1 = union(boxes)
    return BoundingBox(l=x0, t=y0, r=x1, b=y1, coord_origin=CoordOrigin.TOPLEFT)


def _merge_unruled_neighbours(
    ys: list[float], xs: list[float], rows: list[Segment], columns: list[Segment]
) -> list[int]:
    """For each grid slot (row-major), the slot that represents its merged cell: two
    neighbouring slots with no rule between them belong to the same cell."""
    n_rows, n_cols = len(ys) - 1, len(xs) - 1
    parent = list(range(n_rows * n_cols))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    row_middles = [(ys[row] + ys[row + 1]) / 2 for row in range(n_rows)]
    col_middles = [(xs[col] + xs[col + 1]) / 2 for col in range(n_cols)]
    # ruled_at_x[edge][row]: a vertical rule on that x edge crosses the row's middle
    ruled_at_x = [_crossings(rules, row_middles) for rules in _segments_by_edge(xs, columns)]
    ruled_at_y = [_crossings(rules, col_middles) for rules in _segments_by_edge(ys, rows)]
    for row in range(n_rows):
        for col in range(n_cols):
            here = row * n_cols + col
            if col + 1 < n_cols and not ruled_at_x[col + 1][row]:
                parent[find(here + 1)] = find(here)
            if row + 1 < n_rows and not ruled_at_y[row + 1][col]:
                parent[find(here + n_cols)] = find(here)
    return [find(i) for i in range(n_rows * n_cols)]


def _crossings(rules: list[tuple[float, float]], middles: list[float]) -> list[bool]:
    """For each (ascending) slot middle along an edge, whether one of the edge's rules
    covers it, with 2 pt of slack. Bisection instead of testing every slot against every
    rule: large grids have thousands of slots."""
    covered = [False] * len(middles)
    for start, end in rules:
        first = bisect.bisect_left(middles, start - 2.0)
        last = bisect.bisect_right(middles, end + 2.0)
        covered[first:last] = [True] * max(0, last - first)
    return covered


def _segments_by_edge(edges: list[float], segments: list[Segment]) -> list[list[tuple[float, float]]]:
    """The (start, end) extents of the segments lying on each grid edge."""
    by_edge: list[list[tuple[float, float]]] = [[] for _ in edges]
    for position, start, end in segments:
        index = bisect.bisect_left(edges, position - 2.0)
        if index < len(edges) and abs(edges[index] - position) <= 2.0:
            by_edge[index].append((start, end))
    return by_edge


def _cluster_edges(values: Iterable[float], tolerance: float = 2.0) -> list[float]:
    edges: list[float] = []
    for value in sorted(values):
        if not edges or value - edges[-1] > tolerance:
            edges.append(value)
    return edges


def page_rules(graphics: PageGraphics, frame: tuple[float, ...]) -> tuple[list[Segment], list[Segment]]:
    """The page's thin paths in the reading frame ``frame`` (unrotated -> frame): horizontal
    rules (booktabs' top, mid and bottom rules, a line under a header) as (y, x0, x1), and
    vertical rules (between column groups) as (x, y0, y1)."""
    horizontal: list[Segment] = []
    vertical: list[Segment] = []
    for box in (*graphics.stroke_paths, *graphics.fill_paths):
        x0, y0, x1, y1 = transform(box, frame)  # type: ignore[arg-type]
        if y1 - y0 <= 3 and x1 - x0 >= 10:
            horizontal.append(((y0 + y1) / 2, x0, x1))
        elif x1 - x0 <= 3 and y1 - y0 >= 6:
            vertical.append(((x0 + x1) / 2, y0, y1))
    return horizontal, vertical
