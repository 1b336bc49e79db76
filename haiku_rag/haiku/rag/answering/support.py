"""Does an answer's cited text hold what the answer says? A deterministic, cheap check.

The ledger records what an answer *declared* (grounded, ungrounded, missing); this module checks
what the declaration is worth. The answer is split into sentences; each sentence's ``[n]``
markers name the text the citations cover, and the sentence's *claims* must appear there:

- numbers, compared by value: thousands separators (``1,234.5`` = ``1234.5``), scale words and
  units (``$2.1 billion`` = ``2,100 million``; a table "in millions" scales its figures),
  ``%`` = ``per cent`` = ``percent``, negatives (``-5`` = ``−5`` = ``(5)``; the sign is read from
  words as often as from figures, so values compare without it), and a rounded figure matches
  the exact one it rounds (``$2.1 billion`` for ``2,134 million``), from two significant digits;
- dates, in any of the usual spellings (``March 31, 2023``, ``31 March 2023``, ``2023-03-31``,
  ``3/31/2023``);
- named entities: capitalised multiword names (``Goldman Sachs``, ``Form 10-Q`` is not a
  name but ``Apple Inc.`` is), found as a phrase;
- quoted spans (``"…"``, ``“…”``), found word for word.

A year the question itself names is context, not a claim. A sentence with none of these
claims is not checkable and counts neither way. The verdict of an answer:

- ``supported``: every checkable cited sentence holds, and no claim is left uncited;
- ``partly-supported``: some hold; the others (unsupported, or claims with no citation) are
  listed, with how many;
- ``cited-unsupported``: the answer cites, but none of its checkable cited sentences holds;
- ``ungrounded``: the answer declared that nothing supports it (or cites nothing and says so);
- ``missing``: the answer cites nothing.

``recover_markers`` puts markers back into an answer that has none: a sentence whose claims are
all found in exactly one of the passages it was given, and which restates that passage (most of
its words are the passage's), is cited to that passage.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from haiku.rag.citations import MARKER, Citation, marker_numbers, split_sentences

Verdict = Literal[
    "supported", "partly-supported", "cited-unsupported", "cited-unchecked", "ungrounded", "missing"
]
SentenceStatus = Literal["supported", "unsupported", "uncited", "unchecked"]

# An answer without a figure, date, name or quotation to check is supported only when this
# share of its words (stop and meta words aside) is in the text it cites.
RESTATED_SHARE = 0.5
# A cited sentence without such claims, of at least UNRELATED_MIN_WORDS words, of which less
# than this share is in the text it cites, is unsupported: it says something else ("It is
# rumored in camp that Grant is getting reinforcements [9]" cited a software paper's list).
UNRELATED_SHARE = 0.2
UNRELATED_MIN_WORDS = 4
VERDICT_LABELS: dict[str, str] = {
    "supported": "Supported",
    "partly-supported": "Partly supported",
    "cited-unsupported": "Cited but unsupported",
    "cited-unchecked": "Cited, nothing to check",
    "ungrounded": "Ungrounded",
    "missing": "No citations",
}


class SentenceCheck(BaseModel):
    """One sentence of the answer and what the check found in the text it cites."""

    model_config = ConfigDict(frozen=True)

    text: str  # as written in the answer (markers included)
    start: int  # offsets of ``text`` in the answer
    end: int
    markers: list[int] = Field(default_factory=list)  # the citation numbers it names
    claims: list[str] = Field(default_factory=list)  # as written
    missing: list[str] = Field(default_factory=list)  # claims the cited text does not hold
    status: SentenceStatus = "unchecked"


class SupportCheck(BaseModel):
    """An answer's verdict and the sentences behind it (the ones with claims or markers)."""

    model_config = ConfigDict(frozen=True)

    verdict: Verdict
    sentences: list[SentenceCheck] = Field(default_factory=list)
    recovered: list[int] = Field(default_factory=list)  # citation numbers added by the check

    @property
    def flagged(self) -> list[SentenceCheck]:
        """The sentences that make the answer less than supported."""
        return [s for s in self.sentences if s.status in ("unsupported", "uncited")]

    @property
    def unsupported(self) -> int:
        return sum(1 for s in self.sentences if s.status == "unsupported")

    @property
    def uncited(self) -> int:
        return sum(1 for s in self.sentences if s.status == "uncited")

    @property
    def label(self) -> str:
        """The verdict as a badge says it: ``Partly supported (2 sentences unsupported)``."""
        text = VERDICT_LABELS[self.verdict]
        if self.verdict == "partly-supported":
            n = len(self.flagged)
            text += f" ({n} sentence{'s' if n != 1 else ''} unsupported)"
        return text

    def to_record(self) -> dict[str, object]:
        """What ``ask --json`` and the exports carry."""
        return {
            "verdict": self.verdict,
            "label": self.label,
            "unsupported": self.unsupported,
            "uncited": self.uncited,
            "recovered": list(self.recovered),
            "sentences": [
                {"text": s.text, "status": s.status, "claims": s.claims, "missing": s.missing}
                for s in self.flagged
            ],
        }


