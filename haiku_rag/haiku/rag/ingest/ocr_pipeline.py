"""The OCR models' pre- and post-processing, on NumPy, Pillow and pyclipper: no OpenCV.

``ingest/ocr.py`` runs PP-OCR's three ONNX models (DBNet text detection, the orientation
classifier, the CTC recogniser) itself. RapidOCR (``rapidocr_onnxruntime``), whose model files
we read, does this work with ~20 OpenCV calls, and OpenCV was the largest part of the release
(179 MB with its vendored libraries, docs/benchmarks.md) for a few image operations. The same
steps, as RapidOCR 1.4.4 does them (``ch_ppocr_det/utils.py``, ``main.py``), are here:

* **Resizing** like OpenCV's ``INTER_LINEAR`` (pixel centres aligned, two taps per axis, no
  smoothing when shrinking: what the models were run with), in OpenCV's fixed-point
  arithmetic, so the models see the same input (``resize_linear``).
* **Detection** (``Detector``): the page scaled to multiples of 32 (its shorter side at least
  736 px), normalised, the probability map thresholded at 0.3 and dilated by 2 x 2; each
  8-connected region of it (``_regions``, from runs of pixels per row) gives its convex hull,
  the hull its minimum-area rectangle (``min_area_rect``, rotating calipers), scored by the
  mean probability inside (below 0.5: dropped), grown by area x 1.6 / perimeter with
  pyclipper (round joins, as RapidOCR does), and its rectangle again is the line's box.
* **Line crops** (``crop_line``): the quadrilateral cut out and straightened by a perspective
  mapping, bicubic (OpenCV's kernel, a = -0.75) with the border replicated; a crop 1.5x
  taller than wide is turned a quarter turn.
* **Orientation classification** (``Classifier``): crops scaled to 48 px high (at most 192
  wide), labels "0" and "180".
* **Reading order** (``sorted_boxes``): top to bottom, left to right within 10 px.

The recogniser's input and its CTC decoding stay in ``ingest/ocr.py`` (``line_input``,
``decode_with_spaces``). Nothing here imports ``cv2``; a test checks that reading a page leaves
it out of ``sys.modules``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

# RapidOCR's configuration (config.yaml), as its detector and classifier ran with it.
DET_LIMIT_SIDE = 736  # a page's shorter side is scaled up to at least this ("limit_type: min")
DET_THRESH = 0.3  # probability map -> text pixels
DET_BOX_THRESH = 0.5  # a region whose mean probability is lower is dropped
DET_MAX_CANDIDATES = 1000
DET_UNCLIP_RATIO = 1.6
DET_MIN_SIZE = 3
CLS_SHAPE = (3, 48, 192)
CLS_LABELS = ("0", "180")

# OpenCV's fixed-point resize: 11 fractional bits per axis.
_COEF_BITS = 11
_COEF_SCALE = 1 << _COEF_BITS


class Model:
    """One ONNX model's session, called with its one input: ``model(batch)`` is the list of
    its outputs (``session.run``). The session may be onnxruntime's or ``ocr._OpenVinoSession``."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.input_name = session.get_inputs()[0].name

    def __call__(self, batch: Any) -> list[Any]:
        return self.session.run(None, {self.input_name: batch})


# -- resizing -----------------------------------------------------------------------------


def _linear_taps(source: int, target: int, clamp: bool = True) -> tuple[Any, Any]:
    """For each target index along one axis: its two source indices and their two
    fixed-point weights, as OpenCV's ``INTER_LINEAR`` computes them (the position in single
    precision). Across (``clamp``) a position beyond the edge takes the edge pixel whole;
    down, OpenCV keeps the weights and repeats the edge row."""
    import numpy as np

    scale = source / target
    position = ((np.arange(target, dtype=np.float64) + 0.5) * scale - 0.5).astype(np.float32)
    first = np.floor(position).astype(np.int64)
    fraction = (position - first.astype(np.float32)).astype(np.float32)
    if clamp:
        low = first < 0
        fraction[low] = 0
        first[low] = 0
        high = first >= source - 1
        fraction[high] = 0
        first[high] = source - 1
    second = np.clip(first + 1, 0, source - 1)
    first = np.clip(first, 0, source - 1)
    # saturate_cast<short>(x * 2048) rounds to nearest (ties to even, as cvRound)
    weight1 = np.rint(fraction.astype(np.float32) * np.float32(_COEF_SCALE)).astype(np.int64)
    weight0 = np.rint((np.float32(1) - fraction) * np.float32(_COEF_SCALE)).astype(np.int64)
    return np.stack([first, second]), np.stack([weight0, weight1])


