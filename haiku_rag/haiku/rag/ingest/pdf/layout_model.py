"""``layout="layout"``: blocks from the ONNX layout analyser bundled with PyMuPDF 2.0
(``pymupdf.layout``; the models ship inside the wheel, nothing is downloaded)."""

from __future__ import annotations

from typing import Any

import pymupdf
from docling_core.types.doc import TableCell, TableData

from haiku.rag.ingest.pdf.blocks import Block, BlockKind, Line, PageGeometry
from haiku.rag.ingest.pdf.extract import one_line
from haiku.rag.ingest.pdf.geometry import Bbox, center_in, overlap_fraction, union
from haiku.rag.ingest.pdf.page_blocks import order_blocks, runs

MAX_LINES_FOR_LAYOUT_MODEL = 3_000

_LAYOUT_KINDS: dict[str, BlockKind] = {
    "text": "text",
    "title": "title",
    "section-header": "heading",
    "list-item": "list_item",
    "caption": "caption",
    "footnote": "footnote",
    "formula": "formula",
    "page-header": "header",
    "page-footer": "footer",
    "table": "table",
    "picture": "picture",
}


def load() -> Any:
    """The analyser, a callable ``(page, return_raw=True) -> list of labelled boxes``.
    Importing ``pymupdf.layout`` registers it as ``pymupdf._get_layout``; pymupdf4llm can
    unregister it, so re-activate it if needed."""
    import pymupdf.layout  # noqa: F401  (registers the model on import)

    if not callable(pymupdf._get_layout):
        pymupdf.layout.activate()
    return pymupdf._get_layout


def layout_blocks_or_none(
    page: pymupdf.Page,
    lines: list[Line],
    pictures: list[Block],
    geometry: PageGeometry,
    analyser: Any,
    warnings: list[str],
) -> list[Block] | None:
    """The analyser's blocks in reading order, or None (with a warning) when the fast
    heuristics must do: on very dense pages (the model's cost grows with the line count),
    or when the model fails on the page."""
    if len(lines) > MAX_LINES_FOR_LAYOUT_MODEL:
        warnings.append(
            f"page {geometry.page_no}: {len(lines)} text lines, too many for the layout "
            "model; used the fast heuristics"
        )
        return None
    try:
        groups = analyser(page, return_raw=True) or []
    except Exception as exc:  # third-party model code on untrusted input: any error type
        warnings.append(
            f"page {geometry.page_no}: the layout model failed ({type(exc).__name__}: "
            f"{one_line(exc)}); used the fast heuristics"
        )
        return None
    return _layout_blocks(groups, lines, pictures, geometry)


def _layout_blocks(
    groups: list[dict[str, Any]],
    lines: list[Line],
    pictures: list[Block],
    geometry: PageGeometry,
) -> list[Block]:
    """Blocks from the analyser's labelled boxes. Each text line joins the box holding its
    centre; lines outside every box are kept as paragraphs, and images the analyser did not
    report as pictures. The analyser's own order is not kept: on the two-column papers of
    the benchmark it switched columns twice as often as our column ordering, which is
    applied to its blocks instead (see docs/pdf-layout.md)."""
    blocks: list[Block] = []
    claimed: set[int] = set()
    for group in groups:
        kind = _LAYOUT_KINDS.get(group.get("class_name", ""), "text")
        box = tuple(group["group_bbox"][:4])
        members = [
            line for line in lines
            if id(line) not in claimed and center_in(line.unrotated, box)
        ]
        claimed.update(id(line) for line in members)
        if kind == "picture":
            blocks.append(geometry.block("picture", box))
            continue
        if kind == "table":
            table = _layout_table(group, box, members, geometry)
            if table is not None:
                blocks.append(table)
                continue
            kind = "text"  # no grid recognised: keep its text readable
        if members:
            block = geometry.block(kind, box, members)
            block.box = union(line.box for line in members)
            block.display = union(line.display for line in members)
            blocks.append(block)
    orphans = [line for line in lines if id(line) not in claimed]
    extras = runs(orphans, geometry.page_no) + [
        p for p in pictures
        if not any(overlap_fraction(p.box, b.box) > 0.5 for b in blocks)
    ]
    return order_blocks(blocks + extras)


def _layout_table(
    group: dict[str, Any], box: Bbox, members: list[Line], geometry: PageGeometry
) -> Block | None:
    cells_info = group.get("table_cells") or []
    if not cells_info:
        return None
    cells = [
        TableCell(
            text=" ".join(str(cell.text or "").split()),
            start_row_offset_idx=cell.row_start,
            end_row_offset_idx=cell.row_end,
            start_col_offset_idx=cell.col_start,
            end_col_offset_idx=cell.col_end,
            row_span=cell.row_end - cell.row_start,
            col_span=cell.col_end - cell.col_start,
            column_header=cell.row_start == 0,
        )
        for cell in cells_info
    ]
    block = geometry.block("table", box, members)
    block.table = TableData(
        num_rows=max(c.end_row_offset_idx for c in cells),
        num_cols=max(c.end_col_offset_idx for c in cells),
        table_cells=cells,
    )
    return block
