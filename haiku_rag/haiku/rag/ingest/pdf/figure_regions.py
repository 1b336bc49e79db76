"""Figures of a text page (``fast`` mode): where a "Figure N" / "Fig. N" caption sits next
to a cluster of vector paths and images, that whole cluster, with the labels printed in
and around it (axis titles, tick labels, legends), is one picture; and images that are not
figures (a background behind the page's text) are not pictures.

Before, only raster images became pictures: a chart drawn as vector paths (most plots in
papers) was no picture at all, its labels loose paragraphs, and a diagram made of a few
raster icons joined by vector arrows became one picture per icon (a vision model was sent
one icon of the diagram). Issue 29.

Why from the boxes the text extraction already collected (``PageGraphics``) and not from
``page.get_drawings()`` / ``page.cluster_drawings()``: those build a Python dict per path
(thousands on a chart page), a second pass over the page for every text PDF, whose
parse speed the project keeps above 120 pages per CPU-second; here a page without a figure
caption costs one regular-expression test per block, and a page with one a few
milliseconds. Everything here is in the unrotated page space (PyMuPDF's extraction
space, like ``Line.unrotated`` and the graphics' boxes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from haiku.rag.ingest.pdf.blocks import Block, Line, PageGeometry
from haiku.rag.ingest.pdf.extract import PageGraphics
from haiku.rag.ingest.pdf.geometry import (
    Bbox,
    area,
    boxes_touch,
    center_in,
    expand,
    intersect,
    union,
)

# A figure caption starts its block with "Figure 3", "Fig. 3", "FIG 3a" (not "Table").
FIGURE_CAPTION = re.compile(r"^\s*(?:figure|fig\.?)\s*\d+[a-z]?\b", re.IGNORECASE)
# Paths and images closer than this are parts of one drawing (bars, ticks, markers, the
# arrows between a diagram's boxes).
CLUSTER_GAP = 10.0
# A figure's graphics end at most this far above (or below) its caption: the tick labels
# and the axis title lie between them.
CAPTION_GAP = 60.0
# Labels of a figure (tick labels, axis titles, a legend beside the plot) lie within this
# distance of its graphics, in blocks of their own.
LABEL_GAP = 16.0
# A figure is at least this large (points) and is made of at least this many paths (or one
# image): a rule or a frame around a caption is not a figure.
MIN_FIGURE_SIDE = 40.0
MIN_FIGURE_PATHS = 4
# Guard against pathological pages (the same bound as ruled tables).
MAX_PATHS = 5_000
# An image behind this many characters of the page's running text (lines of 30 characters
# and more, centred inside it) is a background, not a picture.
BACKGROUND_TEXT_CHARS = 200
PROSE_LINE_CHARS = 30


def figure_regions(
    page_box: Bbox, graphics: PageGraphics, lines: Sequence[Line]
) -> list[tuple[Bbox, list[Line]]]:
    """The regions (unrotated space) of the page's captioned figures, each with its
    caption's lines: the graphics next to a figure caption and the labels around them."""
    captions = _caption_blocks(lines)
    if not captions:
        return []
    paths = len(graphics.stroke_paths) + len(graphics.fill_paths)
    if paths > MAX_PATHS:
        return []
    clusters = _clusters(_drawn_boxes(page_box, graphics))
    if not clusters:
        return []
    caption_lines = {id(line) for _, members in captions for line in members}
    # Each caption takes the nearest cluster just above it, else just below; a cluster
    # goes to the caption below it first (captions are mostly below their figure: a code
    # listing's caption above a diagram must not take the diagram from its own caption).
    candidates = sorted(
        (key, index, number)
        for index, (caption_box, _) in enumerate(captions)
        for number, cluster in enumerate(clusters)
        if (key := _caption_side(caption_box, cluster)) is not None
    )
    taken: set[int] = set()
    done: set[int] = set()
    found: dict[int, Bbox] = {}
    for (side, _gap), index, number in candidates:
        if index in done or number in taken:
            continue
        caption_box = captions[index][0]
        region, panels = _with_panels(number, side == 0, caption_box, clusters, taken)
        region = _with_labels(region, caption_box, lines, caption_lines)
        done.add(index)
        taken.update(panels)
        found[index] = region
    return [(found[index], captions[index][1]) for index in sorted(found)]