def resize_linear(image: Any, width: int, height: int) -> Any:
    """``cv2.resize(image, (width, height))`` (``INTER_LINEAR``) for a uint8 image (H x W or
    H x W x C): the source position of each target pixel's centre, its two neighbours per
    axis weighted in 11-bit fixed point, rounded as OpenCV's vectorised path rounds. A
    shrink to exactly half in both directions is OpenCV's 2 x 2 average, as it does then."""
    import numpy as np

    source_height, source_width = image.shape[:2]
    if (source_width, source_height) == (width, height):
        return image.copy()
    if width * 2 == source_width and height * 2 == source_height:
        wide = image.astype(np.uint16)
        total = wide[0::2, 0::2] + wide[1::2, 0::2] + wide[0::2, 1::2] + wide[1::2, 1::2]
        return ((total + 2) >> 2).astype(np.uint8)
    if image.ndim == 3 and _grey(image):
        # a grey image (a scanned page, a line of it): one channel resized, repeated
        plane = resize_linear(np.ascontiguousarray(image[..., 0]), width, height)
        return np.repeat(plane[..., None], image.shape[2], axis=2)
    columns, column_weights = _linear_taps(source_width, width)
    rows, row_weights = _linear_taps(source_height, height, clamp=False)
    # every product fits in 32 bits: 255 x 2048 across, then (that >> 4) x 2048 down
    shape = (1, width) + (1,) * (image.ndim - 2)
    # horizontal pass: values scaled by 2048
    across = np.take(image, columns[0], axis=1).astype(np.int32)
    across *= column_weights[0].astype(np.int32).reshape(shape)
    right = np.take(image, columns[1], axis=1).astype(np.int32)
    right *= column_weights[1].astype(np.int32).reshape(shape)
    across += right
    across >>= 4
    # vertical pass, as OpenCV's SIMD path rounds it: ((b0 * (x0 >> 4)) >> 16) +
    # ((b1 * (x1 >> 4)) >> 16), then + 2 >> 2
    shape = (height, 1) + (1,) * (image.ndim - 2)
    top = np.take(across, rows[0], axis=0)
    top *= row_weights[0].astype(np.int32).reshape(shape)
    top >>= 16
    bottom = np.take(across, rows[1], axis=0)
    bottom *= row_weights[1].astype(np.int32).reshape(shape)
    bottom >>= 16
    top += bottom
    top += 2
    top >>= 2
    return np.clip(top, 0, 255).astype(np.uint8)


def resize_area(image: Any, width: int, height: int) -> Any:
    """A shrink that averages each target pixel's area of the source (``INTER_AREA``), by
    Pillow's box filter, channel by channel."""
    import numpy as np
    from PIL import Image

    if image.ndim == 2:
        return np.asarray(Image.fromarray(image).resize((width, height), Image.Resampling.BOX))
    channels = [
        np.asarray(
            Image.fromarray(np.ascontiguousarray(image[..., c])).resize(
                (width, height), Image.Resampling.BOX
            )
        )
        for c in range(image.shape[2])
    ]
    return np.ascontiguousarray(np.stack(channels, axis=2))


def _grey(image: Any) -> bool:
    """Whether every pixel of a colour image (H x W x C) has equal channels."""
    import numpy as np

    if image.ndim != 3 or image.shape[2] < 2:
        return False
    first = image[..., 0]
    return all(bool(np.array_equal(first, image[..., c])) for c in range(1, image.shape[2]))


def rotate(image: Any, rotation: int) -> Any:
    """``image`` turned clockwise by ``rotation`` (0, 90, 180 or 270) degrees."""
    import numpy as np

    if rotation == 0:
        return image
    turns = {90: -1, 180: 2, 270: 1}[rotation]  # np.rot90 turns counter-clockwise
    return np.ascontiguousarray(np.rot90(image, turns))


