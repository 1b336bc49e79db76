"""Bibliographic metadata of a PDF that does not come from Zotero, read offline from the file.

Sources, most trusted first for each field:
- the first page's text: the title (the largest type in the top half), the author line(s)
  right under it (up to the first affiliation, e-mail or abstract line), DOIs and arXiv ids
  in the first two pages, a year from an arXiv id, a copyright line, a "cite as" line or a
  dated line near the title;
- XMP (``dc:creator``, ``dc:title``, ``prism:doi``) and the Info dictionary (Author, Title),
  when plausible: "Administrator", "ARRAY(0x…)", "Microsoft Word - x.doc", "Untitled",
  "SE:W:CAR:MP" and one-word producers are not authors or titles;
- a year from the Info/XMP dates only when the authors came from there too.

Nothing here guesses from a network service; a field that cannot be read stays empty.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from haiku.rag.bibliography import Bibliographic, Creator

DOI_PATTERN = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>,;]+[^\s\"<>,;.)\]])", re.IGNORECASE)
ARXIV_PATTERN = re.compile(r"arXiv:\s*(\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})(v\d+)?", re.IGNORECASE)
ARXIV_FILENAME = re.compile(r"(?<!\d)(\d{2})(0[1-9]|1[0-2])\.(\d{4,5})(v\d+)?\.pdf$", re.IGNORECASE)
YEAR = r"(19[5-9]\d|20[0-4]\d)"
COPYRIGHT = re.compile(rf"(?:©|\(c\)|copyright(?:\s+c?⃝)?|c⃝)\s*(?:\w+\s+)?{YEAR}", re.IGNORECASE)
MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec "
    "januar februar märz mai juni juli oktober dezember "
    "janvier février mars avril juin juillet août septembre octobre novembre décembre"
).split()
MONTH_YEAR = re.compile(rf"\b(?:{'|'.join(MONTHS)})\.?(?:\s*[-–,]\s*|\s+)(?:\d{{1,2}},?\s+)?{YEAR}\b", re.IGNORECASE)
# 2004-08, 2004-08-01, 01-17-2023, 17.01.2023, 01/17/2023
NUMERIC_DATE = re.compile(rf"(?<![\d.-]){YEAR}-(?:0[1-9]|1[0-2])(?:-\d{{2}})?(?![\d-])|(?<![\d.-])\d{{1,2}}[-./]\d{{1,2}}[-./]{YEAR}(?![\d-])")
# "2023 Environmental Report", "Annual Report 2019"
YEAR_TITLE = re.compile(rf"^{YEAR}\s+\w|\b\w+\s+{YEAR}$")
VENUE_YEAR = re.compile(r"\b[A-Z][A-Za-z]{1,10}\s?['’](\d{2})\b")  # PLDI'09, ICML '21

PARTICLES = {"de", "del", "della", "der", "den", "van", "von", "da", "di", "du", "la", "le", "dos", "das", "ter", "ten", "bin", "al", "el", "y"}
# words that end an author block: affiliations, contact lines, the abstract
STOP_WORDS = {
    "university", "université", "universität", "universidad", "universita", "università", "department", "dept",
    "institute", "institut", "instituto", "school", "college", "laboratory", "laboratoire", "lab", "labs",
    "faculty", "center", "centre", "inc", "corporation", "corp", "ltd", "gmbh", "research", "abstract",
    "résumé", "zusammenfassung", "introduction", "email", "e-mail", "keywords", "ai", "google", "microsoft",
    "facebook", "meta", "ibm", "amazon", "hospital", "academy", "foundation", "company", "group", "usa",
}
NOT_NAMES = STOP_WORDS | {
    "the", "of", "for", "and", "in", "on", "with", "a", "an", "to", "from", "by", "at", "is", "are", "report",
    "page", "vol", "volume", "no", "proceedings", "journal", "conference", "working", "papers", "paper",
    "table", "figure", "section", "chapter", "edition", "data", "model", "form", "new", "using", "based",
    "year", "fiscal", "federal", "register", "government", "gouvernement", "national", "state", "states",
    "county", "city", "office", "service", "services", "agency", "ministry", "bureau", "council", "board",
    "committee", "association", "society", "union", "canada", "sale", "sales", "private", "public", "total",
    "totals", "rentals", "redemption", "annual", "quarterly", "monthly", "notice", "date", "rules", "proposed",
    "general", "handbook", "manual", "guide", "example", "sample", "slide", "test", "version", "draft",
}
BAD_INFO_AUTHORS = {"administrator", "admin", "user", "owner", "unknown", "author", "authors", "default", "test"}
BAD_TITLE = re.compile(
    r"^(untitled|microsoft (word|powerpoint|excel) - .*|.*\.(pdf|docx?|odt|odp|pptx?|exe|dvi|tex|ps|indd|qxd))$",
    re.IGNORECASE,
)
MARKERS = "∗*†‡§¶#$+⋆★♯♮"


@dataclass(slots=True)
class _Line:
    text: str
    size: float
    x0: float
    y0: float
    y1: float
    bold: bool
    baseline: float
    # the text with a ";" where a superscript mark or a wide gap separates two names ("Yichen
    # He1∗ Guanhua Huang1∗" -> "Yichen He ; Guanhua Huang ;"): author lines list names
    # without commas and tell them apart by their marks or spacing alone
    names: str = ""


# a superscript that marks a name (affiliation numbers, letters, stars, daggers)
SUPERSCRIPT_MARK = re.compile(r"[\d,a-z∗*†‡§¶#$+⋆★♯♮·]{1,8}")
NAME_GAP_EM = 0.8  # a gap this wide between two spans on an author line separates two names


def extract_pdf_metadata(
    data: bytes, *, filename: str | None = None, title: str | None = None
) -> Bibliographic | None:
    """What the PDF says about itself, or None when it says nothing usable.

    ``title``: the title the library found for the document (``ingest.pdf.title.find_title``,
    the first page's title block): the record takes it, and the authors are read from the
    lines right under it, so the record and the library name the same document."""
    from haiku.rag.mupdf import MUPDF_LOCK, import_pymupdf

    with MUPDF_LOCK:
        pymupdf = import_pymupdf()
        try:
            doc = pymupdf.open(stream=data, filetype="pdf")
        except Exception:  # a damaged file: the converter reports it; metadata just stays empty
            return None
        try:
            if doc.needs_pass:
                return None
            return read_pdf_metadata(doc, filename=filename, title=title)
        finally:
            doc.close()


def read_pdf_metadata(doc: Any, *, filename: str | None = None, title: str | None = None) -> Bibliographic | None:
    """``extract_pdf_metadata`` from a PDF already open (a ``pymupdf.Document``, authenticated):
    the parse worker reads the record in the same open as the conversion. The caller holds
    whatever lock its process needs around PyMuPDF."""
    from haiku.rag.mupdf import import_pymupdf

    pymupdf = import_pymupdf()
    if doc.page_count == 0:
        return None
    info = dict(doc.metadata or {})
    xmp = doc.get_xml_metadata() or ""
    first = doc[0]
    height = first.rect.height
    # text only: the default flags decode every image of the page into the dict (a
    # 15,455 x 20,000 px scan cost 2 GB here, in the caller's process, outside the
    # parse worker's memory and time bounds; issue 32)
    flags = pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES
    lines = _lines(first.get_text("dict", flags=flags))
    text = "\n".join(doc[i].get_text() for i in range(min(2, doc.page_count)))
    return _extract(info, xmp, lines, height, text, filename, title)


def _lines(page_dict: dict[str, Any]) -> list[_Line]:
    out = []
    for block in page_dict.get("blocks", []):
        for line in block.get("lines", []):
            spans = [s for s in line.get("spans", []) if s.get("text", "").strip()]
            if not spans:
                continue
            direction = line.get("dir", (1, 0))
            if abs(direction[1]) > 0.1:
                continue  # rotated text: arXiv's side stamp, margin notes
            main = max(s["size"] for s in spans)
            # superscript markers (affiliation numbers, stars) are set smaller: drop them;
            # TeX sets words as separate spans, so a gap between spans is a space
            parts: list[str] = []
            names: list[str] = []
            previous_end = None
            for span in spans:
                small = span["size"] < 0.8 * main
                piece = span["text"] if not small else " "
                gap = span["bbox"][0] - previous_end if previous_end is not None else 0.0
                if previous_end is not None and gap > 0.15 * main:
                    parts.append(" ")
                    names.append(" ; " if gap > NAME_GAP_EM * main else " ")
                parts.append(piece)
                names.append(" ; " if small and SUPERSCRIPT_MARK.fullmatch(span["text"].strip()) else piece)
                previous_end = span["bbox"][2]
            text = _compose_accents(" ".join("".join(parts).split()))
            if ARXIV_PATTERN.match(text):
                continue
            if not text:
                continue
            bbox = line["bbox"]
            bold = any("bold" in s.get("font", "").lower() or s.get("flags", 0) & 16 for s in spans)
            baseline = next(s["origin"][1] for s in spans if s["size"] == main)
            out.append(_Line(text, round(main, 1), bbox[0], bbox[1], bbox[3], bold, baseline, _compose_accents(" ".join("".join(names).split()))))
    # reading order: rows (by baseline, as superscripts stick out above), then left to right
    out.sort(key=lambda ln: (round(ln.baseline / 3), ln.x0))
    return out


# TeX draws an accent as a glyph of its own before the letter it sits on ("O˘guz" for
# "Oğuz"): spacing accents -> the combining marks to compose with the next letter
_SPACING_ACCENTS = {
    "˘": "\u0306", "¨": "\u0308", "´": "\u0301", "`": "\u0300", "ˆ": "\u0302", "˜": "\u0303",
    "ˇ": "\u030c", "˙": "\u0307", "˚": "\u030a", "˝": "\u030b", "¯": "\u0304", "¸": "\u0327",
}
_LOOSE_ACCENT = re.compile("([" + "".join(_SPACING_ACCENTS) + "])\\s?([^\\W\\d_])")


def _compose_accents(text: str) -> str:
    if not any(ch in _SPACING_ACCENTS for ch in text):
        return text
    return unicodedata.normalize("NFC", _LOOSE_ACCENT.sub(lambda m: m.group(2) + _SPACING_ACCENTS[m.group(1)], text))


def _extract(
    info: dict[str, str],
    xmp: str,
    lines: list[_Line],
    height: float,
    text: str,
    filename: str | None,
    known_title: str | None = None,
) -> Bibliographic | None:
    title, after_title = _title(lines, height)
    if known_title:
        found = _title_lines_end(lines, known_title, height)
        if found is not None:
            title, after_title = known_title, found
    authors = _author_block(lines[after_title:], height) if title else []
    source = "first-page"
    xmp_creators = _xmp_list(xmp, "dc:creator")
    if not authors:
        candidates = [_info_authors(a) for a in (*xmp_creators, info.get("author") or "")]
        authors = next((c for c in candidates if c), [])
        if authors:
            source = "pdf-info"
    info_title = _plausible_title(_xmp_list(xmp, "dc:title")[:1][0] if _xmp_list(xmp, "dc:title") else "") or _plausible_title(
        info.get("title") or ""
    )
    title = title or info_title
    if source == "pdf-info" and info_title:
        title = info_title
    if known_title:
        title = known_title  # the library's title: a record names what the library shows

    doi = _first_doi(" ".join([_xmp_value(xmp, "prism:doi"), _xmp_value(xmp, "dc:identifier"), info.get("subject") or "", text]))
    arxiv = None
    match = ARXIV_PATTERN.search(text)
    if match:
        arxiv = match.group(1)
    elif filename and (m := ARXIV_FILENAME.search(filename)):
        arxiv = f"{m.group(1)}{m.group(2)}.{m.group(3)}"
    year = _year(arxiv, text, lines, authors, height)
    if year is None and source == "pdf-info":
        year = _info_year(xmp, info)
    if not (authors or doi or arxiv):
        return None if not (title or year) else Bibliographic(title=title, year=year, source=source)
    return Bibliographic(title=title, creators=authors, year=year, doi=doi, arxiv=arxiv, source=source,
                         item_type="preprint" if arxiv and not doi else "document")


# --- title and authors -----------------------------------------------------------------------


def _title(lines: list[_Line], height: float) -> tuple[str | None, int]:
    """The largest type in the top half of page 1 (consecutive lines of that size), and the
    index of the first line after it."""
    top = [(i, ln) for i, ln in enumerate(lines) if ln.y0 < height * 0.5 and _letters(ln.text) >= 4]
    if not top:
        return None, 0
    biggest = max(ln.size for _, ln in top)
    body = sorted(ln.size for ln in lines)[len(lines) // 2]
    if biggest < body * 1.15:  # no display type: not a titled document
        return None, 0
    start = next(i for i, ln in top if ln.size >= biggest - 0.5)
    end = start
    while end + 1 < len(lines) and abs(lines[end + 1].size - lines[start].size) <= 0.5 and lines[end + 1].y0 - lines[end].y1 < lines[start].size:
        end += 1
    title = " ".join(ln.text for ln in lines[start : end + 1])
    title = re.sub(r"(\w)- (\w)", r"\1\2", title).strip(" .:")
    return (title if _letters(title) >= 4 else None), end + 1


def _title_lines_end(lines: list[_Line], title: str, height: float) -> int | None:
    """The index of the first line after the lines that spell ``title`` in the top half of
    the page (the title block the library found), or None when they are not there."""
    wanted = _fold_words(title)
    if not wanted:
        return None
    for start, line in enumerate(lines):
        if line.y0 >= height * 0.6:
            break
        words = _fold_words(line.text)
        if not words or wanted[: len(words)] != words:
            continue
        end, seen = start + 1, list(words)
        while len(seen) < len(wanted) and end < len(lines):
            more = _fold_words(lines[end].text)
            if not more or wanted[len(seen) : len(seen) + len(more)] != more:
                break
            seen += more
            end += 1
        if len(seen) >= len(wanted):
            return end
    return None


def _fold_words(text: str) -> list[str]:
    text = re.sub(r"(\w)-\s+(\w)", r"\1\2", text)
    return re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())


def _letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text)


def _author_block(lines: list[_Line], height: float) -> list[Creator]:
    """Names from the lines under the title: skips up to three lines before the block
    (a subtitle, an edition line), stops at an affiliation, e-mail or abstract line."""
    joined: list[str] = []
    skipped = 0
    for line in lines:
        if line.y0 > height * 0.6:
            break
        stop = _is_stop_line(line.text)
        if stop:
            break
        names = line.names or line.text
        if _names_in(names) or (joined and _continues_names(names)):
            joined.append(names)
            continue
        if joined:
            break
        skipped += 1
        if skipped > 3:
            break
    if not joined:
        return []
    # lines joined with a space: a name wrapped over two lines ("Benjamin Charles Germain" /
    # "Lee") stays one name; the marks inside the lines separate the names
    return [_creator(name) for name in _split_names(" ".join(joined))]


def _is_stop_line(text: str) -> bool:
    if "@" in text or "http" in text.lower() or "www." in text.lower():
        return True
    words = {w.lower().strip(".,:;()") for w in re.split(r"[\s,]+", _strip_markers(text))}
    return bool(words & STOP_WORDS)


def _strip_markers(text: str) -> str:
    text = "".join(" " if ch in MARKERS else ch for ch in text)
    text = re.sub(r"[()]", " ", text)  # "Shen1 ( )": an e-mail icon between parentheses
    text = re.sub(r"(?<=[^\W\d])\d+\b", "", text)  # "Shen1" -> "Shen"
    return " ".join(text.split())


def _split_names(text: str) -> list[str]:
    text = _strip_markers(text)
    parts = re.split(r"\s*(?:,|;|\band\b|&|\bund\b|\bet\b)\s*", text)
    return [p.strip(" .") if not re.search(r"\b[A-Z]\.$", p.strip()) else p.strip() for p in parts if _is_name(p.strip())]


def _names_in(text: str) -> bool:
    parts = [p for p in re.split(r"\s*(?:,|;|\band\b|&)\s*", _strip_markers(text)) if p.strip()]
    if not parts:
        return False
    good = sum(1 for p in parts if _is_name(p.strip()))
    return good >= 1 and good >= 0.6 * len(parts)


def _continues_names(text: str) -> bool:
    """A wrapped author line's tail ("Lee4, Jacob Carlson3, and Weining Li5", or one surname)."""
    cleaned = _strip_markers(text)
    tokens = [t for t in re.split(r"[\s,]+", cleaned) if t and t.lower() not in ("and", "&")]
    return bool(tokens) and all(_is_name_token(t) for t in tokens)


def _is_name_token(token: str) -> bool:
    token = token.strip(".,")
    if not token:
        return False
    if token.lower() in PARTICLES:
        return True
    if re.fullmatch(r"[A-Z]\.?(-[A-Z]\.?)?", token):  # an initial
        return True
    first = token[0]
    if not (first.isalpha() and first.isupper()):
        return False
    rest = token[1:].replace("-", "").replace("'", "").replace("’", "")
    if not rest or not all(ch.isalpha() for ch in rest):
        return False
    if token.isupper() and len(token) > 2:
        return False  # all capitals: a heading or an acronym, not a name
    return token.lower() not in NOT_NAMES and unicodedata.category(first) == "Lu"


def _is_name(part: str) -> bool:
    tokens = part.split()
    if not 2 <= len(tokens) <= 5:
        return False
    if not all(_is_name_token(t) for t in tokens):
        return False
    words = [t for t in tokens if len(t.strip(".")) > 1 and t.lower() not in PARTICLES]
    last = tokens[-1]
    # a one-letter family name ("Weinan E") has no full stop; an initial does
    return len(words) >= 1 and last.lower() not in PARTICLES and (len(last.strip(".")) > 1 or not last.endswith("."))


def _creator(name: str) -> Creator:
    tokens = name.split()
    split = len(tokens) - 1
    while split > 1 and tokens[split - 1].lower() in PARTICLES:
        split -= 1
    return Creator(family=" ".join(tokens[split:]), given=" ".join(tokens[:split]))


def _info_authors(value: str) -> list[Creator]:
    value = " ".join(value.split())
    if not value or value.lower() in BAD_INFO_AUTHORS or "(0x" in value or len(value) > 300 or re.search(r"\d|:", value):
        return []
    parts = [p.strip() for p in re.split(r"\s*(?:;|\band\b|&)\s*", value) if p.strip()]
    if len(parts) == 1 and parts[0].count(",") == 1:
        family, given = (s.strip() for s in parts[0].split(","))
        if _is_name(f"{given} {family}"):
            return [Creator(family=family, given=given)]
    names = [p for chunk in parts for p in chunk.split(",")]
    creators = [_creator(n.strip()) for n in names if _is_name(n.strip())]
    return creators if creators and len(creators) == len([n for n in names if n.strip()]) else []


def _plausible_title(value: str) -> str | None:
    value = " ".join(value.split())
    if len(value) < 4 or BAD_TITLE.match(value) or _letters(value) < 4:
        return None
    return value


# --- identifiers and year --------------------------------------------------------------------


def _first_doi(text: str) -> str | None:
    match = DOI_PATTERN.search(text)
    return match.group(1) if match else None


def _year(arxiv: str | None, text: str, lines: list[_Line], authors: list[Creator], height: float) -> int | None:
    if arxiv and re.match(r"\d{4}\.", arxiv):
        return 2000 + int(arxiv[:2])
    if arxiv and (m := re.search(r"/(\d{2})", arxiv)):
        yy = int(m.group(1))
        return (1900 if yy > 90 else 2000) + yy
    match = COPYRIGHT.search(text)
    if match:
        return int(match.group(1))
    if authors:
        # a "cite as" line: "Chuttur M.Y. (2009). Overview of ..."
        family = re.escape(authors[0].family)
        cite = re.search(rf"{family}[^()\n]{{0,40}}\(({YEAR})[a-z]?\)", text)
        if cite:
            return int(cite.group(1))
    near_top = [ln.text for ln in lines if ln.y0 < height * 0.5 or ln.y1 > height * 0.9]
    for pattern in (MONTH_YEAR, NUMERIC_DATE, YEAR_TITLE):
        for line in near_top:
            match = pattern.search(line)
            if match:
                return int(next(g for g in match.groups() if g))
    for line in near_top:
        match = VENUE_YEAR.search(line)
        if match:
            yy = int(match.group(1))
            return (1900 if yy > 50 else 2000) + yy
    return None


def _info_year(xmp: str, info: dict[str, str]) -> int | None:
    for value in (_xmp_value(xmp, "dc:date"), _xmp_value(xmp, "xmp:CreateDate"), info.get("creationDate") or ""):
        match = re.search(YEAR, value)
        if match:
            return int(match.group(1))
    return None


def _xmp_value(xmp: str, tag: str) -> str:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", xmp, re.DOTALL)
    if not match:
        return ""
    return re.sub(r"<[^>]+>", " ", match.group(1)).strip()


def _xmp_list(xmp: str, tag: str) -> list[str]:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", xmp, re.DOTALL)
    if not match:
        return []
    items = re.findall(r"<rdf:li[^>]*>(.*?)</rdf:li>", match.group(1), re.DOTALL)
    return [" ".join(i.split()) for i in items if i.strip()]
