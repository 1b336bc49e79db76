"""Document-wide passes over the analysed pages: running headers and footers, the body
font, captions, headings and their levels, list items, and the title."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection

from haiku.rag.ingest.pdf.blocks import (
    BULLET_CHARS,
    HYPHENS,
    LIST_MARKER,
    Block,
    Line,
    Page,
    block_text,
)
from haiku.rag.ingest.pdf.geometry import Bbox, union
from haiku.rag.ingest.pdf.page_blocks import top_left

# Running headers/footers live in this fraction of the page height at its top or bottom.
FURNITURE_ZONE = 0.1
# ... and beyond it, within this fraction, when repeated at one height on this many pages
OUTER_FURNITURE_ZONE = 0.2
REPEATS_BEYOND_ZONE = 3
MAX_HEADING_CHARS = 200
MAX_HEADING_LINES = 3
MAX_HEADING_LEVEL = 6

CAPTION_START = re.compile(
    r"^(?:Figure|Fig\.|Table|Tab\.|Chart|Exhibit|Plate|FIGURE|FIG\.|TABLE)\s*[0-9IVX]+[A-Za-z]?\s*[:.|—–-]"
)
# a caption's label and nothing else: "Table 3:", "TABLE 3", "Fig. 2."
CAPTION_LABEL = re.compile(
    r"^(?:Figure|Fig\.|Table|Tab\.|FIGURE|FIG\.|TABLE)\s*[0-9IVX]+[A-Za-z]?\s*[:.|—–-]?$"
)
# "Table 3" / "TABLE 3" alone on the caption's first row, its text on the lines below
CAPTION_LABEL_ALONE = re.compile(r"^(?:Figure|Fig\.|Table|Tab\.|FIGURE|FIG\.|TABLE)\s*[0-9IVX]+[A-Za-z]?$")
SECTION_NUMBER = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,4})\.?\s+\S")
PAGE_NUMBER_ONLY = re.compile(r"^(?:page\s*)?[-–—]?\s*#+\s*[-–—]?(?:\s*(?:of|/)\s*#+)?$|^[ivxlc]{1,6}$")
# Metadata titles that name nothing: placeholders, and file names ("Binder1.pdf", "x.odp").
JUNK_TITLE = re.compile(r"^(?:untitled|title|document\d*|slide \d+|\W+)$|^\S+\.[A-Za-z0-9]{2,5}$", re.I)
BLANK_PAGE_NOTICE = re.compile(
    r"^\W*(?:this\s+page\s+(?:is\s+|has\s+been\s+)?|page\s+)?"
    r"(?:(?:intentionally|deliberately)\s+(?:left\s+)?blank|left\s+blank\s+(?:intentionally|deliberately|on\s+purpose))\W*$",
    re.I,
)
WORD_EXPORT_PREFIX = re.compile(r"^Microsoft (?:Word|PowerPoint) - ")

Style = tuple[float, bool]  # (font size rounded to 0.5 pt, all bold)


def mark_running_furniture(pages: list[Page]) -> None:
    """Text repeated in the top or bottom zone of several pages (page numbers, in digits or
    roman numerals, ignored, so "Page 3" matches "Page 4" and "xiv PREFACE" matches
    "PREFACE xv") is a running header/footer; so is a bare page number there. Beyond that
    zone, a page's first or last block repeated at the same height on REPEATS_BEYOND_ZONE
    pages or more is one too (a LaTeX article's running head sits 14 % down its page)."""
    seen: Counter[tuple[str, str]] = Counter()
    placed: Counter[tuple[str, str, int]] = Counter()
    candidates: list[tuple[Block, str, str, str]] = []
    outer: list[tuple[Block, str, str, int]] = []
    for page in pages:
        page_keys = set()
        page_places = set()
        for block in page.blocks:
            if block.kind not in ("text", "header", "footer") or not block.lines:
                continue
            zone = _zone(block, page)
            if zone is None:
                continue
            key = _normalise_furniture(block)
            repeated = _without_page_numbers(key.split(), key)
            candidates.append((block, zone, key, repeated))
            page_keys.add((zone, repeated))
        for block, zone in _edge_blocks(page):
            key, height = _exact_furniture(block), round(block.box[1])
            outer.append((block, zone, key, height))
            page_places.add((zone, key, height))
        seen.update(page_keys)
        placed.update(page_places)
    for block, zone, key, repeated in candidates:
        if block.kind == "text" and (seen[(zone, repeated)] >= 2 or PAGE_NUMBER_ONLY.match(key)):
            block.kind = "header" if zone == "top" else "footer"
    for block, zone, key, height in outer:
        if block.kind == "text" and key and placed[(zone, key, height)] >= REPEATS_BEYOND_ZONE:
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


def _edge_blocks(page: Page) -> list[tuple[Block, str]]:
    """The page's first and last text blocks by height, when they lie within the outer
    OUTER_FURNITURE_ZONE of the page (and not in its furniture zone, already looked at)."""
    blocks = [b for b in page.blocks if b.kind == "text" and b.lines and _zone(b, page) is None]
    if len(blocks) < 2:
        return []
    top, bottom = page.frame_box[1], page.frame_box[3]
    band = OUTER_FURNITURE_ZONE * (bottom - top)
    first = min(blocks, key=lambda b: b.box[1])
    last = max(blocks, key=lambda b: b.box[3])
    edges = []
    if first.box[3] <= top + band and all(b is first or b.box[1] >= first.box[3] for b in blocks):
        edges.append((first, "top"))
    if last.box[1] >= bottom - band and all(b is last or b.box[3] <= last.box[1] for b in blocks):
        edges.append((last, "bottom"))
    return edges


# a page number as a word: digits (or the "#" they are normalised to) or roman numerals
_PAGE_NUMBER_WORD = re.compile(r"^(?:\d+|#+|[ivxlc]{1,7})$")


def _normalise_furniture(block: Block) -> str:
    text = " ".join(line.text for line in block.lines).lower()
    return " ".join(re.sub(r"\d+", "#", text).split())


def _exact_furniture(block: Block) -> str:
    """A block's text without its page numbers, other figures kept: beyond the furniture
    zone a repeat must be the same words ("Exhibit 2.3.59-42 … Display" and "Exhibit
    2.3.59-58 …" at the top of a manual's pages are titles, not one running head)."""
    return _without_page_numbers(" ".join(line.text for line in block.lines).lower().split(), "#")


def _without_page_numbers(words: list[str], bare: str) -> str:
    """A line's words without its page numbers, wherever they stand ("# preface" and
    "preface #" are one running footer on facing pages); ``bare`` for a bare number."""
    kept = [w for w in words if not _PAGE_NUMBER_WORD.match(w)]
    return " ".join(kept) if kept else bare


def is_caption(block: Block) -> bool:
    """Whether a text block is a "Table N." / "Figure N:" / "TABLE N" caption. The label is
    read from the block's whole first row: a caption whose label is printed as its own
    spans ("Table" and "1." in bold, spread apart by justification, then the text) comes
    out as several lines side by side."""
    head = first_row_text(block.lines)
    if CAPTION_START.match(head):
        return True
    return len(block.lines) > 1 and CAPTION_LABEL_ALONE.match(head.strip()) is not None


def _joined_caption_labels(blocks: list[Block]) -> list[Block]:
    """A caption's label printed in a style of its own ("Table 2:" in bold) can come out as a
    block of its own beside the caption's text: the two are joined into one block."""
    labels = [
        b for b in blocks
        if b.kind == "text" and len(b.lines) <= 3 and CAPTION_LABEL.match(first_row_text(b.lines).strip())
        and all(line.box[1] < b.lines[0].box[3] for line in b.lines)
    ]
    if not labels:
        return blocks
    gone: set[int] = set()
    for label in labels:
        top, bottom = label.lines[0].box[1], label.lines[0].box[3]
        size = max(line.size for line in label.lines) or 1.0
        beside = [
            b for b in blocks
            if b is not label and id(b) not in gone and b.kind == "text" and b.page_no == label.page_no
            and top <= (b.lines[0].box[1] + b.lines[0].box[3]) / 2 <= bottom
            and 0 <= b.lines[0].box[0] - label.box[2] <= 4 * size
        ]
        if not beside:
            continue
        text = min(beside, key=lambda b: b.lines[0].box[0])
        label.lines = [*label.lines, *text.lines]
        label.box = union([label.box, text.box])
        label.display = union([label.display, text.display])
        gone.add(id(text))
    return [b for b in blocks if id(b) not in gone]


def first_row_text(lines: list[Line]) -> str:
    """The text of ``lines``' first printed row: the first line and the lines beside it
    (their middles within its height), left to right."""
    if not lines:
        return ""
    first = lines[0]
    top, bottom = first.box[1], first.box[3]
    row = [first]
    for line in lines[1:8]:
        middle = (line.box[1] + line.box[3]) / 2
        if top <= middle <= bottom and line.box[0] >= first.box[0]:
            row.append(line)
    if len(row) == 1:
        return first.text
    row.sort(key=lambda item: item.box[0])
    return " ".join(line.text.strip() for line in row)


def classify_styles(pages: list[Page], *, authors: str = "", recognised: Collection[int] = ()) -> None:
    """Captions, headings, list items, the title and heading levels, from the document's
    body font. A heading-styled "1. Introduction" is a heading, not a list item; the
    authors under a title, a name the PDF's metadata gives as its author (``authors``,
    e.g. "LAWRENCE LESSIG" on a book's cover), a form's buttons and fields, and text that
    OCR read inside a picture (on the pages numbered in ``recognised``) are not headings."""
    body_size, body_bold = _body_style(pages)
    author_names = _author_names(authors)
    front = _front_matter_end(pages[0]) if pages else None
    # the largest type above it: the title's, never taken for a line of names
    title_size = max(
        (line.size for b in pages[0].blocks if front is not None and b.box[1] < front for line in b.lines),
        default=0.0,
    ) if pages else 0.0
    for page in pages:
        page.blocks = _footnotes_last(_joined_caption_labels(page.blocks), page, body_size)
        # on a page read by OCR, text recognised inside a picture is the picture's (a comic's
        # lettering and speech bubbles were headings, and one led the rest of a book's
        # heading paths: "… › JUIDGIE SCALIA … › AFTERWORD › INDEX"); a scan covering the
        # page is not a picture (``picture_blocks``)
        pictures = [b.box for b in page.blocks if b.kind == "picture"] if page.page_no in recognised else []
        for block in page.blocks:
            if block.kind == "list_item":  # named by the layout model: find its marker
                _mark_list_item(block)
            if block.kind != "text":
                continue
            first = block.lines[0].text
            if BLANK_PAGE_NOTICE.match(block_text(block)):
                # printed on purpose-blank pages: page furniture, never a section's name (a
                # manual's heading paths ran "… › This Page Intentionally Left Blank › …")
                block.kind = "footer"
            elif is_caption(block):
                block.kind = "caption"
            elif (
                first[0] not in BULLET_CHARS
                and not any(_inside(block.box, box) for box in pictures)
                and _looks_like_heading(block, body_size, body_bold)
                and _name_key(block_text(block)) not in author_names
                and not _names_people(
                    block,
                    in_front_matter=page is pages[0] and front is not None and block.box[1] < front
                    and max(line.size for line in block.lines) < title_size - 0.5,
                )
            ):
                block.kind = "heading"
            else:
                _mark_list_item(block)
        page.blocks = _join_hyphenated_across(_merge_wrapped_headings(page.blocks), body_size)
    headings = [b for page in pages for b in page.blocks if b.kind in ("heading", "title")]
    if not headings:
        return
    heading_styles = Counter(_style(b) for b in headings)
    title = _find_title(pages, headings)
    if title is not None:
        title.kind = "title"
        if heading_styles[_style(title)] == 1:
            del heading_styles[_style(title)]
    _assign_levels([b for b in headings if b.kind == "heading"], heading_styles)
    _unnest_repeated_titles(headings)


# A footnote's first line: its number (printed as a superscript, extracted glued to the text:
# "8SQuAD is limited …") or mark, then its text.
FOOTNOTE_START = re.compile(r"^(?P<mark>\d{1,3}|[∗†‡§¶])\s?(?P<rest>[^\W\d_].*)$")
_DOT_LEADER = re.compile(r"(?:\.\s?){4,}")
FOOTNOTE_SIZE = 0.92  # footnotes are set smaller than this share of the body size


def _small(block: Block, body_size: float) -> bool:
    return bool(block.lines) and max(line.size for line in block.lines) < FOOTNOTE_SIZE * body_size


def _footnotes_last(blocks: list[Block], page: Page, body_size: float) -> list[Block]:
    """A page's footnotes, labelled and read after its body (before its footers): text in
    type smaller than the body's, in the lower half of the page, under body text in its
    column and with nothing but other small type and furniture below it there, whose first line starts with a
    footnote's number or mark ("8SQuAD is limited …", "† Equal contribution"). A block
    holding several footnotes is cut at each following number (counting up), and a number
    glued to its text is kept apart from it ("8 SQuAD is limited …").

    Why: a two-column paper's column-foot footnotes were read between the column's last
    line and the next column's first ("When training with mul-", the footnotes, "tiple
    datasets"), and their numbers ran into their first words."""
    middle = (page.frame_box[1] + page.frame_box[3]) / 2
    pictures = [b.box for b in blocks if b.kind == "picture"]
    notes: list[Block] = []
    for block in blocks:
        if (
            block.kind != "text"
            or block.box[1] < middle
            or not _small(block, body_size)
            or any(_inside(block.box, box) for box in pictures)
            or is_caption(block)
        ):
            continue
        text = block_text(block)
        if FOOTNOTE_START.match(block.lines[0].text) is None or len(text.split()) < 3 or _DOT_LEADER.search(text):
            continue  # not a note, or a table's row ("1 work-hour × $85 per hour = $85 ...... $0")
        below = [
            b for b in blocks
            if b is not block and b.kind not in ("header", "footer") and b.box[1] >= block.box[3] - 1
            and min(b.box[2], block.box[2]) > max(b.box[0], block.box[0])
        ]
        if any(not _small(b, body_size) for b in below):
            continue  # body text (or a table, a figure) under it: not at the foot
        if not any(
            b.kind == "text" and len(b.lines) >= 2 and not _small(b, body_size)
            and max(line.size for line in b.lines) < 1.12 * body_size + 0.2  # no heading
            and b.box[3] <= block.box[1] + 1
            and min(b.box[2], block.box[2]) > max(b.box[0], block.box[0])
            for b in blocks
        ):
            continue  # no paragraph above it in its column (a page of small type: an index)
        notes.append(block)
    if not notes:
        return blocks
    ids = {id(b) for b in notes}
    body = [b for b in blocks if id(b) not in ids]
    end = len(body)
    while end and body[end - 1].kind == "footer":
        end -= 1
    split = [part for note in notes for part in _split_footnotes(note)]
    return body[:end] + split + body[end:]


def _split_footnotes(block: Block) -> list[Block]:
    """``block`` cut at each line starting with the next footnote number (after a mark such
    as "∗ Equal contribution", the number 1), each number kept apart from its text;
    labelled ``footnote``."""
    parts: list[list[Line]] = []
    expected: int | None = None
    for line in block.lines:
        match = FOOTNOTE_START.match(line.text)
        starts = match is not None and (
            not parts
            or (match["mark"].isdigit() and int(match["mark"]) == (expected or 1))
            or (not match["mark"].isdigit() and expected is None)
        )
        if match is not None and starts:
            line.text = f"{match['mark']} {match['rest']}"
            expected = int(match["mark"]) + 1 if match["mark"].isdigit() else None
            parts.append([line])
        else:
            parts[-1].append(line)
    out = []
    for lines in parts:
        box = union([line.box for line in lines])
        same_space = all(line.display is line.box for line in lines)
        display = box if same_space else union([line.display for line in lines])
        out.append(Block(kind="footnote", page_no=block.page_no, box=box, display=display, lines=lines))
    return out


def _join_hyphenated_across(blocks: list[Block], body_size: float) -> list[Block]:
    """A paragraph whose last line ends in a hyphenated word ("When training with mul-")
    joined with the paragraph that finishes the word at the top of the next column
    ("tiple datasets, …"): the next body-sized text block in reading order, past figures,
    their captions and labels, tables and footnotes, when it starts in lower case, in the
    same size, to the right of it (the next column)."""
    out: list[Block] = []
    joined: set[int] = set()
    for index, block in enumerate(blocks):
        if id(block) in joined:
            continue
        out.append(block)
        if block.kind != "text" or not block.lines:
            continue
        last = block.lines[-1].text
        if not (last.endswith(HYPHENS) and len(last) >= 2 and last[-2].isalpha()):
            continue
        for later in blocks[index + 1:]:
            if later.kind in ("picture", "table", "caption", "footnote", "header", "footer"):
                continue
            if later.kind == "text" and _small(later, body_size):
                continue  # a figure's labels
            if (
                later.kind == "text"
                and later.lines
                and later.lines[0].text[:1].islower()
                and later.box[0] >= block.box[2] - 2
                and abs(later.lines[0].size - block.lines[-1].size) <= 0.6
            ):
                block.lines.extend(later.lines)
                block.box = union([block.box, later.box])
                block.display = union([block.display, later.display])
                joined.add(id(later))
            break
    return out


def _unnest_repeated_titles(headings: list[Block]) -> None:
    """A heading that repeats the text of the heading it would sit under is that heading
    again (a book's title page under its cover, a paper's title printed again above its
    body: every chunk's path began "FREE CULTURE › FREE CULTURE › …"), not a section of it:
    it takes that heading's place (its kind and level), so a path names it once and what
    follows it is not nested under the sections between the two (an abstract's)."""
    open_headings: list[Block] = []  # the path so far, as the chunker keeps it by level
    for block in headings:
        level = _path_level(block)
        while open_headings and _path_level(open_headings[-1]) >= level:
            open_headings.pop()
        if open_headings and _name_key(block_text(open_headings[-1])) == _name_key(block_text(block)):
            parent = open_headings.pop()
            block.kind, block.heading_level = parent.kind, parent.heading_level
        open_headings.append(block)


def _path_level(block: Block) -> int:
    return 0 if block.kind == "title" else max(block.heading_level, 1)


def _inside(box: Bbox, outer: Bbox) -> bool:
    """Whether ``box`` lies within ``outer`` (give or take 2 pt)."""
    return box[0] >= outer[0] - 2 and box[1] >= outer[1] - 2 and box[2] <= outer[2] + 2 and box[3] <= outer[3] + 2


def _name_key(text: str) -> str:
    text = re.sub(r"^\s*by\s+", "", text, flags=re.I)
    return " ".join(re.sub(r"[^\w\s]", " ", text).casefold().split())


def _author_names(authors: str) -> set[str]:
    """The names in a metadata author field ("A. Smith; B. Jones", "Smith and Jones"), each
    as ``_name_key`` makes it; the whole field too."""
    parts = re.split(r"\s*(?:;|&|\band\b|,\s*(?=[A-Z][a-z]+\s+[A-Z]))\s*", authors)
    return {key for key in (_name_key(p) for p in [authors, *parts]) if len(key) > 3}


def _assign_levels(headings: list[Block], heading_styles: Counter[Style]) -> None:
    """Heading levels: a numbered heading's from its number ("4.3" is level 2); an unnumbered
    one's from the numbered headings set in its style ("Related Work" in the style of "2
    Method" is level 1), else one below the deepest numbered level set in a larger style
    ("Crawler" in bold body type under "5.1 Setup" is level 3), else by its style's rank.

    Ranking every style on its own put an unnumbered heading below numbered ones of its
    own size (a larger author line or "Abstract" style shifted the ranks), so siblings
    were nested in one another's paths."""
    ranked = sorted(heading_styles, key=lambda s: (-s[0], not s[1]))
    numbered_levels: dict[Style, Counter[int]] = {}
    numbers: dict[int, int] = {}
    for index, block in enumerate(headings):
        numbered = SECTION_NUMBER.match(block_text(block))
        if numbered:
            level = numbered.group(1).count(".") + 1
            numbers[index] = level
            numbered_levels.setdefault(_style(block), Counter())[level] += 1
    learned = {style: counts.most_common(1)[0][0] for style, counts in numbered_levels.items()}
    for index, block in enumerate(headings):
        level = numbers.get(index)
        if level is None:
            style = _style(block)
            if style in learned:
                level = learned[style]
            elif learned and style in ranked:
                above = [learned[s] for s in ranked[: ranked.index(style)] if s in learned]
                level = max(above) + 1 if above else 1
            else:
                level = ranked.index(style) + 1 if style in ranked else 1
        block.heading_level = min(level, MAX_HEADING_LEVEL)


# Superscripts that tie a name to an affiliation or a note ("He1∗", "Huang1,2", "Feng†"); an
# affiliation line starts with its superscript ("1ByteDance Research 2Peking University").
_MARKS = "0123456789*∗†‡§¶,"
_AFFILIATION = re.compile(r"^[\d*∗†‡§¶]{1,2}[A-Z][a-z]")
_NAME_PARTICLES = {"van", "von", "de", "der", "den", "di", "da", "del", "della", "du", "le", "la", "bin", "al", "dos", "y"}
_NAME_SEPARATORS = {"and", "&", ",", "·", "•"}


def _name_word(token: str) -> tuple[bool, bool]:
    """(whether ``token`` reads as part of a person's name, whether it carries superscripts):
    "Huang1,2" (True, True), "J." (True, False), "GPT4" (False, True)."""
    word = token.rstrip(_MARKS)
    marked = len(word) < len(token.rstrip(","))
    if not word or not word[0].isupper():
        return False, marked
    if len(word) == 2 and word[1] == ".":
        return True, marked  # an initial
    parts = word.replace("’", "'").replace("'", "-").split("-")
    return all(p[:1].isupper() and (len(p) == 1 or p[1:].islower()) and p.isalpha() for p in parts if p), marked


def _names_people(block: Block, *, in_front_matter: bool) -> bool:
    """Whether a heading-styled block is an author line (or the affiliations under it): two
    or more names carrying superscripts; or, between a first page's title and its abstract,
    an affiliation marked as such or a line of nothing but names ("Ada Lovelace and
    Charles Babbage")."""
    text = block_text(block)
    words = [t for t in text.replace(",", " , ").split() if t.lower() not in _NAME_SEPARATORS]
    if len(words) < 2:
        return False
    judged = [_name_word(t) for t in words]
    if sum(1 for name, marked in judged if name and marked) >= 2:
        return True
    if not in_front_matter:
        return False
    if _AFFILIATION.match(words[0]):
        return True
    if not all(name or t.lower() in _NAME_PARTICLES for t, (name, _) in zip(words, judged, strict=True)):
        return False
    # each a given name and a family name at least: "Pride and Prejudice" names no one
    groups = [g.split() for g in re.split(r"\s*(?:,|\band\b|&|·|•)\s*", text) if g.strip()]
    if not all(2 <= len(g) <= 5 for g in groups):
        return False
    return len(groups) >= 2 or any(marked for _, marked in judged)


def _front_matter_end(first: Page) -> float | None:
    """Where a first page's front matter ends (the top of its "Abstract", first numbered
    heading or first paragraph of body text), in the reading frame; None when the page has
    no such mark."""
    tops = []
    for block in first.blocks:
        if not block.lines or block.kind in ("header", "footer"):
            continue
        text = block_text(block)
        if text[:8].casefold().startswith("abstract") or SECTION_NUMBER.match(text) or len(text) >= 300:
            tops.append(block.box[1])
    return min(tops) if tops else None


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
            # line boxes of tightly leaded type overlap a little (ascenders and descenders)
            and -0.3 * _style(block)[0] <= block.box[1] - previous.box[3] < 0.6 * _style(block)[0]
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
    if any(line.form for line in block.lines):
        return False  # a button's caption ("Print Form") or a filled-in field
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