# -- detection ----------------------------------------------------------------------------


class Detector:
    """PP-OCR's DBNet text detector: ``detector(bgr)`` is an N x 4 x 2 float32 array of line
    quadrilaterals (top-left, top-right, bottom-right, bottom-left) in ``bgr``'s pixels,
    in no particular order."""

    def __init__(self, session: Any) -> None:
        self.infer = Model(session)

    def __call__(self, bgr: Any) -> Any:
        import numpy as np

        height, width = bgr.shape[:2]
        ratio = 1.0
        if min(height, width) < DET_LIMIT_SIDE:
            ratio = DET_LIMIT_SIDE / (height if height < width else width)
        target_h = int(round(int(height * ratio) / 32) * 32)
        target_w = int(round(int(width * ratio) / 32) * 32)
        if target_h <= 0 or target_w <= 0:
            return np.zeros((0, 4, 2), dtype=np.float32)
        resized = resize_linear(bgr, target_w, target_h)
        batch = resized.astype(np.float32)
        batch *= np.float32(2 / 255)
        batch -= np.float32(1.0)
        batch = np.ascontiguousarray(batch.transpose(2, 0, 1)[None])
        probability = self.infer(batch)[0][0, 0]
        boxes = boxes_from_map(probability, width, height)
        kept = []
        for box in boxes:
            box = _order_clockwise(box)
            box[:, 0] = np.clip(box[:, 0], 0, width - 1).astype(np.int64)
            box[:, 1] = np.clip(box[:, 1], 0, height - 1).astype(np.int64)
            if int(np.linalg.norm(box[0] - box[1])) <= 3 or int(np.linalg.norm(box[0] - box[3])) <= 3:
                continue
            kept.append(box)
        if not kept:
            return np.zeros((0, 4, 2), dtype=np.float32)
        return np.stack(kept).astype(np.float32)


def boxes_from_map(probability: Any, dest_width: int, dest_height: int) -> list[Any]:
    """DB post-processing of one probability map (H x W, float): the boxes of its text
    regions, in the pixels of an image ``dest_width`` x ``dest_height``."""
    import numpy as np

    height, width = probability.shape
    mask = probability > DET_THRESH
    # dilation by a 2 x 2 kernel anchored at its bottom-right: a pixel is set when it or its
    # neighbour above, to the left, or above-left is
    dilated = mask.copy()
    dilated[1:] |= mask[:-1]
    dilated[:, 1:] |= mask[:, :-1]
    dilated[1:, 1:] |= mask[:-1, :-1]
    boxes = []
    for hull in _regions(dilated)[:DET_MAX_CANDIDATES]:
        points, short_side = mini_box(hull, is_hull=True)
        if short_side < DET_MIN_SIZE:
            continue
        if _box_score(probability, points) < DET_BOX_THRESH:
            continue
        grown = unclip(points)
        if grown is None or len(grown) < 3:
            continue
        box, short_side = mini_box(grown)
        if short_side < DET_MIN_SIZE + 2:
            continue
        box[:, 0] = np.clip(np.round(box[:, 0] / width * dest_width), 0, dest_width)
        box[:, 1] = np.clip(np.round(box[:, 1] / height * dest_height), 0, dest_height)
        boxes.append(box.astype(np.int32))
    return boxes


