"""Confirming a record read from a PDF with Crossref or arXiv, when the user allows it.

Off by default (``bibliography.lookup``): ingestion then never touches the network. When on,
the DOI (Crossref ``/works/{doi}``) or else the arXiv id (arXiv's Atom ``/query?id_list=``)
printed on the page is looked up, and the answer is used only if it names the same work:
its title must agree with the title the page shows (a first page also prints the DOIs of
other works). It then fills what the page did not say (authors when none were read,
venue, volume, issue, pages, publisher, DOI, date) and completes an author list the page
gave only in part; the title stays the page's (the one the library shows). A failed or slow
lookup leaves the record as read. "Edit details…" still overrides everything.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from haiku.rag.bibliography import Bibliographic, Creator

if TYPE_CHECKING:
    from haiku.rag.config import BibliographyConfig

log = logging.getLogger("haiku.rag")

MAX_RESPONSE_BYTES = 2_000_000
TITLE_AGREEMENT = 0.8  # share of the page title's words the service's title must have
USER_AGENT = "haiku.rag (bibliographic lookup; https://github.com/ggozad/haiku.rag)"
ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV_NS = "{http://arxiv.org/schemas/atom}"


def lookup_record(record: Bibliographic, settings: BibliographyConfig) -> Bibliographic:
    """``record`` confirmed and filled from Crossref or arXiv, or ``record`` unchanged (lookup
    off, no identifier, a failure, or an answer about another work)."""
    if not settings.lookup or not (record.doi or record.arxiv):
        return record
    found: Bibliographic | None = None
    service = ""
    try:
        if record.doi:
            found, service = _crossref(record.doi, settings), "crossref"
        if found is None and record.arxiv:
            found, service = _arxiv(record.arxiv, settings), "arxiv"
    except Exception:  # noqa: BLE001 - a lookup is a bonus: any failure leaves the record as read
        log.warning("bibliographic lookup failed for %s", record.doi or record.arxiv, exc_info=True)
        return record
    if found is None or not _same_work(record, found):
        return record
    return _merged(record, found, service)


def _get(url: str, settings: BibliographyConfig, accept: str) -> bytes | None:
    from urllib.error import HTTPError
    from urllib.request import Request, urlopen

    request = Request(url, headers={"User-Agent": USER_AGENT, "Accept": accept})
    try:
        with urlopen(request, timeout=settings.timeout_seconds) as response:  # noqa: S310 - http(s) URLs from settings
            return response.read(MAX_RESPONSE_BYTES)
    except HTTPError as exc:
        if exc.code == 404:
            return None  # the service does not know the identifier
        raise


def _crossref(doi: str, settings: BibliographyConfig) -> Bibliographic | None:
    raw = _get(f"{settings.crossref.base_url.rstrip('/')}/works/{quote(doi, safe='/')}", settings, "application/json")
    if raw is None:
        return None
    message = json.loads(raw).get("message")
    if not isinstance(message, dict):
        return None
    creators = [
        Creator(family=str(a["family"]), given=str(a.get("given") or ""))
        for a in message.get("author") or []
        if isinstance(a, dict) and a.get("family")
    ]
    parts = (message.get("issued") or {}).get("date-parts") or [[]]
    date_parts = [int(p) for p in (parts[0] if parts and parts[0] else []) if isinstance(p, int | str) and str(p).isdigit()]
    return Bibliographic(
        title=_first(message.get("title")),
        creators=creators,
        year=date_parts[0] if date_parts else None,
        date="-".join(f"{p:02d}" if i else str(p) for i, p in enumerate(date_parts)) or None,
        doi=str(message.get("DOI") or doi),
        venue=_first(message.get("container-title")),
        publisher=message.get("publisher") or None,
        volume=message.get("volume") or None,
        issue=message.get("issue") or None,
        pages=message.get("page") or None,
        item_type=_CROSSREF_TYPES.get(str(message.get("type")), "document"),
    )


_CROSSREF_TYPES = {
    "journal-article": "journalArticle",
    "proceedings-article": "conferencePaper",
    "book-chapter": "bookSection",
    "book": "book",
    "posted-content": "preprint",
    "report": "report",
    "dissertation": "thesis",
}


def _arxiv(arxiv_id: str, settings: BibliographyConfig) -> Bibliographic | None:
    import defusedxml.ElementTree as SafeET
    from defusedxml.common import DefusedXmlException

    raw = _get(f"{settings.arxiv.base_url.rstrip('/')}/query?id_list={quote(arxiv_id)}", settings, "application/atom+xml")
    if raw is None:
        return None
    try:  # an Atom feed declares no entities: one that does, or is not XML, is no answer
        entry = SafeET.fromstring(raw).find(f"{ATOM}entry")
    except (DefusedXmlException, SafeET.ParseError):
        return None
    if entry is None or entry.findtext(f"{ATOM}title") is None:
        return None
    creators = []
    for author in entry.findall(f"{ATOM}author"):
        name = " ".join((author.findtext(f"{ATOM}name") or "").split())
        if name:
            given, _, family = name.rpartition(" ")
            creators.append(Creator(family=family, given=given))
    published = entry.findtext(f"{ATOM}published") or ""
    year = int(published[:4]) if published[:4].isdigit() else None
    return Bibliographic(
        title=" ".join((entry.findtext(f"{ATOM}title") or "").split()),
        creators=creators,
        year=year,
        date=published[:10] or None,
        doi=entry.findtext(f"{ARXIV_NS}doi") or None,
        venue=entry.findtext(f"{ARXIV_NS}journal_ref") or None,
        arxiv=arxiv_id,
        item_type="preprint",
    )


def _first(value: Any) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return " ".join(str(value).split()) or None if value else None


def _words(text: str | None) -> list[str]:
    folded = unicodedata.normalize("NFKD", text or "").encode("ascii", "ignore").decode().casefold()
    return re.findall(r"[a-z0-9]+", folded)


def _same_work(record: Bibliographic, found: Bibliographic) -> bool:
    """The service's title has most of the page title's words (and the page has a title)."""
    page, theirs = _words(record.title), set(_words(found.title))
    if not page or not theirs:
        return False
    return sum(1 for w in page if w in theirs) >= TITLE_AGREEMENT * len(page)


def _merged(record: Bibliographic, found: Bibliographic, service: str) -> Bibliographic:
    update: dict[str, Any] = {}
    for name in ("venue", "publisher", "volume", "issue", "pages", "doi", "date", "year"):
        if getattr(record, name) is None and getattr(found, name) is not None:
            update[name] = getattr(found, name)
    mine, theirs = record.authors, found.authors
    if theirs and (not mine or _completes(mine, theirs)):
        update["creators"] = [*theirs, *(c for c in record.creators if c.role != "author")]
    if record.item_type == "document" and found.item_type != "document":
        update["item_type"] = found.item_type
    # the source says the service confirmed the record ("first-page+crossref")
    return record.model_copy(update={**update, "source": f"{record.source}+{service}"})


def _completes(mine: list[Creator], theirs: list[Creator]) -> bool:
    """The service lists more authors, every one the page gave among them, in order."""
    if len(theirs) <= len(mine):
        return False
    names = [_words(c.family) for c in theirs]
    position = 0
    for creator in mine:
        family = _words(creator.family)
        while position < len(names) and names[position] != family:
            position += 1
        if position == len(names):
            return False
        position += 1
    return True
