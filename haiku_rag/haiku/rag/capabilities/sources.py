"""How a passage names its document to a model: as a reader would, never by boilerplate.

A filing's extracted title is "FORM 10-Q" or "UNITED STATES SECURITIES AND EXCHANGE
COMMISSION": a model given two such passages cannot tell which company or which quarter each is
about. So a passage's source line says who and when:

- a filing (its first page names the form): company, form and period, from the cover page
  (``Amcor PLC — Form 10-Q, quarterly period ended December 31, 2022``);
- a document with a bibliographic record with authors: author–year and title
  (``Vaswani et al. (2017), "Attention Is All You Need"``);
- otherwise its title, unless the title is boilerplate, then its file name.

``document_name`` is pure; ``document_names`` reads each document's opening text once (the
start of its stored content, where the first page is) and keeps the names per document
generation, so a question pays one small read per new document.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from haiku.rag.bibliography import author_label, bibliographic

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG
    from haiku.rag.store.models import SearchResult

FIRST_PAGE_CHARS = 6_000
_CACHE_SIZE = 256
_names: dict[tuple[str, str], str] = {}

_BOILERPLATE = re.compile(
    r"^\s*(?:form\s+[\w-]+(?:\s*/\s*a)?|united states|securities and exchange commission|"
    r"united states securities and exchange commission|washington,? d\.?c\.?(?:\s+\d+)?|"
    r"table of contents|annual report|quarterly report|current report|untitled|"
    r"microsoft word\b.*|document\d*|page \d+)\s*$",
    re.IGNORECASE,
)
_FORM = re.compile(
    r"\bFORM\s+(10-K(?:T|405)?|10-Q(?:T)?|8-K|20-F|40-F|6-K|S-1|S-4|F-1|DEF\s*14A|11-K|N-CSR)\b",
    re.IGNORECASE,
)
_DATE = r"(?:[A-Z][a-z]{2,8}\.?\s+\d{1,2},?\s+\d{4}|\d{1,2}\s+[A-Z][a-z]{2,8}\s+\d{4})"
_PERIOD = re.compile(
    rf"\bfor\s+the\s+(quarterly\s+period|fiscal\s+year|year|transition\s+period|"
    rf"(?:three|six|nine|twelve)\s+months)\s+ended\s+({_DATE})",
    re.IGNORECASE,
)
_EVENT = re.compile(
    rf"\bDate\s+of\s+Report\s*\(\s*Date\s+of\s+earliest\s+event\s+reported\s*\)\s*:?\s*({_DATE})",
    re.IGNORECASE,
)
_REGISTRANT = re.compile(
    r"([A-Z0-9][A-Za-z0-9&.,'’\- ]{1,90}?)\s*\(\s*Exact\s+name\s+of\s+(?:registrant|company)",
    re.IGNORECASE,
)
_FILE_NUMBER = re.compile(
    r"Commission\s+file\s+number:?\s*[\d-]+\s+([A-Z0-9][A-Z0-9&.,'’\- ]{1,80}?)(?=\s+(?:[A-Z][a-z]|\())",
)
_KEEP_UPPER = {"PLC", "LLC", "LP", "NV", "SA", "AG", "SE", "USA", "US", "UK", "NA"}


def is_boilerplate(title: str | None) -> bool:
    """A title that names a kind of document, not a document ("FORM 10-Q")."""
    return not title or not title.strip() or bool(_BOILERPLATE.match(" ".join(title.split())))


def _company(raw: str) -> str:
    raw = " ".join(raw.replace("’", "'").split()).strip(" ,-")
    if raw.isupper() or raw == raw.upper():
        words = []
        for word in raw.split():
            bare = word.strip(".,")
            if bare in _KEEP_UPPER or (any(ch.isdigit() for ch in bare) and len(bare) <= 4):
                words.append(word)
            else:
                words.append(word[:1] + word[1:].lower())
        raw = " ".join(words)
    return raw


def filing_name(first_page: str) -> str | None:
    """``Company — Form X, period`` from a filing's cover page, or None when it is not one."""
    text = " ".join(first_page.replace("*", " ").replace("#", " ").split())
    form = _FORM.search(text[:3000])
    if form is None or not form.group(0).startswith("FORM"):
        return None  # a cover page prints it in capitals; running text mentions a "Form 10-Q"
    company = None
    registrant = _REGISTRANT.search(text)
    if registrant:
        candidate = registrant.group(1)
        # the registrant's name is the end of the text before "(Exact name …)": drop what came
        # before it on the cover (a file number, a checkbox line)
        candidate = re.split(r"\d[\d-]*\d\s+|\.\s+|-{2,}\s*|\)\s+|\b\d\s+", candidate)[-1]
        company = _company(candidate) or None
    if company is None:
        numbered = _FILE_NUMBER.search(text)
        if numbered:
            company = _company(numbered.group(1)) or None
    parts = [f"Form {form.group(1).upper()}"]
    period = _PERIOD.search(text)
    event = _EVENT.search(text)
    if period:
        parts.append(f"{' '.join(period.group(1).lower().split())} ended {period.group(2)}")
    elif event:
        parts.append(f"dated {event.group(1)}")
    name = ", ".join(parts)
    return f"{company} — {name}" if company else name


def document_name(
    title: str | None, uri: str, metadata: Mapping[str, Any] | None, first_page: str = ""
) -> str:
    """How a reader would name the document (see the module's docstring)."""
    if first_page:
        filing = filing_name(first_page)
        if filing:
            return filing
    record = bibliographic(metadata)
    if record is not None and record.authors:
        label = author_label(record)
        year = record.year
        named = record.title or (None if is_boilerplate(title) else title)
        head = f"{label} ({year})" if label and year else (label or "")
        if head:
            return f'{head}, "{named}"' if named else head
    if not is_boilerplate(title):
        return " ".join(str(title).split())
    name = uri.rstrip("/").rsplit("/", 1)[-1]
    return name or uri


async def document_names(client: HaikuRAG, passages: Sequence[SearchResult]) -> dict[str, str]:
    """Each passage's document name, by document id (the cover page read once per document
    generation; a document that cannot be read is named from its record and title)."""
    names: dict[str, str] = {}
    for passage in passages:
        if passage.document_id in names:
            continue
        first_page = ""
        try:
            document = await client.get_document(passage.document_id)
            key = (document.id, document.generation)
            if key in _names:
                names[passage.document_id] = _names[key]
                continue
            if (document.mime_type or "").endswith("pdf") or is_boilerplate(passage.document_title):
                first_page = (await client.get_content(document))[:FIRST_PAGE_CHARS]
        except Exception:  # a name is a courtesy: never fail an answer over it
            key = None
        name = document_name(
            passage.document_title, passage.document_uri, passage.document_meta, first_page
        )
        names[passage.document_id] = name
        if key is not None:
            if len(_names) >= _CACHE_SIZE:
                _names.pop(next(iter(_names)))
            _names[key] = name
    return names
