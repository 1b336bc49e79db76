"""The DoclingDocument built from the analysed pages: one item per block, in reading order,
with one ``ProvenanceItem`` per text line whose ``charspan`` locates that line in the
item's text.

Provenance boxes are clamped to the page here. Text may lie outside the visible page (the
CropBox) while inside the MediaBox that extraction clips to; docling-core would clamp such
boxes itself each time the document is validated (when it is loaded from the store), with
a UserWarning per coordinate, and the stored boxes would differ from the loaded ones."""

from __future__ import annotations

from typing import Any

from docling_core.types.doc import (
    BoundingBox,
    ContentLayer,
    CoordOrigin,
    DocItem,
    DocItemLabel,
    DoclingDocument,
    FormulaItem,
    GroupItem,
    ListItem,
    NodeItem,
    ProvenanceItem,
    RefItem,
    SectionHeaderItem,
    Size,
    TextItem,
    TitleItem,
)

from haiku.rag.ingest.pdf.blocks import LIST_MARKER, Block, Page, compose
from haiku.rag.ingest.pdf.geometry import Bbox, clamp
from haiku.rag.ingest.records import Box

CAPTION_MAX_GAP = 36.0  # points between a caption and its table or figure

_TEXT_LABELS: dict[str, DocItemLabel] = {
    "text": DocItemLabel.TEXT,
    "caption": DocItemLabel.CAPTION,
    "footnote": DocItemLabel.FOOTNOTE,
}


def build_document(
    pages: list[Page], *, name: str, boxes: dict[str, list[Box]] | None = None
) -> DoclingDocument:
    """Skipped (unparseable) pages get no page entry: nothing on them can be cited.

    ``boxes``, when given, receives each item's provenance boxes as ``Box`` records (by
    ``self_ref``, one per ``item.prov``), made here from the numbers the provenance gets:
    what ``items.prov_box`` would read back from the items, without reading them back."""
    doc = DoclingDocument(name=name)
    out = _Boxes(boxes)
    for page in pages:
        doc.add_page(page_no=page.page_no, size=Size(width=page.width, height=page.height))
    list_group: GroupItem | None = None
    list_enumerated = False
    pending_caption: tuple[DocItem, Block] | None = None  # a caption above its table/figure
    last_float: tuple[DocItem, Block] | None = None  # the last table/picture, for captions below
    # Figures found by their caption (``figure_regions``) get that caption, wherever it
    # falls in reading order (labels of the figure come between them), and no other.
    known = _KnownCaptions(pages)
    for page in pages:
        for block in page.blocks:
            if block.kind in ("header", "footer"):
                _add_text_item(doc, page, block, None, out)
                continue  # furniture neither ends a list nor separates a caption
            if block.kind == "list_item":
                if list_group is None or list_enumerated != block.enumerated:
                    list_group = doc.add_list_group()
                    list_enumerated = block.enumerated
                _add_text_item(doc, page, block, list_group, out)
                continue
            list_group = None
            if block.kind in ("table", "picture"):
                item = _add_float(doc, page, block, out)
                if block.caption_line is not None:
                    known.add_figure(block, item)
                    pending_caption = last_float = None
                    continue
                if pending_caption and _near(pending_caption[1], block):
                    item.captions.append(pending_caption[0].get_ref())
                pending_caption = None
                last_float = (item, block)
                continue
            item = _add_text_item(doc, page, block, None, out)
            if block.kind == "caption" and known.add_caption(block, item):
                pending_caption = last_float = None
                continue
            if block.kind == "caption":
                if last_float and _near(last_float[1], block):
                    last_float[0].captions.append(item.get_ref())
                    last_float = None
                else:
                    pending_caption = (item, block)
                continue
            pending_caption = None
            last_float = None
    return doc


class _KnownCaptions:
    """Captions of the figures ``figure_regions`` found by them: attached to their figure
    whichever of the two the builder adds first."""

    def __init__(self, pages: list[Page]) -> None:
        self._figure_of = {
            id(block.caption_line): block
            for page in pages
            for block in page.blocks
            if block.kind == "picture" and block.caption_line is not None
        }
        self._items: dict[int, DocItem] = {}  # figure block id -> its picture item
        self._waiting: dict[int, DocItem] = {}  # figure block id -> its caption, added first

    def add_figure(self, block: Block, item: DocItem) -> None:
        self._items[id(block)] = item
        caption = self._waiting.pop(id(block), None)
        if caption is not None:
            item.captions.append(caption.get_ref())

    def add_caption(self, block: Block, item: DocItem) -> bool:
        """Whether ``block`` is a known figure's caption (then attached, or kept until its
        figure is added)."""
        if not block.lines or not self._figure_of:
            return False
        figure = self._figure_of.get(id(block.lines[0]))
        if figure is None:
            return False
        picture = self._items.get(id(figure))
        if picture is None:
            self._waiting[id(figure)] = item
        else:
            picture.captions.append(item.get_ref())
        return True


