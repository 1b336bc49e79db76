"""DoclingDocuments built by hand for the chunker's and the item records' tests: text items
with one provenance entry per line, as our converters write them."""

from __future__ import annotations

from docling_core.types.doc import (
    BoundingBox,
    CoordOrigin,
    DocItemLabel,
    DoclingDocument,
    ProvenanceItem,
    Size,
    TextItem,
)

PAGE = Size(width=612, height=792)


def line_prov(page: int, top: float, span: tuple[int, int]) -> ProvenanceItem:
    bbox = BoundingBox(l=72, t=top, r=540, b=top + 12, coord_origin=CoordOrigin.TOPLEFT)
    return ProvenanceItem(page_no=page, bbox=bbox, charspan=span)


def add_paragraph(doc: DoclingDocument, lines: list[tuple[int, float, str]]) -> TextItem:
    """A text item with one provenance entry per (page, top, line text), as converters write."""
    text = " ".join(line for _, _, line in lines)
    provs, start = [], 0
    for page, top, line in lines:
        provs.append(line_prov(page, top, (start, start + len(line))))
        start += len(line) + 1
    item = doc.add_text(label=DocItemLabel.TEXT, text=text, prov=provs[0])
    item.prov.extend(provs[1:])
    return item
