"""Figures as evidence, end to end through the public API (issue 14, "Done when"): a PDF with
captioned figures is ingested; a question about what a figure shows finds the figure's own
chunk; with vision on, the model receives the cited figure's image; with evidence compaction,
the next question's request still carries it."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from capabilities.scripting import ScriptedModel, answer, cite, search
from pydantic_ai.messages import BinaryContent, UserPromptPart

from haiku.rag import answering
from haiku.rag.answering import AnswerOptions, Conversation
from haiku.rag.client import HaikuRAG
from haiku.rag.config import load_config

HERON_CAPTION = "Figure 2: Heron colonies along the Marrow estuary"
HERON_REFERENCE = "As Figure 2 shows, the heron colonies moved north by eleven kilometres."
TIDE_CAPTION = "Figure 3: Tide gauge readings at Saltmere pier"


def _raster(width: int, height: int, tint: int) -> pymupdf.Pixmap:
    samples = bytes(
        channel for y in range(height) for x in range(width) for channel in (tint, x * 2 % 256, y * 3 % 256)
    )
    return pymupdf.Pixmap(pymupdf.csRGB, width, height, samples, False)


def make_figures_pdf(path: Path) -> dict[str, pymupdf.Rect]:
    """One A4 page: a paragraph that refers to Figure 2, the heron figure (a raster image
    with a vector label printed on it, "nesting sites") and its caption, another paragraph,
    the tide figure and its caption."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 80), "Estuary Survey 2020", fontsize=20, fontname="hebo")
    body = (
        "The survey counted waders at dawn on every second Sunday. " + HERON_REFERENCE
    )
    page.insert_textbox(pymupdf.Rect(72, 100, 523, 150), body, fontsize=11, fontname="helv")
    heron = pymupdf.Rect(72, 160, 352, 300)
    page.insert_image(heron, pixmap=_raster(140, 70, 40))
    page.insert_text((110, 235), "nesting sites", fontsize=10, fontname="helv")
    page.insert_text((72, 318), HERON_CAPTION, fontsize=9, fontname="helv")
    page.insert_textbox(
        pymupdf.Rect(72, 340, 523, 390),
        "Tides were read from the old gauge every hour; the readings are kept in the harbour office.",
        fontsize=11,
        fontname="helv",
    )
    tide = pymupdf.Rect(72, 400, 352, 540)
    page.insert_image(tide, pixmap=_raster(140, 70, 200))
    page.insert_text((72, 558), TIDE_CAPTION, fontsize=9, fontname="helv")
    doc.save(path)
    doc.close()
    return {"heron": heron, "tide": tide}


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("figures")
    config = load_config()
    config.storage.data_dir = root / "data"
    config.embeddings.threads = 2
    pdf = root / "survey.pdf"
    rects = make_figures_pdf(pdf)
    db = root / "figures.lancedb"

    async def ingest() -> None:
        async with HaikuRAG(db, config, create=True) as client:
            outcome = await client.ingest_file(pdf)
            assert outcome.status == "ingested", outcome.reason

    import asyncio

    asyncio.run(ingest())
    return db, config, rects


def _images(request) -> list[tuple[str, BinaryContent]]:
    """Each image the request carries, with the label just before it."""
    found = []
    for part in request.request_parts():
        if isinstance(part, UserPromptPart) and not isinstance(part.content, str):
            items = list(part.content)
            for label, item in zip(items, items[1:], strict=False):
                if isinstance(item, BinaryContent) and item.media_type == "image/png":
                    found.append((label if isinstance(label, str) else "", item))
    return found


async def test_a_question_about_what_a_figure_shows_finds_the_figures_chunk(library):
    db, config, rects = library
    async with HaikuRAG(db, config, read_only=True) as client:
        (hit, *_) = await client.search("where did the heron colonies move", limit=3)
        inside = await client.search("nesting sites", limit=3)
    assert hit.doc_item_refs[0].startswith("#/pictures/")
    assert HERON_CAPTION in hit.content and HERON_REFERENCE in hit.content
    assert "nesting sites" in hit.content  # the label printed inside the figure
    box = hit.boxes[0]
    heron = rects["heron"]
    assert (box.page, round(box.x0), round(box.y0), round(box.x1), round(box.y1)) == (
        1, heron.x0, heron.y0, heron.x1, heron.y1
    )
    assert any(r.chunk_id == hit.chunk_id for r in inside)
    # the tide figure has its own chunk, and it is not the heron's
    async with HaikuRAG(db, config, read_only=True) as client:
        (tide, *_) = await client.search("tide gauge readings Saltmere pier figure", limit=3)
    assert TIDE_CAPTION in tide.content and tide.chunk_id != hit.chunk_id
    assert tide.doc_item_refs[0].startswith("#/pictures/")


async def test_with_vision_the_model_sees_the_cited_figure_and_compaction_keeps_it(library):
    db, config, _ = library
    async with HaikuRAG(db, config, read_only=True) as client:
        (figure, *_) = await client.search("where did the heron colonies move", limit=3)
        options = AnswerOptions(vision=True, evidence_compaction=True)
        conversation = Conversation()
        first = ScriptedModel().play(
            search("where did the heron colonies move"),
            cite(figure.chunk_id),
            answer("North, by eleven kilometres [1]."),
        )
        done = await answering.answer(
            client, "Where did the herons go?", conversation, options, model=first.model
        )
        assert done.grounding == "grounded"
        assert [c.chunk_id for c in done.citations] == [figure.chunk_id]
        shown = _images(first.seen[1])  # both figures matched the search
        (heron,) = [image for label, image in shown if figure.doc_item_refs[0] in label]
        with pymupdf.open(stream=heron.data, filetype="png") as image:
            assert image[0].rect.width > 100  # the figure, cropped from its page

        second = ScriptedModel().play(answer("You are welcome."))
        await answering.answer(client, "Thanks!", conversation, options, model=second.model)
    # The next question's wire: the cited figure again, labelled as cited evidence. (Context
    # expansion merged both figures of this one-section page into one result, so the
    # citation carries both of its pictures.)
    kept = _images(second.seen[0])
    assert heron.data in [image.data for _, image in kept]
    assert all("cited evidence [" in label for label, _ in kept)
    assert any(figure.doc_item_refs[0] in label for label, _ in kept)
