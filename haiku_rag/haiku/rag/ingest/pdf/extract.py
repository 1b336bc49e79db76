"""Reading one page with PyMuPDF: text lines (text, boxes, font size, boldness), the boxes
of its images and vector paths, its dominant writing direction, and whether its text layer
is usable or the page needs OCR."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pymupdf

from haiku.rag.ingest.pdf.blocks import FIGURES, Line
from haiku.rag.ingest.pdf.geometry import IDENTITY, Bbox, Matrix, area, intersect, transform
from haiku.rag.ingest.pdf.glyphs import font_chars, repair_glyphs, rewrite_fonts

# One text extraction pass also collects vector paths (as type-3 blocks): cheaper than a
# second pass with get_bboxlog(). Images are not collected there: the dict would carry
# their encoded payloads, which made extraction 15x slower on the pages that have images.
TEXT_FLAGS = pymupdf.TEXT_MEDIABOX_CLIP | pymupdf.TEXT_COLLECT_VECTORS
# Guards against pathological pages (fuzzed or generated files with absurd content).
MAX_CHARS_PER_PAGE = 200_000
MAX_LINES_PER_PAGE = 10_000
# A page with fewer usable characters than this needs OCR if it shows image or vector content
# (a scan) or if its text does not decode (fonts without a Unicode map give U+FFFD).
MIN_USABLE_CHARS = 20
# a line with more than this share of undecodable characters is undecodable as a whole
UNDECODABLE_LINE_SHARE = 0.2
# beside readable text (a page not garbled), a line is dropped when more than this share of
# it does not decode
MOSTLY_UNDECODABLE = 0.5
# a page with this share of undecodable characters or more is read by OCR instead
GARBLED_SHARE = 0.25
SCAN_IMAGE_AREA_FRACTION = 0.25
SCAN_MIN_VECTOR_PATHS = 200
BOLD_FLAG = pymupdf.TEXT_FONT_BOLD


@dataclass(slots=True)
class PageGraphics:
    """Boxes of the page's non-text content, in unrotated page space."""

    images: list[Bbox]
    stroke_paths: list[Bbox]
    fill_paths: list[Bbox]
    widgets: list[Bbox] = field(default_factory=list)  # form fields and buttons


@dataclass(slots=True)
class RawPage:
    text: dict[str, Any]  # PyMuPDF's extractDICT()
    graphics: PageGraphics


def read_page(page: pymupdf.Page) -> RawPage:
    """The only PyMuPDF calls that may fail on a damaged page."""
    textpage = page.get_textpage(flags=TEXT_FLAGS)
    text = textpage.extractDICT()
    fonts = font_chars(text)
    _mark_numbered_glyphs(text, fonts)
    repair_glyphs(text, fonts, textpage, page)
    strokes, fills = [], []
    has_text = False
    for block in text["blocks"]:
        kind = block["type"]
        if kind == 3:
            (strokes if block["stroked"] else fills).append(block["bbox"])
        elif kind == 0:
            has_text = True
    images: list[Bbox] = []
    # Image boxes cost a second pass over the page, so only when the page's resources list
    # images, or when it has no text (an inline-image scan would not be listed).
    if not has_text or page.get_images():
        images = [info["bbox"] for info in page.get_image_info()]
    widgets: list[Bbox] = []
    if has_text and page.first_widget is not None:
        # a button's caption or a field's value is drawn by its appearance, in the widget's
        # box (unrotated page space, as extraction): form content, never a heading
        widgets = [tuple(widget.rect) for widget in page.widgets()]
    return RawPage(text, PageGraphics(images, strokes, fills, widgets))


# A font subset whose glyphs were numbered in the order they were used, from "!" on, without
# a Unicode map: its text extracts as runs of punctuation ("$!"#", "&'()*+,"), which decode
# as characters but are glyph numbers (a real paper's chart axis labels, in a Calibri subset,
# came into its quotes and snippets). Told by the characters it gives on a page: at least
# this many, the lowest "!" (with '"'), all printable ASCII, and most of the run "!".. the
# highest. Over the first 60 pages of 40 real PDFs only that chart font's 3 pages match.
NUMBERED_GLYPHS_MIN = 5
NUMBERED_GLYPHS_COVER = 0.8


