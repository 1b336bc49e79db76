"""Document-wide passes over the analysed pages: running headers and footers, the body
font, captions, headings and their levels, list items, and the title."""

from __future__ import annotations

import re
from collections import Counter

from haiku.rag.ingest.pdf.blocks import BULLET_CHARS, LIST_MARKER, Block, Page, block_text
from haiku.rag.ingest.pdf.geometry import union
from haiku.rag.ingest.pdf.page_blocks import top_left

# Running headers/footers live in this fraction of the page height at its top or bottom.
FURNITURE_ZONE = 0.1
MAX_HEADING_CHARS = 200
MAX_HEADING_LINES = 3
MAX_HEADING_LEVEL = 6

CAPTION_START = re.compile(r"^(?:Figure|Fig\.|Table|Tab\.|Chart|Exhibit|Plate)\s*[0-9IVX]+[A-Za-z]?\s*[:.|—–-]")
SECTION_NUMBER = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,4})\.?\s+\S")
PAGE_NUMBER_ONLY = re.compile(r"^(?:page\s*)?[-–—]?\s*#+\s*[-–—]?(?:\s*(?:of|/)\s*#+)?$|^[ivxlc]{1,6}$")
# Metadata titles that name nothing: placeholders, and file names ("Binder1.pdf", "x.odp").
JUNK_TITLE = re.compile(r"^(?:untitled|title|document\d*|slide \d+|\W+)$|^\S+\.[A-Za-z0-9]{2,5}$", re.I)
WORD_EXPORT_PREFIX = re.compile(r"^Microsoft (?:Word|PowerPoint) - ")

Style = tuple[float, bool]  # (font size rounded to 0.5 pt, all bold)


def mark_running_furniture(pages: list[Page]) -> None:
    """Text repeated in the top or bottom zone of several pages (digits ignored, so "Page 3"
    matches "Page 4") is a running header/footer; so is a bare page number there."""
    seen: Counter[tuple[str, str]] = Counter()
    candidates: list[tuple[Block, str, str]] = []
    for page in pages:
        page_keys = set()
        for block in page.blocks:
            if block.kind not in ("text", "header", "footer") or not block.lines:
                continue
            zone = _zone(block, page)
            if zone is None:
                continue
            key = _normalise_furniture(block)
            candidates.append((block, zone, key))
            page_keys.add((zone, key))
        seen.update(page_keys)
    for block, zone, key in candidates:
        if block.kind == "text" and (seen[(zone, key)] >= 2 or PAGE_NUMBER_ONLY.match(key)):
            block.kind = "header" if zone == "top" else "footer"
    text_blocks = [b for page in pages for b in page.blocks if b.lines and b.kind != "table"]
    if all(b.kind in ("header", "footer") for b in text_blocks):
        # A document of nothing but repeated lines: keep them as text, or nothing is indexed.
        for block in text_blocks:
            block.kind = "text"


def _zone(block: Block, page: Page) -> str | None:
    top, bottom = page.frame_box[1], page.frame_box[3]
    band = FURNITURE_ZONE * (bottom - top)
    if block.box[3] <= top + band:
        return "top"
    if block.box[1] >= bottom - band:
        return "bottom"
    return None


def _normalise_furniture(block: Block) -> str:
    text = " ".join(line.text for line in block.lines).lower()
    return " ".join(re.sub(r"\d+", "#", text).split())


def classify_styles(pages: list[Page]) -> None:
    """Captions, headings, list items, the title and heading levels, from the document's
    body font. A heading-styled "1. Introduction" is a heading, not a list item."""
    body_size, body_bold = _body_style(pages)
    for page in pages:
        for block in page.blocks:
            if block.kind == "list_item":  # named by the layout model: find its marker
                _mark_list_item(block)
            if block.kind != "text":
                continue
            first = block.lines[0].text
            if CAPTION_START.match(first):
                block.kind = "caption"
            elif first[0] not in BULLET_CHARS and _looks_like_heading(block, body_size, body_bold):
                block.kind = "heading"
            else:
                _mark_list_item(block)
        page.blocks = _merge_wrapped_headings(page.blocks)
    headings = [b for page in pages for b in page.blocks if b.kind in ("heading", "title")]
    if not headings:
        return
    heading_styles = Counter(_style(b) for b in headings)
    title = _find_title(pages, headings)
    if title is not None:
        title.kind = "title"
        if heading_styles[_style(title)] == 1:
            del heading_styles[_style(title)]
    ranked = sorted(heading_styles, key=lambda s: (-s[0], not s[1]))
    for block in headings:
        if block.kind != "heading":
            continue
        numbered = SECTION_NUMBER.match(block_text(block))
        if numbered:
            level = numbered.group(1).count(".") + 1
        else:
            style = _style(block)
            level = ranked.index(style) + 1 if style in ranked else 1
        block.heading_level = min(level, MAX_HEADING_LEVEL)


