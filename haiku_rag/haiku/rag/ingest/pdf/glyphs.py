"""Glyphs whose extracted text is not what the page shows, put right in PyMuPDF's text dict
before lines are made of it (so a line's text, its spans and its boxes stay one record).

- TeX's spacing accents. Type 1 TeX fonts (and some typesetters) draw an accented letter as
  two glyphs, the letter and a spacing accent placed over it (under it for a cedilla), in
  either order: MuPDF extracts "Jim´enez", "M¨uller", "Aviac¸a˜o", which no one searches
  for and a quote repeats wrongly. An accent whose box is centred over a neighbouring
  letter's box is composed with it ("Jiménez"); one standing on its own ("Rˆ3", a prime in
  a formula) keeps its place.
- ZapfDingbats without a Unicode map. Its glyphs are named ``a1`` .. ``a206``, and MuPDF
  reads such a name as the character of that number: ✓ (``a19``) comes out as U+0013, a
  control character that was then dropped, emptying a comparison table's ✓/✗ column.
- C1 control characters (U+0080..U+009F) in a symbol font: a list's bullet glyph (a real
  form's checkbox bullets came out as U+0084); they become "•".
- Arabic ligatures extracted in reverse ("اإلنتاجية" for "الإنتاجية", "اخلطوط" for
  "الخطوط"): put back in order, told by the first letter's zero width inside the glyph's box.
- Pieces of big delimiters that the Adobe Glyph List puts in the private use area
  (U+F8EB "parenlefttp", ...): the Unicode characters for those pieces (U+239B "⎛", ...).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any

# spacing accent -> the combining mark it stands for
SPACING_ACCENTS = {
    "\u00b4": "\u0301",  # acute
    "`": "\u0300",  # grave (TeX's \` glyph extracts as the ASCII grave accent)
    "\u02cb": "\u0300",  # modifier grave
    "\u00a8": "\u0308",  # dieresis
    "\u02c6": "\u0302",  # circumflex
    "\u02dc": "\u0303",  # tilde
    "\u00b8": "\u0327",  # cedilla (under)
    "\u02db": "\u0328",  # ogonek (under)
    "\u02c7": "\u030c",  # caron
    "\u02d8": "\u0306",  # breve
    "\u02da": "\u030a",  # ring
    "\u02d9": "\u0307",  # dot above
    "\u02dd": "\u030b",  # double acute (Hungarian umlaut)
    "\u00af": "\u0304",  # macron
}
ACCENT_CHARS = frozenset(SPACING_ACCENTS)
# an accent over a dotless i or j stands over the letter i or j ("na¨ıve" is "naïve")
_DOTLESS = {"\u0131": "i", "\u0237": "j"}
# how far an accent's baseline may sit from its letter's: TeX raises an accent over a
# capital or an ascender by up to ~0.3 em
ACCENT_RAISE_EM = 0.6
# how far an accent's middle may lie past its letter's box: a math accent is shifted right
# by the letter's slant ("˜b" in cmmi10: 0.005 em past the b); a free-standing accent
# between two glyphs ("Rˆ3") lies 0.16 em from either
ACCENT_SLACK_EM = 0.1

# Arabic ligatures (لا, لإ, لخ, …) are one glyph for two letters, which MuPDF gives in
# reverse (see ``_ligature_reversed``); letters only, not vowel marks
_ARABIC = re.compile("[\u0620-\u06ff]")

# ZapfDingbats glyph names a1..a206 (Adobe's zapfdingbats.txt) -> Unicode; MuPDF extracts
# glyph ``aN`` of a ZapfDingbats font without a ToUnicode map as chr(N).
# (first glyph number, its code point, how many follow one by one)
_ZAPF_RUNS = (
    (1, 0x2701, 2), (3, 0x2704, 1), (4, 0x260E, 1), (5, 0x2706, 1), (6, 0x271D, 5), (11, 0x261B, 1),
    (12, 0x261E, 1), (13, 0x270C, 4), (17, 0x2711, 12), (29, 0x2722, 6), (35, 0x2605, 1),
    (36, 0x2729, 35), (71, 0x25CF, 1), (72, 0x274D, 1), (73, 0x25A0, 1), (74, 0x274F, 1),
    (75, 0x2751, 1), (76, 0x25B2, 1), (77, 0x25BC, 1), (78, 0x25C6, 1), (79, 0x2756, 1),
    (81, 0x25D7, 1), (82, 0x2758, 3), (85, 0x276F, 1), (86, 0x2771, 3), (89, 0x2768, 2),
    (91, 0x276C, 2), (93, 0x276A, 2), (95, 0x2774, 2), (97, 0x275B, 4), (101, 0x2761, 4),
    (105, 0x2710, 1), (106, 0x2765, 3), (109, 0x2660, 1), (110, 0x2665, 2), (112, 0x2663, 1),
    (117, 0x2709, 1), (118, 0x2708, 1), (119, 0x2707, 1), (120, 0x2460, 10), (130, 0x2776, 31),
    (161, 0x2192, 1), (162, 0x27A3, 1), (163, 0x2194, 2), (165, 0x2799, 1), (166, 0x279B, 8),
    (174, 0x27A4, 6), (180, 0x27AB, 1), (181, 0x27AD, 1), (182, 0x27AF, 1), (183, 0x27B2, 2),
    (185, 0x27B5, 1), (186, 0x27B8, 1), (187, 0x27BA, 5), (192, 0x279A, 1), (193, 0x27AA, 1),
    (194, 0x27B6, 1), (195, 0x27B9, 1), (196, 0x2798, 1), (197, 0x27B4, 1), (198, 0x27B7, 1),
    (199, 0x27AC, 1), (200, 0x27AE, 1), (201, 0x27B1, 1), (202, 0x2703, 1), (203, 0x2750, 1),
    (204, 0x2752, 1), (205, 0x276E, 1), (206, 0x2770, 1),
)
_ZAPF = {first + i: code + i for first, code, count in _ZAPF_RUNS for i in range(count)}
# the ZapfDingbats family (Adobe's, ITC's, URW's clone "Dingbats" that LaTeX's pifont uses),
# whose glyph names are the a1..a206 above; a subset's "ABCDEF+" prefix is removed first
_ZAPF_NAME = re.compile(r"(?i)(?:itc)?[\s-]?(?:zapf[\s-]?)?dingbats(?:[\s-]?itc)?(?:[\s-]?(?:regular|medium))?|d050000l|uzdr")
# fonts of symbols and list marks: a C1 control character they give is a bullet glyph
_SYMBOL_NAME = re.compile(r"(?i)dingbat|wingding|webding|symbol|sorts|bullet|marlett|msam|msbm|cmsy")
_C1 = re.compile("[\u0080-\u009f]")
# The Adobe Glyph List puts the pieces of big delimiters (TeX's cmex10 and Adobe Symbol name
# them parenlefttp, braceex, ...) in the private use area, which no font shows and no one
# searches; Unicode has them as characters. Any font: these code points mean only those names.
_DELIMITER_PIECES = {
    "\uf8e6": "\u23d0", "\uf8e7": "\u23af", "\uf8e8": "\u00ae", "\uf8e9": "\u00a9", "\uf8ea": "\u2122",
    "\uf8eb": "\u239b", "\uf8ec": "\u239c", "\uf8ed": "\u239d", "\uf8ee": "\u23a1", "\uf8ef": "\u23a2",
    "\uf8f0": "\u23a3", "\uf8f1": "\u23a7", "\uf8f2": "\u23a8", "\uf8f3": "\u23a9", "\uf8f4": "\u23aa",
    "\uf8f5": "\u23ae", "\uf8f6": "\u239e", "\uf8f7": "\u239f", "\uf8f8": "\u23a0", "\uf8f9": "\u23a4",
    "\uf8fa": "\u23a5", "\uf8fb": "\u23a6", "\uf8fc": "\u23ab", "\uf8fd": "\u23ac", "\uf8fe": "\u23ad",
}
BULLET = "\u2022"


def text_spans(text: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The spans of the text blocks of PyMuPDF's text dict, in order."""
    for block in text["blocks"]:
        if block.get("type", 0) == 0:
            for line in block["lines"]:
                yield from line["spans"]


