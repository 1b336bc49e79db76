"""Bibliographic columns: a year, authors, title, venue or DOI answered from the document's record.

The library already keeps a bibliographic record per document (``haiku.rag.bibliography``:
``document.metadata["bibliographic"]``, from Zotero, the PDF's first page or Info dictionary, or
edited by a person). A column that asks for one of its fields ("Year of publication", "Authors",
"Who wrote this document?", "DOI") is answered from it, in every answer mode, instead of hoping a
passage's sentence names "year" (the year of a paper is on its title page, in its header, not in
a sentence about years; the years a model reads in its passages are mostly its references').

The cell says where its value comes from (``mode == "record"``, the record's source in its
reasons) and cites where the document itself names it: the first line or sentence of its first
pages holding the value (never a reference-list entry, never another document), the highlight
narrowed to that line. A value its first pages do not name stays the record's, and is *low
confidence* unless a person or Zotero gave the record (or an online lookup confirmed it): a
year read from a PDF's metadata may be the file's, not the paper's. Without the field (no
record, or a record without a year) the column is answered as any other.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Literal

from haiku.rag.extraction.models import Cell, Column

if TYPE_CHECKING:
    from haiku.rag.bibliography import Bibliographic
    from haiku.rag.citations import Citation
    from haiku.rag.client import HaikuRAG
    from haiku.rag.store.models import Chunk, Document

RecordField = Literal["year", "authors", "title", "venue", "doi"]

# the pages a document names its own year, authors, title, venue or DOI on
FIRST_PAGES = 2
FIRST_ITEMS = 400  # items read from the start at most (a first page holds far fewer)
MAX_AUTHORS = 12  # more are "… et al."

# a column's name that asks for a field, as a person labels it (folded, punctuation dropped)
_NAMES: dict[RecordField, set[str]] = {
    "year": {
        "year", "year of publication", "publication year", "year published", "published",
        "date of publication", "publication date", "date published", "pub year", "publication",
    },
    "authors": {"author", "authors", "author s", "authors names", "author names", "first author", "by"},
    "title": {"title", "paper title", "document title", "article title", "full title"},
    "venue": {"venue", "journal", "publication venue", "published in", "journal or conference", "conference"},
    "doi": {"doi", "dois"},
}  # fmt: skip
# a question that asks for a field of the document itself
_QUESTIONS: dict[RecordField, re.Pattern[str]] = {
    "year": re.compile(
        r"\b(?:which|what) year\b[^?]*\b(?:published|publication|issued|appeared|released|dated)\b"
        r"|\bwhen was (?:this|the|it)\b[^?]*\b(?:published|issued|released)\b"
        r"|\b(?:year|date) of (?:its |this document's |the document's )?publication\b",
        re.IGNORECASE,
    ),
    "authors": re.compile(
        r"\bwho (?:wrote|authored|issued|published)\b|\bwho (?:are|is|were|was) (?:the|its) authors?\b"
        r"|\b(?:list|name) (?:the|its) authors\b|\bwhat are the authors'? names\b",
        re.IGNORECASE,
    ),
    "title": re.compile(r"\bwhat is (?:the|its) (?:full )?title\b|\b(?:the|its) title of (?:this|the) ", re.IGNORECASE),
    "venue": re.compile(
        r"\b(?:which|what|in what) (?:journal|venue|conference)\b|\bwhere was (?:this|the|it)\b[^?]*\bpublished\b",
        re.IGNORECASE,
    ),
    "doi": re.compile(r"\bdoi\b", re.IGNORECASE),
}
_FIELD_TYPES: dict[RecordField, set[str]] = {
    "year": {"text", "number"},
    "authors": {"text"},
    "title": {"text"},
    "venue": {"text"},
    "doi": {"text"},
}
FIELD_NAMES: dict[RecordField, str] = {
    "year": "year", "authors": "authors", "title": "title", "venue": "venue", "doi": "DOI",
}  # fmt: skip
# where a record came from, as a person reads it
_SOURCES = {
    "zotero": "imported from Zotero",
    "user": "edited by hand",
    "first-page": "read from the PDF's first page",
    "pdf-info": "read from the PDF's metadata",
}
# a record a person (or Zotero, or an online lookup) vouches for: its value stands even where the
# document's first pages do not name it
_TRUSTED = {"zotero", "user"}

FROM_RECORD = "from the library's bibliographic record ({source})"
NAMED_ON_PAGE = "the document names it on {page}"
NOT_ON_FIRST_PAGES = "its first pages do not name it (references not counted)"


_NOT_LETTER_BEFORE = r"(?<![^\W\d_])"
_NOT_LETTER_AFTER = r"(?![^\W\d_])"


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return " ".join(re.sub(r"[^\w]+", " ", text.casefold()).split())


def record_field(column: Column) -> RecordField | None:
    """The bibliographic field ``column`` asks for, or None. A column with a question is read by
    its question alone ("Year" asking "Which year was the data collected?" is no record field);
    one without, by its name."""
    field: RecordField | None = None
    if column.question:
        for name, pattern in _QUESTIONS.items():
            if pattern.search(column.question):
                field = name
                break
    else:
        folded = _fold(column.name)
        field = next((name for name, labels in _NAMES.items() if folded in labels), None)
    if field is None or column.type not in _FIELD_TYPES[field]:
        return None
    return field


def record_value(record: Bibliographic, field: RecordField) -> str | None:
    """The record's value for ``field`` as a cell shows it, or None when it has none."""
    if field == "year":
        year = record.year
        if year is None and record.date and re.match(r"\d{4}", record.date):
            year = int(record.date[:4])
        return str(year) if year else None
    if field == "authors":
        names = [c.display for c in record.authors if c.display]
        if not names:
            return None
        shown = ", ".join(names[:MAX_AUTHORS])
        return shown + (" et al." if len(names) > MAX_AUTHORS else "")
    value = {"title": record.title, "venue": record.venue, "doi": record.doi}[field]
    return " ".join(value.split()) if value and value.strip() else None