def _mark_list_item(block: Block) -> None:
    """Make a block whose first line starts with a list marker a list item."""
    match = LIST_MARKER.match(block.lines[0].text)
    if match is None:
        return
    block.kind = "list_item"
    block.enumerated = match.group("enum") is not None
    block.marker = match.group("bullet") or match.group("enum")


def _merge_wrapped_headings(blocks: list[Block]) -> list[Block]:
    """Join a heading that wraps onto a second block ("Trace-based ... for Dynamic" /
    "Languages"): same style, right below, overlapping horizontally, not numbered."""
    merged: list[Block] = []
    for block in blocks:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and block.kind == previous.kind
            and block.kind in ("heading", "title")
            and _style(block) == _style(previous)
            and len(previous.lines) + len(block.lines) <= MAX_HEADING_LINES + 1
            and 0 <= block.box[1] - previous.box[3] < 0.6 * _style(block)[0]
            and min(block.box[2], previous.box[2]) > max(block.box[0], previous.box[0])
            and not SECTION_NUMBER.match(block.lines[0].text)
        ):
            previous.lines.extend(block.lines)
            previous.box = union((previous.box, block.box))
            previous.display = union((previous.display, block.display))
            continue
        merged.append(block)
    return merged


def _body_style(pages: list[Page]) -> Style:
    """The size and boldness of most of the document's characters (tables and furniture
    left out)."""
    sizes: Counter[float] = Counter()
    bold = plain = 0
    for page in pages:
        for block in page.blocks:
            if block.kind in ("header", "footer", "table"):
                continue
            for line in block.lines:
                n = len(line.text)
                sizes[round(line.size * 2) / 2] += n
                if line.bold:
                    bold += n
                else:
                    plain += n
    body_size = sizes.most_common(1)[0][0] if sizes else 10.0
    return body_size, bold > plain


def _looks_like_heading(block: Block, body_size: float, body_bold: bool) -> bool:
    if len(block.lines) > MAX_HEADING_LINES or not all(line.on_axis for line in block.lines):
        return False  # sideways text is a margin stamp ("arXiv:2004.04906v3 [cs.CL]")
    size = max(line.size for line in block.lines)
    larger = size >= body_size * 1.12 + 0.2
    bolder = all(line.bold for line in block.lines) and not body_bold and size >= body_size - 0.6
    if not (larger or bolder):
        return False
    text = block_text(block)
    if len(text) > MAX_HEADING_CHARS or len(text.split()) > 20:
        return False
    if text.count(",") >= 3:
        return False  # a list of names (the authors under a title), not a heading
    if sum(ch.isalpha() for ch in text) < 2:
        return False
    # A bold body-size line ending in a full stop is a sentence set in bold, not a heading.
    return larger or not text.endswith((".", ",", ";"))


def _style(block: Block) -> Style:
    size = max(line.size for line in block.lines)
    return (round(size * 2) / 2, all(line.bold for line in block.lines))


def _find_title(pages: list[Page], headings: list[Block]) -> Block | None:
    """The largest heading in the top 40% of the first page, if nothing else is as large."""
    if any(b.kind == "title" for b in headings):
        return None  # the layout analyser named one
    first = pages[0]
    largest = max(_style(b)[0] for b in headings)
    candidates = [
        b for b in headings
        if b.page_no == first.page_no and _style(b)[0] == largest
        and b.box[1] - first.frame_box[1] <= 0.4 * (first.frame_box[3] - first.frame_box[1])
    ]
    if not candidates:
        return None
    title = min(candidates, key=top_left)
    larger_than_rest = all(_style(b)[0] < largest for b in headings if b is not title)
    return title if larger_than_rest or len(headings) == 1 else None


def choose_title(metadata: dict[str, str], pages: list[Page]) -> str | None:
    """The metadata title unless it names nothing, else the first title or heading."""
    meta = WORD_EXPORT_PREFIX.sub("", (metadata.get("title") or "").strip())
    if len(meta) >= 3 and sum(ch.isalpha() for ch in meta) >= 3 and not JUNK_TITLE.search(meta):
        return meta
    for kind in ("title", "heading"):
        for page in pages:
            for block in page.blocks:
                if block.kind == kind:
                    return block_text(block)
    return None