def _mark_numbered_glyphs(text: dict[str, Any], fonts: dict[str, set[str]]) -> None:
    """Spans in a font whose glyphs extract as their numbers (see above) become U+FFFD, the
    undecodable text they are: their lines are then left out and a page mostly of them is
    read by OCR, as for a font without a Unicode map. ``fonts``: each font's characters."""
    numbered = {font for font, chars in fonts.items() if _numbered(chars)}
    if not numbered:
        return
    rewrite_fonts(text, dict.fromkeys(numbered, _undecodable))


def _undecodable(span_text: str) -> str:
    return "".join(" " if ch.isspace() else "\ufffd" for ch in span_text)


def _numbered(chars: set[str]) -> bool:
    shown = sorted(ch for ch in chars if not ch.isspace())
    if len(shown) < NUMBERED_GLYPHS_MIN or shown[0] != "!" or '"' not in chars:
        return False
    highest = ord(shown[-1])
    return highest <= 0x7E and len(shown) >= NUMBERED_GLYPHS_COVER * (highest - ord("!") + 1)


def mark_form_lines(lines: list[Line], widgets: list[Bbox]) -> None:
    """Mark the lines whose middle lies inside a form field or button."""
    if not widgets:
        return
    for line in lines:
        x0, y0, x1, y1 = line.unrotated
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        line.form = any(w[0] <= cx <= w[2] and w[1] <= cy <= w[3] for w in widgets)


