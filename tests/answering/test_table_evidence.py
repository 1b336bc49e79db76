"""The OTSL question of issue 29, end to end through the public API: a one-page arXiv-style
page with a results table (OTSL vs HTML: encoder/decoder layers, language, TEDs simple/complex/
all, mAP, inference time) is ingested; asked "How much faster is inference with OTSL than with
HTML?", a scripted model that quotes the passage it is given sees the inference times with
their row labels and the column header, and the citation highlights the cited rows and the
header, not the whole table. Both without tools (the fallback) and with them."""

from __future__ import annotations

import asyncio

import pytest
from capabilities.scripting import ScriptedModel, answer, cite, search
from pdf_factory import make_table_pdf
from pydantic_ai.messages import ModelResponse, TextPart

from haiku.rag import answering
from haiku.rag.answering import AnswerOptions
from haiku.rag.client import HaikuRAG
from haiku.rag.config import load_config

QUESTION = "How much faster is inference with OTSL than with HTML?"
HEADER = (
    "| # enc-layers | # dec-layers | Language | TEDs simple | TEDs complex | TEDs all "
    "| mAP (0.75) | Inference time (secs) |"
)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("otsl")
    config = load_config()
    config.storage.data_dir = root / "data"
    config.embeddings.threads = 2
    layout, table = make_table_pdf(root / "otsl.pdf", "spanning")
    db = root / "otsl.lancedb"

    async def ingest() -> None:
        async with HaikuRAG(db, config, create=True) as client:
            outcome = await client.ingest_file(layout.path)
            assert outcome.status == "ingested", outcome.reason

    asyncio.run(ingest())
    return db, config, table


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _on(box, rect) -> bool:
    return min(box.x1, rect[2]) - max(box.x0, rect[0]) > 1 and min(box.y1, rect[3]) - max(box.y0, rect[1]) > 1


def _check_highlight(citation, chunk_text: str, table) -> None:
    """The strong highlight is the header and exactly the rows the cited chunk holds."""
    lines = chunk_text.splitlines()
    held = [i for i, row in enumerate(table.rows) if _row(row) in lines]
    assert held, "the cited chunk holds none of the table's rows"
    assert any(_on(b, table.header_rect) for b in citation.boxes)  # the header is highlighted
    for index, rect in enumerate(table.row_rects):
        lit = any(_on(b, rect) for b in citation.boxes)
        assert lit == (index in held), f"row {index} highlighted: {lit}, cited: {index in held}"


async def test_without_tools_the_model_reads_the_times_beside_their_rows_and_header(library):
    db, config, table = library

    def quote(request):  # a model that quotes the first passage it is given, and cites it
        prompt = request.user_texts()[0]
        body = prompt.split("\n", 1)[1].split("\n\n---")[0]
        return ModelResponse(parts=[TextPart(f"{body} [1]")])

    script = ScriptedModel().play(quote)
    async with HaikuRAG(db, config, read_only=True) as client:
        done = await answering.answer(client, QUESTION, None, AnswerOptions(mode="fallback"), model=script.model)
    prompt = script.seen[0].user_texts()[0]
    # the first passage's lines, without the quoting marks passages are shown with
    first = [line.removeprefix(">").strip() for line in prompt.split("\n\n---")[0].splitlines()]
    assert HEADER in first
    for row in table.rows:  # all eight rows, each whole, under that header
        assert _row(row) in first[first.index(HEADER) :]
    assert "| 6 | 6 | HTML | 0.969 | 0.927 | 0.955 | 0.857 | 5.39 |" in done.text
    (citation,) = done.citations
    # [1] is the passage's best chunk; the table's rows it showed are lit (strong when the
    # best chunk is one of the table's, faint as the passage's context otherwise)
    lit = [*citation.boxes, *citation.context_boxes]
    for rect in [table.header_rect, *table.row_rects]:
        assert any(_on(b, rect) for b in lit)
    async with HaikuRAG(db, config, read_only=True) as client:
        cited = await client.get_chunk(citation.chunk_id)
    if "\n|-|" in cited.content:
        _check_highlight(citation, cited.content, table)


