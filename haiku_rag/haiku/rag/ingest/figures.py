"""Figure chunks: a picture item (figure, chart, diagram) made retrievable as evidence.

The chunker leaves picture items out of its chunks (a picture has no text of its own), so no
search hit ever named a picture and the image path of the capabilities (``vision``: a cited
figure's image reaches the model; compaction keeps cited images) never ran on real
documents. Here each picture that has words about it becomes one extra chunk whose text is

* its caption(s),
* the text printed inside its box (labels and legends of a vector figure, lines read by OCR
  on a scanned page: text items lying within the picture on its page),
* the sentences of the body that refer to it ("Figure 3 shows ..."), when its caption gives
  it a number,

and whose ``doc_item_refs`` start with the picture's own ref, so a hit on it is a hit on the
picture (``matched_picture_refs``) and its boxes are the picture's and the caption's. A
picture with no words about it stays out: text search could never find it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from docling_core.types.doc import DocItemLabel, DoclingDocument, NodeItem, PictureItem, TextItem

from haiku.rag.ingest.items import ItemBoxes, prov_box, reading_order
from haiku.rag.ingest.records import Box, ChunkRecord

# "Figure 3", "Fig. 3", "Fig 3a", "Chart 2", "Diagram 1" at the start of a caption.
_FIGURE_NUMBER = re.compile(
    r"^\s*(fig(?:ure)?s?\.?|chart|diagram|graph|plate|illustration)\s*([0-9]+[a-z]?)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# At most this many referring sentences per figure (a much-discussed figure would otherwise
# pull a whole section into its chunk), and this many characters of text inside it.
MAX_REFERRING_SENTENCES = 3
MAX_INNER_CHARS = 1500
# A caption lies within this many points below or above its picture (the PDF converter's
# figure regions take their caption from as far: ``pdf/figure_regions.CAPTION_GAP``).
CAPTION_GAP = 60.0


def figure_chunks(
    doc: DoclingDocument,
    *,
    first_order: int,
    ordered: Sequence[NodeItem] | None = None,
    boxes: ItemBoxes | None = None,
) -> list[ChunkRecord]:
    """One chunk per picture of ``doc`` that has a caption, text inside it or sentences
    referring to it, numbered from ``first_order`` on (after the document's own chunks).
    ``ordered``: ``doc``'s reading order, when the caller has it already."""
    ordered = reading_order(doc) if ordered is None else ordered
    pictures = [item for item in ordered if isinstance(item, PictureItem)]
    records: list[ChunkRecord] = []
    if not pictures:
        return records
    texts = [item for item in ordered if isinstance(item, TextItem)]
    # each text item's boxes, by page, computed once (a document may have many pictures)
    placed: dict[int, list[tuple[TextItem, Box]]] = {}
    boxes = boxes or ItemBoxes(doc)
    for item in texts:
        for box in boxes.of(item):
            placed.setdefault(box.page, []).append((item, box))
    # captions the builder attached to a picture belong to that picture only
    owned = {ref.cref for picture in pictures for ref in picture.captions}
    mentions = _mentions(texts)
    for picture in pictures:
        if not picture.prov:
            continue
        captions = [
            caption
            for caption in (ref.resolve(doc) for ref in picture.captions)
            if isinstance(caption, TextItem) and caption.text.strip()
        ] or _caption_beside(doc, picture, placed, owned)
        if not captions:
            # Backgrounds, logos, decorations and the pieces of a figure are not figures:
            # an uncaptioned picture's "text inside" was the page's own prose under a
            # background image, or one icon's label (issue 29).
            continue
        owned.update(caption.self_ref for caption in captions)
        caption_refs = {caption.self_ref for caption in captions}
        inner = _text_inside(doc, picture, placed, caption_refs)
        referring = _referring_sentences(captions, mentions, owned)
        parts = [caption.text.strip() for caption in captions]
        if inner:
            parts.append(inner)
        parts.extend(referring)
        if not parts:
            continue
        text = "\n".join(parts)
        chunk_boxes = [*boxes.of(picture), *(box for caption in captions for box in boxes.of(caption))]
        records.append(
            ChunkRecord(
                order=first_order + len(records),
                text=text,
                embed_text=text,
                headings=[],
                labels=["picture", *("caption" for _ in captions)],
                doc_item_refs=[picture.self_ref, *(caption.self_ref for caption in captions)],
                page_numbers=sorted({box.page for box in chunk_boxes}),
                boxes=chunk_boxes,
            )
        )
    return records


def _caption_beside(
    doc: DoclingDocument,
    picture: PictureItem,
    placed: dict[int, list[tuple[TextItem, Box]]],
    owned: set[str],
) -> list[TextItem]:
    """The caption the builder did not attach (text printed on the figure came between them
    in reading order): the nearest caption item just below or above the picture on its
    page, overlapping it horizontally and no other picture's."""
    best: tuple[float, TextItem] | None = None
    for area in (prov_box(doc, prov, picture) for prov in picture.prov):
        for item, box in placed.get(area.page, []):
            if item.label != DocItemLabel.CAPTION or item.self_ref in owned or not item.text.strip():
                continue
            if min(box.x1, area.x1) <= max(box.x0, area.x0):
                continue
            gap = box.y0 - area.y1 if box.y0 >= area.y1 else area.y0 - box.y1
            if 0 <= gap <= CAPTION_GAP and (best is None or gap < best[0]):
                best = (gap, item)
    return [best[1]] if best else []


def _text_inside(
    doc: DoclingDocument,
    picture: PictureItem,
    placed: dict[int, list[tuple[TextItem, Box]]],
    exclude: set[str],
) -> str:
    """The text items lying (by their centre) within one of the picture's boxes."""
    inside: dict[str, str] = {}
    for area in (prov_box(doc, prov, picture) for prov in picture.prov):
        for item, box in placed.get(area.page, []):
            if item.self_ref not in exclude and _centre_within(box, [area]):
                inside.setdefault(item.self_ref, item.text.strip())
    return " ".join(t for t in inside.values() if t)[:MAX_INNER_CHARS]


def _centre_within(box: Box, areas: Sequence[Box]) -> bool:
    x, y = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
    return any(a.page == box.page and a.x0 <= x <= a.x1 and a.y0 <= y <= a.y1 for a in areas)


_MENTION = re.compile(
    r"\b(?:fig(?:ure)?s?\.?|chart|diagram|graph|plate|illustration)\s*([0-9]+[a-z]?)\b",
    re.IGNORECASE,
)


def _mentions(texts: Sequence[TextItem]) -> dict[str, list[tuple[str, str]]]:
    """Every body sentence naming a figure number, by that number (lower case), with the
    ref of its item; one pass over the document whatever its number of pictures."""
    found: dict[str, list[tuple[str, str]]] = {}
    for item in texts:
        if not _MENTION.search(item.text):
            continue
        for sentence in _SENTENCE_END.split(item.text):
            for number in {m.group(1).lower() for m in _MENTION.finditer(sentence)}:
                found.setdefault(number, []).append((item.self_ref, sentence.strip()))
    return found


def _referring_sentences(
    captions: Sequence[TextItem], mentions: dict[str, list[tuple[str, str]]], exclude: set[str]
) -> list[str]:
    """Body sentences naming the figure by its caption's number ("Figure 3", "Fig. 3")."""
    numbers = sorted({m.group(2).lower() for c in captions if (m := _FIGURE_NUMBER.match(c.text))})
    found: list[str] = []
    for number in numbers:
        for ref, sentence in mentions.get(number, []):
            if ref not in exclude and sentence not in found:
                found.append(sentence)
    return found[:MAX_REFERRING_SENTENCES]
