"""Plain records that flow from conversion to the store.

Geometry convention, used everywhere in haiku.rag: page numbers are 1-based; a box is in PDF
points (1/72 inch) relative to the page's **top-left** corner, x to the right and y downwards,
exactly as PyMuPDF reports ``page.rect`` coordinates (the page's CropBox-based, unrotated
display space). To draw a box on a page rendered at ``dpi``, multiply by ``dpi / 72``.
DoclingDocument provenance written by our converters uses ``CoordOrigin.TOPLEFT`` with the same
numbers, so no flip is ever needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # docling-core's models are slow to import; keep `import haiku.rag` cheap
    from docling_core.types.doc import DoclingDocument


@dataclass(frozen=True, slots=True)
class Box:
    page: int
    x0: float
    y0: float
    x1: float
    y1: float

    def to_dict(self) -> dict[str, float | int]:
        return {"page": self.page, "x0": self.x0, "y0": self.y0, "x1": self.x1, "y1": self.y1}

    def __reduce__(self) -> tuple[type[Box], tuple[int, float, float, float, float]]:
        # A parsed document crosses from the parse worker pickled, with ~50 boxes a page: the
        # frozen dataclass's own __getstate__/__setstate__ run in Python per box, its
        # constructor from a tuple is ~1.5x faster both ways.
        return (Box, (self.page, self.x0, self.y0, self.x1, self.y1))

    @classmethod
    def from_dict(cls, d: dict) -> Box:
        return cls(int(d["page"]), float(d["x0"]), float(d["y0"]), float(d["x1"]), float(d["y1"]))


@dataclass(slots=True)
class Conversion:
    """What a converter produced from one source."""

    document: DoclingDocument
    mime_type: str
    page_count: int = 0
    title: str | None = None
    # 1-based pages that have no usable text layer (scanned); the document is still ingested
    # when other pages have text, and these are recorded in its metadata.
    pages_needing_ocr: list[int] = field(default_factory=list)
    # 1-based pages whose text was recognised by OCR
    pages_recognised: list[int] = field(default_factory=list)
    # What to store as the document's source instead of the input bytes (an image file is
    # stored wrapped as a one-page PDF, so that its page renders like any PDF page).
    stored_bytes: bytes | None = None
    warnings: list[str] = field(default_factory=list)
    # Each item's provenance boxes by ``self_ref`` (one per ``item.prov``), when the converter
    # made them while building the document (the PDF converter): ``items.ItemBoxes`` starts
    # from them instead of reading every provenance back (~50k boxes for 1,144 pages).
    item_boxes: dict[str, list[Box]] | None = None


@dataclass(slots=True)
class ItemRecord:
    """One DoclingDocument item in reading order (drives context expansion and analysis)."""

    position: int
    self_ref: str
    label: str
    text: str
    page_numbers: list[int]
    heading_level: int
    boxes: list[Box]

    def __reduce__(self) -> tuple[type[ItemRecord], tuple[Any, ...]]:
        # Pickled as its constructor's arguments, like ``Box``: the slotted dataclass's own
        # __getstate__/__setstate__ run in Python per record (~18k items for the 1,144 real
        # PDF pages cross from the parse worker). A test checks every field is kept.
        return (
            ItemRecord,
            (self.position, self.self_ref, self.label, self.text, self.page_numbers,
             self.heading_level, self.boxes),
        )


@dataclass(slots=True)
class ChunkRecord:
    """One chunk as produced by the chunker, before it has an id or a vector."""

    order: int
    text: str
    # headings + text: what is embedded and full-text indexed
    embed_text: str
    headings: list[str]
    labels: list[str]
    doc_item_refs: list[str]
    page_numbers: list[int]
    boxes: list[Box]

    def __reduce__(self) -> tuple[type[ChunkRecord], tuple[Any, ...]]:
        # as ItemRecord's
        return (
            ChunkRecord,
            (self.order, self.text, self.embed_text, self.headings, self.labels,
             self.doc_item_refs, self.page_numbers, self.boxes),
        )


@dataclass(slots=True)
class NewDocument:
    """Everything the store needs to write one document version."""

    uri: str
    title: str | None
    metadata: dict[str, Any]
    content_hash: str
    mime_type: str
    page_count: int
    source_bytes: bytes
    content: str
    docling_json: str
    items: list[ItemRecord]
    chunks: list[ChunkRecord]
