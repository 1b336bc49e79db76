"""One ``ItemRecord`` per DoclingDocument item, in reading order, with its page geometry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from docling_core.types.doc import (
    CodeItem,
    CoordOrigin,
    DocItem,
    DoclingDocument,
    FormulaItem,
    ListItem,
    NodeItem,
    PictureItem,
    ProvenanceItem,
    SectionHeaderItem,
    TableItem,
    TextItem,
    TitleItem,
)

from haiku.rag.ingest.records import Box, ItemRecord

if TYPE_CHECKING:
    from haiku.rag.ingest.table_markdown import TableParts


def reading_order(doc: DoclingDocument) -> list[NodeItem]:
    """``doc.iterate_items()`` without the depths, walked once per ingest: the items, the
    Markdown, the chunks and the figure chunks all go through it (each walk of docling-core's
    tree costs ~0.1 s per 100 pages)."""
    return [item for item, _depth in doc.iterate_items()]


class ItemBoxes:
    """Each item's provenance boxes (``prov_box``, one per ``item.prov``), made once per
    document: the item records, the chunks and the figure chunks all need them (~145k calls
    for the 1,144 real-PDF pages before, ~54k after). The lists are shared: do not mutate."""

    def __init__(self, doc: DoclingDocument, known: dict[str, list[Box]] | None = None) -> None:
        """``known``: boxes the converter already made (``Conversion.item_boxes``), taken
        as they are (not copied)."""
        self._doc = doc
        self._boxes: dict[str, list[Box]] = {} if known is None else known

    def of(self, item: DocItem) -> list[Box]:
        boxes = self._boxes.get(item.self_ref)
        if boxes is None:
            boxes = self._boxes[item.self_ref] = [
                prov_box(self._doc, prov, item) for prov in item.prov
            ]
        return boxes


def extract_items(
    doc: DoclingDocument,
    texts: ItemTexts | None = None,
    ordered: Sequence[NodeItem] | None = None,
    boxes: ItemBoxes | None = None,
) -> list[ItemRecord]:
    """Every item of ``doc.iterate_items()`` (``ordered``, when the caller has it already);
    ``position`` is the reading-order index."""
    items = [
        item
        for item in (reading_order(doc) if ordered is None else ordered)
        if isinstance(item, DocItem)
    ]
    texts = texts or ItemTexts(doc)
    boxes = boxes or ItemBoxes(doc)
    return [
        ItemRecord(
            position=position,
            self_ref=item.self_ref,
            label=item.label.value,
            text=texts.text(item),
            page_numbers=sorted({prov.page_no for prov in item.prov}),
            # section headers only: the title stays at 0 and is told apart by its label
            heading_level=item.level if isinstance(item, SectionHeaderItem) else 0,
            boxes=boxes.of(item),
        )
        for position, item in enumerate(items)
    ]


class ItemTexts:
    """Text items: their text; tables: Markdown; pictures: their captions; anything else: "".

    A table's Markdown is ``table_markdown``'s (its header line names each column, stacked
    header rows joined), the same lines its chunks hold. docling-core's serializer wrote a
    spanning header once per column and a multi-row header as body rows; calling it per
    table (``TableItem.export_to_markdown``) also validated the whole document each time.
    """

    def __init__(self, doc: DoclingDocument) -> None:
        self._doc = doc
        self._parts: dict[str, TableParts] = {}
        self._tables: dict[str, str] = {}  # a table's Markdown, made once for items and content

    def table_parts(self, item: TableItem) -> TableParts:
        """The table's Markdown header, rows and cell boxes (made once per table)."""
        parts = self._parts.get(item.self_ref)
        if parts is None:
            from haiku.rag.ingest.table_markdown import table_parts

            parts = self._parts[item.self_ref] = table_parts(item, self._doc)
        return parts

    def text(self, item: DocItem) -> str:
        if isinstance(item, TableItem):
            markdown = self._tables.get(item.self_ref)
            if markdown is None:
                markdown = self._tables[item.self_ref] = self.table_parts(item).markdown
            return markdown
        if isinstance(item, PictureItem):
            return " ".join(self._captions(item))
        if isinstance(item, TextItem):
            return item.text
        return ""

    def _captions(self, item: TableItem | PictureItem) -> list[str]:
        captions = (ref.resolve(self._doc) for ref in item.captions)
        return [caption.text for caption in captions if isinstance(caption, TextItem)]

    def document_markdown(self, ordered: Sequence[NodeItem] | None = None) -> str:
        """The whole document as Markdown: headings by level, lists, tables, captions and
        an ``<!-- image -->`` mark per picture, paragraphs between blank lines.

        Written here in one pass over the body items: docling-core's Markdown serializer
        gives the same layout but copied and re-serialised every item on the way (~2 s of
        the 10 s that parse+chunk of 34 real PDFs took). Unlike it, text is not escaped
        (``_``, ``&`` and ``<`` stay as they are: the content is read as text by people, the
        sandbox and the model, not rendered as HTML), and an enumerated list item keeps the
        number it was printed with."""
        doc = self._doc
        captions = {ref.cref for item in (*doc.tables, *doc.pictures) for ref in item.captions}
        blocks: list[str] = []
        list_lines: list[str] = []
        list_parent: str | None = None
        number = 0
        for item in reading_order(doc) if ordered is None else ordered:
            if isinstance(item, ListItem):
                parent = item.parent.cref if item.parent else None
                if parent != list_parent and list_lines:
                    blocks.append("\n".join(list_lines))
                    list_lines = []
                if parent != list_parent:
                    list_parent, number = parent, 0
                number += 1
                # an enumerated item keeps its own number ("3)", "(b)"); bullets become "-"
                marker = (item.marker or f"{number}.") if item.enumerated else "-"
                list_lines.append(f"{marker} {item.text}")
                continue
            if list_lines:
                blocks.append("\n".join(list_lines))
                list_lines, list_parent = [], None
            if isinstance(item, TitleItem):
                blocks.append(f"# {item.text}")
            elif isinstance(item, SectionHeaderItem):
                blocks.append(f"{'#' * min(item.level + 1, 6)} {item.text}")
            elif isinstance(item, (TableItem, PictureItem)):
                blocks.extend(self._captions(item))
                blocks.append(self.text(item) if isinstance(item, TableItem) else "<!-- image -->")
            elif isinstance(item, CodeItem):
                blocks.append(f"```\n{item.text}\n```")
            elif isinstance(item, FormulaItem):
                blocks.append(f"$${item.text}$$")
            elif isinstance(item, TextItem) and item.self_ref not in captions:
                blocks.append(item.text)
        if list_lines:
            blocks.append("\n".join(list_lines))
        return "\n\n".join(block for block in blocks if block)


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