async def test_with_tools_the_cited_rows_and_header_are_what_is_highlighted(library):
    db, config, table = library
    async with HaikuRAG(db, config, read_only=True) as client:
        hits = await client.search("OTSL HTML inference time secs", limit=5)
        (hit,) = [h for h in hits if "table" in h.labels][:1]
        script = ScriptedModel().play(
            search("OTSL HTML inference time secs"),
            cite(hit.chunk_id),
            answer("OTSL decodes in 2.73 s where HTML takes 5.39 s [1]."),
        )
        done = await answering.answer(client, QUESTION, None, AnswerOptions(mode="tools"), model=script.model)
        cited = await client.get_chunk(hit.chunk_id)
    assert len([r for r in table.rows if _row(r) in cited.content.splitlines()]) < len(table.rows)
    returned = str(script.seen[1].last_return("rag_search").content)
    assert HEADER in returned and "| 6 | 6 | OTSL | 0.965 | 0.934 | 0.955 | 0.88 | 2.73 |" in returned
    (citation,) = done.citations
    assert citation.chunk_id == hit.chunk_id
    _check_highlight(citation, cited.content, table)


async def test_a_table_chunk_swept_in_as_a_neighbour_is_highlighted_by_its_own_rows(library):
    """Context expansion merges the table's chunks with the prose around the hit; citing one
    of those neighbours must light that chunk's own rows and the header (its stored boxes), not
    the whole table the doc item covers."""
    from haiku.rag.citations import Citation

    db, config, table = library
    async with HaikuRAG(db, config, read_only=True) as client:
        # the prose after the table is the hit; expansion sweeps the table's chunks in
        hits = await client.search("smaller representation faster to decode vocabulary", limit=1)
        expanded = await client.expand_context(hits)
        table_chunks = {}
        for result in expanded:
            for chunk_id in result.chunk_boxes:
                chunk = await client.get_chunk(chunk_id)
                if "\n|-|" in chunk.content:
                    table_chunks[chunk_id] = (result, chunk)
    neighbours = {
        cid: pair for cid, pair in table_chunks.items() if cid not in {h.chunk_id for h in hits}
    }
    assert neighbours, "no table chunk was swept in as a neighbour: the test shows nothing"
    for chunk_id, (result, chunk) in neighbours.items():
        citation = Citation.from_result(1, chunk_id, result)
        assert citation.boxes == chunk.boxes
        _check_highlight(citation, chunk.content, table)


async def test_a_cited_half_of_a_split_table_lights_the_other_half_as_context(library):
    """The table is split across two chunks; a hit on one of them is widened to a passage that
    shows the table whole (the model reads every row). Its citation lights its own rows
    strongly and the other chunk's rows as context, so every row the model read is lit (the
    other half was unlit: a no-tools answer quoting the passage's rows 5–8 showed nothing on
    the page for them)."""
    from haiku.rag.citations import Citation

    db, config, table = library
    async with HaikuRAG(db, config, read_only=True) as client:
        hits = await client.search("OTSL HTML inference time secs", limit=5)
        hit = next(h for h in hits if "table" in h.labels)
        (result,) = await client.expand_context([hit])
        cited = await client.get_chunk(hit.chunk_id)
    held = [row for row in table.rows if _row(row) in cited.content.splitlines()]
    assert 0 < len(held) < len(table.rows)  # the cited chunk is one half of the table
    assert all(_row(row) in result.content.splitlines() for row in table.rows)  # shown whole
    citation = Citation.from_result(1, hit.chunk_id, result)
    _check_highlight(citation, cited.content, table)  # strong: its own rows and the header
    lit = [*citation.boxes, *citation.context_boxes]
    for rect in [table.header_rect, *table.row_rects]:
        assert any(_on(b, rect) for b in lit)


async def test_search_only_lists_a_table_passage_as_words_never_as_pipes(library):
    """A person reads the search-only list: the table's rows come as "header: value" words
    (the model, elsewhere, still reads the Markdown table)."""
    db, config, table = library
    async with HaikuRAG(db, config, read_only=True) as client:
        question = "TEDs simple complex mAP inference time enc-layers dec-layers"
        done = await answering.answer(client, question, None, AnswerOptions(mode="search-only"))
    assert any("|-|" in (c.matched_text or c.content) for c in done.citations)
    assert "|" not in done.text
    assert "Inference time (secs): " in done.text
