"""Bibliographic metadata of a document, author–year–page citations, BibTeX and CSL-JSON.

A document's record lives in ``document.metadata["bibliographic"]`` (``METADATA_KEY``), a
plain JSON object so it travels with search results (``SearchResult.document_meta``) and
needs no extra query to cite. It comes from Zotero (``haiku.rag.zotero``) or, for other PDFs,
from the file itself (``haiku.rag.pdf_metadata``); ``source`` says which.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field

from haiku.rag.errors import HaikuRAGError

METADATA_KEY = "bibliographic"


class Creator(BaseModel):
    family: str
    given: str = ""
    role: str = "author"  # author | editor | translator | ... (Zotero's creator types)

    @property
    def display(self) -> str:
        return f"{self.given} {self.family}".strip()


class Bibliographic(BaseModel):
    title: str | None = None
    creators: list[Creator] = Field(default_factory=list)
    year: int | None = None
    date: str | None = None  # as precise as known, ISO-like ("2017", "2017-06", "2017-06-12")
    item_type: str = "document"  # Zotero item type names (journalArticle, conferencePaper, ...)
    doi: str | None = None
    arxiv: str | None = None
    venue: str | None = None  # journal, proceedings or book title
    publisher: str | None = None
    volume: str | None = None
    issue: str | None = None
    pages: str | None = None
    url: str | None = None
    isbn: str | None = None
    tags: list[str] = Field(default_factory=list)
    zotero_key: str | None = None
    source: str = "unknown"  # zotero | pdf-info | first-page | user

    @property
    def authors(self) -> list[Creator]:
        named = [c for c in self.creators if c.role == "author"]
        return named or [c for c in self.creators if c.role == "editor"] or self.creators

    def to_metadata(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_defaults=True) | {"source": self.source}


def bibliographic(metadata: Mapping[str, Any] | None) -> Bibliographic | None:
    """The record stored in a document's metadata, or None when there is none (or it is bad)."""
    if not metadata:
        return None
    data = metadata.get(METADATA_KEY)
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError:
            return None
    if not isinstance(data, Mapping):
        return None
    try:
        return Bibliographic.model_validate(data)
    except ValueError:
        return None


# --- edited by the user -------------------------------------------------------------------

USER_SOURCE = "user"  # a record the user edited: kept over what a re-ingest reads from the file
MIN_YEAR, MAX_YEAR = 1000, 2999
DOI_SHAPE = re.compile(r"^10\.\d{4,9}/\S+$")
_DOI_PREFIX = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)
MAX_FIELD_CHARS = 1000