def _caption_blocks(lines: Sequence[Line]) -> list[tuple[Bbox, list[Line]]]:
    """Each text block (PyMuPDF's) whose first line starts with a figure number, with its
    box and lines."""
    blocks: dict[int, list[Line]] = {}
    for line in lines:
        blocks.setdefault(line.source_block, []).append(line)
    found = []
    for members in blocks.values():
        if FIGURE_CAPTION.match(members[0].text):
            found.append((union([line.unrotated for line in members]), members))
    return found


class _Cluster:
    __slots__ = ("box", "paths", "images")

    def __init__(self, box: Bbox, paths: int, images: int) -> None:
        self.box, self.paths, self.images = box, paths, images


def _drawn_boxes(page_box: Bbox, graphics: PageGraphics) -> list[tuple[Bbox, bool]]:
    """The page's paths and images as (box, is_image), without what is no part of a figure:
    anything covering half the page (a background, a page frame), page-wide rules."""
    half_page = 0.5 * area(page_box)
    page_width = page_box[2] - page_box[0]
    drawn: list[tuple[Bbox, bool]] = []
    for boxes, is_image in ((graphics.stroke_paths, False), (graphics.fill_paths, False), (graphics.images, True)):
        for raw in boxes:
            box = intersect(raw, page_box)
            width, height = box[2] - box[0], box[3] - box[1]
            if width <= 0 and height <= 0:
                continue
            if width * height >= half_page or (width > 0.8 * page_width and height < 2):
                continue
            drawn.append((tuple(raw) if not is_image else box, is_image))  # type: ignore[arg-type]
    return drawn


def _clusters(drawn: list[tuple[Bbox, bool]]) -> list[_Cluster]:
    """Boxes within ``CLUSTER_GAP`` of each other, joined. A sweep from left to right over
    the boxes keeps the clusters still within reach (a chart's thousands of markers are one
    or a few clusters, so each box meets a few, not every other box: comparing boxes pair
    by pair cost 0.4 s on a scatter plot of 4,000 paths); passes repeat until no two
    clusters touch."""
    clusters = [_Cluster(box, 0 if is_image else 1, 1 if is_image else 0) for box, is_image in drawn]
    while True:
        merged = _sweep(clusters)
        if len(merged) == len(clusters):
            return merged
        clusters = merged


def _sweep(clusters: list[_Cluster]) -> list[_Cluster]:
    out: list[_Cluster] = []
    active: list[_Cluster] = []
    for cluster in sorted(clusters, key=lambda c: c.box[0]):
        box = cluster.box
        reach = box[0] - CLUSTER_GAP
        if any(other.box[2] < reach for other in active):
            out.extend(other for other in active if other.box[2] < reach)
            active = [other for other in active if other.box[2] >= reach]
        touching = [other for other in active if boxes_touch(other.box, box, CLUSTER_GAP)]
        if touching:
            for other in touching:
                active.remove(other)
                box = union([box, other.box])
                cluster = _Cluster(
                    box, cluster.paths + other.paths, cluster.images + other.images
                )
        active.append(cluster)
    return out + active


def _caption_side(caption: Bbox, cluster: _Cluster) -> tuple[int, float] | None:
    """(0, gap) when ``cluster`` is a figure's graphics just above the caption, (1, gap)
    just below it; None when it is neither (or too small to be a figure)."""
    box = cluster.box
    if min(box[2], caption[2]) <= max(box[0], caption[0]):
        return None  # not in the caption's column
    if cluster.paths < MIN_FIGURE_PATHS and not cluster.images:
        return None
    if box[2] - box[0] < MIN_FIGURE_SIDE or box[3] - box[1] < MIN_FIGURE_SIDE:
        return None
    above = caption[1] - box[3]
    if -2 <= above <= CAPTION_GAP:
        return (0, above)
    below = box[1] - caption[3]
    if -2 <= below <= CAPTION_GAP:
        return (1, below)
    return None


def _with_panels(
    seed: int, above: bool, caption: Bbox, clusters: list[_Cluster], taken: set[int]
) -> tuple[Bbox, list[int]]:
    """The seed cluster's box with the clusters beside it on the caption's side (panels of
    one figure), and their indices."""
    region = clusters[seed].box
    members = [seed]
    for number, cluster in enumerate(clusters):
        box = cluster.box
        if number == seed or number in taken or area(box) <= 0:
            continue
        overlap = min(box[3], region[3]) - max(box[1], region[1])
        beside = overlap > 0.5 * (box[3] - box[1])
        on_side = box[3] <= caption[1] + 2 if above else box[1] >= caption[3] - 2
        if beside and on_side and _within_columns(box, region, caption):
            region = union([region, box])
            members.append(number)
    return region, members