def font_chars(text: dict[str, Any]) -> dict[str, set[str]]:
    """The characters each font gives on the page (one pass over the spans)."""
    seen: dict[str, set[str]] = {}
    for span in text_spans(text):
        chars = seen.get(span["font"])
        if chars is None:
            chars = seen[span["font"]] = set()
        chars.update(span["text"])
    return seen


def rewrite_fonts(text: dict[str, Any], rewrites: dict[str, Callable[[str], str]]) -> None:
    """Replace the text of every span in one of the fonts of ``rewrites`` by that font's
    function of it."""
    for span in text_spans(text):
        rewrite = rewrites.get(span["font"])
        if rewrite is not None:
            span["text"] = rewrite(span["text"])


def repair_glyphs(text: dict[str, Any], fonts: dict[str, set[str]], textpage: Any, page: Any) -> None:
    """Compose spacing accents with their letters and map dingbats and symbol-font bullets to
    their characters, in place. ``fonts``: ``font_chars(text)``; ``textpage`` the text page
    ``text`` was extracted from (its characters' boxes are read only when an accent is on
    the page); ``page`` to look up which fonts have a Unicode map (only when a ZapfDingbats
    font gives printable characters)."""
    if any(not ACCENT_CHARS.isdisjoint(chars) or any(map(_ARABIC.match, chars)) for chars in fonts.values()):
        import pymupdf

        try:
            raw = textpage.extractRAWDICT()
        except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase):  # the text stays as extracted
            raw = None
        if raw is not None:
            compose_accents(text, raw)
    maps: dict[str, dict[str, str]] = {}
    for font, chars in fonts.items():
        mapping = _symbol_map(font, chars, page)
        if mapping:
            maps[font] = mapping
    if maps:
        rewrite_fonts(text, {font: _mapper(mapping) for font, mapping in maps.items()})


