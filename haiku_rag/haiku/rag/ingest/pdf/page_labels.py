"""Each page's label as printed: what a reader cites ("p. 22"), not the PDF's sheet index (36).

Two sources, in this order:

1. The PDF's own ``/PageLabels`` (what a PDF viewer shows in its page box), read with
   PyMuPDF's ``Page.get_label()`` (``""`` for every page of a PDF without them). A
   ``/PageLabels`` that only restates the sheet numbers (many producers write "decimal from 1")
   says nothing and counts as absent.
2. Otherwise the running page number each page prints in its header or footer zone (the top or
   bottom ``FURNITURE_ZONE`` of the page, the band the running-furniture pass uses), read from
   the converted document's own lines: a number (arabic, or roman for front matter) standing
   first or last on the outermost line there that has one ("22 FREE CULTURE", '"PIRACY" 23',
   "Page 7"; a footnote's mark or a table's figure above the folio is not). A number is a page's label only when
   its value minus the sheet index is the same on at least ``MIN_RUN`` pages of one run (a
   run breaks after ``MAX_GAP`` sheets without an agreeing page); the pages inside a run that
   print no number (chapter openings, full-page figures) get the run's label too. A number
   that agrees with no run (a table's figure, a year, a footnote's mark) claims nothing, and
   so does a page outside every run. Two runs over the same pages (footnote marks counting up
   one a page under the folios) are settled by size: the longer wins when it has at least
   ``DOMINANCE`` times the other's pages, else neither labels the pages they share. A label
   is only claimed when it is certain.

Only labels that differ from the sheet number are returned (``{36: "22"}``), with ``""`` for
the sheets whose label is not known in a document that has labels (``haiku.rag.printed_pages``
then names such a page by its PDF number, said so): an ordinary PDF, numbered 1, 2, 3 like
its sheets or printing no numbers, gets nothing, and nothing changes for it. Reads no page
content again: the lines come from the document the converter already built (the page's
text lines with their boxes, OCR'd pages included), so the cost is a walk over its items.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from haiku.rag.ingest.pdf.structure import _PAGE_NUMBER_WORD, FURNITURE_ZONE
from haiku.rag.printed_pages import roman_numeral, roman_value

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument

__all__ = ["DOMINANCE", "MAX_GAP", "MIN_RUN", "ZoneLine", "document_page_labels", "pdf_page_labels", "printed_page_labels"]

# pages whose printed number agrees before a run is believed
MIN_RUN = 3
# sheets in a row without an agreeing page before a run breaks (chapter openings, plates)
MAX_GAP = 8
# points within which two lines' distances from the page's edge put them on one row
SAME_ROW = 2.0
# how many times more pages a run needs than another over the same pages to win them
DOMINANCE = 2
# a label longer than this (a /PageLabels prefix gone wild) is not a page label
MAX_LABEL_CHARS = 24

# what may frame a page number: "- 22 -", "[22]", "22."
_FRAME = "-–—()[]|.·•:"
_ARABIC = re.compile(r"\d{1,5}")  # the Federal Register runs to 5 digits


@dataclass(frozen=True, slots=True)
class ZoneLine:
    """A printed line in a page's header ("top") or footer ("bottom") zone, ``depth`` points
    in from that edge of the page."""

    zone: str
    depth: float
    text: str


@dataclass(frozen=True, slots=True)
class _Number:
    """A page number candidate: its kind ("arabic", "roman", "ROMAN"), value and text."""

    kind: str
    value: int
    text: str


@dataclass(slots=True)
class _Run:
    kind: str
    offset: int  # printed value minus sheet index
    members: dict[int, str]  # sheet -> the number as printed there

    @property
    def first(self) -> int:
        return min(self.members)

    @property
    def last(self) -> int:
        return max(self.members)


def pdf_page_labels(doc: Any, document: DoclingDocument | None) -> dict[int, str]:
    """The labels of the open PyMuPDF ``doc``'s pages that differ from their sheet numbers:
    its ``/PageLabels`` when they say something, else the running numbers ``document`` (the
    converted document) prints. Never raises: a label is a courtesy."""
    own = document_page_labels(doc)
    if own is not None:
        return own
    if document is None:
        return {}
    return printed_page_labels(_zone_lines(document), page_count=len(doc))


def document_page_labels(doc: Any) -> dict[int, str] | None:
    """The PDF's ``/PageLabels`` as ``{sheet: label}`` for the sheets whose label differs from
    the sheet number (``""``: left blank); None when it has none or they only restate the sheet
    numbers."""
    try:
        if not doc.get_page_labels():
            return None
        labels = {index + 1: doc[index].get_label().strip() for index in range(len(doc))}
    except Exception:  # a damaged /PageLabels tree: as if there were none
        return None
    # a sheet the labels leave blank (a style-less range) has no known label, not its index
    differing = {
        sheet: label if len(label) <= MAX_LABEL_CHARS else ""
        for sheet, label in labels.items()
        if label != str(sheet)
    }
    return differing if any(differing.values()) else None


def printed_page_labels(rows: dict[int, list[ZoneLine]], page_count: int) -> dict[int, str]:
    """``{sheet: label}`` from the lines each sheet prints in its header and footer zones
    (``rows``), by runs of agreeing numbers: the labels that differ from the sheet number, and
    ``""`` for the sheets without a certain one; nothing when no label differs."""
    votes: dict[tuple[str, int], dict[int, str]] = defaultdict(dict)
    for sheet, lines in rows.items():
        for number in _folio_candidates(lines):
            votes[(number.kind, number.value - sheet)].setdefault(sheet, number.text)
    runs = _settled([run for (kind, offset), members in votes.items() for run in _runs(kind, offset, members)])
    labels: dict[int, str] = {}
    for sheet in range(1, page_count + 1):
        label = _label(sheet, runs)
        if label != str(sheet):
            labels[sheet] = label
    return labels if any(labels.values()) else {}


def _label(sheet: int, runs: list[_Run]) -> str:
    """The sheet's label: the number it prints in agreement with one run, or the number one
    run gives it between two of its pages; "" when that is not certain."""
    agreeing = [run for run in runs if sheet in run.members]
    if len(agreeing) == 1:
        return agreeing[0].members[sheet]
    if agreeing:
        return ""  # two runs claim this page
    covering = [run for run in runs if run.first < sheet < run.last]
    if len(covering) != 1:
        return ""
    run = covering[0]
    value = sheet + run.offset
    if value < 1:
        return ""
    return str(value) if run.kind == "arabic" else roman_numeral(value, upper=run.kind == "ROMAN")


def _runs(kind: str, offset: int, members: dict[int, str]) -> list[_Run]:
    """The runs of ``members`` (sheets printing the number ``sheet + offset``): split where
    more than ``MAX_GAP`` sheets pass without one, kept when ``MIN_RUN`` pages agree."""
    runs: list[_Run] = []
    current: dict[int, str] = {}
    previous = None
    for sheet in sorted(members):
        if previous is not None and sheet - previous > MAX_GAP + 1:
            runs.append(_Run(kind, offset, current))
            current = {}
        current[sheet] = members[sheet]
        previous = sheet
    if current:
        runs.append(_Run(kind, offset, current))
    return [run for run in runs if len(run.members) >= MIN_RUN]


def _folio_candidates(lines: list[ZoneLine]) -> set[_Number]:
    """The numbers that can be a page's folio: in each zone, those of the outermost line that
    has one (and of the lines beside it). A footnote's mark or a table's figure above the
    folio is inward of it; on a page without a folio it is the outermost, and then agrees with
    no run."""
    found: set[_Number] = set()
    for zone in ("top", "bottom"):
        numbered = sorted(
            ((line.depth, numbers) for line in lines if line.zone == zone and (numbers := _edge_numbers(line.text))),
            key=lambda pair: pair[0],
        )
        if numbered:
            outermost = numbered[0][0]
            found.update(n for depth, numbers in numbered if depth <= outermost + SAME_ROW for n in numbers)
    return found


def _settled(runs: list[_Run]) -> list[_Run]:
    """The runs that keep their pages: of two runs over the same pages, the one with
    ``DOMINANCE`` times the other's pages; when neither has, neither."""
    kept: list[_Run] = []
    contested: set[int] = set()
    for run in sorted(runs, key=lambda r: (-len(r.members), r.first)):
        rivals = [i for i, other in enumerate(kept) if run.first <= other.last and other.first <= run.last]
        if not rivals:
            kept.append(run)
            continue
        contested.update(i for i in rivals if len(kept[i].members) < DOMINANCE * len(run.members))
    return [run for i, run in enumerate(kept) if i not in contested]