def one_line(exc: BaseException) -> str:
    """A failure's message for a warning or an error: on one line, or the exception's type
    name when it has no message."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def extract_lines(
    text: dict[str, Any], rotation: Matrix, page_no: int, warnings: list[str]
) -> list[Line]:
    lines: list[Line] = []
    chars = 0
    rotated = rotation != IDENTITY
    for raw_line, block_no in _split_at_space_runs(printed_lines(text)):
        line = _make_line(raw_line, block_no, rotation if rotated else None)
        if line is None:
            continue
        if chars + len(line.text) > MAX_CHARS_PER_PAGE or len(lines) >= MAX_LINES_PER_PAGE:
            room = MAX_CHARS_PER_PAGE - chars
            if room > 0 and len(lines) < MAX_LINES_PER_PAGE:
                # One enormous line keeps its head: a page whose only text is a 5 MB
                # line is indexed by what fits, not refused as having no text.
                line.text = line.text[:room]
                lines.append(line)
                chars += len(line.text)
            warnings.append(
                f"page {page_no}: text truncated after {len(lines)} lines ({chars} "
                "characters); the page is abnormally dense"
            )
            return lines
        chars += len(line.text)
        lines.append(line)
    return lines


# Cells set apart with runs of spaces on one line (a report's "06/22/2015     03/25/2016
# 07/01/2015" under three column headers): this many spaces or more end a piece.
SPACE_RUN = re.compile(r" {3,}")


def _split_at_space_runs(entries: list[tuple[dict[str, Any], int]]) -> list[tuple[dict[str, Any], int]]:
    """Each horizontal line cut into pieces where its text has a run of ``SPACE_RUN``
    spaces (inside a span or across two) between two figures (dates, amounts), each piece a
    line of its own, boxed by its share of its spans' characters (the spans' boxes include
    the spaces). Such a line was a row of table cells drawn as one string; read as one line,
    the cells became one."""
    out: list[tuple[dict[str, Any], int]] = []
    for raw_line, block_no in entries:
        dx, dy = raw_line["dir"]
        text = "".join(span["text"] for span in raw_line["spans"])
        if not (dy == 0 and dx > 0) or "   " not in text or not SPACE_RUN.search(text.strip()):
            out.append((raw_line, block_no))
            continue
        # each character with its span and its x extent (a share of the span's box)
        chars: list[tuple[str, int, float, float]] = []
        for index, span in enumerate(raw_line["spans"]):
            x0, _, x1, _ = span["bbox"]
            step = (x1 - x0) / max(len(span["text"]), 1)
            chars.extend((ch, index, x0 + step * i, x0 + step * (i + 1)) for i, ch in enumerate(span["text"]))
        runs = [m.start() for m in SPACE_RUN.finditer(text)]
        bounds = [0, *runs, len(text)]
        # only between two figures: OCR layers and forms pad prose and labels with spaces
        kept = [
            cut for i, cut in enumerate(runs)
            if FIGURES.match(text[bounds[i]:cut]) and FIGURES.match(text[cut:bounds[i + 2]])
        ]
        if not kept:
            out.append((raw_line, block_no))
            continue
        cuts = [0, *kept, len(text)]
        for start, end in zip(cuts, cuts[1:], strict=False):
            piece = chars[start:end]
            while piece and piece[0][0] == " ":
                piece.pop(0)
            while piece and piece[-1][0] == " ":
                piece.pop()
            if not piece:
                continue
            spans = []
            for index in sorted({c[1] for c in piece}):
                mine = [c for c in piece if c[1] == index]
                span = raw_line["spans"][index]
                box = (mine[0][2], span["bbox"][1], mine[-1][3], span["bbox"][3])
                spans.append({**span, "text": "".join(c[0] for c in mine), "bbox": box})
            box = (spans[0]["bbox"][0], min(s["bbox"][1] for s in spans), spans[-1]["bbox"][2], max(s["bbox"][3] for s in spans))
            out.append(({**raw_line, "spans": spans, "bbox": box}, block_no))
    return out


# Pieces of one printed line that PyMuPDF extracted as separate lines -- because the PDF
# draws them out of order (grouped by font, an identifier's parts drawn after the rest of
# the line) -- are joined again when they share a baseline and abut: within this share of
# the font size (a word space is ~0.25 em; column gutters and table cells are wider), of
# similar heights (a different font's box, not a sub- or superscript's).
FRAGMENT_GAP_EM = 0.3
FRAGMENT_SIZE_RATIO = 1.25
# An underscore some typesetters draw as a rule, not a glyph (LaTeX's ``\_`` in OT1 fonts is
# ``\kern.06em\vbox{\hrule width.3em}``): a short, thin horizontal path at the baseline that
# fills the gap between two pieces of one printed line. MuPDF extracts the text around it as
# separate lines (the path ends its text block) or with a synthesised space, which read
# "fz_new_context" as "fz / context ... / new" or "fz new context".
RULE_MAX_HEIGHT = 2.0  # points: a rule, not a box
RULE_MAX_WIDTH = 24.0  # points: an underscore or two, not a form's blank or a table rule
UNDERSCORE_MAX_GAP_EM = 1.5


def printed_lines(text: dict[str, Any]) -> list[tuple[dict[str, Any], int]]:
    """PyMuPDF's text lines with their block numbers, in extraction order, with the pieces
    of one printed line joined into one line (spans left to right).

    Why: MuPDF adds a character to the current line only when it continues it; a PDF that
    draws ``fz_``, the rest of the line, and then ``new`` yields three lines (the last one
    in a block of its own), which read "Call fz_ _context to create ..." and "new" at the
    end of the paragraph. The joined line takes the place and block of its longest piece.
    Hot path: one dict append per line; only rows holding several lines are compared."""
    entries: list[tuple[dict[str, Any], int]] = []
    rows: dict[float, list[int]] = {}
    rules: list[Bbox] = []  # short thin horizontal paths: underscores drawn as rules
    for block in text["blocks"]:
        kind = block.get("type", 0)
        if kind == 3:
            x0, y0, x1, y1 = block["bbox"]
            if y1 - y0 <= RULE_MAX_HEIGHT and 0.5 <= x1 - x0 <= RULE_MAX_WIDTH:
                rules.append((x0, y0, x1, y1))
            continue
        if kind != 0:
            continue
        number = block["number"]
        for raw_line in block["lines"]:
            direction = raw_line["dir"]
            if direction[1] == 0 and direction[0] > 0 and raw_line["spans"]:
                # pieces drawn apart on one printed line share its baseline exactly
                baseline = round(raw_line["spans"][0]["origin"][1], 1)
                row = rows.get(baseline)
                if row is None:
                    rows[baseline] = [len(entries)]
                else:
                    row.append(len(entries))
            entries.append((raw_line, number))
    if rules:
        for i, (raw_line, number) in enumerate(entries):
            fixed = _underscored_spaces(raw_line, rules)
            if fixed is not None:
                entries[i] = (fixed, number)
    follower: dict[int, int] = {}
    leader: dict[int, int] = {}
    underscored: set[int] = set()  # right-hand pieces joined to their left by a drawn "_"
    for baseline, row in rows.items():
        if len(row) < 2:
            continue
        row.sort(key=lambda i: entries[i][0]["bbox"][0])
        for left, right in zip(row, row[1:], strict=False):
            lx0, ly0, lx1, ly1 = entries[left][0]["bbox"]
            rx0, ry0, _rx1, ry1 = entries[right][0]["bbox"]
            taller, shorter = max(ly1 - ly0, ry1 - ry0), min(ly1 - ly0, ry1 - ry0)
            # the line box is ~1.2 em high
            em = taller / 1.2
            if (
                rx0 > lx0
                and 0 < shorter
                and taller <= FRAGMENT_SIZE_RATIO * shorter
                and not (_is_rtl(entries[left][0]) or _is_rtl(entries[right][0]))
            ):
                if abs(rx0 - lx1) <= FRAGMENT_GAP_EM * em:
                    pass
                elif rules and _rule_bridges(rules, lx1, rx0, baseline, em):
                    underscored.add(right)
                else:
                    continue
                follower[left] = right
                leader[right] = left
    if not follower:
        return entries
    replaced: dict[int, tuple[dict[str, Any], int] | None] = {}
    for head in follower:
        if head in leader:
            continue
        chain = [head]
        while chain[-1] in follower:  # x0 grows along a chain: it ends
            chain.append(follower[chain[-1]])
        longest = max(chain, key=lambda i: sum(len(span["text"]) for span in entries[i][0]["spans"]))
        boxes = [entries[i][0]["bbox"] for i in chain]
        line = dict(entries[longest][0])
        line["bbox"] = (
            min(b[0] for b in boxes), min(b[1] for b in boxes),
            max(b[2] for b in boxes), max(b[3] for b in boxes),
        )
        line["spans"] = _joined_spans([entries[i][0] for i in chain], [i in underscored for i in chain])
        replaced.update(dict.fromkeys(chain))
        replaced[longest] = (line, entries[longest][1])
    kept = (replaced.get(i, entry) for i, entry in enumerate(entries))
    return [entry for entry in kept if entry is not None]


def _joined_spans(pieces: list[dict[str, Any]], underscored: list[bool]) -> list[dict[str, Any]]:
    """The pieces' spans left to right, with a space where two pieces do not touch: pieces
    of one line that the PDF drew apart abut (0 +/- 0.05 em), while the next word after a
    space is 0.25 em away and ``_make_line`` would only see gaps wider than that. A piece
    whose gap to the one before is an underscore drawn as a rule (``underscored``) gets
    that underscore."""
    spans: list[dict[str, Any]] = []
    previous: dict[str, Any] | None = None
    for piece, drawn_underscore in zip(pieces, underscored, strict=True):
        first = True
        for span in piece["spans"]:
            if first and drawn_underscore and spans:
                # the underscore fills the gap: the span starts where the last one ended
                spans[-1] = {**spans[-1], "text": spans[-1]["text"].rstrip()}
                x0, y0, x1, y1 = span["bbox"]
                span = {**span, "text": "_" + span["text"].lstrip(), "bbox": (min(x0, spans[-1]["bbox"][2]), y0, x1, y1)}
            elif first and previous is not None and spans:
                em = (previous["bbox"][3] - previous["bbox"][1]) / 1.2
                gap = piece["bbox"][0] - previous["bbox"][2]
                if gap > 0.1 * em and not spans[-1]["text"].endswith(" ") and not span["text"].startswith(" "):
                    span = {**span, "text": " " + span["text"]}
            spans.append(span)
            first = False
        previous = piece
    return spans


def _rule_bridges(rules: list[Bbox], left_end: float, right_start: float, baseline: float, em: float) -> bool:
    """Whether a rule fills the gap [left_end, right_start] of a printed line at its baseline
    (an underscore drawn as a path): the rule lies within the gap, covers at least half of it,
    is at most an em wide, and sits on or just under the baseline."""
    gap = right_start - left_end
    if not 0 < gap <= UNDERSCORE_MAX_GAP_EM * em:
        return False
    slack = 0.15 * em
    for x0, y0, x1, y1 in rules:
        if (
            x0 >= left_end - slack
            and x1 <= right_start + slack
            and 0.5 * gap <= min(x1, right_start) - max(x0, left_end)
            and x1 - x0 <= em  # an underscore, not a form's blank between two words
            and y0 >= baseline - 0.15 * em  # on or under the baseline, not a dash
            and y1 <= baseline + 0.4 * em
        ):
            return True
    return False


def _underscored_spaces(raw_line: dict[str, Any], rules: list[Bbox]) -> dict[str, Any] | None:
    """The line with each whitespace-only span that a drawn underscore covers replaced by
    "_" (MuPDF synthesises a space where the rule left a gap between two glyphs of one
    line), or None when there is none. Only horizontal lines with several spans are looked at."""
    spans = raw_line["spans"]
    direction = raw_line["dir"]
    if len(spans) < 3 or direction[1] != 0 or direction[0] <= 0:
        return None
    changed: list[dict[str, Any]] | None = None
    for k in range(1, len(spans) - 1):
        span = spans[k]
        if span["text"].strip() or not span["text"]:
            continue
        before, after = spans[k - 1], spans[k + 1]
        if not before["text"].strip() or not after["text"].strip():
            continue
        em = span["size"] or 1.0
        if _rule_bridges(rules, before["bbox"][2], after["bbox"][0], span["origin"][1], em):
            if changed is None:
                changed = list(spans)
            changed[k] = {**span, "text": "_"}
    if changed is None:
        return None
    return {**raw_line, "spans": changed}


# Hebrew, Arabic and their presentation forms: right-to-left pieces are not joined left to
# right (their order on the page is the reverse of their reading order).
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")


def _is_rtl(raw_line: dict[str, Any]) -> bool:
    return any(_RTL.search(span["text"]) for span in raw_line["spans"])


def _make_line(raw: dict[str, Any], block_no: int, rotation: Matrix | None) -> Line | None:
    """One text line; ``rotation`` is None on an unrotated page. Hot path (tens of
    thousands of calls per long document): plain loops, no helper calls per span."""
    dx, dy = raw["dir"]
    horizontal = dy == 0 and dx > 0
    spans = raw["spans"]
    if len(spans) == 1:  # two lines in three on the real PDFs: no gaps, one style
        span = spans[0]
        line_text = " ".join(span["text"].split())
        if not line_text:
            return None
        is_bold = bool(span["flags"] & BOLD_FLAG)
        if not is_bold:
            font_bold = _BOLD_FONT_NAMES.get(span["font"])
            is_bold = _learn_font_name(span["font"]) if font_bold is None else font_bold
        return _line(line_text, raw, rotation, span["size"], is_bold, block_no, horizontal, dx, dy)
    parts: list[str] = []
    previous_box = None
    size = 0.0
    longest = bold_chars = total_chars = 0
    for span in spans:
        span_text = span["text"]
        if not span_text:
            continue
        box = span["bbox"]
        if previous_box is not None and not parts[-1].endswith(" ") and not span_text.startswith(" "):
            # Spans are joined with "" (word-per-span PDFs already carry their spaces), but a
            # visibly wide gap between two spans is a word break the PDF did not encode.
            gap = box[0] - previous_box[2] if horizontal else _gap_along(previous_box, box, (dx, dy))
            if gap > 0.25 * span["size"]:
                parts.append(" ")
        parts.append(span_text)
        previous_box = box
        n = len(span_text)
        total_chars += n
        if n > longest:
            longest, size = n, span["size"]
        if span["flags"] & BOLD_FLAG:
            bold_chars += n
        else:
            bold = _BOLD_FONT_NAMES.get(span["font"])
            if bold is None:
                bold = _learn_font_name(span["font"])
            if bold:
                bold_chars += n
    line_text = " ".join("".join(parts).split())
    if not line_text:
        return None
    return _line(line_text, raw, rotation, size, bold_chars >= 0.6 * total_chars, block_no, horizontal, dx, dy)


def _line(
    text: str, raw: dict[str, Any], rotation: Matrix | None, size: float, bold: bool, block_no: int, horizontal: bool, dx: float, dy: float
) -> Line:
    box = tuple(raw["bbox"])
    if "\u21b5" in text:
        text = _FF_ARROW.sub("ff", text)
    return Line(
        text=text,
        box=box,
        unrotated=box,
        # the same object when unrotated: text_block() then skips a second union
        display=box if rotation is None else transform(box, rotation),
        size=size,
        bold=bold,
        source_block=block_no,
        direction=(1, 0) if horizontal else _axis_direction(dx, dy),
    )


# TeX's Computer Modern fonts (OT1 encoding, no Unicode map) put the "ff" ligature at code
# 11, which MuPDF reads as U+21B5 "↵": a real paper's "efforts" and "off-the-shelf" were
# stored (so searched, quoted and cited) as "e↵orts" and "o↵-the-shelf". Beside a letter it
# is that ligature; a return-key symbol between spaces is left alone.
_FF_ARROW = re.compile(r"(?<=[^\W\d_])\u21b5|\u21b5(?=[^\W\d_])")


# Whether a font's name says bold, for fonts whose bold flag is not set; a document uses
# a handful of fonts over thousands of spans, so each name is looked at once.
_BOLD_FONT_NAMES: dict[str, bool] = {}


def _learn_font_name(font: str) -> bool:
    lowered = font.lower()
    bold = any(word in lowered for word in ("bold", "black", "heavy", "semibold"))
    _BOLD_FONT_NAMES[font] = bold
    return bold


def _axis_direction(dx: float, dy: float) -> tuple[int, int] | None:
    """The writing direction as a unit axis vector, or None for slanted text."""
    if abs(dy) < 0.02:
        return (1, 0) if dx > 0 else (-1, 0)
    if abs(dx) < 0.02:
        return (0, 1) if dy > 0 else (0, -1)
    return None


def _gap_along(a: Sequence[float], b: Sequence[float], direction: Sequence[float]) -> float:
    """Distance from the end of box ``a`` to the start of box ``b`` along the line direction."""
    dx, dy = direction

    def extent(box: Sequence[float]) -> tuple[float, float]:
        xs = (box[0] * dx, box[2] * dx)
        ys = (box[1] * dy, box[3] * dy)
        return min(xs) + min(ys), max(xs) + max(ys)

    return extent(b)[0] - extent(a)[1]


def orient_lines(lines: list[Line]) -> Matrix:
    """Find the page's dominant writing direction (by characters), mark the lines that
    follow it, and put every line's ``box`` into the reading frame where it runs left to
    right. Returns the frame's matrix."""
    weights: Counter[tuple[int, int]] = Counter()
    for line in lines:
        if line.direction is not None:
            weights[line.direction] += len(line.text)
    dominant = weights.most_common(1)[0][0] if weights else (1, 0)
    frame = _FRAME_FOR_DIRECTION[dominant]
    for line in lines:
        line.on_axis = line.direction == dominant
        if frame != IDENTITY:
            line.box = transform(line.unrotated, frame)
    return frame