# --- claims ---------------------------------------------------------------------------------

_MONTHS = {
    m: i
    for i, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for m in names
}  # fmt: skip
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATES = [
    re.compile(rf"\b{_MONTH}\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<year>(?:19|20)\d\d)\b", re.I),
    re.compile(rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(?P<year>(?:19|20)\d\d)\b", re.I),
    re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>\d\d)-(?P<day>\d\d)\b"),
    re.compile(r"\b(?P<month>\d{1,2})/(?P<day>\d{1,2})/(?P<year>(?:19|20)\d\d)\b"),
    re.compile(rf"\b{_MONTH}\s+(?P<year>(?:19|20)\d\d)\b", re.I),
]
_SCALES = {
    "thousand": 3, "thousands": 3, "k": 3,
    "million": 6, "millions": 6, "mn": 6, "mm": 6, "m": 6,
    "billion": 9, "billions": 9, "bn": 9, "b": 9,
    "trillion": 12, "trillions": 12, "tn": 12,
}  # fmt: skip
_NUMBER = re.compile(
    r"(?<![\w.])(?P<open>\()?(?P<sign>[-−–](?=[$€£¥\d.]))?(?P<cur>[$€£¥]|US\$)?\s?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?P<close>\))?"
    r"(?:\s?(?P<scale>thousands?|millions?|billions?|trillions?)\b"
    r"|(?P<short>bn|mn|mm|tn|[kmb])\b(?<=\w))?"
    r"(?:\s?(?P<pct>%|per\s?cent\b|percent\b))?"
    r"(?:[x×](?![\w])|-?fold\b)?"  # "2x", "2×", "2-fold": the figure 2 ("2 times" reads 2 too)
    r"(?![\w])"
)
# A table's or a statement's declared unit: "(in millions)", "in thousands of dollars".
_DECLARED_SCALE = re.compile(r"\bin\s+(thousands|millions|billions)\b", re.I)
_CONNECTORS = {"of", "and", "&", "de", "du", "la", "le", "von", "van", "der", "for", "the"}
_LEADING = {
    "the", "a", "an", "in", "on", "at", "for", "by", "from", "to", "as", "according", "per",
    "during", "its", "their", "this", "that", "these", "those", "both", "total", "net",
    "however", "overall", "also", "and", "but", "while", "since", "after", "before", "under",
    "our", "we", "it", "he", "she", "they", "there", "here", "yes", "no", "answer", "note",
}  # fmt: skip
_CAP_WORD = r"(?:[A-Z][\w&'’.-]*|[A-Z]{2,}|\d+[A-Z][\w-]*)"
_ENTITY = re.compile(
    rf"{_CAP_WORD}(?:\s+(?:(?:of|and|&|de|du|la|le|von|van|der|for|the)\s+)?{_CAP_WORD})+"
)
_QUOTE = re.compile(r"[\"“”]([^\"“”\n]{3,300})[\"“”]")
_TIME = re.compile(r"(?<![\w.:])\d{1,2}:\d{2}(?::\d{2})?(?![\w:])")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
# Recovery cites a sentence only when it restates its passage: at least this share of its words
# (stop words, figures and scale words aside) are the passage's. A real 135M model's sentence
# matched on one name ("SpiderMonkey JS") and said little else the passage says (7 of its 15
# words); a sentence a model copied or closely paraphrased keeps most of them.
_RESTATED_SHARE = 0.6
_STOP_WORDS = frozenset(
    "a an the and or but nor of to in on at by for with from into onto over under about as than "
    "then that this these those there here which who whom whose what when where why how is are "
    "was were be been being am has have had having do does did done can could will would shall "
    "should may might must it its it's they them their he she his her we our you your i me my "
    "not no yes so such also very more most less least much many some any each every all both "
    "either neither other another same own only just even still yet while during after before "
    "since until because if though although whether per via upon within without between among "
    "out up down off again further once".split()
)
# Words about the answering itself, never about the documents: they neither restate a passage
# nor say what a figure is ("The answer is 15.0%").
_META_WORDS = frozenset(
    "answer answers question questions passage passages user message document documents "
    "text source sources paper provided given following".split()
)
_WORD = re.compile(r"[^\W\d_]{3,}")
# A recovered figure must be a figure of what the sentence talks about: one of the sentence's
# words within this many characters of the figure in the passage, on its line (a table row's
# label, the words of its clause). SmolLM2 wrote "The answer is 15.0% of the total spend" of a passage
# whose 15.0% was an operating margin.
_NEAR_CHARS = 80
# Units of measure a figure is written with, each spelling to one name. A figure the answer
# writes with a unit is the passage's only when the passage writes it with the same unit, or
# none (a table's unit sits in its header): a liar model that swapped "5.8 kg … the top 30 cm"
# into "30 kg … the top 5.8 cm" found both figures somewhere and was badged Supported.
_UNIT_NAMES = {
    "mg": ("mg", "milligram", "milligrams"), "g": ("g", "gram", "grams"),
    "kg": ("kg", "kgs", "kilogram", "kilograms", "kilo", "kilos"),
    "t": ("t", "tonne", "tonnes", "ton", "tons", "mt"),
    "nm": ("nm", "nanometre", "nanometres", "nanometer", "nanometers"),
    "µm": ("µm", "μm", "um", "micron", "microns", "micrometre", "micrometres", "micrometer", "micrometers"),
    "mm": ("mm", "millimetre", "millimetres", "millimeter", "millimeters"),
    "cm": ("cm", "centimetre", "centimetres", "centimeter", "centimeters"),
    "m": ("metre", "metres", "meter", "meters"),
    "km": ("km", "kilometre", "kilometres", "kilometer", "kilometers"),
    "mi": ("mi", "mile", "miles"), "ft": ("ft", "foot", "feet"), "in": ("inch", "inches"),
    "ha": ("ha", "hectare", "hectares"), "acre": ("acre", "acres"),
    "ml": ("ml", "millilitre", "millilitres", "milliliter", "milliliters"),
    "l": ("litre", "litres", "liter", "liters"),
    "ms": ("ms", "millisecond", "milliseconds"), "s": ("s", "sec", "secs", "second", "seconds"),
    "min": ("min", "mins", "minute", "minutes"), "h": ("h", "hr", "hrs", "hour", "hours"),
    "day": ("day", "days"), "week": ("week", "weeks"), "month": ("month", "months"),
    "year": ("year", "years", "yr", "yrs"),
    "°c": ("°c", "ºc", "℃"), "°f": ("°f", "ºf", "℉"),
    "w": ("w", "watt", "watts"), "kw": ("kw",), "mw": ("mw", "megawatt", "megawatts"),
    "gw": ("gw", "gigawatt", "gigawatts"), "kwh": ("kwh",), "mwh": ("mwh",), "gwh": ("gwh",),
    "kb": ("kb",), "mb": ("mb",), "gb": ("gb",), "tb": ("tb",),
}  # fmt: skip
_UNITS = {spelling: name for name, spellings in _UNIT_NAMES.items() for spelling in spellings}
_UNIT_AFTER = re.compile(r"[ \u00a0]?(°\s?[CFcf]|º[CFcf]|[℃℉]|[^\W\d_]+)(?![\w°])")


