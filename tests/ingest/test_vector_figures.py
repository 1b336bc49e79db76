"""Charts drawn as vector paths are figures (issue 29): a line chart drawn with PyMuPDF
(axes, ticks, tick labels, two curves, a legend, axis titles) above a "Figure 1" caption is
one figure chunk with its caption and the text inside it, whose box is the whole chart; a
diagram of raster icons joined by vector arrows is one figure, not one picture per icon; a
decorative background image behind the page's text, and a logo without a caption, are no
figure chunks; the image a vision model receives is the whole figure with its caption, at a
readable resolution."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pymupdf
import pytest

from haiku.rag.config import AppConfig, load_config
from haiku.rag.ingest.pipeline import prepare_document

CAPTION = "Figure 1: Training and validation loss of the narwhal model"
BODY = (
    "The narwhal model was trained for ten epochs on the fjord corpus. Its loss fell quickly "
    "during the first epochs and flattened afterwards, as the chart below shows in detail."
)
AFTER = "After training, the model was evaluated on the held-out soundings of the winter survey."
# the chart's frame (the axes), points
PLOT = pymupdf.Rect(110, 200, 430, 380)


def _chart_page(doc: pymupdf.Document) -> dict[str, pymupdf.Rect]:
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(72, 90, 523, 150), BODY, fontsize=11, fontname="helv")
    # each line its own path, as plotting libraries write them
    def line(a, b, colour=(0, 0, 0), width=0.8) -> None:
        page.draw_line(a, b, color=colour, width=width)

    line(PLOT.bl, PLOT.br, width=1)  # axes
    line(PLOT.bl, PLOT.tl, width=1)
    for i in range(6):  # ticks and tick labels
        x = PLOT.x0 + i * PLOT.width / 5
        line((x, PLOT.y1), (x, PLOT.y1 + 4))
        page.insert_text((x - 3, PLOT.y1 + 14), str(2 * i), fontsize=8, fontname="helv")
    for i in range(5):
        y = PLOT.y1 - i * PLOT.height / 4
        line((PLOT.x0 - 4, y), (PLOT.x0, y))
        page.insert_text((PLOT.x0 - 22, y + 3), f"{0.5 * i:.1f}", fontsize=8, fontname="helv")
    for scale, colour in ((1.0, (0.1, 0.3, 0.8)), (1.25, (0.9, 0.4, 0.1))):  # two curves
        points = [
            pymupdf.Point(PLOT.x0 + k * PLOT.width / 20, PLOT.y1 - PLOT.height * min(0.95, scale * 0.9 / (1 + k)))
            for k in range(21)
        ]
        page.draw_polyline(points, color=colour, width=1.2)
    legend = (("Training loss", (0.1, 0.3, 0.8)), ("Validation loss", (0.9, 0.4, 0.1)))
    for row, (label, colour) in enumerate(legend):
        y = PLOT.y0 + 14 + 12 * row
        line((PLOT.x1 - 110, y), (PLOT.x1 - 90, y), colour, 1.5)
        page.insert_text((PLOT.x1 - 85, y + 3), label, fontsize=8, fontname="helv")
    # axis titles (the y title turned, as plotting tools print it)
    page.insert_text((PLOT.x0 + PLOT.width / 2 - 15, PLOT.y1 + 28), "Epoch", fontsize=9, fontname="helv")
    page.insert_text((PLOT.x0 - 30, PLOT.y0 + PLOT.height / 2 + 20), "Loss value", fontsize=9, fontname="helv", rotate=90)
    caption_at = PLOT.y1 + 50
    page.insert_text((72, caption_at), CAPTION, fontsize=9, fontname="helv")
    page.insert_textbox(pymupdf.Rect(72, caption_at + 20, 523, caption_at + 80), AFTER, fontsize=11, fontname="helv")
    chart = pymupdf.Rect(PLOT.x0 - 32, PLOT.y0, PLOT.x1, PLOT.y1 + 30)
    caption = page.search_for("Figure 1:")[0]
    return {"chart": chart, "caption": caption}


def make_chart_pdf(path: Path) -> dict[str, pymupdf.Rect]:
    doc = pymupdf.open()
    rects = _chart_page(doc)
    doc.save(path)
    doc.close()
    return rects


def _figure_chunks(data: bytes):
    new = prepare_document(data, filename="f.pdf", uri="f", config=AppConfig())
    return [c for c in new.chunks if c.doc_item_refs[0].startswith("#/pictures/")], new


def test_a_vector_line_chart_is_one_figure_chunk_with_its_caption_axis_text_and_legend(tmp_path):
    rects = make_chart_pdf(tmp_path / "chart.pdf")
    (figure,), new = _figure_chunks((tmp_path / "chart.pdf").read_bytes())
    assert figure.text.startswith(CAPTION)
    for word in ("Epoch", "Loss value", "Training loss", "Validation loss", "0.5", "1.5", "10"):
        assert word in figure.text
    assert BODY[:40] not in figure.text and AFTER[:40] not in figure.text
    assert figure.labels == ["picture", "caption"]
    box = figure.boxes[0]
    chart = rects["chart"]
    # the whole chart, labels included, and not the prose around it
    assert box.x0 <= chart.x0 + 2 and box.y0 <= chart.y0 + 2
    assert box.x1 >= chart.x1 - 2 and box.y1 >= chart.y1 - 4
    assert box.y0 > 150 and box.y1 < rects["caption"].y0
    # the labels are not lost from the document's own text either
    assert any("Epoch" in c.text for c in new.chunks if not c.doc_item_refs[0].startswith("#/pictures/"))


def _icon(tint: int) -> pymupdf.Pixmap:
    samples = bytes(v for y in range(30) for x in range(40) for v in (tint, x * 5 % 256, y * 7 % 256))
    return pymupdf.Pixmap(pymupdf.csRGB, 40, 30, samples, False)


def test_a_diagram_of_icons_joined_by_arrows_is_one_figure_not_one_picture_per_icon():
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(72, 80, 523, 130), BODY, fontsize=11, fontname="helv")
    icons = [pymupdf.Rect(80 + 150 * i, 180, 140 + 150 * i, 225) for i in range(3)]
    shape = page.new_shape()
    for left, right in zip(icons, icons[1:], strict=False):
        shape.draw_line((left.x1 + 4, 202), (right.x0 - 4, 202))
        shape.draw_polyline([(right.x0 - 10, 197), (right.x0 - 4, 202), (right.x0 - 10, 207)])
    shape.draw_rect(pymupdf.Rect(70, 170, 450, 250))
    shape.finish(color=(0, 0, 0), width=1)
    shape.commit()
    for index, icon in enumerate(icons):
        page.insert_image(icon, pixmap=_icon(60 * index))
        page.insert_text((icon.x0, icon.y1 + 14), f"Stage {index + 1}", fontsize=8, fontname="helv")
    page.insert_text((72, 275), "Figure 2: The three stages of the survey pipeline", fontsize=9, fontname="helv")
    page.insert_textbox(pymupdf.Rect(72, 300, 523, 350), AFTER, fontsize=11, fontname="helv")
    figures, new = _figure_chunks(doc.tobytes())
    assert [item.label for item in new.items].count("picture") == 1
    (figure,) = figures
    assert figure.text.startswith("Figure 2: The three stages")
    assert all(f"Stage {n}" in figure.text for n in (1, 2, 3))
    box = figure.boxes[0]
    assert box.x0 <= 72 and box.x1 >= 448 and box.y0 <= 172 and box.y1 >= 235


def test_a_decorative_background_and_a_logo_without_a_caption_are_not_figures():
    doc = pymupdf.open()
    for number in range(2):
        page = doc.new_page(width=595, height=842)
        # a full-page decorative background image, drawn first, behind the text
        samples = bytes(v for y in range(60) for x in range(40) for v in (230, 235 - x, 240 - y))
        page.insert_image(page.rect, pixmap=pymupdf.Pixmap(pymupdf.csRGB, 40, 60, samples, False))
        # a coloured panel behind a paragraph
        page.insert_image(pymupdf.Rect(60, 300, 535, 420), pixmap=_icon(200))
        page.insert_image(pymupdf.Rect(480, 30, 540, 70), pixmap=_icon(20))  # a logo
        page.insert_textbox(
            pymupdf.Rect(72, 100, 523, 280),
            f"Annual report, part {number + 1}. " + BODY + " " + AFTER,
            fontsize=11,
            fontname="helv",
        )
        page.insert_textbox(pymupdf.Rect(72, 310, 523, 410), AFTER + " " + BODY, fontsize=11, fontname="helv")
    figures, new = _figure_chunks(doc.tobytes())
    assert figures == []
    text = " ".join(c.text for c in new.chunks)
    assert "Annual report, part 2" in text and "winter survey" in text


def test_the_vision_crop_is_the_whole_figure_with_its_caption_at_a_readable_resolution(tmp_path):
    from haiku.rag.capabilities.pictures import render_picture
    from haiku.rag.client import HaikuRAG

    rects = make_chart_pdf(tmp_path / "chart.pdf")
    config = load_config()
    config.storage.data_dir = tmp_path / "data"
    db = tmp_path / "chart.lancedb"

    async def run() -> tuple[bytes | None, object]:
        async with HaikuRAG(db, config, create=True) as client:
            outcome = await client.ingest_file(tmp_path / "chart.pdf", embed=False)
            assert outcome.status == "ingested", outcome.reason
            (hit, *_) = await client.search("validation loss narwhal model", limit=3)
            assert hit.doc_item_refs[0].startswith("#/pictures/")
            return await render_picture(client, hit.document_id, hit.doc_item_refs[0]), hit

    png, hit = asyncio.run(run())
    assert png is not None
    figure = hit.boxes[0]  # type: ignore[attr-defined]
    caption = rects["caption"]
    whole = pymupdf.Rect(figure.x0, figure.y0, max(figure.x1, caption.x1), caption.y1)
    assert whole.x0 <= rects["chart"].x0 + 2 and whole.x1 >= rects["chart"].x1 - 2
    pixmap = pymupdf.Pixmap(png)
    width, height = pixmap.width, pixmap.height
    # the crop is the figure's box and its caption's, no more and no less, at one scale
    scale = width / whole.width
    assert height == pytest.approx(whole.height * scale, abs=3)
    assert scale * 72 > 144  # a small chart is rendered at more than the default 144 dpi
    assert max(width, height) >= 1000