# Rotations (no translation: only relative positions matter for ordering) mapping the
# direction vector to (1, 0). PyMuPDF's top-left space has y downwards.
_FRAME_FOR_DIRECTION: dict[tuple[int, int], Matrix] = {
    (1, 0): IDENTITY,
    (0, 1): (0.0, -1.0, 1.0, 0.0, 0.0, 0.0),  # text running down the page
    (-1, 0): (-1.0, 0.0, 0.0, -1.0, 0.0, 0.0),  # upside down
    (0, -1): (0.0, 1.0, -1.0, 0.0, 0.0, 0.0),  # text running up the page
}


def assess_text_layer(
    lines: list[Line], graphics: PageGraphics, page_box: Bbox
) -> tuple[int, bool, bool, list[Line]]:
    """(usable characters, needs OCR, text garbled, the lines that decode). A page needs OCR
    when it has almost no usable text but shows a scan (images or outlined glyphs), or when
    its text is there but does not decode: a line mostly of U+FFFD / control characters (a
    font without a Unicode map, or whose glyphs extract as their numbers) is undecodable as a
    whole, its few printable characters being glyph numbers too, and a page is garbled when
    its undecodable characters are GARBLED_SHARE of its text or more, even if a title or a
    header in another font decodes (a real review's body was stored as U+FFFD beside a
    readable title and abstract). The lines returned are those worth storing, whether or not
    OCR reads the page (see MOSTLY_UNDECODABLE)."""
    usable = total = 0
    counted: list[tuple[Line, int, int]] = []
    for line in lines:
        chars, decoded = _chars(line.text)
        counted.append((line, chars, decoded))
        total += chars
        if _decoded_enough(chars, decoded):
            usable += decoded
    undecodable = total - usable
    garbled = undecodable >= MIN_USABLE_CHARS and undecodable >= GARBLED_SHARE * total
    # on a garbled page a line is kept only if it decodes; beside readable text, a line goes
    # only when it is mostly glyph numbers (a chart's labels, a lone unmapped symbol), so a
    # formula with two unmapped delimiters keeps its readable signs
    share = UNDECODABLE_LINE_SHARE if garbled else MOSTLY_UNDECODABLE
    readable = [line for line, chars, decoded in counted if chars - decoded <= share * chars]
    for line in readable:
        if _CONTROL.search(line.text):
            # a control character kept beside readable text draws nothing: InDesign's "indent
            # to here" (U+0007) before a list's first word was stored as "\x07E Senkus et al."
            line.text = " ".join(_CONTROL.sub("", line.text).split())
    readable = [line for line in readable if line.text]
    if usable >= MIN_USABLE_CHARS and not garbled:
        return usable, False, False, readable
    return usable, garbled or _has_scan_like_content(graphics, page_box), garbled, readable


_UNUSABLE = re.compile("[\x00-\x1f\x7f\ufffd]")
_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _decoded_enough(chars: int, decoded: int) -> bool:
    return chars - decoded <= UNDECODABLE_LINE_SHARE * chars


def _chars(text: str) -> tuple[int, int]:
    """(characters, usable characters) of a line: spaces aside (line text is
    whitespace-normalised); usable ones are not control characters or U+FFFD (what fonts
    without a Unicode map extract as)."""
    chars = len(text) - text.count(" ")
    return chars, chars - len(_UNUSABLE.findall(text))


def _has_scan_like_content(graphics: PageGraphics, page_box: Bbox) -> bool:
    page_area = area(page_box)
    image_area = sum(area(intersect(box, page_box)) for box in graphics.images)
    if page_area > 0 and image_area >= SCAN_IMAGE_AREA_FRACTION * page_area:
        return True
    # Text converted to outlines shows up as many filled paths.
    return len(graphics.fill_paths) >= SCAN_MIN_VECTOR_PATHS