def _regions(mask: Any) -> list[Any]:
    """The convex hull (K x 2 float64 points, pixel coordinates) of each 8-connected region
    of a boolean mask, regions ordered by their first pixel (top to bottom, left to right).
    Regions are joined from runs of set pixels per row (a run touches a run of the row
    above when their columns overlap or meet diagonally); a region's hull is that of its
    rows' first and last pixels."""
    import numpy as np

    padded = np.zeros((mask.shape[0], mask.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    edges = np.diff(padded, axis=1)
    start_rows, starts = np.nonzero(edges == 1)
    end_rows, ends = np.nonzero(edges == -1)
    if starts.size == 0:
        return []
    ends = ends - 1  # inclusive last column
    # runs are in row order, left to right (np.nonzero is row-major); starts and ends pair up
    row_first = np.searchsorted(start_rows, np.arange(mask.shape[0] + 1))
    parent = list(range(starts.size))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for row in range(1, mask.shape[0]):
        here_from, here_to = row_first[row], row_first[row + 1]
        above_from, above_to = row_first[row - 1], row_first[row]
        if here_from == here_to or above_from == above_to:
            continue
        above_starts = starts[above_from:above_to]
        above_ends = ends[above_from:above_to]
        here_starts = starts[here_from:here_to]
        here_ends = ends[here_from:here_to]
        # for each run here, the runs above with end >= start - 1 and start <= end + 1
        first = np.searchsorted(above_ends, here_starts - 1, side="left")
        last = np.searchsorted(above_starts, here_ends + 1, side="right")
        for k in np.flatnonzero(last > first).tolist():
            a = find(here_from + k)
            for j in range(int(first[k]), int(last[k])):
                b = find(above_from + j)
                if a != b:
                    if a < b:
                        parent[b] = a
                    else:
                        parent[a] = b
                        a = b
    roots = np.array([find(i) for i in range(starts.size)])
    order = np.argsort(roots, kind="stable")
    boundaries = np.flatnonzero(np.diff(roots[order])) + 1
    hulls = []
    for group in np.split(order, boundaries):
        points = np.concatenate(
            [
                np.stack([starts[group], start_rows[group]], axis=1),
                np.stack([ends[group], end_rows[group]], axis=1),
            ]
        ).astype(np.float64)
        hulls.append(convex_hull(points))
    return hulls


def convex_hull(points: Any) -> Any:
    """The convex hull of 2-D points (Andrew's monotone chain), counter-clockwise in y-up
    terms; collinear points dropped."""
    import numpy as np

    unique = np.unique(points, axis=0)  # sorted by x, then y
    if len(unique) <= 2:
        return unique

    def cross(o: Any, a: Any, b: Any) -> float:
        return float((a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]))

    pts = unique.tolist()
    lower: list[Any] = []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    upper: list[Any] = []
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1], dtype=np.float64)


def min_area_rect(points: Any, is_hull: bool = False) -> tuple[Any, float, float]:
    """The minimum-area rectangle around ``points`` (rotating calipers over the convex hull:
    one side lies along a hull edge): its four corners (4 x 2, in order around it) and its
    two side lengths. ``is_hull``: the points are a convex hull already (``convex_hull``'s)."""
    import numpy as np

    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    hull = points if is_hull else convex_hull(points)
    if len(hull) == 1:
        return np.repeat(hull, 4, axis=0), 0.0, 0.0
    if len(hull) == 2:
        a, b = hull
        return np.array([a, b, b, a]), float(np.linalg.norm(b - a)), 0.0
    edges = np.roll(hull, -1, axis=0) - hull
    lengths = np.linalg.norm(edges, axis=1)
    keep = lengths > 0
    units = edges[keep] / lengths[keep, None]
    normals = np.stack([-units[:, 1], units[:, 0]], axis=1)
    along = hull @ units.T  # points x edges
    across = hull @ normals.T
    widths = along.max(axis=0) - along.min(axis=0)
    heights = across.max(axis=0) - across.min(axis=0)
    best = int(np.argmin(widths * heights))
    u, n = units[best], normals[best]
    a0, a1 = along[:, best].min(), along[:, best].max()
    n0, n1 = across[:, best].min(), across[:, best].max()
    corners = np.array([a0 * u + n0 * n, a1 * u + n0 * n, a1 * u + n1 * n, a0 * u + n1 * n])
    return corners, float(widths[best]), float(heights[best])


def mini_box(points: Any, is_hull: bool = False) -> tuple[Any, float]:
    """RapidOCR's ``get_mini_boxes``: the minimum-area rectangle's corners as top-left,
    top-right, bottom-right, bottom-left (float32), and its shorter side."""
    import numpy as np

    corners, width, height = min_area_rect(points, is_hull)
    corners = corners.astype(np.float32)
    ordered = sorted(corners.tolist(), key=lambda p: p[0])
    left = (0, 1) if ordered[1][1] > ordered[0][1] else (1, 0)  # (top, bottom)
    right = (2, 3) if ordered[3][1] > ordered[2][1] else (3, 2)
    box = np.array(
        [ordered[left[0]], ordered[right[0]], ordered[right[1]], ordered[left[1]]],
        dtype=np.float32,
    )
    return box, min(width, height)