class _Number:
    __slots__ = ("_near", "context", "exp", "mantissa", "percent", "scaled", "unit", "written")

    def __init__(
        self,
        mantissa: Decimal,
        exp: int,
        percent: bool,
        scaled: bool,
        written: str,
        context: str = "",
        unit: str | None = None,
    ):
        self.mantissa, self.exp, self.percent, self.scaled = mantissa, exp, percent, scaled
        self.written = written
        self.unit = unit  # the unit of measure written after it (``_UNITS``'s name), if any
        self.context = context  # a cited figure's surroundings: what it is a figure of
        self._near: frozenset[str] | None = None

    @property
    def near(self) -> frozenset[str]:
        """The stems of the words around a cited figure (read when recovery asks)."""
        if self._near is None:
            self._near = _content_stems(self.context)
        return self._near

    @property
    def value(self) -> Decimal:
        return abs(self.mantissa).scaleb(self.exp)


def _numbers(text: str, *, claims: bool) -> list[_Number]:
    found = []
    for m in _NUMBER.finditer(text):
        try:
            mantissa = Decimal(m.group("num").replace(",", ""))
        except InvalidOperation:  # pragma: no cover - the pattern only matches numbers
            continue
        short = (m.group("short") or "").lower()
        if short and not m.group("cur"):
            if claims:
                continue  # "5 m" could be metres: not a figure we can check
            short = ""
        scale = (m.group("scale") or "").lower() or short
        written = m.group(0).strip()
        if claims and m.start() == 0 and re.match(r"\d+\.\s", text[m.start() :]):
            continue  # a list item's number
        context = "" if claims else _line_around(text, m.start(), m.end())
        found.append(
            _Number(
                mantissa, _SCALES.get(scale, 0), bool(m.group("pct")), bool(scale), written, context,
                _unit_after(text, m.end()),
            )
        )
    return found


