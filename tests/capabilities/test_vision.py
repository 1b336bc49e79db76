"""Picture results for vision models: rendered from the stored PDF, labelled as retrieved."""

from __future__ import annotations

import pymupdf
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import BinaryImage, UserPromptPart

from capabilities.conftest import PICTURE_REF, Deps
from capabilities.scripting import ScriptedModel, answer, chunk_ids_in, load, search
from haiku.rag.capabilities import base
from haiku.rag.capabilities.pictures import MIN_CROP_PX, RETRIEVED_IMAGE_TAG, crop_dpi
from haiku.rag.ingest.records import Box


async def run_picture_search(rag, deps: Deps) -> ScriptedModel:
    script = ScriptedModel().play(
        load(), search("narwhal pipeline throughput figure", limit=1), answer()
    )
    await Agent(script.model, deps_type=Deps, capabilities=[rag]).run(
        "What does figure 1 show?", deps=deps
    )
    return script


def attached(script: ScriptedModel) -> list:
    parts = [
        p
        for p in script.seen[2].request_parts()
        if isinstance(p, UserPromptPart) and not isinstance(p.content, str)
    ]
    return [item for p in parts for item in p.content]


async def test_picture_results_come_with_a_labelled_image_of_the_picture(
    make_rag, deps, picture_hits, corpus
):
    script = await run_picture_search(make_rag(vision=True), deps)
    chunk_id = chunk_ids_in(str(script.seen[2].last_return("rag_search").content))[0]
    label, image = attached(script)
    assert label == (
        f"Page image 1 of 1, retrieved from the knowledge base for search result [{chunk_id}] "
        f"({PICTURE_REF}). Not provided by the user. {RETRIEVED_IMAGE_TAG}"
    )
    assert isinstance(image, BinaryImage) and image.media_type == "image/png"
    picture = pymupdf.Pixmap(image.data)
    # the crop is the whole figure with its caption (issue 29), at crop_dpi: more than 144
    # dpi for a figure this small (its longer side towards MIN_CROP_PX, within 300 dpi)
    figure = corpus.report.pictures["figure"][1]
    caption = corpus.report.block("caption_fig1").rect
    x0, y0 = min(figure[0], caption[0]), min(figure[1], caption[1])
    x1, y1 = max(figure[2], caption[2]), max(figure[3], caption[3])
    dpi = crop_dpi(Box(2, x0, y0, x1, y1))
    scale = dpi / 72
    assert dpi > 144 and max(picture.width, picture.height) <= MIN_CROP_PX
    assert (
        abs(picture.width - (x1 - x0) * scale) <= 4 and abs(picture.height - (y1 - y0) * scale) <= 4
    )


async def test_without_vision_results_are_text_only(make_rag, deps, picture_hits):
    script = await run_picture_search(make_rag(vision=False), deps)
    assert attached(script) == []
    assert isinstance(script.seen[2].last_return("rag_search").content, str)


async def test_a_picture_that_does_not_decode_is_left_out_with_its_label(
    make_rag, deps, picture_hits, monkeypatch
):
    async def broken(*_args) -> bytes:
        return b"not a png"

    monkeypatch.setattr(base, "render_picture", broken)
    script = await run_picture_search(make_rag(vision=True), deps)
    assert attached(script) == []


@pytest.mark.parametrize("vision", [True, False])
async def test_results_without_pictures_attach_nothing(make_rag, deps, vision):
    script = ScriptedModel().play(load(), search("lantern otters"), answer())
    await Agent(script.model, deps_type=Deps, capabilities=[make_rag(vision=vision)]).run(
        "Otters?", deps=deps
    )
    assert attached(script) == []