def _box_score(probability: Any, box: Any) -> float:
    """The mean probability over the pixels of the box's polygon (corners truncated to whole
    pixels; a pixel whose centre lies inside or on an edge counts)."""
    import numpy as np

    height, width = probability.shape
    xmin = int(np.clip(np.floor(box[:, 0].min()), 0, width - 1))
    xmax = int(np.clip(np.ceil(box[:, 0].max()), 0, width - 1))
    ymin = int(np.clip(np.floor(box[:, 1].min()), 0, height - 1))
    ymax = int(np.clip(np.ceil(box[:, 1].max()), 0, height - 1))
    polygon = box.astype(np.int32).astype(np.float64) - np.array([xmin, ymin], dtype=np.float64)
    ys, xs = np.mgrid[0 : ymax - ymin + 1, 0 : xmax - xmin + 1]
    inside = _inside_polygon(xs.astype(np.float64), ys.astype(np.float64), polygon)
    if not inside.any():
        return 0.0
    return float(probability[ymin : ymax + 1, xmin : xmax + 1][inside].mean())


def _inside_polygon(xs: Any, ys: Any, polygon: Any) -> Any:
    """Points inside or on the edges of a convex polygon (any winding)."""
    import numpy as np

    signs = []
    for i in range(len(polygon)):
        x0, y0 = polygon[i]
        x1, y1 = polygon[(i + 1) % len(polygon)]
        signs.append((x1 - x0) * (ys - y0) - (y1 - y0) * (xs - x0))
    stacked = np.stack(signs)
    return (stacked >= -1e-9).all(axis=0) | (stacked <= 1e-9).all(axis=0)


def unclip(box: Any) -> Any | None:
    """The box grown by area x ``DET_UNCLIP_RATIO`` / perimeter on every side, round
    joins (pyclipper, as RapidOCR does; it takes the corners as whole pixels, truncated):
    a polygon of whole-pixel points, or None when nothing is left."""
    import numpy as np
    import pyclipper  # type: ignore[import-untyped]  # no stubs installed

    x, y = box[:, 0].astype(np.float64), box[:, 1].astype(np.float64)
    area = abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))) / 2
    perimeter = float(np.linalg.norm(np.roll(box, -1, axis=0).astype(np.float64) - box, axis=1).sum())
    if perimeter == 0:
        return None
    offset = pyclipper.PyclipperOffset()
    offset.AddPath(box, pyclipper.JT_ROUND, pyclipper.ET_CLOSEDPOLYGON)
    grown = offset.Execute(area * DET_UNCLIP_RATIO / perimeter)
    if not grown:
        return None
    return np.array(grown[0], dtype=np.float64).reshape(-1, 2)


def _order_clockwise(points: Any) -> Any:
    """RapidOCR's ``order_points_clockwise``: top-left, top-right, bottom-right,
    bottom-left, from the two leftmost and the two rightmost points."""
    import numpy as np

    by_x = points[np.argsort(points[:, 0], kind="stable")]
    left = by_x[:2][np.argsort(by_x[:2, 1], kind="stable")]
    right = by_x[2:][np.argsort(by_x[2:, 1], kind="stable")]
    return np.array([left[0], right[0], right[1], left[1]], dtype=np.float32)


def sorted_boxes(boxes: Any) -> list[Any]:
    """Boxes in reading order: by their top-left corner top to bottom, then left to right
    among boxes whose tops are within 10 px (RapidOCR's ``sorted_boxes``)."""
    ordered = sorted(list(boxes), key=lambda b: (b[0][1], b[0][0]))
    for i in range(len(ordered) - 1):
        for j in range(i, -1, -1):
            if abs(ordered[j + 1][0][1] - ordered[j][0][1]) < 10 and ordered[j + 1][0][0] < ordered[j][0][0]:
                ordered[j], ordered[j + 1] = ordered[j + 1], ordered[j]
            else:
                break
    return ordered