def _edge_numbers(text: str) -> list[_Number]:
    """The page numbers a row can print: its first and its last word ("22 FREE CULTURE",
    '"PIRACY" 23', "Page 7", "- 12 -"), in arabic or roman numerals."""
    words = [w.strip(_FRAME) for w in text.split()]
    words = [w for w in words if w]
    if not words:
        return []
    found = []
    for word in {words[0], words[-1]}:
        if not _PAGE_NUMBER_WORD.match(word.lower()):
            continue
        if _ARABIC.fullmatch(word):
            value = int(word)
            if value >= 1 and word[0] != "0":
                found.append(_Number("arabic", value, word))
        elif (roman := roman_value(word)) is not None:
            found.append(_Number("roman" if word.islower() else "ROMAN", roman, word))
    return found


def _zone_lines(document: DoclingDocument) -> dict[int, list[ZoneLine]]:
    """Each page's text lines lying in its header or footer zone. Lines come from each item's
    provenance (one per printed line; its ``charspan`` locates the line in the item's text)."""
    heights = {no: page.size.height for no, page in document.pages.items()}
    lines: dict[int, list[ZoneLine]] = defaultdict(list)
    for item in document.texts:
        text = item.text
        for prov in item.prov:
            height = heights.get(prov.page_no)
            if not height:
                continue
            box = prov.bbox.to_top_left_origin(height)
            band = FURNITURE_ZONE * height
            if box.b <= band:
                zone, depth = "top", box.t
            elif box.t >= height - band:
                zone, depth = "bottom", height - box.b
            else:
                continue
            start, end = prov.charspan
            line = text[start:end].strip()
            if line:
                lines[prov.page_no].append(ZoneLine(zone, depth, line))
    return dict(lines)