def _mapper(mapping: dict[str, str]) -> Callable[[str], str]:
    return lambda span_text: "".join(mapping.get(ch, ch) for ch in span_text)


def _symbol_map(font: str, chars: set[str], page: Any) -> dict[str, str]:
    name = font.split("+", 1)[-1]
    mapping: dict[str, str] = {ch: _DELIMITER_PIECES[ch] for ch in chars if ch in _DELIMITER_PIECES}
    if _ZAPF_NAME.fullmatch(name):
        candidates = [ch for ch in chars if ord(ch) in _ZAPF and not ch.isspace()]
        if not candidates:
            return mapping
        simple, unmapped = _font_kind(page, name)
        if not simple:
            return mapping  # a CID or TrueType font's numbers are glyph ids, not names
        for ch in candidates:
            code = ord(ch)
            # a control character cannot be what a Unicode map says: it is the glyph name's
            # number; a printable one is only when the font has no Unicode map at all
            if code < 0x20 or 0x7F <= code <= 0x9F or unmapped:
                mapping[ch] = chr(_ZAPF[code])
        return mapping
    if _SYMBOL_NAME.search(name):
        for ch in chars:
            if _C1.match(ch):
                mapping[ch] = BULLET
    return mapping


def _font_kind(page: Any, name: str) -> tuple[bool, bool]:
    """(whether no font of the page by this name is other than a simple Type 1 font, whose
    glyphs have names; whether there is one and none of them has a ToUnicode map). A font
    drawn only by an annotation (a form's check box: ZapfDingbats in its appearance) is not
    among the page's fonts: it is the standard Type 1 font, its Unicode map unknown."""
    doc = page.parent
    simple, unmapped, found = True, True, False
    for xref, _ext, kind, basefont, _ref, _encoding in page.get_fonts():
        if basefont.split("+", 1)[-1] != name:
            continue
        found = True
        simple = simple and kind in ("Type1", "MMType1")
        unmapped = unmapped and doc.xref_get_key(xref, "ToUnicode")[0] == "null"
    return simple, found and unmapped


def compose_accents(text: dict[str, Any], raw: dict[str, Any]) -> None:
    """Compose each spacing accent placed over (or under) a letter with that letter, in the
    spans of ``text`` (PyMuPDF's dict), using the character boxes of ``raw`` (the rawdict of
    the same text page: the same blocks, lines and spans). The letter's span takes the
    composed letter (NFC); the accent leaves its span (a span left empty is skipped when the
    line is made; boxes are the spans' and the line's, unchanged)."""
    raw_blocks = raw["blocks"]
    if len(raw_blocks) != len(text["blocks"]):
        return
    for block, raw_block in zip(text["blocks"], raw_blocks, strict=True):
        if block.get("type", 0) != 0 or raw_block.get("type", 0) != 0:
            continue
        lines, raw_lines = block["lines"], raw_block["lines"]
        if len(lines) != len(raw_lines):
            continue
        for line, raw_line in zip(lines, raw_lines, strict=True):
            if any(not ACCENT_CHARS.isdisjoint(span["text"]) or _ARABIC.search(span["text"]) for span in line["spans"]):
                _compose_line(line, raw_line)


