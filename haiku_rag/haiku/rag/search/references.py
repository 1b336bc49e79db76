"""Reference lists: a paper's bibliography is demoted in search, not removed.

A bibliography is dense with title words, so for a topical question ("retrieval augmented
generation evaluation") both arms rank a paper's reference list above the paper's own passages
(full text: BM25 over a page of titles; vectors: a page of titles on the topic). A citation of
"[12] Smith 2019" is not evidence that the paper said anything, and an answer built on it cites
the bibliography as the paper's claim. So a chunk of a reference list keeps its place only when
nothing else matches, or when the query asks for references.

A chunk belongs to a reference list when

- its own section (the last heading of its path) is named like one, in English, French,
  German, Spanish, Italian, Portuguese or Dutch (``is_reference_heading``: "References",
  "7. Bibliography", "Références", "Literaturverzeichnis", "Referencias bibliográficas" …), or
- its text is mostly reference entries (``looks_like_references``), whatever its heading: a
  document whose headings were not recognised, or whose reference list sits under the last
  section it did recognise. Entries are recognised by their parts (an author written "Lastname,
  A." or "A. Lastname,", a year placed as entries place it: "Xiong. 2020. Title", "(2019).",
  ", 2019, 116,", "2019;12", a volume and issue "13(3):", "pp. 12", a DOI, "In Proceedings",
  a numbered "[12] Author"): at least ``MIN_ENTRY_MARKS`` of them and ``ENTRY_MARKS_PER_100``
  per 100 words, in text with few English function words (prose that cites "(Chen et al.,
  2017)" has many). The thresholds were set on the reference lists of the real papers in the
  shared PDF set (docs/benchmarks.md, "Reference lists"): 56 of the 57 readable reference-list
  chunks of four papers (ACL, ACS, numbered and French author-year styles) pass by their text
  alone, body text never did (a book's citing endnotes and a booklet's list under "Glossary" do);
  IEEE, Vancouver, APA, Chicago, MLA and German Harvard entries pass too.

Nothing is stored: both tests read the chunk's stored heading path and text at search time,
so existing libraries are covered without re-ingesting and a better test applies to them at
once (``search/hybrid.py`` reads the rows of the candidates that can still reach the results).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

# Section names of reference lists, compared without case, accents, numbering or trailing
# punctuation ("VII. REFERENCES:" -> "references").
REFERENCE_HEADINGS = frozenset(
    {
        # English
        "references", "reference", "reference list", "list of references", "bibliography",
        "select bibliography", "selected bibliography", "works cited", "literature cited",
        "cited literature", "references cited", "cited references", "sources", "sources cited",
        "references and notes", "notes and references", "bibliography and references",
        # French
        "references bibliographiques", "bibliographie", "ouvrages cites", "bibliographie selective",
        # German
        "literatur", "literaturverzeichnis", "literaturangaben", "quellen", "quellenverzeichnis",
        "literatur und quellen", "quellen und literatur", "literatur- und quellenverzeichnis",
        "bibliografie", "referenzen",
        # Spanish
        "referencias", "referencias bibliograficas", "bibliografia", "obras citadas", "fuentes",
        # Italian
        "riferimenti", "riferimenti bibliografici", "fonti",
        # Portuguese
        "referencias citadas", "fontes",
        # Dutch
        "literatuur", "literatuurlijst", "referenties", "bronnen", "bronvermelding", "literatuurverwijzingen",
    }
)

# Leading section numbers ("7", "7.1", "VII.", "A.") and trailing punctuation of a heading.
_NUMBERING = re.compile(r"^\s*(?:(?:\d+(?:\.\d+)*|[ivxlc]+|[a-z])[.)]?\s+)?", re.IGNORECASE)
_EDGES = re.compile(r"^[\W_]+|[\W_]+$")
_SPACE = re.compile(r"\s+")


def _plain(text: str) -> str:
    """Casefolded, without accents, with single spaces."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return _SPACE.sub(" ", "".join(c for c in decomposed if not unicodedata.combining(c))).strip()


def is_reference_heading(heading: str) -> bool:
    """Whether a section heading names a reference list."""
    name = _plain(heading)
    if len(name) > 60:  # a sentence, not a section name
        return False
    name = _EDGES.sub("", _NUMBERING.sub("", name, count=1))
    return name in REFERENCE_HEADINGS


# --- reference entries in text ---------------------------------------------------------------