def _unit_after(text: str, end: int) -> str | None:
    """The unit of measure written right after a figure ("5.8 kg", "30 cm", "1.5°C"), if any."""
    m = _UNIT_AFTER.match(text, end)
    if m is None:
        return None
    return _UNITS.get(re.sub(r"\s", "", m.group(1)).casefold())


def _line_around(text: str, start: int, end: int) -> str:
    """Up to ``_NEAR_CHARS`` either side of ``text[start:end]``, within its line (a table's
    row, a paragraph): the next row's label is not what a figure is of."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    return text[max(line_start, start - _NEAR_CHARS) : min(line_end, end + _NEAR_CHARS)]


def _significant(value: Decimal) -> int:
    digits = value.normalize().as_tuple().digits
    return len(digits)


def _number_found(claim: _Number, cited: Sequence[_Number], declared: Sequence[int]) -> bool:
    """The claim's value among the cited figures (each at its own scale, or a declared one),
    exactly or as their rounding to the claim's precision (two significant digits at least)."""
    return any(_same_figure(claim, figure, declared) for figure in cited)


def _same_figure(claim: _Number, figure: _Number, declared: Sequence[int]) -> bool:
    if claim.unit and figure.unit and claim.unit != figure.unit:
        return False  # 30 kg is not the passage's 30 cm
    target = claim.value
    exponent = claim.mantissa.as_tuple().exponent
    precision = -exponent if isinstance(exponent, int) else 0  # decimals written
    quantum = Decimal(1).scaleb(claim.exp - precision)
    rounded_ok = _significant(abs(claim.mantissa)) >= 2
    exps = [figure.exp] if figure.scaled else [0, *declared]
    for exp in dict.fromkeys(exps):
        value = abs(figure.mantissa).scaleb(exp)
        if value == target:
            return True
        if rounded_ok and value and value.quantize(quantum) == target.quantize(quantum):
            if abs(value - target) < quantum:  # quantize rounds half-even: be explicit
                return True
    return False


def _dates(text: str) -> list[tuple[str, tuple[int, int, int], tuple[int, int]]]:
    """``(as written, (year, month, day or 0), span)`` for each date in ``text``."""
    found: list[tuple[str, tuple[int, int, int], tuple[int, int]]] = []
    taken: list[tuple[int, int]] = []
    for pattern in _DATES:
        for m in pattern.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            month_text = m.group("month").lower().rstrip(".")
            month = _MONTHS.get(month_text) or (int(month_text) if month_text.isdigit() else 0)
            day = int(m.groupdict().get("day") or 0)
            if not 1 <= month <= 12 or day > 31:
                continue
            if month_text == "may" and not day and not m.group(0)[0].isupper():
                continue  # "may 2023" in running text is the verb more often than not
            found.append((m.group(0), (int(m.group("year")), month, day), m.span()))
            taken.append(m.span())
    return found


def _entities(text: str) -> list[str]:
    names = []
    for m in _ENTITY.finditer(text):
        words = m.group(0).split()
        while words and words[0].casefold().strip(".,") in _LEADING:
            words = words[1:]
        while words and words[-1].casefold() in _CONNECTORS:
            words = words[:-1]
        capitals = [w for w in words if w.casefold() not in _CONNECTORS]
        if len(capitals) < 2:
            continue
        if all(w.rstrip(".,").casefold() in _MONTHS for w in capitals):
            continue
        name = " ".join(words).rstrip(".,;:")
        name = re.sub(r"['’]s$", "", name)
        names.append(name)
    return names


def _fold(text: str) -> str:
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    text = re.sub(r"[‐‑‒–—−]", "-", text)
    text = re.sub(r"[*_`|#>]+", " ", text)  # Markdown emphasis, table pipes, quote marks
    return " ".join(text.casefold().split())


def _phrase_found(phrase: str, folded_text: str) -> bool:
    words = [w.strip(".,;:") for w in _fold(phrase).split() if w.strip(".,;:")]
    if not words:
        return True
    # a plural or possessive either side: "Capital Expenditures" is the text's "capital expenditure"
    stems = [re.escape(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w) for w in words]
    pattern = r"(?<!\w)" + r"[\s,.]+".join(w + r"(?:e?s|'s?)?" for w in stems) + r"(?!\w)"
    return re.search(pattern, folded_text) is not None