# -- line crops ---------------------------------------------------------------------------


def _homography(source: Any, target: Any) -> Any:
    """The 3 x 3 projective map taking the four ``source`` points to ``target``."""
    import numpy as np

    rows, values = [], []
    for (x, y), (u, v) in zip(source.tolist(), target.tolist(), strict=True):
        rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        values.append(u)
        rows.append([0, 0, 0, x, y, 1, -v * x, -v * y])
        values.append(v)
    solution = np.linalg.solve(np.array(rows, dtype=np.float64), np.array(values, dtype=np.float64))
    return np.append(solution, 1.0).reshape(3, 3)


def _cubic_weights(fraction: Any) -> Any:
    """OpenCV's bicubic kernel (a = -0.75) at the four taps around each position whose
    fractional part is ``fraction`` (0 <= f < 1): n x 4, as OpenCV's ``interpolateCubic``
    writes them (the last one makes the sum 1)."""
    import numpy as np

    a = np.float32(-0.75)
    x = fraction.astype(np.float32)
    x1 = x + 1
    y = 1 - x
    weights = np.empty((x.size, 4), dtype=np.float32)
    weights[:, 0] = ((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a
    weights[:, 1] = ((a + 2) * x - (a + 3)) * x * x + 1
    weights[:, 2] = ((a + 2) * y - (a + 3)) * y * y + 1
    weights[:, 3] = 1 - weights[:, 0] - weights[:, 1] - weights[:, 2]
    return weights


def crop_line(image: Any, quad: Any) -> Any:
    """The line inside ``quad`` (top-left, top-right, bottom-right, bottom-left) cut out of
    ``image`` (uint8, H x W x C) and straightened: as wide as its longer top/bottom side and
    as high as its longer left/right side, each pixel sampled bicubically at the point the
    projective map from the crop to the quad gives (the border replicated, as OpenCV 5's
    ``cv2.warpPerspective`` with ``INTER_CUBIC``: within a grey level of its pixels; OpenCV 4
    rounded the positions to 1/32 px). A crop at least 1.5x
    taller than wide is turned a quarter turn counter-clockwise."""
    import numpy as np

    quad = np.asarray(quad, dtype=np.float32)
    width = int(max(np.linalg.norm(quad[0] - quad[1]), np.linalg.norm(quad[2] - quad[3])))
    height = int(max(np.linalg.norm(quad[0] - quad[3]), np.linalg.norm(quad[1] - quad[2])))
    width, height = max(1, width), max(1, height)
    x0, y0 = int(quad[0][0]), int(quad[0][1])
    corners = [(x0, y0), (x0 + width, y0), (x0 + width, y0 + height), (x0, y0 + height)]
    if quad.tolist() == [[float(x), float(y)] for x, y in corners] and (
        x0 >= 0 and y0 >= 0 and x0 + width <= image.shape[1] and y0 + height <= image.shape[0]
    ):
        # an upright box on whole pixels: the map is a shift by whole pixels, and every
        # sample is the pixel itself (the kernel is 1 at 0 and 0 at the other taps)
        crop = np.ascontiguousarray(image[y0 : y0 + height, x0 : x0 + width])
        return np.ascontiguousarray(np.rot90(crop)) if height >= 1.5 * width else crop
    target = np.array([[0, 0], [width, 0], [width, height], [0, height]], dtype=np.float32)
    # the map from crop pixels back into the image: getPerspectiveTransform(quad, target)
    # inverted, as warpPerspective applies it
    forward = _homography(quad.astype(np.float64), target.astype(np.float64))
    inverse = np.linalg.inv(forward)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    w = inverse[2, 0] * xs + inverse[2, 1] * ys + inverse[2, 2]
    w = np.where(w != 0, 1.0 / np.where(w != 0, w, 1), 0.0)
    fx = (inverse[0, 0] * xs + inverse[0, 1] * ys + inverse[0, 2]) * w
    fy = (inverse[1, 0] * xs + inverse[1, 1] * ys + inverse[1, 2]) * w
    left, top = np.floor(fx).ravel(), np.floor(fy).ravel()
    wx = _cubic_weights(fx.ravel() - left)  # n x 4
    wy = _cubic_weights(fy.ravel() - top)
    taps = np.arange(-1, 3)
    image_height, image_width = image.shape[:2]
    # the 4 x 4 source pixels of each crop pixel, gathered at once; the border replicated
    # (indices clamped) only where a tap falls outside the image
    if left.min() >= 1 and left.max() <= image_width - 3 and top.min() >= 1 and (
        top.max() <= image_height - 3
    ):
        offsets = (taps[:, None] * image_width + taps[None, :]).ravel()  # 16
        base = top.astype(np.int64) * image_width + left.astype(np.int64)
        index = base[:, None] + offsets[None, :]
    else:
        columns = np.clip(left.astype(np.int64)[:, None] + taps, 0, image_width - 1)
        rows = np.clip(top.astype(np.int64)[:, None] + taps, 0, image_height - 1)
        index = ((rows * image_width)[:, :, None] + columns[:, None, :]).reshape(-1, 16)
    channels = image.shape[2]
    weights = (wy[:, :, None] * wx[:, None, :]).reshape(-1, 16)
    rows_used = slice(max(0, int(top.min()) - 1), int(top.max()) + 3)
    columns_used = slice(max(0, int(left.min()) - 1), int(left.max()) + 3)
    if image.flags.c_contiguous and _grey(image[rows_used, columns_used]):
        # a grey region (a scan): every channel is the same sum, computed once
        samples = np.take(image.reshape(-1), index * channels).astype(np.float32)
        grey = np.clip(np.rint((samples * weights).sum(axis=1)), 0, 255).astype(np.uint8)
        crop = np.repeat(grey, channels).reshape(height, width, channels)
    else:
        samples = np.take(image.reshape(-1, channels), index, axis=0)
        out = np.matmul(weights[:, None, :], samples.astype(np.float32))[:, 0]
        crop = np.clip(np.rint(out), 0, 255).astype(np.uint8).reshape(height, width, channels)
    if crop.shape[0] >= 1.5 * crop.shape[1]:
        crop = np.ascontiguousarray(np.rot90(crop))
    return crop


# -- orientation --------------------------------------------------------------------------


class Classifier:
    """PP-OCR's text orientation classifier: ``classifier(crops)`` is a (label, score) per
    line crop, label "0" (upright) or "180" (upside down)."""

    def __init__(self, session: Any) -> None:
        self.infer = Model(session)

    def __call__(self, crops: Sequence[Any]) -> list[tuple[str, float]]:
        import numpy as np

        if not crops:
            return []
        batch = np.stack([classifier_input(crop) for crop in crops])
        scores = self.infer(batch)[0]
        return [(CLS_LABELS[int(i)], float(row[int(i)])) for row, i in zip(scores, scores.argmax(axis=1), strict=True)]


def classifier_input(crop: Any) -> Any:
    """A crop as the classifier's input (3 x 48 x 192, float32 in [-1, 1]): 48 px high,
    ``ceil(48 x aspect)`` wide (at most 192), zero-padded on the right."""
    import numpy as np

    channels, height, max_width = CLS_SHAPE
    ratio = crop.shape[1] / float(crop.shape[0])
    width = max_width if math.ceil(height * ratio) > max_width else int(math.ceil(height * ratio))
    width = max(1, width)
    scaled = resize_linear(crop, width, height).astype(np.float32).transpose(2, 0, 1) / 255
    scaled -= 0.5
    scaled /= 0.5
    out = np.zeros((channels, height, max_width), dtype=np.float32)
    out[:, :, :width] = scaled
    return out


def read_characters(path: Any) -> list[str]:
    """A recogniser's dictionary file as RapidOCR reads it: "blank" first (CTC's class 0),
    one character per line, then a space last."""
    with open(path, "rb") as handle:
        lines = [line.decode("utf-8").strip("\n").strip("\r\n") for line in handle.readlines()]
    return ["blank", *lines, " "]


def characters_from_metadata(text: str) -> list[str]:
    """The dictionary a model carries in its metadata ("character"), read the same way."""
    return ["blank", *text.splitlines(), " "]
