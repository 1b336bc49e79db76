"""One cell: its column's question answered from its row's document alone.

The question goes through ``haiku.rag.answering`` with the scope set to the one document
(``AnswerOptions.document_ids``), in whichever mode: a tool-calling model searches and cites
within the document, a model without tools reads passages the library retrieved from it, and
without a model the best passage is the cell (marked ``search-only``). ``cell_from_answer``
then applies the cell's own rules on top of the engine's: a citation naming another document
is refused (dropped, the cell marked low confidence), the value is read by the column's type,
the quote is a sentence of the cited text, and the support check (``answering.support``) marks
a value its cited text does not hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from haiku.rag.extraction.models import Cell, Column
from haiku.rag.extraction.values import (
    best_quote,
    names_words,
    own_citations,
    plain_text,
    quote_in,
    read_category,
    read_number,
    read_yes_no,
    says_not_found,
    search_candidates,
    search_value,
    short_value,
    telling_words,
    the_only_number,
    words_found,
)

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from haiku.rag.answering.events import Answered
    from haiku.rag.answering.options import AnswerMode
    from haiku.rag.client import HaikuRAG

# search-only: how many passages are looked at; the first (best ranked) is the cell
SEARCH_PASSAGES = 3
# search-only: how many candidate sentences or rows are tried before the cell is not found
SEARCH_TRIES = 8
# below this share of the value's words found in its cited text, a text value is low confidence
MIN_WORDS_FOUND = 0.5

REFUSED_OTHER_DOCUMENT = "a citation to another document was refused"
NOT_IN_DOCUMENT = "not found in this document"
NO_CITATION = "the answer cites nothing in this document"
NOT_IN_CITED_TEXT = "the value is not in its cited text"
PARTLY_IN_CITED_TEXT = "part of the answer is not in its cited text"
FEW_WORDS_IN_CITED_TEXT = "few of the value's words are in its cited text"
NO_NUMBER = "the answer holds no number"
NO_YES_NO = "the answer is not yes, no or unclear"
NO_CATEGORY = "the answer is not one of the categories"
BEST_PASSAGE = "best passage by search (no model read it)"
NO_FITTING_PASSAGE = "no sentence or table row of the passages found answers it"
# a search-only cell's reason when no text of the document (as stored: a PDF whose text layer is
# unreadable names nothing) holds the column's words: "the document's text never names …"
NOT_NAMED = "the document's text"


@dataclass(frozen=True)
class FillOptions:
    """How cells are answered: the answer mode and the model (default: the configured one)."""

    mode: AnswerMode = "auto"
    model: Model | None = None
    model_settings: dict[str, Any] | None = None
    supports_tools: bool | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("auto", "tools", "fallback", "search-only"):
            raise ValueError(
                f"mode must be 'auto', 'tools', 'fallback' or 'search-only', not {self.mode!r}"
            )


async def answer_cell(
    client: HaikuRAG, document_id: str, column: Column, options: FillOptions | None = None
) -> Cell:
    """Answer ``column`` from document ``document_id`` alone (nothing is stored here)."""
    from haiku.rag.answering.options import AnswerOptions
    from haiku.rag.answering.run import answer
    from haiku.rag.extraction.record import record_cell

    options = options or FillOptions()
    # a year, authors, title, venue or DOI column: the row's bibliographic record, in any mode
    from_record = await record_cell(client, document_id, column)
    if from_record is not None:
        return from_record
    prompt = column.prompt
    answered = await answer(
        client,
        prompt,
        options=AnswerOptions(
            mode=options.mode, document_ids=(document_id,), search_limit=SEARCH_PASSAGES
        ),
        model=options.model,
        model_settings=options.model_settings,
        supports_tools=options.supports_tools,
    )
    if answered.mode != "search-only":
        return await pin_quote(client, cell_from_answer(answered, document_id, column))
    # search-only: the first candidate whose citation can highlight it (a unit of the chunk
    # the citation highlights, or one of the context the quote's item is then pinned to)
    own, _ = own_citations(answered.citations, document_id)
    number = column.type == "number"
    for unit, index, in_chunk in search_candidates(own, column.asked, number=number)[:SEARCH_TRIES]:
        cell = cell_from_answer(answered, document_id, column, search=(unit, index))
        pinned = await pin_quote(client, cell)
        if in_chunk or pinned.citations[0].boxes != cell.citations[0].boxes:
            return pinned
    cell = cell_from_answer(answered, document_id, column, search=("", -1))
    why = await why_not_found(client, document_id, column)
    return cell.model_copy(update={"reasons": [why, *cell.reasons[1:]]})


def _quoted(words: list[str]) -> str:
    shown = [f"“{w}”" for w in words]
    if len(shown) == 1:
        return f"never names {shown[0]}"
    if len(shown) == 2:
        return f"names neither {shown[0]} nor {shown[1]}"
    return "names none of " + ", ".join(shown)


async def why_not_found(client: HaikuRAG, document_id: str, column: Column) -> str:
    """Why no sentence of a search-only cell's passages is its value, so "absent" differs from
    "not matched": the document's text never names the column's words (no chunk, no heading holds
    them), or it names them (on which pages) but in no sentence of the passages found that can
    be a value (a title, heading, caption, reference; for a number, one without a figure)."""
    from haiku.rag.citations import pages_label, printed_labels, tables_as_text

    words = telling_words(column.asked)
    if not words:
        return NO_FITTING_PASSAGE
    document = await client.get_document(document_id)
    pages: set[int] = set()
    for chunk in await client.get_chunks(document):
        if names_words(tables_as_text(chunk.content), column.asked) or any(
            names_words(h, column.asked) for h in chunk.headings
        ):
            pages.update({b.page for b in chunk.boxes} or set(chunk.page_numbers))
    if not pages:
        return f"{NOT_NAMED} {_quoted(words)}"
    # the pages as printed ("pp. 22–23"), the first six
    where = pages_label(sorted(pages)[:6], printed_labels(document.metadata)) + (" …" if len(pages) > 6 else "")
    what = " or ".join(f"“{w}”" for w in words[:3])
    kind = "sentence stating a figure" if column.type == "number" else "sentence"
    return (
        f"{what} is on {where} of this document, but in no {kind} of its best passages "
        "that can be the value (titles, headings, captions and references are not)"
    )


async def pin_quote(client: HaikuRAG, cell: Cell) -> Cell:
    """The cell with its quote's citation narrowed to the item (paragraph, table cell run,
    list item) the quote was taken from: its boxes become the strong highlight and its page the
    one the cell names, the rest of the passage stays as faint context. A passage spanning two
    pages so cites the page the quote is on. Unchanged when no item holds the quote."""
    if not cell.quote or not cell.citations:
        return cell
    for n, citation in enumerate(cell.citations):
        refs = [r for r in citation.doc_item_refs if not r.startswith("#/pictures/")]
        if not refs or not quote_in(cell.quote, citation.content):
            continue
        items = await client.get_items_near(citation.document_id, refs[0], len(refs) + 1)
        wanted = set(refs)
        holding = [
            i for i in items if i.self_ref in wanted and i.boxes and quote_in(cell.quote, i.text)
        ]
        if not holding:
            holding = [
                i for i in items if i.self_ref in wanted and i.boxes and i.text.strip()
                and quote_in(i.text, cell.quote)
            ]  # fmt: skip  # a quote spanning several items: each of them
        if not holding:
            return cell
        boxes = [b for item in holding for b in item.boxes]
        context = [b for b in [*citation.boxes, *citation.context_boxes] if b not in boxes]
        pages = sorted({b.page for b in boxes})
        pinned = citation.model_copy(
            update={"boxes": boxes, "context_boxes": context, "page_numbers": pages}
        )
        citations = [*cell.citations]
        citations[n] = pinned
        # the quote's citation first: it is the one a click opens
        citations.insert(0, citations.pop(n))
        return cell.model_copy(update={"citations": citations})
    return cell


def cell_from_answer(
    answered: Answered, document_id: str, column: Column, *, search: tuple[str, int] | None = None
) -> Cell:
    """The cell an answer makes for ``document_id`` and ``column`` (see the module's rules).
    ``search``: a search-only cell's value and its citation's index among the row's own
    citations (default: the best of ``search_candidates``; index -1: not found)."""
    from haiku.rag.answering.support import check_answer, citation_name, covered_text
    from haiku.rag.store.documents import now_iso

    own, foreign = own_citations(answered.citations, document_id)
    reasons = [REFUSED_OTHER_DOCUMENT] if foreign else []
    base: dict[str, Any] = {
        "document_id": document_id, "column_id": column.id, "mode": answered.mode,
        "question": column.prompt, "updated_at": now_iso(),
    }  # fmt: skip

    if answered.mode == "search-only":
        if not own:
            return Cell(**base, status="not_found", reasons=[NOT_IN_DOCUMENT, *reasons])
        # the value is a sentence or table row of the chunk its citation highlights, one that
        # names the column's words (and, for a number, states a figure): never a heading, the
        # title, a caption, a reference or boilerplate; none fits: not found, not a wrong value
        quote, index = search or search_value(own, column.asked, number=column.type == "number")
        if index < 0:
            return Cell(**base, status="not_found", reasons=[NO_FITTING_PASSAGE, *reasons])
        best = own[index]
        # no model read it: a figure only when the sentence holds just one
        number, unit = the_only_number(quote) if column.type == "number" else (None, None)
        return Cell(
            **base, value=quote, answer=quote, quote=quote, number=number, unit=unit,
            citations=[best], status="low_confidence" if reasons else "grounded",
            reasons=[BEST_PASSAGE, *reasons],
        )  # fmt: skip

    text = plain_text(answered.text)
    if says_not_found(text) or answered.basis == "no-documents":
        return Cell(**base, answer=text, status="not_found", reasons=[NOT_IN_DOCUMENT, *reasons])

    value, number, unit = short_value(text), None, None
    if column.type == "number":
        number, unit = read_number(text)
        if number is None:
            reasons.append(NO_NUMBER)
    elif column.type == "yes-no":
        read = read_yes_no(text)
        if read is None:
            reasons.append(NO_YES_NO)
        else:
            value = read
    elif column.type == "category":
        category = read_category(text, column.categories)
        if category is None:
            reasons.append(NO_CATEGORY)
        else:
            value = category

    # a model without tools read each passage whole under its [n] (the chunk it was found by
    # and the context around it): its citation covers that passage, as answering's own check
    # has it; a tools answer cites one chunk of a widened passage, each shown under its own id
    whole = answered.mode == "fallback"
    if not own:
        reasons.append(NO_CITATION)
    else:
        # the answer against its own citations only (a refused one supports nothing)
        support = check_answer(
            answered.text,
            {c.index: c.content if whole else covered_text(c) for c in own},
            names={c.index: citation_name(c) for c in own},
            grounding=answered.grounding,
            question=column.asked,
        )
        if support.verdict == "cited-unsupported":
            reasons.append(NOT_IN_CITED_TEXT)
        elif support.verdict == "partly-supported":
            reasons.append(PARTLY_IN_CITED_TEXT)
        if column.type == "text" and words_found(text, own, passages=whole) < MIN_WORDS_FOUND:
            reasons.append(FEW_WORDS_IN_CITED_TEXT)

    quote = best_quote(own, text, column.asked, passages=whole)
    return Cell(
        **base, value=value, answer=text, number=number, unit=unit, quote=quote,
        citations=own, status="low_confidence" if reasons else "grounded", reasons=reasons,
    )  # fmt: skip