class _Cited:
    """A cited text, read once: its figures, dates and folded text; ``name`` (the document's
    source line, title, headings) counts for names and dates only."""

    def __init__(self, text: str, name: str = "") -> None:
        self.folded = _fold(text)
        self.name_folded = _fold(name)
        self.name_dates = {d for _, d, _ in _dates(name)}
        self.name_years = {int(y) for y in _YEAR.findall(name)}
        self.numbers = _numbers(text, claims=False)
        self.declared = sorted(
            {_SCALES[m.group(1).lower()] for m in _DECLARED_SCALE.finditer(text)}
        )
        self.dates = {d for _, d, _ in _dates(text)}
        self.days = {(d[1], d[2]) for d in self.dates if d[2]}
        self.years = {int(y) for y in _YEAR.findall(text)}


# A number that names a place in the document is a locator, not a claim: "slide 1", "page 12",
# "Table 2", "Figure 3b", "section 4.2". A tester's "According to slide 1 of the Wetland funding
# 2025 deck, …" was flagged: the 1 is in the slide's heading, never in its text.
_LOCATOR = re.compile(
    r"\b(?:slides?|pages?|pp?\.|tables?|figures?|figs?\.|sections?|§|chapters?|appendix|"
    r"exhibits?|sheets?|parts?|items?|equations?|eqs?\.|lines?|paragraphs?|¶|notes?|footnotes?)"
    r"\s*\d+(?:\.\d+)*[a-z]?\b",
    re.I,
)


def _claims(sentence: str, question_years: set[int]) -> list[tuple[str, object]]:
    """The sentence's claims as ``(kind, claim)``: numbers, dates, names, quotes."""
    body = MARKER.sub(" ", sentence)
    body = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", body)  # a list item's bullet
    claims: list[tuple[str, object]] = []
    masked = list(body)
    for quote in _QUOTE.finditer(body):
        claims.append(("quote", quote.group(1)))
    for written, date, (s, e) in _dates(body):
        claims.append(("date", (written, date)))
        masked[s:e] = " " * (e - s)
    for time in _TIME.finditer("".join(masked)):  # "22:00" is one claim, not 22 and 00
        claims.append(("quote", time.group(0)))
        masked[time.start() : time.end()] = " " * len(time.group(0))
    plain = "".join(masked)
    for name in _entities(plain):
        claims.append(("entity", name))
    plain = _LOCATOR.sub(lambda m: " " * len(m.group(0)), plain)
    for number in _numbers(plain, claims=True):
        if not number.scaled and not number.percent and number.mantissa == number.mantissa.to_integral():
            whole = int(number.mantissa)
            if 1900 <= whole <= 2100 and whole in question_years:
                continue  # the period the question asked about: context, not a claim
        claims.append(("number", number))
    return claims


def _year_of(number: _Number) -> int | None:
    """The year a bare four-digit figure may be (1900-2100), else None."""
    if number.scaled or number.percent or number.unit or number.mantissa != number.mantissa.to_integral():
        return None
    whole = int(number.mantissa)
    return whole if 1900 <= whole <= 2100 else None


def _claim_text(kind: str, claim: object) -> str:
    if kind == "number":
        return cast(_Number, claim).written
    if kind == "date":
        return cast(tuple[str, tuple[int, int, int]], claim)[0]
    return str(claim)


def _holds(kind: str, claim: object, cited: _Cited) -> bool:
    if kind == "number":
        number = cast(_Number, claim)
        if _year_of(number) in cited.name_years:
            return True  # the year a title or heading names ("Wetland funding 2025"), as dates
        return _number_found(number, cited.numbers, cited.declared)
    if kind == "date":
        year, month, day = cast(tuple[str, tuple[int, int, int]], claim)[1]
        if (year, month, day) in cited.dates or (year, month, day) in cited.name_dates:
            return True  # the period a filing's source line names identifies the passage
        if day:  # "March 31" and the year apart, as a table's header splits them
            return (month, day) in cited.days and year in cited.years
        return any(d[0] == year and d[1] == month for d in cited.dates)
    if kind == "quote":
        return _fold(str(claim)).strip(" .,") in cited.folded
    return _name_found(str(claim), cited)


def _name_found(name: str, cited: _Cited) -> bool:
    """A name is in the cited text or its source line; a run of capitalised words the answer
    wrote together may be two names the passage shows apart (its title, then its first
    author: "… Arctic Sensing Marta Kowalczyk" in a verbatim copy was flagged as missing), so
    it also holds when each of two parts of it does."""
    def found(phrase: str) -> bool:
        return _phrase_found(phrase, cited.folded) or _phrase_found(phrase, cited.name_folded)

    if found(name):
        return True
    words = name.split()
    return any(found(" ".join(words[:i])) and found(" ".join(words[i:])) for i in range(2, len(words) - 1))


