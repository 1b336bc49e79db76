"""Export: Markdown with citations, and the cited pages as PNG images with the highlight."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pymupdf
import pytest
from capabilities.scripting import answer, cite_top, search

from app.chat_helpers import build_library
from haiku.rag.answering import AnswerOptions, Conversation
from haiku.rag.answering import answer as answer_question
from haiku.rag.client import HaikuRAG
from haiku.rag.pages import HIGHLIGHT_STYLE
from haiku_desk.export import export_answer, export_conversation
from haiku_desk.services.conversations import ConversationRecord, Turn


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_library(tmp_path_factory.mktemp("export-library"))


@pytest.fixture(scope="module")
def client(built) -> Iterator[HaikuRAG]:
    client = HaikuRAG(built.db_path, built.config, read_only=True)
    yield client
    client.close()


async def cited_turn(client, question: str, query: str) -> Turn:
    from app.chat_helpers import StreamingScript

    script = StreamingScript().play(search(query), cite_top(1), answer("Kerosene ran short."))
    result = await answer_question(client, question, Conversation(), AnswerOptions(), model=script.model)
    return Turn(
        question=question,
        answer=result.text,
        citations=list(result.citations),
        grounding=result.grounding,
    )


def highlighted_pixels(png: bytes) -> int:
    """How many pixels carry the strong match highlight colour (blended over white paper)."""
    pixmap = pymupdf.Pixmap(png)
    pixels = np.frombuffer(pixmap.samples, np.uint8).reshape(pixmap.height, pixmap.width, -1)[
        ..., :3
    ]
    color, alpha = HIGHLIGHT_STYLE["match"]
    over_white = np.array(color, np.float32) * alpha + 255 * (1 - alpha)
    return int((np.abs(pixels.astype(np.float32) - over_white).max(axis=2) < 6).sum())


async def test_an_answer_exports_to_markdown_with_its_cited_pages(client, built, tmp_path):
    turn = await cited_turn(client, "Why were the night convoys delayed?", "kerosene shortage")
    (citation,) = turn.citations
    path = await export_answer(turn, client, tmp_path / "out")

    text = path.read_text()
    assert path.name == "why-were-the-night-convoys-delayed.md"
    assert text.startswith("# Why were the night convoys delayed?")
    assert "Kerosene ran short." in text and "*Grounded" in text
    assert f"1. **{citation.document_title} — " in text
    assert "kerosene" in text.split("### Sources")[1].lower()  # the excerpt nears the answer
    links = re.findall(r"!\[Source 1, page (\d+)\]\(([^)]+)\)", text)
    assert [int(page) for page, _ in links] == citation.page_numbers
    discussion_page = built.report.block("p_discussion").page
    # the cited passage's own page, not every page of the section widened around it
    assert citation.page_numbers == [discussion_page]
    for page, link in links:
        png = (path.parent / link).read_bytes()
        assert png.startswith(b"\x89PNG")
        if int(page) == discussion_page:
            assert highlighted_pixels(png) > 500  # the cited passage is painted on its page


async def test_a_conversation_exports_every_answer_and_search_only_turns_too(client, tmp_path):
    first = await cited_turn(client, "Why were the convoys late?", "kerosene shortage")
    second = Turn(question="Hello", answer="Hi! Ask me about your library.")
    record = ConversationRecord(title="Convoys", turns=[first, second])
    path = await export_conversation(record, client, tmp_path)
    text = path.read_text()
    assert path.name == "convoys.md" and text.startswith("# Convoys")
    assert "## Why were the convoys late?" in text and "## Hello" in text
    assert "*Missing: the answer declared no evidence.*" in text
    assert sorted(p.name for p in (tmp_path / "convoys-pages").iterdir())


async def test_an_export_drops_stray_emphasis_and_marks_a_source_removed_from_the_library(client, tmp_path):
    """Tester 16:37: the exported answer kept a document's stray '**' (a Markdown viewer made
    the rest of the answer bold), and the source of a document deleted since was not marked."""
    turn = await cited_turn(client, "How many checks?", "kerosene shortage")
    (citation,) = turn.citations
    gone = citation.model_copy(
        update={"index": 2, "document_id": "0" * 32, "chunk_id": "gone", "document_title": "Beaver notes"}
    )
    turn = turn.model_copy(
        update={"answer": "According to the library: **Multiple (multiple types) [1] [2].", "citations": [citation, gone]}
    )
    path = await export_conversation(ConversationRecord(title="Checks", turns=[turn]), client, tmp_path)
    text = path.read_text()
    assert "According to the library: Multiple (multiple types) [1] [2]." in text  # no stray **
    sources = text.split("### Sources", 1)[1]
    first, second = (line for line in sources.splitlines() if re.match(r"\d\. \*\*", line))
    assert "removed from the library" not in first
    assert second.startswith("2. **Beaver notes") and second.endswith("(removed from the library)**")
    references = text.split("## References", 1)[1]
    assert "- Beaver notes. (removed from the library)" in references
    assert f"- {citation.document_title}." in references and references.count("removed") == 1


def test_a_source_with_authors_names_its_page_once():
    """Tester 16:37: 'Gal et al., 2009, p. 11 — Trace-based… — 7. Evaluation — p. 11': the
    author–year label holds the page; the title and headings follow without it again."""
    from haiku.rag.bibliography import edited_record
    from haiku.rag.citations import Box, Citation
    from haiku_desk.export import turn_markdown

    citation = Citation(
        index=1, chunk_id="c", document_id="d", document_uri="file:///tracemonkey.pdf",
        document_title="Trace-based Just-in-Time Type Specialization", content="Traces record loops.",
        headings=["7. Evaluation"], page_numbers=[11], boxes=[Box(11, 10, 10, 100, 20)],
    )  # fmt: skip
    record = edited_record(None, title=None, authors="Gal, Andreas\nEich, Brendan", year="2009", venue=None, doi=None)
    turn = Turn(question="What do traces record?", answer="Loops [1].", citations=[citation], grounding="grounded")
    (line,) = [line for line in turn_markdown(turn, {}, {"d": record}) if line.startswith("1. ")]
    assert line == "1. **Gal and Eich, 2009, p. 11 — Trace-based Just-in-Time Type Specialization — 7. Evaluation**"