def _near(a: Block, b: Block) -> bool:
    """Whether a caption and a table/figure sit next to each other on the same page."""
    if a.page_no != b.page_no:
        return False
    vertical_gap = max(a.box[1] - b.box[3], b.box[1] - a.box[3])
    shares_column = min(a.box[2], b.box[2]) > max(a.box[0], b.box[0])
    return vertical_gap < CAPTION_MAX_GAP and shares_column


class _Boxes:
    """Where the builder records the boxes of the items it adds (or nowhere)."""

    __slots__ = ("by_ref", "pending")

    def __init__(self, by_ref: dict[str, list[Box]] | None) -> None:
        self.by_ref = by_ref
        self.pending: list[Box] = []

    def add(self, page: Page, box: Bbox) -> None:
        if self.by_ref is not None:
            x0, y0, x1, y1 = box
            self.pending.append(Box(page.page_no, float(x0), float(y0), float(x1), float(y1)))

    def done(self, item: DocItem) -> None:
        if self.by_ref is not None:
            self.by_ref[item.self_ref] = self.pending
            self.pending = []


def _add_float(doc: DoclingDocument, page: Page, block: Block, out: _Boxes) -> DocItem:
    prov = _prov(page, block.display, (0, 0), out)
    item: DocItem
    if block.kind == "table":
        assert block.table is not None
        item = doc.add_table(data=block.table, prov=prov)
    else:
        item = doc.add_picture(prov=prov)
    out.done(item)
    return item


def _add_text_item(
    doc: DoclingDocument, page: Page, block: Block, parent: NodeItem | None, out: _Boxes
) -> TextItem:
    """What ``doc.add_text`` / ``add_title`` / ``add_heading`` / ``add_list_item`` do (the
    next ``#/texts/N`` ref, a validated item, its ref appended to the parent), with every
    line's provenance. Done here because those methods leave the item's lists to their
    defaults, which pydantic deep-copies one by one (``copy.deepcopy``, four per item):
    passing them explicitly cut the time to build the document by a third. A test checks
    that docling-core's own validation accepts the result unchanged."""
    line_texts = [line.text for line in block.lines]
    if block.kind == "list_item":
        first = LIST_MARKER.match(line_texts[0])
        if first is not None:
            line_texts[0] = first.group("rest")
    text, spans = compose(line_texts)
    provs = [_prov(page, line.display, span, out) for line, span in zip(block.lines, spans, strict=True)]
    item_class, fields = _item_class_and_fields(block)
    parent = doc.body if parent is None else parent
    cref = f"#/texts/{len(doc.texts)}"
    item = item_class(
        self_ref=cref, parent=parent.get_ref(), text=text, orig=text, prov=provs,
        children=[], source=[], comments=[], **fields,
    )
    doc.texts.append(item)
    parent.children.append(RefItem(cref=cref))
    out.done(item)
    return item


def _item_class_and_fields(block: Block) -> tuple[type[TextItem], dict[str, Any]]:
    match block.kind:
        case "title":
            return TitleItem, {}
        case "heading":
            return SectionHeaderItem, {"level": max(block.heading_level, 1)}
        case "list_item":
            return ListItem, {"enumerated": block.enumerated, "marker": block.marker}
        case "formula":
            return FormulaItem, {}
        case "header" | "footer":
            label = DocItemLabel.PAGE_HEADER if block.kind == "header" else DocItemLabel.PAGE_FOOTER
            return TextItem, {"label": label, "content_layer": ContentLayer.FURNITURE}
        case _:
            return TextItem, {"label": _TEXT_LABELS[block.kind]}


def _prov(page: Page, box: Bbox, charspan: tuple[int, int], out: _Boxes) -> ProvenanceItem:
    x0, y0, x1, y1 = box
    if x0 < 0 or y0 < 0 or x1 > page.width or y1 > page.height:  # rare: skip the clamp's cost
        x0, y0, x1, y1 = clamp(box, page.width, page.height)
    out.add(page, (x0, y0, x1, y1))
    # Validated construction: ``model_construct`` (no validation) was measured slower --
    # pydantic runs it in Python, the validator in Rust (108k calls: 2.6 s vs ~1.7 s).
    return ProvenanceItem(
        page_no=page.page_no,
        bbox=BoundingBox(l=x0, t=y0, r=x1, b=y1, coord_origin=CoordOrigin.TOPLEFT),
        charspan=charspan,
    )