_UP = r"[A-ZÀ-ÖØ-ÞĄĆČĎĘĚŁŃŇŐŘŚŠŤŮŰŹŻŽ]"  # an upper-case Latin letter
_LOW = r"[^\W\d_]"  # any letter
_YEAR = r"(?:1[6-9]|20)\d{2}[a-z]?"
# Authors as entries write them. (Patterns start with a literal where they can, which the
# engine looks for instead of trying the pattern at every letter.)
_NAME_MARKS = [
    re.compile(r"\[\d{1,3}\]\s+" + _UP),  # [12] Author
    # Lastname, A. B., / Lastname, A.; / Lastname, A. and / Lastname, A. (2019)
    re.compile(_UP + _LOW + r"+(?:[-'’ ]" + _LOW + r"+)?,\s(?:" + _UP + r"\.\s?-?){1,3}(?=[,;&]|\s(?:and|et|und|y|e|en)\s|\s?\()"),
    re.compile(r"(?<![\w.])(?:" + _UP + r"\.\s?-?){1,3}\s?" + _UP + _LOW + r"+,"),  # A. B. Lastname,
]
# Where and when, as entries write it
_PLACE_MARKS = [
    re.compile(r"\.\s" + _YEAR + r"\.\s"),  # Xiong. 2020. Title (ACL)
    re.compile(r"\(" + _YEAR + r"\)[.:]\s"),  # (2019). Title (APA, Harvard)
    re.compile(r"\s" + _YEAR + r",\s?\d+,\s?\d+"),  # Journal 2019, 116, 22071 (ACS)
    re.compile(r"[,:]\s?\d+\s?[–-]\s?\d+\.(?:\s|$)"),  # , 1315–1360. (pages ending an entry)
    re.compile(_YEAR + r";\s?\d+"),  # 2019;12(3):45 (Vancouver)
    re.compile(r"\d\s?\(\d+\)\s?[:,]\s?\d"),  # 13(3): 319 / 56(3.4):1
    re.compile(r"pp\.\s?\d"),  # pp. 335 (not "p.": "Sep. 30")
    re.compile(r"vol\.\s?\d+,\s?no\.\s?\d"),  # vol. 3, no. 2 (MLA, IEEE)
    re.compile(r"[a-z],\s" + _YEAR + r"\.(?:\s|$)"),  # University Press, 2019. (MLA)
    re.compile(r"doi[:./\s]|DOI[:\s]|10\.\d{4,9}/"),  # doi: / 10.1000/xyz
    re.compile(r"arXiv preprint|ArXiv, abs/|CoRR\b|abs/\d{4}\.\d{4,5}"),
    re.compile(r"[Ii]n\s+(?:Proc\b|Proceedings|Advances in)|Proceedings of\b|In:\s"),
]
_WORDS = re.compile(r"[^\W\d_][^\W_'’-]*")
# English words prose is made of and reference entries hardly use.
_FUNCTION_WORDS = frozenset(
    "the of and to in is that we for this are with as be by on it an from which can our not or "
    "was were these their has have its at but also than such".split()
)
MIN_ENTRY_MARKS = 2
ENTRY_MARKS_PER_100 = 3.0
MAX_FUNCTION_SHARE = 0.25
MIN_WORDS = 12


def entry_marks(text: str) -> tuple[int, int]:
    """How many parts of reference entries ``text`` holds: authors written as entries write
    them (``_NAME_MARKS``), and years, volumes, pages, DOIs and venues (``_PLACE_MARKS``)."""
    names = sum(len(pattern.findall(text)) for pattern in _NAME_MARKS)
    return names, sum(len(pattern.findall(text)) for pattern in _PLACE_MARKS)


def looks_like_references(text: str) -> bool:
    """Whether ``text`` is mostly reference entries (see the module's notes)."""
    # names alone are a list of people (signatures, a title page's authors), not entries; most
    # passages have no place mark at all, and are done with here
    places = sum(len(pattern.findall(text)) for pattern in _PLACE_MARKS)
    if not places:
        return False
    words = _WORDS.findall(text)
    if len(words) < MIN_WORDS or text.count("|") * 10 > len(words):  # a table is not a list of entries
        return False
    marks = places + sum(len(pattern.findall(text)) for pattern in _NAME_MARKS)
    if marks < MIN_ENTRY_MARKS or marks * 100 < ENTRY_MARKS_PER_100 * len(words):
        return False
    function = sum(1 for word in words if word.casefold() in _FUNCTION_WORDS)
    return function <= MAX_FUNCTION_SHARE * len(words)


def is_reference_chunk(headings: Sequence[str] | None, content: str) -> bool:
    """Whether a chunk belongs to a reference list: its own section is named like one, or its
    text is mostly reference entries."""
    if headings and is_reference_heading(headings[-1]):
        return True
    return looks_like_references(content)


# --- queries that ask for references -----------------------------------------------------------

_ASKING_WORDS = frozenset(
    {
        "references", "referenced", "bibliography", "bibliographies", "bibliographic",
        "bibliographical", "cite", "cites", "cited", "citing", "citation", "citations",
        "bibliographie", "literaturverzeichnis", "quellenverzeichnis", "referencias", "bibliografia",
        "bibliografie", "riferimenti", "referenties", "literatuurlijst",
    }
)
_ASKING_PHRASES = re.compile(r"\b(?:works cited|reference list|literature cited|list of references|et al)\b")
_DOI = re.compile(r"\b10\.\d{4,9}/\S+")
_QUOTED = re.compile(r"[\"“”«»„]([^\"“”«»„]+)[\"“”«»„]")


def asks_for_references(query: str) -> bool:
    """Whether a query asks for references, so reference lists are not demoted: it names them
    ("references", "bibliography", "cited", "works cited", "Literaturverzeichnis" …), cites
    ("Karpukhin et al."), holds a DOI, or quotes a title (four words or more in quotes)."""
    plain = _plain(query)
    if set(_WORDS.findall(plain)) & _ASKING_WORDS:
        return True
    if _ASKING_PHRASES.search(plain) or _DOI.search(query):
        return True
    return any(len(_WORDS.findall(quoted)) >= 4 for quoted in _QUOTED.findall(query))
