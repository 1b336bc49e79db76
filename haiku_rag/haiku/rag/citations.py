"""Citations as hosts show them: the ``Citation`` type, page labels and the ``[n]`` markers.

``Citation`` and ``Box`` live here, low in the library: the capabilities register citations,
answering numbers them and hosts show them, all importing from this module (never the other
way).

The one definition of the answer-text marker (``[2]``, ``[1, 3]``): the no-tools fallback reads
the model's markers with it, answering renumbers them with it, and a host finds the sentences a
citation supports with it. Cheap to import (no Pydantic AI).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from haiku.rag.ingest.records import Box
from haiku.rag.ingest.table_markdown import ShownTable, passage_blocks, tables_as_text
from haiku.rag.printed_pages import (
    PAGE_LABELS_KEY,
    page_place,
    pages_label,
    printed_labels,
    roman_value,
)

if TYPE_CHECKING:
    from haiku.rag.store.models import SearchResult

__all__ = [
    "MARKER",
    "PAGE_LABELS_KEY",
    "PICTURE_REF_PREFIX",
    "Box",
    "Citation",
    "ShownTable",
    "cited_pages",
    "citing_text",
    "excerpt",
    "marker_numbers",
    "matched_pages",
    "matched_picture_refs",
    "opening_page",
    "page_place",
    "pages_label",
    "pages_to_render",
    "printed_labels",
    "passage_blocks",
    "renumber_markers",
    "roman_value",
    "snippet",
    "tables_as_text",
]

PICTURE_REF_PREFIX = "#/pictures/"


class Citation(BaseModel):
    """A registered citation: the passage the model saw, with what the app needs to show it.

    ``index`` is 1-based and stable for the conversation. ``boxes`` (PDF points, top-left
    origin, 1-based pages) outline the matched text and ``context_boxes`` the context around it.
    """

    index: int
    chunk_id: str
    chunk_ids: list[str] = Field(default_factory=list)
    document_id: str
    document_uri: str
    document_title: str | None = None
    content: str
    # the cited chunk's own text when ``content`` is a passage widened by context expansion
    # (a snippet for the host); None when ``content`` is that chunk's text alone
    matched_text: str | None = None
    headings: list[str] = Field(default_factory=list)
    page_numbers: list[int] = Field(default_factory=list)
    boxes: list[Box] = Field(default_factory=list)
    context_boxes: list[Box] = Field(default_factory=list)
    doc_item_refs: list[str] = Field(default_factory=list)
    picture_refs: list[str] = Field(default_factory=list)
    # the printed labels of the pages it shows, where they differ from the sheet number
    # ({36: "22"}; "" when the document has labels but this page's is unknown): what a person
    # cites. Pages (and boxes) stay sheet numbers: what the reader opens.
    page_labels: dict[int, str] = Field(default_factory=dict)

    @classmethod
    def from_result(cls, index: int, chunk_id: str, result: SearchResult) -> Citation:
        """The citation of ``chunk_id`` within ``result``.

        When expansion merged several chunks into ``result``, the cited chunk's own lines are
        the match and its merged neighbours become context, so the citation opens on the page
        of the text actually cited.
        """
        boxes, context_boxes = result.boxes, result.context_boxes
        own = result.chunk_boxes.get(chunk_id)
        if own:
            # the cited passage (a hit, or a neighbour expansion showed) is the strong highlight;
            # everything else the result showed is context
            boxes = own
            context_boxes = [b for b in [*result.boxes, *result.context_boxes] if b not in own]
        pages = {b.page for b in [*boxes, *context_boxes]} | set(result.page_numbers)
        return cls(
            index=index,
            chunk_id=chunk_id,
            chunk_ids=result.chunk_ids or [result.chunk_id],
            document_id=result.document_id,
            document_uri=result.document_uri,
            document_title=result.document_title,
            content=result.content,
            matched_text=result.chunk_texts.get(chunk_id),
            # the cited chunk's own path and pages, not those of the passage widened around it
            headings=result.chunk_headings.get(chunk_id, result.headings),
            page_numbers=result.chunk_pages.get(chunk_id, result.page_numbers),
            boxes=boxes,
            context_boxes=context_boxes,
            doc_item_refs=result.doc_item_refs,
            picture_refs=matched_picture_refs(result),
            page_labels=printed_labels(result.document_meta, pages),
        )


def matched_picture_refs(result: SearchResult) -> list[str]:
    """Pictures that are part of the hit itself; pictures swept in as context are not its evidence."""
    refs = result.matched_refs or result.doc_item_refs
    return [ref for ref in refs if ref.startswith(PICTURE_REF_PREFIX)]


def matched_pages(citation: Citation) -> list[int]:
    """The pages of the cited text itself (its strong boxes), else the passage's pages: what a
    citation's label names."""
    return sorted({b.page for b in citation.boxes}) or sorted(set(citation.page_numbers))


def cited_pages(citation: Citation) -> list[int]:
    """Every page a citation shows (its boxes' and its context's), else the passage's pages,
    else the first page: what a viewer pages through."""
    pages = {b.page for b in citation.boxes} | {b.page for b in citation.context_boxes}
    return sorted(pages or set(citation.page_numbers) or {1})


def opening_page(citation: Citation) -> int:
    """The page a citation opens on: the first page of the cited text itself, not of the
    context before it; without boxes of its own, the first page it shows. The one place this
    is decided (the citation panel and the pages it prefetches ask here)."""
    matched = sorted({b.page for b in citation.boxes})
    return matched[0] if matched else cited_pages(citation)[0]


