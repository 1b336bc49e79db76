"""A PDF's title as a reader would name it: the first page's title block.

The rules, in order (measured on real PDFs in docs/titles.md):

1. The title block of page 1: among the heading-like blocks (larger than the body text, or
   bold) in the top 60 % of the page, the one in the largest type, with the blocks right
   below it in the same style (a title wrapped over two blocks). Skipped: running headers and
   footers (repeated on several pages, or small print in the top margin of a one-page
   excerpt), words that label a page rather than name a document ("Table of Contents",
   "Front cover", "Abstract", an XFA form's "Please wait..."), numbered section headings
   ("5.1 Hyper Parameter Optimization": an excerpt's first section, not its title), rows of
   navigation tabs, author lists, form labels, dates and page numbers. When the page opens
   with a heading and body text follows it before a larger heading, that larger one is a
   section heading and the first is the title.
2. Else the PDF's metadata title, only when it agrees with the document: most of its words
   are on page 1 or in the file name (metadata copied from another document says otherwise;
   file names and placeholders like "Untitled" name nothing). A page with no text to check
   (an XFA form's placeholder page) cannot disagree.
3. Else nothing: the caller uses the file name.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import PurePath

from haiku.rag.ingest.pdf.blocks import HYPHENS, Block, Page
from haiku.rag.ingest.pdf.structure import (
    JUNK_TITLE,
    SECTION_NUMBER,
    WORD_EXPORT_PREFIX,
    _body_style,
)

TOP_SHARE = 0.6  # the title block starts in this top share of page 1
FURNITURE_SHARE = 0.08  # small print this close to the top edge is a running header
LARGER = 1.15  # a title is set at least this much larger than the body text, or in bold
PROMINENT = 1.6  # ... and a title this much larger is not overruled by the metadata
MAX_TITLE_CHARS = 250
MAX_TITLE_LINES = 4
MIN_LETTERS = 4
AGREEMENT = 0.6  # share of the metadata title's words found in the page or the file name
MIN_CHECKABLE_WORDS = 12  # fewer words on page 1: nothing to check the metadata against
PARAGRAPH_CHARS = 80  # body text between two headings: at least this long

NOT_TITLES = {
    "table of contents", "contents", "content", "front cover", "cover", "back cover",
    "title page", "abstract", "summary", "executive summary", "introduction", "preface",
    "foreword", "acknowledgements", "acknowledgments", "references", "bibliography",
    "appendix", "index", "glossary", "draft", "confidential", "preprint", "copyright",
    "all rights reserved", "please wait", "notes", "chapter", "part", "page", "inhalt",
    "inhaltsverzeichnis", "sommaire", "table des matières", "résumé", "目次", "目录", "목차",
}
CHAPTER_LABEL = re.compile(
    r"^(?:chapter|part|section|page|kapitel|chapitre|version|ver\.|rev(?:ision)?\.?|edition|v)\s*[\dIVXLC][\d.]*$",
    re.I,
)
XFA_PLACEHOLDER = "if this message is not eventually replaced by the proper contents"
URL_OR_EMAIL = re.compile(r"https?://|www\.|\S+@\S+\.\w+")
DATE_ONLY = re.compile(
    r"^(?:\d{1,4}[-./]\d{1,2}[-./]\d{1,4}|(?:[A-Za-z]+\.?\s+)?\d{1,2},?\s+\d{4}|\d{4})$"
)
TRAILING_MARKS = re.compile(r"[\s*†‡§¶∗]+$")
TRAILING_PAGE_NUMBER = re.compile(r"(?<=[A-Za-z)])\s+\d{1,4}$")
WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)


def find_title(metadata: dict[str, str], pages: list[Page], filename: str = "") -> str | None:
    """The title by the rules above, or None (use the file name)."""
    first = next((p for p in pages if p.page_no == 1), None)
    found = page_title_block(first, pages) if first is not None else None
    meta = clean_metadata_title(metadata.get("title") or "")
    agrees = meta is not None and metadata_agrees(meta, first, filename)
    if found is not None:
        title, prominent = found
        # A heading only a little larger than the text (a form's "Exemptions") loses to a
        # metadata title the page confirms, unless it says more than the metadata.
        if not prominent and agrees and meta is not None and not _words(meta) <= _words(title):
            return meta
        return title
    return meta if agrees else None


# --- the title block ---------------------------------------------------------------------


def page_title(page: Page, pages: list[Page] | None = None) -> str | None:
    """The title block of ``page`` (page 1), or None when it has none."""
    found = page_title_block(page, pages)
    return None if found is None else found[0]


def page_title_block(page: Page, pages: list[Page] | None = None) -> tuple[str, bool] | None:
    """(the title block's text, whether its type stands well above the body text)."""
    body_size, body_bold = _body_style(pages or [page])
    top, bottom = page.frame_box[1], page.frame_box[3]
    height = max(1.0, bottom - top)
    candidates = [
        b for b in page.blocks
        if _is_candidate(b, body_size, body_bold, top, height)
    ]
    candidates = _drop_tab_rows(candidates)
    if not candidates:
        return None
    best = max(candidates, key=lambda b: (_size(b), -b.box[1]))
    topmost = min(candidates, key=lambda b: b.box[1])
    if topmost is not best and _paragraph_between(page, topmost, best, body_size):
        best = topmost  # the larger one is a section heading under the page's own title
    lines = _with_continuation(page, best)
    text = _tidy(lines, in_top_margin=best.box[1] - top <= FURNITURE_SHARE * height)
    return None if text is None else (text, _size(best) >= PROMINENT * body_size)


def _is_candidate(block: Block, body_size: float, body_bold: bool, top: float, height: float) -> bool:
    if block.kind in ("header", "footer", "table", "picture", "caption", "footnote", "formula", "list_item"):
        return False
    if not block.lines or len(block.lines) > MAX_TITLE_LINES:
        return False
    if not all(line.on_axis for line in block.lines):
        return False  # a sideways stamp in the margin ("arXiv:2004.04906v3 [cs.CL]")
    offset = block.box[1] - top
    if offset > TOP_SHARE * height:
        return False
    size = _size(block)
    larger = size >= body_size * LARGER
    bold = all(line.bold for line in block.lines) and not body_bold and size >= body_size - 0.6
    if not (larger or bold or block.kind == "title"):
        return False
    if offset <= FURNITURE_SHARE * height and not larger:
        return False  # small print at the top edge of an excerpt: its running header
    text = _joined([line.text for line in block.lines])
    return _reads_as_title(text)


def _reads_as_title(text: str) -> bool:
    plain = TRAILING_MARKS.sub("", text).strip()
    if not plain or len(plain) > MAX_TITLE_CHARS:
        return False
    key = _key(plain)
    if key in NOT_TITLES or CHAPTER_LABEL.match(plain) or key.startswith(XFA_PLACEHOLDER):
        return False
    if key.startswith("please wait"):
        return False  # an XFA form's placeholder page
    if SECTION_NUMBER.match(plain):
        return False  # "5.1 Hyper Parameter Optimization": a section, not the document
    if plain.endswith((",", ":", ";")) or plain.count(",") >= 3:
        return False  # a form label, or the authors' names under the title
    if URL_OR_EMAIL.search(plain) or DATE_ONLY.match(plain):
        return False
    letters = sum(ch.isalpha() for ch in plain)
    if letters < MIN_LETTERS or letters < 0.5 * len(plain.replace(" ", "")):
        return False
    return True


def _drop_tab_rows(candidates: list[Block]) -> list[Block]:
    """Blocks sharing a line with two or more candidates of the same style are a row of tabs
    or a menu ("Introduction  Empowering individuals  Working together"), not a title."""
    kept = []
    for block in candidates:
        row = [
            other for other in candidates
            if other is not block
            and abs(other.box[1] - block.box[1]) < 0.5 * _size(block)
            and abs(_size(other) - _size(block)) < 0.6
            and (other.box[0] >= block.box[2] or other.box[2] <= block.box[0])
        ]
        if len(row) < 2:
            kept.append(block)
    return kept


def _paragraph_between(page: Page, upper: Block, lower: Block, body_size: float) -> bool:
    """Whether body text lies between the two, above ``lower`` in its column (a paragraph
    of another column beside it does not make it a section heading)."""
    for block in page.blocks:
        if block.kind != "text" or not block.lines:
            continue
        if not upper.box[3] <= block.box[1] < lower.box[1]:
            continue
        if min(block.box[2], lower.box[2]) <= max(block.box[0], lower.box[0]):
            continue
        if abs(_size(block) - body_size) <= 1.0 and len(_joined([ln.text for ln in block.lines])) >= PARAGRAPH_CHARS:
            return True
    return False


def _with_continuation(page: Page, title: Block) -> list[str]:
    """The title's lines and those of the blocks right below it in the same type (a title
    wrapped over two blocks: "A Perspective on Explanations of Molecular" / "Prediction
    Models")."""
    lines = [line.text for line in title.lines]
    size, bold = _size(title), all(line.bold for line in title.lines)
    last = title
    for block in sorted(page.blocks, key=lambda b: b.box[1]):
        # below the last line (tightly leaded line boxes overlap by a little)
        if block is title or block.box[1] < last.box[3] - 0.3 * size or block.box[1] <= last.box[1] or not block.lines:
            continue
        if len(lines) + len(block.lines) > MAX_TITLE_LINES:
            break
        gap = block.box[1] - last.box[3]
        same_style = abs(_size(block) - size) < 0.6 and all(line.bold for line in block.lines) == bold
        overlaps = min(block.box[2], last.box[2]) > max(block.box[0], last.box[0])
        if gap < 1.2 * size and same_style and overlaps and block.kind not in ("header", "footer", "table"):
            text = _joined([line.text for line in block.lines])
            if SECTION_NUMBER.match(text) or not _reads_as_title(text):
                break
            lines.extend(line.text for line in block.lines)
            last = block
            continue
        if gap >= 1.2 * size:
            break
    return lines


def _tidy(lines: list[str], *, in_top_margin: bool) -> str | None:
    text = TRAILING_MARKS.sub("", _joined(lines)).strip()
    if in_top_margin:
        text = TRAILING_PAGE_NUMBER.sub("", text)  # a running title with its page number
    return text or None


def _joined(lines: list[str]) -> str:
    """Lines joined with spaces; a word hyphenated across a line break joined again."""
    out = ""
    for raw in lines:
        line = " ".join(raw.split())
        if not line:
            continue
        if out.endswith(HYPHENS) and line[:1].islower():
            out = out[:-1] + line
        else:
            out = f"{out} {line}" if out else line
    return out


def _size(block: Block) -> float:
    return max(line.size for line in block.lines)


def _key(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"[\s.…:·_-]+$", "", text)
    return " ".join(text.split())


# --- the metadata title --------------------------------------------------------------------


def clean_metadata_title(raw: str) -> str | None:
    """The metadata title without export prefixes and stray whitespace; None when it names
    nothing (empty, "Untitled", a file name, a number)."""
    text = WORD_EXPORT_PREFIX.sub("", " ".join(raw.split()))
    if len(text) < 3 or sum(ch.isalpha() for ch in text) < 3 or JUNK_TITLE.search(text):
        return None
    if _key(text) in NOT_TITLES:
        return None
    return text


def metadata_agrees(meta: str, first: Page | None, filename: str = "") -> bool:
    """Most of the metadata title's words are on page 1 or in the file name."""
    words = _words(meta)
    if not words:
        return False
    page_text = "" if first is None else " ".join(
        line.text for block in first.blocks for line in block.lines
    )
    if XFA_PLACEHOLDER in page_text.casefold() or len(page_text.split()) < MIN_CHECKABLE_WORDS:
        return True  # nothing on the page to check it against
    known = _words(page_text) | _words(PurePath(filename).stem.replace("_", " "))
    found = sum(1 for w in words if w in known)
    return found >= AGREEMENT * len(words)


def _words(text: str) -> set[str]:
    normal = unicodedata.normalize("NFKC", text).casefold()
    words = set(WORD.findall(normal))
    # scripts without spaces (Chinese, Japanese): compare characters
    words |= {ch for ch in normal if unicodedata.name(ch, "").startswith(("CJK UNIFIED", "HIRAGANA", "KATAKANA"))}
    return words