# --- the check ------------------------------------------------------------------------------


def covered_text(citation: Citation) -> str:
    """What a citation covers: the chunk it cites (a tools answer cites one chunk of a widened
    passage, each shown under its own id), else the passage. Figures and quotes must be found
    here."""
    return citation.matched_text or citation.content


def citation_name(citation: Citation) -> str:
    """How a citation's document is named (its title and headings): it may identify (a
    company, a period) but never supports a figure: a heading "5.1 Results" does not make
    "5.1 seconds" true."""
    return "\n".join([citation.document_title or "", *citation.headings])


def check_answer(
    text: str,
    cited: Mapping[int, str],
    *,
    names: Mapping[int, str] | None = None,
    grounding: str = "missing",
    question: str = "",
    recovered: Sequence[int] = (),
) -> SupportCheck:
    """Check ``text`` against ``cited`` (citation number -> the text that citation covers);
    ``names`` (citation number -> its document's source line, title, headings) may hold a
    sentence's names and dates, never its figures or quotes.

    A sentence's markers name its citations. A ``[n]`` naming no citation is not a marker
    (document text quoted into an answer carries its own reference numbers, "TableFormer
    [9]"). An answer that cites but carries no marker naming a citation (a tools answer cited
    through the cite tool) has each of its sentences checked against everything it cites.
    ``grounding`` is the ledger's (``ungrounded`` when the answer declared nothing supports
    it)."""
    names = names or {}
    question_years = {int(y) for y in _YEAR.findall(question)}
    texts = {n: _Cited(t, names.get(n, "")) for n, t in cited.items()}
    unmarked = not any(
        n in texts for m in MARKER.finditer(text) for n in marker_numbers(m)
    )
    union = (
        _Cited("\n\n".join(cited.values()), "\n".join(names.values()))
        if unmarked and cited
        else None
    )
    checks: list[SentenceCheck] = []
    for start, end in split_sentences(text):
        sentence = text[start:end]
        numbers = [n for m in MARKER.finditer(sentence) for n in marker_numbers(m)]
        numbers = list(dict.fromkeys(n for n in numbers if n in texts))
        claims = _claims(sentence, question_years)
        if not claims and not numbers:
            continue
        sources = [texts[n] for n in numbers] or ([union] if union is not None else [])
        written = [_claim_text(k, c) for k, c in claims]
        if not sources:
            status: SentenceStatus = "uncited"
            missing = written
        else:
            missing = [
                w for (k, c), w in zip(claims, written, strict=True)
                if not any(_holds(k, c, source) for source in sources)
            ]  # fmt: skip
            status = "unchecked" if not claims else ("unsupported" if missing else "supported")
            if not claims:
                status, missing = _without_claims(sentence, sources)
            if status != "unsupported" and (altered := _altered(sentence, sources)):
                status, missing = "unsupported", altered
        checks.append(
            SentenceCheck(
                text=sentence, start=start, end=end, markers=numbers, claims=written,
                missing=missing, status=status,
            )
        )  # fmt: skip
    words = _content_stems(MARKER.sub(" ", text))
    found = {_stem(w) for t in texts.values() for w in _WORD.findall(t.folded)}
    restated = bool(words) and len(words & found) >= RESTATED_SHARE * len(words)
    return SupportCheck(
        verdict=_verdict(checks, bool(cited), grounding, restated),
        sentences=checks,
        recovered=list(recovered),
    )


def _without_claims(sentence: str, sources: Sequence[_Cited]) -> tuple[SentenceStatus, list[str]]:
    """A cited sentence without a figure, date, name or quote to look for: supported when
    most of its words (RESTATED_SHARE, stop and meta words aside) are in one of its sources;
    unsupported, with a few of its words, when it has at least UNRELATED_MIN_WORDS and less
    than UNRELATED_SHARE of them is in any; else unchecked."""
    text = MARKER.sub(" ", sentence)
    words = _content_stems(text)
    if not words:
        return "unchecked", []
    share = max(len(words & {_stem(w) for w in _WORD.findall(source.folded)}) / len(words) for source in sources)
    if share >= RESTATED_SHARE:
        return "supported", []
    if len(words) >= UNRELATED_MIN_WORDS and share < UNRELATED_SHARE:
        shown = [w for w in _WORD.findall(text) if _stem(_fold(w)) in words]
        return "unsupported", list(dict.fromkeys(shown))[:4]
    return "unchecked", []