def pages_to_render(matched: list[Box], context: list[Box], page_numbers: list[int]) -> list[int]:
    """The pages a citation shows: those its boxes lie on, else the passage's own pages."""
    pages = sorted({b.page for b in matched} | {b.page for b in context})
    return pages or sorted(set(page_numbers))


# "[2]" or "[1, 3]", with the whitespace before it (dropped along with a marker that names
# nothing, so "a claim [9]." reads "a claim.").
MARKER = re.compile(r"(\s*)\[(\d+(?:\s*,\s*\d+)*)\]")


def marker_numbers(match: re.Match[str]) -> list[int]:
    """The numbers one ``MARKER`` match names, in order."""
    return [int(n) for n in match.group(2).split(",")]


def renumber_markers(text: str, numbers: Mapping[int, int], *, drop_unknown: bool = False) -> str:
    """Each marker's numbers mapped through ``numbers``; a number not in it is kept, or dropped
    with ``drop_unknown`` (a marker left with no number disappears with its leading space)."""

    def replace(match: re.Match[str]) -> str:
        mapped: dict[int, None] = {}
        for n in marker_numbers(match):
            if n in numbers:
                mapped.setdefault(numbers[n], None)
            elif not drop_unknown:
                mapped.setdefault(n, None)
        if not mapped:
            return ""
        return f"{match.group(1)}[{', '.join(str(n) for n in mapped)}]"

    return MARKER.sub(replace, text)


_ABBREVIATIONS = {
    "inc", "corp", "co", "ltd", "no", "nos", "vs", "e.g", "i.e", "etc", "mr", "mrs", "ms", "dr",
    "st", "fig", "figs", "p", "pp", "u.s", "u.k", "jan", "feb", "mar", "apr", "jun", "jul", "aug",
    "sep", "sept", "oct", "nov", "dec", "approx", "al", "vol", "ed", "eds", "ch", "sec", "art",
}  # fmt: skip
_BREAK = re.compile(r"(?<=[.!?])[\"”’)]*\s+|\n+")
_LEADING_MARKERS = re.compile(r"(?:\s*\[\d+(?:\s*,\s*\d+)*\])+")
_MARKERS_ONLY = re.compile(r"^(?:\s*\[\d+(?:\s*,\s*\d+)*\][.,;:]?)+\s*$")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text``: breaks after ``.!?`` and at line ends,
    not after an abbreviation (``Inc.``, ``U.S.``, ``e.g.``) or a decimal point; a run of
    markers after a full stop (``… 2023. [1]``) belongs to the sentence before it."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _BREAK.finditer(text):
        piece = text[start : match.start()]
        if "\n" not in match.group(0):
            word = re.search(r"([\w.]+)\.[\"”’)]*$", piece)
            if word and word.group(1).casefold() in _ABBREVIATIONS:
                continue
            if word and re.fullmatch(r"(?:[A-Za-z]\.)*[A-Za-z]", word.group(1)):
                continue  # initials: J. R. R. Tolkien, U.S.A.
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    merged: list[tuple[int, int]] = []
    for s, e in spans:
        if not text[s:e].strip():
            continue
        if merged and _MARKERS_ONLY.match(text[s:e]):
            merged[-1] = (merged[-1][0], e)
            continue
        leading = _LEADING_MARKERS.match(text, s, e)
        if merged and leading:  # "… 2023. [1] The next …": the marker is the sentence before's
            merged[-1] = (merged[-1][0], leading.end())
            s = leading.end() + len(text[leading.end() : e]) - len(text[leading.end() : e].lstrip())
        merged.append((s, e))
    return merged


def citing_text(answer: str, number: int) -> str:
    """The sentences of ``answer`` that carry the marker ``[number]`` (alone or in a list): what
    the citation is meant to support, to centre its snippet on."""
    sentences = [answer[start:end] for start, end in split_sentences(answer)]
    found = [
        sentence
        for sentence in sentences
        if any(number in marker_numbers(m) for m in MARKER.finditer(sentence))
    ]
    return " ".join(dict.fromkeys(found))


SNIPPET_CHARS = 400


def excerpt(content: str, query: str = "", limit: int = SNIPPET_CHARS) -> str:
    """About ``limit`` characters of ``content`` where the most distinct words of ``query``
    (longer than three letters) meet: a passage widened to its section may begin far from what
    matched, and two claims citing one section should each see their own part of it."""
    text = " ".join(content.split())
    if len(text) <= limit:
        return text
    lowered = text.casefold()
    words = {w for w in re.findall(r"\w+", query.casefold()) if len(w) > 3}
    hits = sorted(m.start() for w in words for m in re.finditer(re.escape(w), lowered))
    start, best = 0, 0
    for hit in hits:  # each hit a quarter into the window; the earliest best window wins
        candidate = max(0, hit - limit // 4)
        window = lowered[candidate : candidate + limit]
        score = sum(1 for w in words if w in window)
        if score > best:
            start, best = candidate, score
    if start:
        start = text.rfind(" ", 0, start) + 1
    piece = text[start : start + limit].rsplit(" ", 1)[0]
    return ("…" if start else "") + piece + ("…" if start + len(piece) < len(text) else "")


def snippet(content: str, query: str = "", limit: int = SNIPPET_CHARS) -> str:
    """``excerpt`` for a person to read: a Markdown table's rows as "header: value; …" words
    (never raw pipes); what a model reads keeps its tables (``excerpt``)."""
    return excerpt(tables_as_text(content), query, limit)
