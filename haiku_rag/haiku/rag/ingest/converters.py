"""Pick the converter for a source from its name and first bytes, and run it."""

from __future__ import annotations

__all__ = [
    "SUPPORTED_EXTENSIONS",
    "SUPPORTED_SUMMARY",
    "SourceKind",
    "convert_source",
    "detect_kind",
    "document_extensions",
    "supported_extensions",
    "unsupported_message",
]

from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from haiku.rag.errors import DamagedDocumentError, EmptyDocumentError, UnsupportedSourceError
from haiku.rag.ingest.formats import (
    PDF_EXTENSIONS,
    PDF_MAGIC,
    PDF_MAGIC_WINDOW,
    SUPPORTED_SUMMARY,
    SourceKind,
    document_extensions,
    extensions_by_kind,
    supported_extensions,
)
from haiku.rag.ingest.images import IMAGE_EXTENSIONS, convert_image, looks_like_image
from haiku.rag.ingest.office import OFFICE_EXTENSIONS, convert_office
from haiku.rag.ingest.pdf import OcrOptions, convert_pdf
from haiku.rag.ingest.records import Conversion
from haiku.rag.ingest.text import (
    CODE_EXTENSIONS,
    MARKDOWN_EXTENSIONS,
    PLAIN_TEXT_EXTENSIONS,
    convert_code,
    convert_markdown,
    convert_plain_text,
)
from haiku.rag.operations import (
    CancelToken,
    Progress,
    ProgressCallback,
    Stage,
    check_cancelled,
    report,
)

# The converters' registry lives in ``formats`` (importable without the converters).
EXTENSIONS_BY_KIND = extensions_by_kind()
SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(supported_extensions())
# Well-known files without an extension that are worth indexing as text.
PLAIN_TEXT_NAMES = frozenset({"readme", "license", "licence", "copying", "authors", "changelog", "notice"})


def detect_kind(filename: str, head_bytes: bytes) -> SourceKind:
    """The converter kind for ``filename`` whose content starts with ``head_bytes``.

    PDF content is recognised by its ``%PDF-`` header whatever the extension says; a
    ``.pdf`` without that header raises DamagedDocumentError; an extension we do not
    handle raises UnsupportedSourceError."""
    if PDF_MAGIC in head_bytes[:PDF_MAGIC_WINDOW]:
        return SourceKind.PDF
    path = PurePath(filename)
    extension = path.suffix.lower()
    if looks_like_image(head_bytes):
        return SourceKind.IMAGE
    if extension in PDF_EXTENSIONS:
        raise DamagedDocumentError(
            f"{filename}: not a PDF (no %PDF header){_content_hint(head_bytes)}", source=filename
        )
    if extension in MARKDOWN_EXTENSIONS:
        return SourceKind.MARKDOWN
    if extension in PLAIN_TEXT_EXTENSIONS:
        return SourceKind.TEXT
    if extension in CODE_EXTENSIONS:
        return SourceKind.CODE
    if extension in OFFICE_EXTENSIONS:
        return SourceKind.OFFICE
    if extension in IMAGE_EXTENSIONS:
        raise DamagedDocumentError(
            f"{filename}: not a PNG, JPEG, TIFF or WebP image (its first bytes say otherwise)"
            f"{_content_hint(head_bytes)}",
            source=filename,
        )
    if not extension and path.name.lower() in PLAIN_TEXT_NAMES:
        return SourceKind.TEXT
    raise UnsupportedSourceError(unsupported_message(filename, extension), source=filename)


def unsupported_message(filename: str, extension: str) -> str:
    """The refusal of a file type no converter reads, in words a person can act on."""
    described = f"{extension} files" if extension else "files without an extension"
    return (
        f"{filename}: {described} aren't supported yet — save it as PDF (or Word, EPUB, "
        f"Markdown) and add it again. Supported: {SUPPORTED_SUMMARY}."
    )


def _content_hint(head: bytes) -> str:
    """What a misnamed file seems to be, to make the error actionable."""
    start = head.lstrip()[:64].lower()
    if start.startswith((b"<!doctype html", b"<html")):
        return "; it looks like an HTML page (a failed download?)"
    if head.startswith(b"PK\x03\x04"):
        return "; it looks like a ZIP or Office file"
    if head.startswith((b"\x89PNG", b"\xff\xd8\xff", b"GIF8")):
        return "; it looks like an image"
    return ""


def convert_source(
    data: bytes,
    *,
    filename: str,
    password: str | None = None,
    pdf_layout: str = "fast",
    ocr: OcrOptions | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    while_open: Callable[[Any, Conversion], None] | None = None,
) -> Conversion:
    """Convert the bytes of one source into a Conversion, choosing the converter from the
    file name and content. ``pdf_layout`` is "fast" (heuristics) or "layout" (PyMuPDF's
    ONNX layout model); ``ocr`` says whether (and how) pages without a text layer and image
    files are recognised (on by default); ``while_open`` goes to a PDF's converter
    (``convert_pdf``). Raises an IngestError subclass naming ``filename``."""
    if not data:
        raise EmptyDocumentError(f"{filename}: the file is empty (0 bytes)", source=filename)
    check_cancelled(cancel)
    kind = detect_kind(filename, data[:PDF_MAGIC_WINDOW])
    extension = PurePath(filename).suffix.lower()
    match kind:
        case SourceKind.PDF:
            if pdf_layout not in ("fast", "layout"):
                raise ValueError(f"unknown PDF layout mode {pdf_layout!r}: use 'fast' or 'layout'")
            # The PDF converter reports progress page by page itself.
            return convert_pdf(
                data,
                source=filename,
                password=password,
                layout="layout" if pdf_layout == "layout" else "fast",
                ocr=ocr,
                progress=progress,
                cancel=cancel,
                while_open=while_open,
            )
        case SourceKind.IMAGE:
            # Wrapped as a PDF page and read by OCR, page by page with progress.
            return convert_image(
                data, source=filename, layout=pdf_layout, ocr=ocr, progress=progress, cancel=cancel
            )
        case SourceKind.MARKDOWN:
            conversion = convert_markdown(data, source=filename)
        case SourceKind.TEXT:
            conversion = convert_plain_text(data, source=filename)
        case SourceKind.CODE:
            conversion = convert_code(data, source=filename, extension=extension)
        case SourceKind.OFFICE:
            conversion = convert_office(data, source=filename, extension=extension)
    report(progress, Progress(Stage.PARSING, source=filename, done=1, total=1))
    return conversion