# A sentence copied from a passage with a word changed: the answer's sentence (at least
# ALTERED_MIN_WORDS words) shares at least ALTERED_COPY_SHARE of its words, in order, with one
# sentence of its source, and in that run a word or two of the source stand replaced by words
# the source never uses, or a negation is added or dropped. A liar model's "the FIRST manned
# lighthouse" (the source: "the last") and "nests … are OVERCOUNTED" ("undercounted") kept every
# figure and name and were badged Supported. A synonym ("completed" for "finished") is flagged
# too, naming the source's word: the person reads both and judges.
ALTERED_MIN_WORDS = 6
ALTERED_COPY_SHARE = 0.7
_NEGATIONS = frozenset({"not", "no", "never", "nor", "without", "cannot", "none", "neither"})
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W_]+(?:['’][^\W_]+)?")


def _tokens(text: str) -> list[str]:
    """``text``'s words and figures, a figure as its value ("1,234.50" -> "1234.5")."""
    return [_figure_token(t) if t[0].isdigit() else t for t in _TOKEN.findall(text)]


def _figure_token(token: str) -> str:
    try:
        value = Decimal(token.replace(",", "")).normalize()
    except InvalidOperation:  # pragma: no cover - the pattern only matches figures
        return token
    return format(value, "f")


def _altered(sentence: str, sources: Sequence[_Cited]) -> list[str]:
    """The words a near-copy of a source sentence changed, as "first (the source says “last”)";
    empty when the sentence is no such copy or changed nothing that matters."""

    words = _tokens(_fold(MARKER.sub(" ", sentence)))
    if len(words) < ALTERED_MIN_WORDS:
        return []
    best: tuple[int, difflib.SequenceMatcher[str], list[str], _Cited] | None = None
    for source in sources:
        for start, end in split_sentences(source.folded):
            theirs = _tokens(source.folded[start:end])
            matcher = difflib.SequenceMatcher(None, words, theirs, autojunk=False)
            copied = sum(block.size for block in matcher.get_matching_blocks())
            if best is None or copied > best[0]:
                best = (copied, matcher, theirs, source)
    if best is None or best[0] < ALTERED_COPY_SHARE * len(words):
        return []
    _, matcher, theirs, source = best
    used = {_stem(w) for w in _tokens(source.folded)}
    changed: list[str] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        mine, source_words = words[i1:i2], theirs[j1:j2]
        if op == "replace" and len(mine) <= 3 and len(source_words) <= 3:
            negation_changed = (_NEGATIONS & set(mine)) != (_NEGATIONS & set(source_words))
            new = [w for w in mine if _changes_meaning(w) and _stem(w) not in used]
            word_changed = new and any(_changes_meaning(w) for w in source_words)
            # a figure in the place of another (the years of "finished in 1916 … left on 29
            # January" swapped): each is somewhere in the source, so only its place tells
            figure_changed = len(mine) == len(source_words) == 1 and _is_figure(mine[0]) and _is_figure(source_words[0])
            if negation_changed or figure_changed or (word_changed and len(mine) <= 2 and len(source_words) <= 2):
                changed.append(f"{' '.join(mine)} (the source says “{' '.join(source_words)}”)")
        elif op == "delete" and _NEGATIONS & set(mine):  # words only the answer has
            changed.append(f"{' '.join(mine)} (not in the source)")
        elif op == "insert" and _NEGATIONS & set(source_words):  # words only the source has
            changed.append(f"the source says “{' '.join(source_words)}”")
    return changed


def _is_figure(token: str) -> bool:
    return token[:1].isdigit()


def _changes_meaning(word: str) -> bool:
    """A word whose change can change what a sentence claims: not a stop word, not a figure
    (figures are checked as figures), and a negation always."""
    return word in _NEGATIONS or (word not in _STOP_WORDS and not any(c.isdigit() for c in word))


def sentences_citing(answer: str, number: int) -> list[str]:
    """The sentences of ``answer`` whose markers name ``number``."""
    return [
        answer[start:end]
        for start, end in split_sentences(answer)
        if number in {n for m in MARKER.finditer(answer[start:end]) for n in marker_numbers(m)}
    ]


def passage_holding(sentences: Sequence[str], passages: Mapping[str, str], default: str) -> str:
    """Of a widened passage's own passages (chunk id -> its text), the one that holds the
    ``sentences``: ``default`` (the hit) unless it holds less than RESTATED_SHARE of their
    words (stop and meta words aside) and another holds at least that, the most. A no-tools
    answer cites the widened passage by its number; the sentence it rests on can sit in the
    context expansion added (a tester's "Grant is getting reinforcements [8]" was on p. 3 of
    a hit on pp. 4-5, highlighted faintly, badged Supported): the citation then names and
    highlights the passage that holds it. An answer quoting the whole passage stays on the hit."""
    words = _content_stems(MARKER.sub(" ", " ".join(sentences)))
    if not words or len(passages) < 2:
        return default

    def share(text: str) -> float:
        return len(words & {_stem(w) for w in _WORD.findall(_fold(text))}) / len(words)

    if share(passages.get(default, "")) >= RESTATED_SHARE:
        return default
    best, chosen = RESTATED_SHARE, default
    for chunk_id, text in passages.items():
        held = share(text)
        if held >= best and chunk_id != default:
            best, chosen = held, chunk_id
    return chosen


def _verdict(
    checks: Sequence[SentenceCheck], cites: bool, grounding: str, restated: bool = True
) -> Verdict:
    if not cites:
        return "ungrounded" if grounding == "ungrounded" else "missing"
    statuses = [c.status for c in checks]
    if "unsupported" not in statuses and "uncited" not in statuses:
        # "Supported" says the cited text holds what the answer states. With no figure, date,
        # name or quotation to look for, the answer's own words must be in what it cites
        # (most of them): "According to the library: ." (a tester's) states nothing at all
        return "supported" if "supported" in statuses or restated else "cited-unchecked"
    cited_statuses = [s for s in statuses if s in ("supported", "unsupported")]
    if cited_statuses and "supported" not in cited_statuses:
        return "cited-unsupported"
    return "partly-supported"


def _content_stems(text: str) -> frozenset[str]:
    """The stems of ``text``'s words, stop, meta and scale words aside."""
    return frozenset(
        _stem(w) for w in _WORD.findall(_fold(text))
        if w not in _STOP_WORDS and w not in _META_WORDS and w not in _SCALES
    )  # fmt: skip


def _figures_in_context(sentence: str, claims: Sequence[tuple[str, object]], passage: _Cited) -> bool:
    """Whether every figure the sentence claims is in the passage beside one of the sentence's
    words (a sentence with no words but its figures cannot say what they are of)."""
    figures = [cast(_Number, c) for kind, c in claims if kind == "number"]
    if not figures:
        return True
    words = _content_stems(MARKER.sub(" ", sentence))
    return all(
        any(
            _same_figure(claim, figure, passage.declared) and figure.near & words
            for figure in passage.numbers
        )
        for claim in figures
    )


def _stem(word: str) -> str:
    for ending in ("ing", "ed", "es", "s"):
        if len(word) > len(ending) + 3 and word.endswith(ending):
            return word[: -len(ending)]
    return word


def _restates(sentence: str, passage: _Cited) -> bool:
    """Whether most of ``sentence``'s words (stop words, figures and scale words aside) are in
    the passage's text, plural or tense aside."""
    words = _content_stems(sentence)
    if not words:
        return True
    found = {_stem(w) for w in _WORD.findall(passage.folded)}
    return len(words & found) >= _RESTATED_SHARE * len(words)


def recover_markers(
    text: str, passages: Sequence[str], *, question: str = "", names: Sequence[str] = ()
) -> tuple[str, list[int]]:
    """``text`` with ``[n]`` after each sentence whose claims are all found in passage ``n``
    and in no other passage (1-based, as the model was shown them), and the numbers added.

    A sentence without checkable claims, whose claims are spread over passages or found in
    several, that says mostly other things than its passage (``_restates``), or whose figures
    stand in the passage beside none of its words (``_figures_in_context``), stays uncited:
    only an exact match is cited."""
    if MARKER.search(text) or not passages:  # (a marker the model wrote: nothing to recover)
        return text, []
    question_years = {int(y) for y in _YEAR.findall(question)}
    read = [_Cited(p, names[i] if i < len(names) else "") for i, p in enumerate(passages)]
    pieces: list[str] = []
    added: list[int] = []
    last = 0
    for start, end in split_sentences(text):
        sentence = text[start:end]
        claims = _claims(sentence, question_years)
        if not claims:
            continue
        holding = [
            n for n, passage in enumerate(read, start=1)
            if all(_holds(k, c, passage) for k, c in claims)
            and _restates(sentence, passage)
            and _figures_in_context(sentence, claims, passage)
        ]  # fmt: skip
        if len(holding) != 1:
            continue
        body = sentence.rstrip()
        cut = len(body) - len(body.rstrip(".!?:;"))
        at = start + len(body) - cut
        pieces.append(text[last:at] + f" [{holding[0]}]")
        last = at
        added.append(holding[0])
    pieces.append(text[last:])
    return "".join(pieces), list(dict.fromkeys(added))
