"""Boxes and affine maps as plain tuples: the converter handles tens of thousands of boxes
per document, and building a ``pymupdf.Rect`` costs ~2.5 µs where a tuple costs ~0.05 µs
(a ``Rect`` union, ~20 µs)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pymupdf

Bbox = tuple[float, float, float, float]  # (x0, y0, x1, y1), y downwards
Matrix = tuple[float, float, float, float, float, float]  # PyMuPDF's (a, b, c, d, e, f)
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


def as_matrix(m: pymupdf.Matrix) -> Matrix:
    return (m.a, m.b, m.c, m.d, m.e, m.f)


def transform(box: Sequence[float], m: Matrix) -> Bbox:
    if m == IDENTITY:
        return box if isinstance(box, tuple) else (box[0], box[1], box[2], box[3])
    a, b, c, d, e, f = m
    xs, ys = [], []
    for x in (box[0], box[2]):
        for y in (box[1], box[3]):
            xs.append(a * x + c * y + e)
            ys.append(b * x + d * y + f)
    return (min(xs), min(ys), max(xs), max(ys))


def union(boxes: Iterable[Sequence[float]]) -> Bbox:
    x0s, y0s, x1s, y1s = zip(*boxes, strict=True)
    return (min(x0s), min(y0s), max(x1s), max(y1s))


def intersect(a: Sequence[float], b: Sequence[float]) -> Bbox:
    """The overlap of two boxes; an empty overlap is a zero-size box, never an inverted one."""
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[2], b[2]), min(a[3], b[3])
    return (x0, y0, max(x0, x1), max(y0, y1))


def clamp(box: Sequence[float], width: float, height: float) -> Bbox:
    """The box moved inside the page ``(0, 0, width, height)``, each coordinate clamped
    separately: a box wholly past an edge collapses onto that edge."""
    x0, y0, x1, y1 = box
    return (
        min(max(x0, 0.0), width),
        min(max(y0, 0.0), height),
        min(max(x1, 0.0), width),
        min(max(y1, 0.0), height),
    )


def expand(box: Sequence[float], margin: float) -> Bbox:
    return (box[0] - margin, box[1] - margin, box[2] + margin, box[3] + margin)


def area(box: Sequence[float]) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def overlap_fraction(a: Sequence[float], b: Sequence[float]) -> float:
    """Share of the smaller box covered by the other."""
    smaller = min(area(a), area(b))
    return area(intersect(a, b)) / smaller if smaller > 0 else 0.0


def center_in(box: Sequence[float], container: Sequence[float]) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return container[0] <= cx <= container[2] and container[1] <= cy <= container[3]


def boxes_touch(a: Bbox, b: Bbox, slack: float = 2.0) -> bool:
    return a[0] - slack <= b[2] and b[0] - slack <= a[2] and a[1] - slack <= b[3] and b[1] - slack <= a[3]
