"""Choosing and running the converter for a source."""

from __future__ import annotations

from pathlib import Path

import pytest
from docling_core.types.doc import CodeItem, TextItem
from pdf_factory import make_report_pdf

from haiku.rag.errors import (
    DamagedDocumentError,
    EmptyDocumentError,
    OperationCancelled,
    UnsupportedSourceError,
)
from haiku.rag.ingest.converters import (
    SUPPORTED_EXTENSIONS,
    SourceKind,
    convert_source,
    detect_kind,
)
from haiku.rag.operations import CancelToken, Progress, Stage


@pytest.fixture(scope="module")
def pdf_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return make_report_pdf(tmp_path_factory.mktemp("conv") / "report.pdf").path.read_bytes()


@pytest.mark.parametrize(
    ("filename", "kind"),
    [
        ("notes.md", SourceKind.MARKDOWN),
        ("NOTES.MARKDOWN", SourceKind.MARKDOWN),
        ("notes.txt", SourceKind.TEXT),
        ("guide.rst", SourceKind.TEXT),
        ("README", SourceKind.TEXT),
        ("main.py", SourceKind.CODE),
        ("lib.rs", SourceKind.CODE),
        ("config.yaml", SourceKind.CODE),
        ("report.docx", SourceKind.OFFICE),
        ("page.html", SourceKind.OFFICE),
    ],
)
def test_kind_from_extension(filename: str, kind: SourceKind):
    assert detect_kind(filename, b"plain words") is kind


def test_pdf_is_sniffed_whatever_the_extension(pdf_bytes: bytes):
    assert detect_kind("report.txt", pdf_bytes[:1024]) is SourceKind.PDF
    assert detect_kind("download", b"\r\n junk before the header %PDF-1.7\n") is SourceKind.PDF


def test_pdf_extension_without_pdf_content():
    with pytest.raises(DamagedDocumentError) as raised:
        detect_kind("paper.pdf", b"<!DOCTYPE html><html><body>Access denied</body></html>")
    assert str(raised.value) == (
        "paper.pdf: not a PDF (no %PDF header); it looks like an HTML page (a failed download?)"
    )


def test_unknown_extension_names_it_and_what_is_supported():
    with pytest.raises(UnsupportedSourceError) as raised:
        detect_kind("photo.heic", b"\x00\x00\x00\x18ftypheic")
    message = str(raised.value)
    assert message.startswith(
        "photo.heic: .heic files aren't supported yet — save it as PDF (or Word, EPUB, Markdown) "
        "and add it again. Supported: PDF, Word (.docx), PowerPoint (.pptx), Excel (.xlsx), "
        "OpenDocument text (.odt), EPUB, HTML"
    )
    assert "pip" not in message and "docling" not in message
    assert raised.value.category == "unsupported_type"


def test_old_word_files_and_files_without_an_extension_are_refused_in_plain_words():
    with pytest.raises(UnsupportedSourceError, match=r"^notes\.doc: \.doc files aren't supported yet — save it as PDF"):
        detect_kind("notes.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")
    with pytest.raises(UnsupportedSourceError, match=r"^data: files without an extension aren't supported yet"):
        detect_kind("data", b"x")


def test_supported_extensions_cover_every_kind():
    assert {".pdf", ".md", ".txt", ".py", ".json", ".docx", ".pptx", ".xlsx", ".html"} <= SUPPORTED_EXTENSIONS
    content_checked = {".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp"}
    assert content_checked <= SUPPORTED_EXTENSIONS
    for extension in SUPPORTED_EXTENSIONS - content_checked:
        detect_kind(f"file{extension}", b"x")  # no extension listed is rejected
    assert detect_kind("file.pdf", b"%PDF-1.4") is SourceKind.PDF
    assert detect_kind("scan.png", b"\x89PNG\r\n\x1a\n....") is SourceKind.IMAGE
    assert detect_kind("photo.jpeg", b"\xff\xd8\xff\xe0") is SourceKind.IMAGE
    assert detect_kind("page.tif", b"II*\x00") is SourceKind.IMAGE
    assert detect_kind("page.webp", b"RIFF\x10\x00\x00\x00WEBPVP8 ") is SourceKind.IMAGE
    assert detect_kind("misnamed.txt", b"\x89PNG\r\n\x1a\n....") is SourceKind.IMAGE
    with pytest.raises(DamagedDocumentError, match="not a PNG, JPEG, TIFF or WebP image"):
        detect_kind("fake.png", b"<html>")


def test_the_document_extensions_come_from_the_converters_registry():
    from haiku.rag.ingest.converters import document_extensions, supported_extensions

    offered = document_extensions()
    assert offered == sorted(offered)
    assert {".pdf", ".md", ".txt", ".docx", ".pptx", ".xlsx", ".odt", ".epub", ".html", ".png", ".jpg", ".tiff", ".webp"} <= set(offered)
    assert ".py" not in offered  # source code is found by folder ingest, not offered by hand
    assert set(offered) <= set(supported_extensions()) == SUPPORTED_EXTENSIONS


def test_convert_source_dispatches(pdf_bytes: bytes):
    pdf = convert_source(pdf_bytes, filename="misnamed.txt")
    assert pdf.mime_type == "application/pdf" and pdf.page_count == 3
    md = convert_source(b"# Otters\n\nThey swim.\n", filename="otters.md")
    assert md.mime_type == "text/markdown" and md.title == "Otters"
    code = convert_source(b"fn main() {}\n", filename="main.rs")
    assert [type(item) for item, _ in code.document.iterate_items()] == [CodeItem]
    text = convert_source(b"They swim.", filename="otters.txt")
    assert [item.text for item, _ in text.document.iterate_items() if isinstance(item, TextItem)] == ["They swim."]


def test_empty_bytes():
    with pytest.raises(EmptyDocumentError, match=r"^a\.pdf: the file is empty \(0 bytes\)$"):
        convert_source(b"", filename="a.pdf")


def test_pdf_layout_mode_is_validated(pdf_bytes: bytes):
    with pytest.raises(ValueError, match="unknown PDF layout mode 'fancy'"):
        convert_source(pdf_bytes, filename="r.pdf", pdf_layout="fancy")


@pytest.mark.parametrize("extension", [".docx", ".pptx", ".xlsx", ".odt", ".epub"])
def test_office_files_that_are_not_zip_containers_are_damaged_not_missing_an_extra(extension: str):
    with pytest.raises(DamagedDocumentError) as raised:
        convert_source(b"PK\x03\x04 zip bytes", filename=f"minutes{extension}")
    assert str(raised.value).startswith(f"minutes{extension}: not a readable ")
    assert "docling" not in str(raised.value) and "pip" not in str(raised.value)


def test_html_uses_the_native_converter():
    conversion = convert_source(b"<h1>Otters</h1><p>They swim.</p>", filename="otters.html")
    assert conversion.mime_type == "text/html"
    assert [item.text for item, _ in conversion.document.iterate_items()] == ["Otters", "They swim."]


def test_progress_and_cancellation_for_text_sources(tmp_path: Path):
    seen: list[Progress] = []
    convert_source(b"They swim.", filename="otters.txt", progress=seen.append)
    assert [(p.stage, p.done, p.total) for p in seen] == [(Stage.PARSING, 1, 1)]
    token = CancelToken()
    token.cancel()
    with pytest.raises(OperationCancelled):
        convert_source(b"They swim.", filename="otters.txt", cancel=token)