class BibliographicError(HaikuRAGError, ValueError):
    """A bibliographic field the user typed that cannot be stored; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def parse_authors(text: str | Iterable[str]) -> list[Creator]:
    """Authors as a person types them: one per line or separated by ";", each
    "Family, Given" or "Given Family" (particles such as "de" and "van" stay with the family
    name)."""
    names = text if not isinstance(text, str) else re.split(r"[;\n]", text)
    creators = []
    for raw in names:
        name = " ".join(str(raw).split())
        if not name:
            continue
        if len(name) > MAX_FIELD_CHARS:
            raise BibliographicError("authors", f"an author's name has at most {MAX_FIELD_CHARS} characters")
        if "," in name:
            family, given = (p.strip() for p in name.split(",", 1))
        else:
            words = name.split()
            cut = len(words) - 1
            while cut > 0 and words[cut - 1].casefold() in _PARTICLES:
                cut -= 1
            family, given = " ".join(words[cut:]), " ".join(words[:cut])
        if not family:
            raise BibliographicError("authors", f"{name!r} has no family name")
        creators.append(Creator(family=family, given=given))
    return creators


_PARTICLES = {"de", "del", "della", "der", "den", "van", "von", "da", "di", "du", "la", "le", "dos", "das", "ter", "ten"}


def parse_year(value: str | int | None) -> int | None:
    """A year as typed ("2021"); empty is None; anything else is a ``BibliographicError``."""
    text = str(value).strip() if value is not None else ""
    if not text:
        return None
    if not text.isdigit() or not (MIN_YEAR <= int(text) <= MAX_YEAR):
        raise BibliographicError("year", f"the year must be a year such as 2021, not {text!r}")
    return int(text)


def parse_doi(value: str | None) -> str | None:
    """A DOI as typed or pasted ("10.1000/xyz", "https://doi.org/10.1000/xyz", "doi:…"), without
    its prefix; empty is None; anything not shaped like a DOI is a ``BibliographicError``."""
    text = _DOI_PREFIX.sub("", (value or "").strip()).strip()
    if not text:
        return None
    if not DOI_SHAPE.match(text):
        raise BibliographicError("doi", f"a DOI looks like 10.1234/abcd (it starts with “10.” and has a “/”), not {text!r}")
    return text


def _text_field(name: str, value: str | None) -> str | None:
    text = " ".join((value or "").split())
    if len(text) > MAX_FIELD_CHARS:
        raise BibliographicError(name, f"the {name} has at most {MAX_FIELD_CHARS} characters (this one has {len(text)})")
    return text or None


def edited_record(
    base: Bibliographic | None,
    *,
    title: str | None,
    authors: str | Iterable[str],
    year: str | int | None,
    venue: str | None,
    doi: str | None,
) -> Bibliographic:
    """``base`` with the fields a person edited (an edit form's title, authors, year,
    venue/journal and DOI), checked: a bad field raises ``BibliographicError`` naming it, and
    nothing is changed. Fields the form does not show (Zotero key, volume, tags...) are kept;
    editors and translators too. The result's ``source`` is ``"user"``."""
    base = base or Bibliographic()
    checked_title = _text_field("title", title)
    people = parse_authors(authors)
    checked_year = parse_year(year)
    checked_venue = _text_field("venue", venue)
    checked_doi = parse_doi(doi)
    others = [c for c in base.creators if c.role != "author"]
    date = base.date
    if checked_year is None or (date and not date.startswith(str(checked_year))):
        date = None  # a date of another year would contradict the edit
    return base.model_copy(
        update={
            "title": checked_title,
            "creators": [*people, *others],
            "year": checked_year,
            "date": date,
            "venue": checked_venue,
            "doi": checked_doi,
            "source": USER_SOURCE,
        }
    )


def check_record(record: Bibliographic) -> Bibliographic:
    """The checks of :func:`edited_record` on a whole record (what the library stores)."""
    return edited_record(
        record,
        title=record.title,
        authors=[f"{c.family}, {c.given}" if c.given else f"{c.family}," for c in record.creators if c.role == "author"],
        year=record.year,
        venue=record.venue,
        doi=record.doi,
    ).model_copy(update={"source": record.source})


def authors_text(record: Bibliographic | None) -> str:
    """The authors as the edit form shows them, one "Family, Given" per line."""
    if record is None:
        return ""
    return "\n".join(f"{c.family}, {c.given}" if c.given else c.family for c in record.creators if c.role == "author")


# --- author–year–page citations -------------------------------------------------------------


def _pages_text(pages: Iterable[int] | None, labels: Mapping[int, str] | None = None) -> str:
    """``p. 6``, ``pp. 7–8``, ``pp. 3, 5``: the pages as printed when ``labels`` know them
    (``haiku.rag.printed_pages.pages_label``, the one wording of pages)."""
    from haiku.rag.printed_pages import pages_label

    return pages_label(pages or [], labels)


def author_label(record: Bibliographic) -> str | None:
    """"Vaswani", "Smith and Jones", "Vaswani et al." — or None without creators."""
    names = [c.family for c in record.authors if c.family]
    if not names:
        return None
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"{names[0]} and {names[1]}"
    return f"{names[0]} et al."


