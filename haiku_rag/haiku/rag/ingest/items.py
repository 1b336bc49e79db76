"""One ``ItemRecord`` per DoclingDocument item, in reading order, with its page geometry."""

from __future__ import annotations

from typing import Any

from docling_core.types.doc import (
    CoordOrigin,
    DocItem,
    DoclingDocument,
    PictureItem,
    ProvenanceItem,
    SectionHeaderItem,
    TableItem,
    TextItem,
)

from haiku.rag.ingest.records import Box, ItemRecord


def extract_items(doc: DoclingDocument, texts: ItemTexts | None = None) -> list[ItemRecord]:
    """Every item of ``doc.iterate_items()``; ``position`` is the reading-order index."""
    items = [item for item, _depth in doc.iterate_items() if isinstance(item, DocItem)]
    texts = texts or ItemTexts(doc)
    return [
        ItemRecord(
            position=position,
            self_ref=item.self_ref,
            label=item.label.value,
            text=texts.text(item),
            page_numbers=sorted({prov.page_no for prov in item.prov}),
            # section headers only: the title stays at 0 and is told apart by its label
            heading_level=item.level if isinstance(item, SectionHeaderItem) else 0,
            boxes=[prov_box(doc, prov, item) for prov in item.prov],
        )
        for position, item in enumerate(items)
    ]


class ItemTexts:
    """Text items: their text; tables: Markdown; pictures: their captions; anything else: "".

    One Markdown serializer serves every table of the document: ``TableItem.export_to_markdown``
    per table built one each, and building one validated the whole document, which made filings
    with hundreds of tables quadratic (minutes per filing).
    """

    def __init__(self, doc: DoclingDocument) -> None:
        self._doc = doc
        self._serializer: Any = None

    def text(self, item: DocItem) -> str:
        if isinstance(item, TableItem):
            if self._serializer is None:
                self._serializer = markdown_serializer(self._doc)
            return self._serializer.serialize(item=item).text
        if isinstance(item, PictureItem):
            captions = (ref.resolve(self._doc) for ref in item.captions)
            return " ".join(caption.text for caption in captions if isinstance(caption, TextItem))
        if isinstance(item, TextItem):
            return item.text
        return ""

    def document_markdown(self) -> str:
        """The whole document as Markdown, as ``DoclingDocument.export_to_markdown()`` gives it."""
        return markdown_serializer(self._doc).serialize().text


def markdown_serializer(doc: DoclingDocument) -> Any:
    """docling-core's Markdown serializer for ``doc``, built without validating ``doc`` again.

    Passing a document to a serializer re-runs the document's validators (tree checks and
    clamping every box to its page: 0.75 s for a 400-page PDF) although ``doc`` was validated
    when it was built; ingestion built four serializers per document.
    """
    from docling_core.transforms.serializer.markdown import MarkdownDocSerializer

    return MarkdownDocSerializer.model_construct(doc=doc)


def item_text(doc: DoclingDocument, item: DocItem) -> str:
    """The text of one item (see ``ItemTexts``; use that for many items of one document)."""
    return ItemTexts(doc).text(item)


def prov_box(doc: DoclingDocument, prov: ProvenanceItem, item: DocItem) -> Box:
    """A provenance box in our convention (1-based page, PDF points, top-left origin)."""
    bbox = prov.bbox
    if bbox.coord_origin == CoordOrigin.BOTTOMLEFT:
        page = doc.pages.get(prov.page_no)
        if page is None:
            raise ValueError(
                f"item {item.self_ref} has a bottom-left box on page {prov.page_no}, "
                "but the document has no size for that page to flip it with"
            )
        bbox = bbox.to_top_left_origin(page_height=page.size.height)
    return Box(prov.page_no, bbox.l, bbox.t, bbox.r, bbox.b)
