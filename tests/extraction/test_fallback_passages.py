"""A model without tools reads each passage whole under its ``[n]``: the chunk the search found
and the context the expansion added around it. A cell it answers from that context is held
against the passage it read (as answering's own support check does), not only against the
chunk the passage was found by; a tools answer, which cites one chunk of a widened passage,
each shown under its own id, is still held against that chunk."""

from __future__ import annotations

import pytest

import haiku.rag.extraction as X
from haiku.rag.answering.events import Answered, TokenFigures
from haiku.rag.citations import Citation

TITLE_CHUNK = "Lantern Otters of the Quartz Rivers"
CONTEXT = (
    "We observed the otters over two winters along three rivers. "
    "The survey enrolled 120 participants from four riverside villages, who logged every sighting."
)
FACT = "The survey enrolled 120 participants from four riverside villages, who logged every sighting."


def _cell(mode: str, column: X.Column) -> X.Cell:
    citation = Citation(
        index=1, chunk_id="a" * 32, document_id="row-doc", document_uri="file:///otters.pdf",
        document_title=TITLE_CHUNK, content=f"{TITLE_CHUNK}\n\n{CONTEXT}", matched_text=TITLE_CHUNK,
        headings=[], page_numbers=[1],
    )  # fmt: skip
    answered = Answered(
        text=f"{FACT} [1]", citations=(citation,), grounding="grounded", basis="search-results",
        mode=mode, tokens=TokenFigures(),
    )  # fmt: skip
    return X.cell_from_answer(answered, "row-doc", column.model_copy(update={"id": "c1"}))


@pytest.mark.parametrize(
    "column",
    [
        X.Column(name="Participants", question="How many participants were enrolled?", type="number"),
        X.Column(name="Who took part", question="Who took part in the survey?"),
    ],
)
def test_a_fallback_cell_from_the_context_of_its_passage_is_grounded_and_quotes_it(column: X.Column) -> None:
    cell = _cell("fallback", column)
    assert cell.status == "grounded", cell.reasons
    assert cell.quote == FACT  # the sentence the model read, not the title it was found by


def test_a_tools_cell_is_still_held_against_the_one_chunk_it_cites() -> None:
    cell = _cell("tools", X.Column(name="Participants", question="How many participants were enrolled?", type="number"))
    assert cell.status == "low_confidence" and cell.reasons, cell