def author_year_citation(
    metadata: Mapping[str, Any] | Bibliographic | None,
    pages: Iterable[int] | None = None,
    *,
    fallback_title: str | None = None,
    parentheses: bool = True,
    labels: Mapping[int, str] | None = None,
) -> str:
    """``(Vaswani et al., 2017, p. 6)`` from a document's metadata and the cited pages.

    Without authors the title stands in (shortened), without a year "n.d." (as APA does);
    with neither authors nor a title, just the pages. The pages are named as printed
    (``labels``, a citation's ``page_labels``; else those a document's metadata holds):
    ``(Lessig, 2004, pp. 22–23)`` for the PDF's sheets 36–37.
    """
    if labels is None and isinstance(metadata, Mapping):
        from haiku.rag.printed_pages import printed_labels

        labels = printed_labels(metadata)
    record = metadata if isinstance(metadata, Bibliographic) else bibliographic(metadata)
    who = author_label(record) if record else None
    if who is None:
        title = (record.title if record and record.title else None) or fallback_title
        who = _short_title(title) if title else None
    parts = []
    if who:
        parts.append(who)
        parts.append(str(record.year) if record and record.year else "n.d.")
    page_text = _pages_text(pages, labels)
    if page_text:
        parts.append(page_text)
    text = ", ".join(parts)
    return f"({text})" if parentheses and text else text


def _short_title(title: str, words: int = 4) -> str:
    split = title.split()
    return f"“{' '.join(split[:words])}{'…' if len(split) > words else ''}”"


# --- export -------------------------------------------------------------------------------

_BIBTEX_TYPES = {
    "journalArticle": "article",
    "magazineArticle": "article",
    "newspaperArticle": "article",
    "conferencePaper": "inproceedings",
    "book": "book",
    "bookSection": "incollection",
    "thesis": "phdthesis",
    "report": "techreport",
    "manuscript": "unpublished",
    "preprint": "misc",
    "webpage": "misc",
}
_CSL_TYPES = {
    "journalArticle": "article-journal",
    "magazineArticle": "article-magazine",
    "newspaperArticle": "article-newspaper",
    "conferencePaper": "paper-conference",
    "book": "book",
    "bookSection": "chapter",
    "thesis": "thesis",
    "report": "report",
    "manuscript": "manuscript",
    "preprint": "article",
    "webpage": "webpage",
}
_VENUE_FIELD = {"article": "journal", "inproceedings": "booktitle", "incollection": "booktitle"}


def _records(items: Iterable[Any]) -> list[tuple[Bibliographic, str | None]]:
    """(record, fallback id) for documents, search results, metadata dicts or records."""
    out: list[tuple[Bibliographic, str | None]] = []
    for item in items:
        if isinstance(item, Bibliographic):
            out.append((item, None))
            continue
        meta = getattr(item, "metadata", None)
        if meta is None:
            meta = getattr(item, "document_meta", None)
        if meta is None and isinstance(item, Mapping):
            meta = item
        record = bibliographic(meta)
        title = getattr(item, "title", None) or getattr(item, "document_title", None)
        if record is None:
            record = Bibliographic(title=title, source="unknown")
        elif record.title is None and title:
            record = record.model_copy(update={"title": title})
        out.append((record, getattr(item, "id", None) or getattr(item, "document_id", None)))
    return out


def citation_key(record: Bibliographic, fallback: str | None = None) -> str:
    """The Zotero key when known (so a bibliography round-trips to Zotero), else
    family name + year + first title word, ASCII only ("vaswani2017attention")."""
    if record.zotero_key:
        return record.zotero_key
    family = record.authors[0].family if record.authors else ""
    first_word = next((w for w in re.findall(r"[A-Za-z]+", _ascii(record.title or "")) if len(w) > 3), "")
    key = re.sub(r"[^a-z0-9]", "", _ascii(family).lower()) + (str(record.year) if record.year else "") + first_word.lower()
    return key or (fallback or "document")[:16]


# letters NFKD does not split into a base letter and a mark ("Sørensen" is "sorensen", not "srensen")
_LETTERS = str.maketrans({"ø": "o", "Ø": "O", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ß": "ss",
                          "đ": "d", "Đ": "D", "ł": "l", "Ł": "L", "þ": "th", "Þ": "Th", "ð": "d", "ı": "i"})


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text.translate(_LETTERS)).encode("ascii", "ignore").decode("ascii")