def _compose_line(line: dict[str, Any], raw_line: dict[str, Any]) -> None:
    spans, raw_spans = line["spans"], raw_line["spans"]
    dx, dy = line["dir"]
    if len(spans) != len(raw_spans) or abs(dy) > 0.02 or dx <= 0:
        return  # horizontal lines only: "over" is read on the x axis
    chars: list[tuple[int, dict[str, Any], float]] = []  # (span index, char, font size)
    for k, (span, raw_span) in enumerate(zip(spans, raw_spans, strict=True)):
        if "".join(c["c"] for c in raw_span["chars"]) != span["text"]:
            return  # the span's text was changed after extraction: leave the line alone
        chars.extend((k, c, raw_span["size"]) for c in raw_span["chars"])
    marks: dict[int, list[str]] = {}  # letter index -> its combining marks, in order
    dropped: set[int] = set()
    swapped: set[int] = set()  # i: chars i and i + 1 are one lam-alef glyph, alef first
    for i, (_k, char, _size) in enumerate(chars):
        mark = SPACING_ACCENTS.get(char["c"])
        if mark is None:
            if i + 1 < len(chars) and _ligature_reversed(char, chars[i + 1][1]):
                swapped.add(i)
            continue
        letter = _letter_under(chars, i)
        if letter is not None:
            marks.setdefault(letter, []).append(mark)
            dropped.add(i)
    if not dropped and not swapped:
        return
    texts: list[list[str]] = [[] for _ in spans]
    for i, (k, char, _size) in enumerate(chars):
        if i in dropped:
            continue
        c = char["c"]
        if i in swapped:
            c = chars[i + 1][1]["c"]
        elif i - 1 in swapped:
            c = chars[i - 1][1]["c"]
        if i in marks:
            c = unicodedata.normalize("NFC", _DOTLESS.get(c, c) + "".join(marks[i]))
        texts[k].append(c)
    for span, parts in zip(spans, texts, strict=True):
        span["text"] = "".join(parts)


def _arabic_letter(ch: str) -> bool:
    return bool(_ARABIC.match(ch)) and unicodedata.category(ch) == "Lo"


def _ligature_reversed(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """Whether two Arabic letters are one ligature glyph given in the wrong order: the first
    without width, the second's box ending where the first stands (a real Arabic PDF's
    "الإنتاجية" was extracted "اإلنتاجية", "الخطوط" "اخلطوط": MuPDF reverses a right-to-left
    line, the two letters of a lam-alef or lam-kha glyph too). A letter of its own has a
    width; a vowel mark without one is not a letter."""
    if not (_arabic_letter(first["c"]) and _arabic_letter(second["c"])):
        return False
    fx0, _fy0, fx1, _fy1 = first["bbox"]
    sx0, _sy0, sx1, _sy1 = second["bbox"]
    return fx1 - fx0 < 0.05 and sx0 < sx1 and abs(sx1 - fx0) < 0.5


def _letter_under(chars: list[tuple[int, dict[str, Any], float]], i: int) -> int | None:
    """The index of the letter that the accent at ``i`` is placed over: the nearest letter
    before or after it (past other accents on the same letter) whose box holds the accent's
    horizontal middle (give or take ACCENT_SLACK_EM), its baseline within ACCENT_RAISE_EM of
    the accent's."""
    accent = chars[i][1]
    ax0, _ay0, ax1, _ay1 = accent["bbox"]
    middle = (ax0 + ax1) / 2
    best: int | None = None
    best_distance = 0.0
    for step in (-1, 1):
        j = i + step
        while 0 <= j < len(chars) and chars[j][1]["c"] in ACCENT_CHARS:
            j += step
        if not 0 <= j < len(chars) or abs(j - i) > 3:
            continue
        _k, letter, size = chars[j]
        if not letter["c"].isalpha():
            continue
        lx0, _ly0, lx1, _ly1 = letter["bbox"]
        slack = ACCENT_SLACK_EM * (size or 1.0)
        if not (lx0 < lx1 and lx0 - slack <= middle <= lx1 + slack):
            continue
        if abs(letter["origin"][1] - accent["origin"][1]) > ACCENT_RAISE_EM * (size or 1.0):
            continue
        distance = abs((lx0 + lx1) / 2 - middle)
        if best is None or distance < best_distance:
            best, best_distance = j, distance
    return best