def _within_columns(box: Bbox, region: Bbox, caption: Bbox) -> bool:
    """A panel beside the figure belongs to it when it lies over the caption's extent or
    touches the figure."""
    left, right = min(region[0], caption[0]), max(region[2], caption[2])
    return (box[0] >= left - CLUSTER_GAP and box[2] <= right + CLUSTER_GAP) or boxes_touch(
        box, region, 2 * CLUSTER_GAP
    )


def _with_labels(region: Bbox, caption: Bbox, lines: Sequence[Line], caption_lines: set[int]) -> Bbox:
    """The region grown by the text blocks lying (whole) within ``LABEL_GAP`` of it: tick
    labels, then the axis title beyond them. Never past the caption."""
    blocks: dict[int, list[Line]] = {}
    for line in lines:
        if id(line) not in caption_lines:
            blocks.setdefault(line.source_block, []).append(line)
    block_boxes = [union([line.unrotated for line in members]) for members in blocks.values()]
    for _ in range(2):
        reach = expand(region, LABEL_GAP)
        grown = [
            box
            for box in block_boxes
            if _inside(box, reach) and not _crosses(box, caption)
        ]
        if not grown:
            break
        new = union([region, *grown])
        if new == region:
            break
        region = new
    return region


def _inside(box: Bbox, container: Bbox) -> bool:
    return box[0] >= container[0] and box[1] >= container[1] and box[2] <= container[2] and box[3] <= container[3]


def _crosses(box: Bbox, caption: Bbox) -> bool:
    return area(intersect(box, caption)) > 0


def is_background(image: Bbox, lines: Sequence[Line]) -> bool:
    """Whether an image lies behind the page's running text (a decorative background, a
    watermark, a coloured panel): lines of prose centred inside it."""
    chars = 0
    for line in lines:
        if len(line.text) >= PROSE_LINE_CHARS and center_in(line.unrotated, image):
            chars += len(line.text)
            if chars >= BACKGROUND_TEXT_CHARS:
                return True
    return False


def page_pictures(
    page_box: Bbox,
    graphics: PageGraphics,
    geometry: PageGeometry,
    lines: list[Line],
) -> tuple[list[Block], set[int]]:
    """The page's pictures: its captioned figures (vector or raster, with their labels), and
    the raster images outside them that are neither backgrounds nor too small
    (``page_blocks.picture_blocks``); and the ids of the figures' caption lines (their
    blocks are captions, whatever punctuation follows the number: "FIG. 2 –")."""
    from haiku.rag.ingest.pdf.page_blocks import big_enough, picture_blocks

    found = figure_regions(page_box, graphics, lines)
    regions = [region for region, _ in found]
    # the size test first: picture_blocks drops the small ones anyway, and is_background
    # walks all the page's lines for each image
    images = [
        box
        for box in graphics.images
        if not any(center_in(box, region) for region in regions)
        and big_enough(intersect(box, page_box))
        and not is_background(box, lines)
    ]
    figures = []
    for region, members in found:
        figure = geometry.block("picture", region)
        figure.caption_line = members[0]
        figures.append(figure)
    captions = {id(members[0]) for _, members in found}
    return figures + picture_blocks(images, page_box, geometry, lines), captions


def mark_captions(blocks: list[Block], caption_lines: set[int]) -> None:
    """Text blocks that start with a figure's caption line are captions."""
    if not caption_lines:
        return
    for block in blocks:
        if block.kind == "text" and block.lines and id(block.lines[0]) in caption_lines:
            block.kind = "caption"


def outside_figures(tables: list[Block], pictures: list[Block]) -> list[Block]:
    """The ruled tables that are not inside a captioned figure. A chart's axes, ticks and
    curves (each path's box counts as a rectangle's four rules) make a sparse grid that
    the table finder took for a table, and the chart then became a table of tick labels;
    under a "Figure N" caption it is a figure (a grid printed as a figure is read as one
    too: its text is the figure's)."""
    figures = [block.box for block in pictures if block.caption_line is not None]
    if not figures or not tables:
        return tables
    return [table for table in tables if not any(center_in(table.box, f) for f in figures)]