# Every character BibTeX or LaTeX gives a meaning, written so it stands for itself. Braces
# become commands (not ``\{``: BibTeX counts an escaped brace when it matches braces, so a
# title with ``}`` in it would close its field and could start a forged entry), and so does the
# backslash, so ``\input{/etc/passwd}`` or ``\immediate\write18{…}`` in a title is text.
_BIBTEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\textbraceleft{}",
    "}": r"\textbraceright{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_BIBTEX_CHARS = re.compile(r"[\\{}&%$#_~^]")
# line breaks and other control characters would end a field in some readers: a space
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def _bibtex_escape(value: str) -> str:
    """``value`` as BibTeX field text that reads back as exactly ``value`` (no TeX in it runs)."""
    value = _CONTROL_CHARS.sub(" ", value)
    return _BIBTEX_CHARS.sub(lambda m: _BIBTEX_SPECIAL[m.group()], value)


_WEB_URL = re.compile(r"(?i)^(https?|ftp)://[^\s/?#]+")
_DOI = re.compile(r"^10\.\d{4,9}/\S+$")
# in a url/doi field (read verbatim by biblatex and url.sty) only these stay as they are; the
# rest (braces, backslashes, spaces, quotes, non-ASCII) is percent-encoded
_URL_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%")


def _bibtex_link(name: str, value: str) -> str:
    """A ``url`` or ``doi`` value: a web address or a DOI, percent-encoded where it holds
    anything that is not plain URL text; anything else is written as escaped text."""
    value = value.strip()
    valid = _WEB_URL.match(value) if name == "url" else _DOI.match(value)
    if not valid:
        return _bibtex_escape(value)
    return "".join(c if c in _URL_SAFE else "".join(f"%{b:02X}" for b in c.encode("utf-8")) for c in value)


_KEY_CHARS = re.compile(r"[^A-Za-z0-9_:.\-]")


def _bibtex_key(key: str, fallback: str) -> str:
    """A citation key BibTeX reads as one key (a Zotero key from an imported database could
    hold a comma, a brace or a line break that would end the entry's header)."""
    return _KEY_CHARS.sub("", _ascii(key))[:64] or fallback


def _unique_keys(records: list[tuple[Bibliographic, str | None]], *, bibtex: bool = False) -> list[str]:
    seen: dict[str, int] = {}
    keys = []
    for index, (record, fallback) in enumerate(records, start=1):
        key = citation_key(record, fallback)
        if bibtex:
            key = _bibtex_key(key, f"document{index}")
        if key in seen:
            seen[key] += 1
            key = f"{key}{chr(ord('a') + seen[key] - 1)}" if seen[key] <= 26 else f"{key}-{seen[key]}"
        else:
            seen[key] = 0
        keys.append(key)
    return keys


def _dedupe(records: list[tuple[Bibliographic, str | None]]) -> list[tuple[Bibliographic, str | None]]:
    """One entry per cited document (an answer citing a paper five times lists it once)."""
    seen: set[str] = set()
    out = []
    for record, fallback in records:
        identity = record.zotero_key or fallback or record.doi or json.dumps(record.to_metadata(), sort_keys=True)
        if identity not in seen:
            seen.add(identity)
            out.append((record, fallback))
    return out


def to_bibtex(items: Iterable[Any]) -> str:
    """A BibTeX bibliography of documents / search results / citations / metadata dicts."""
    records = _dedupe(_records(items))
    entries = []
    for (record, _), key in zip(records, _unique_keys(records, bibtex=True), strict=True):
        kind = _BIBTEX_TYPES.get(record.item_type, "misc")
        fields: list[tuple[str, str]] = []
        authors = [c for c in record.creators if c.role == "author"]
        editors = [c for c in record.creators if c.role == "editor"]
        if authors:
            fields.append(("author", " and ".join(_bibtex_name(c) for c in authors)))
        if editors:
            fields.append(("editor", " and ".join(_bibtex_name(c) for c in editors)))
        if record.title:
            fields.append(("title", "{" + _bibtex_escape(record.title) + "}"))  # keep capitals
        if record.venue:
            fields.append((_VENUE_FIELD.get(kind, "howpublished" if kind == "misc" else "journal"), _bibtex_escape(record.venue)))
        for name, value in (
            ("year", str(record.year) if record.year else None),
            ("volume", record.volume),
            ("number", record.issue),
            ("pages", re.sub(r"\s*[-–—]+\s*", "--", record.pages) if record.pages else None),
            ("publisher", record.publisher),
            ("doi", record.doi),
            ("url", record.url),
            ("isbn", record.isbn),
            ("eprint", record.arxiv),
            ("archiveprefix", "arXiv" if record.arxiv else None),
            ("keywords", ", ".join(record.tags) if record.tags else None),
        ):
            if value:
                fields.append((name, _bibtex_link(name, value) if name in ("url", "doi") else _bibtex_escape(value)))
        body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
        entries.append(f"@{kind}{{{key},\n{body}\n}}")
    return "\n\n".join(entries) + ("\n" if entries else "")


def _bibtex_name(creator: Creator) -> str:
    family = _bibtex_escape(creator.family)
    if " " in creator.family:
        family = "{" + family + "}"
    given = _bibtex_escape(creator.given)
    if re.search(r"(?i)\band\b|,", creator.given):  # would split the list or the name
        given = "{" + given + "}"
    return f"{family}, {given}" if creator.given else family


def to_csl_json(items: Iterable[Any]) -> list[dict[str, Any]]:
    """CSL-JSON items (what Zotero, Pandoc and citeproc read); ``id`` is the citation key."""
    records = _dedupe(_records(items))
    out = []
    for (record, _), key in zip(records, _unique_keys(records), strict=True):
        item: dict[str, Any] = {"id": key, "type": _CSL_TYPES.get(record.item_type, "document")}
        if record.title:
            item["title"] = record.title
        for role in ("author", "editor", "translator"):
            people = [{"family": c.family, **({"given": c.given} if c.given else {})} for c in record.creators if c.role == role]
            if people:
                item[role] = people
        if record.date or record.year:
            parts = [int(p) for p in (record.date or str(record.year)).split("-")[:3] if p.isdigit() and int(p) > 0]
            if parts:
                item["issued"] = {"date-parts": [parts]}
        for name, value in (
            ("container-title", record.venue),
            ("publisher", record.publisher),
            ("volume", record.volume),
            ("issue", record.issue),
            ("page", record.pages),
            ("DOI", record.doi),
            ("URL", record.url),
            ("ISBN", record.isbn),
        ):
            if value:
                item[name] = value
        if record.tags:
            item["keyword"] = ", ".join(record.tags)
        out.append(item)
    return out


# --- documents and answers ------------------------------------------------------------------


async def bibliographic_of(client: Any, document: Any) -> Bibliographic | None:
    """The stored record of a document; for a PDF ingested before records existed, read
    from its stored file (not stored: reads never write)."""
    # read by the client (``HaikuRAG.bibliographic_record``): this module never imports
    # pdf_metadata, which builds its records from this one's types
    record: Bibliographic | None = await client.bibliographic_record(document)
    return record


async def cited_records(client: Any, citations: Iterable[Any]) -> list[Bibliographic]:
    """One record per document an answer cites (anything with ``document_id``: citations,
    search results), in order of first citation; documents without one get a title-only
    record so every cited source is listed."""
    records: list[Bibliographic] = []
    seen: set[str] = set()
    for citation in citations:
        document_id = citation.document_id
        if document_id in seen:
            continue
        seen.add(document_id)
        document = await client.get_document(document_id)
        record = await bibliographic_of(client, document)
        records.append(record or Bibliographic(title=document.display_name))
    return records


async def bibliography_of_answer(client: Any, citations: Iterable[Any], format: str = "bibtex") -> str:
    """The bibliography of an answer's cited sources: ``"bibtex"`` or ``"csl-json"``."""
    records = await cited_records(client, citations)
    if format == "bibtex":
        return to_bibtex(records)
    if format in ("csl-json", "csl"):
        return json.dumps(to_csl_json(records), indent=2, ensure_ascii=False)
    raise ValueError(f"unknown bibliography format {format!r} (bibtex or csl-json)")