def source_label(record: Bibliographic) -> str:
    """Where the record came from, in words ("read from the PDF's first page", "edited by
    hand", "read from the PDF's first page, confirmed by crossref")."""
    base, _, looked_up = record.source.partition("+")
    label = _SOURCES.get(base, base or "unknown")
    return f"{label}, confirmed by {looked_up}" if looked_up else label


def trusted(record: Bibliographic) -> bool:
    base, _, looked_up = record.source.partition("+")
    return base in _TRUSTED or bool(looked_up)


def _needles(record: Bibliographic, field: RecordField, value: str) -> list[re.Pattern[str]]:
    """What a line of the document must hold to name the value (folded text)."""
    if field == "year":
        return [re.compile(rf"(?<![\w.]){value}(?![\w]|\.\d)")]
    if field == "authors":
        families = [_fold(c.family) for c in record.authors[:3] if _fold(c.family)]
        # letters around it end the name, not digits or marks: "Shen1", "Aligon∗" name Shen, Aligon
        return [re.compile(rf"{_NOT_LETTER_BEFORE}{re.escape(f)}{_NOT_LETTER_AFTER}") for f in families[:1]]
    folded = _fold(value)
    if not folded:
        return []
    if field == "title":  # a long title wraps: its first words are enough
        folded = " ".join(folded.split()[:6])
    if field == "doi":
        return [re.compile(rf"(?<![\w.]){re.escape(folded)}(?![\w])")]
    return [re.compile(rf"{_NOT_LETTER_BEFORE}{re.escape(folded)}{_NOT_LETTER_AFTER}")]


def _naming_sentence(text: str, needles: list[re.Pattern[str]]) -> str | None:
    """The first sentence of an item's text naming the value."""
    from haiku.rag.citations import split_sentences

    for start, end in split_sentences(text) or [(0, len(text))]:
        sentence = " ".join(text[start:end].split()).lstrip("#• ").strip()
        if sentence and all(n.search(_fold(sentence)) for n in needles):
            return sentence
    return None


async def _named_where(
    client: HaikuRAG, document: Document, needles: list[re.Pattern[str]]
) -> tuple[str, Citation] | None:
    """The first sentence of the document's first pages naming the value, and its citation:
    the chunk holding its item (a title or heading: the chunk under it), the item's boxes the
    strong highlight. The reference list and its entries are never read."""
    from haiku.rag.citations import Citation, printed_labels
    from haiku.rag.extraction.values import REFERENCE_ENTRY, is_references_heading

    items = await client.get_items(document, start=0, stop=FIRST_ITEMS)
    chunks: list[Chunk] | None = None
    for item in items:
        pages = sorted({b.page for b in item.boxes} or set(item.page_numbers))
        if pages and pages[0] > FIRST_PAGES:
            break  # items come in reading order
        text = item.text.strip()
        if is_references_heading(text):
            break  # the reference list: its years and names are other works'
        if not text or REFERENCE_ENTRY.match(text):
            continue
        sentence = _naming_sentence(text, needles)
        if sentence is None:
            continue
        chunks = chunks if chunks is not None else await client.get_chunks(document)
        chunk = next((c for c in chunks if item.self_ref in c.doc_item_refs), None) or next(
            (c for c in chunks if text in c.headings), None
        )  # a title or heading is in no chunk's text: the chunk under it
        if chunk is None or not item.boxes:
            continue
        citation = Citation(
            index=1, chunk_id=chunk.id, chunk_ids=[chunk.id], document_id=document.id,
            document_uri=document.uri, document_title=document.title, content=chunk.content,
            headings=chunk.headings, page_numbers=pages, boxes=list(item.boxes),
            context_boxes=[b for b in chunk.boxes if b not in item.boxes],
            doc_item_refs=chunk.doc_item_refs,
            page_labels=printed_labels(document.metadata, [*pages, *(b.page for b in chunk.boxes)]),
        )  # fmt: skip
        return sentence, citation
    return None


async def record_cell(client: HaikuRAG, document_id: str, column: Column) -> Cell | None:
    """The cell of a bibliographic column from the row's record, cited where the document's
    first pages name the value; None when the column asks for no record field or the record
    has none (the column is then answered as any other)."""
    from haiku.rag.store.documents import now_iso

    field = record_field(column)
    if field is None:
        return None
    document = await client.get_document(document_id)
    record = await client.bibliographic_record(document)
    value = record_value(record, field) if record is not None else None
    if record is None or value is None:
        return None
    reasons = [FROM_RECORD.format(source=source_label(record))]
    needles = _needles(record, field, value)
    named = await _named_where(client, document, needles) if needles else None
    quote, citations = (named[0], [named[1]]) if named is not None else ("", [])
    number = float(value) if field == "year" and column.type == "number" else None
    cell = Cell(
        document_id=document_id, column_id=column.id, value=value, answer=value, number=number,
        quote=quote, citations=citations, mode="record", question=column.prompt, updated_at=now_iso(),
        reasons=reasons,
    )  # fmt: skip
    if citations:
        cell.reasons.append(NAMED_ON_PAGE.format(page=cell.first_page))
        return cell
    cell.reasons.append(NOT_ON_FIRST_PAGES)
    if not trusted(record):
        cell.status = "low_confidence"
    return cell
