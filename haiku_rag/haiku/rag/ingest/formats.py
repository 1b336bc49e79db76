"""The converters' registry of file formats, importable without the converters themselves
(no PyMuPDF, no docling): the app builds its file dialog filter from it.

Each converter module owns its extensions; this module only gathers them."""

from __future__ import annotations

from enum import StrEnum


class SourceKind(StrEnum):
    PDF = "pdf"
    MARKDOWN = "markdown"
    TEXT = "text"
    CODE = "code"
    OFFICE = "office"
    IMAGE = "image"


PDF_EXTENSIONS = frozenset({".pdf"})
# A PDF by its content: the header may be preceded by junk; readers accept it within the
# first 1024 bytes (converters.detect_kind, the Zotero import).
PDF_MAGIC = b"%PDF-"
PDF_MAGIC_WINDOW = 1024
SUPPORTED_SUMMARY = (
    "PDF, Word (.docx), PowerPoint (.pptx), Excel (.xlsx), OpenDocument text (.odt), EPUB, "
    "HTML, Markdown, plain text, source code, and images (PNG/JPEG/TIFF/WebP)"
)
# The kinds a person picks in a file dialog (source code and data files are found by
# folder ingest, not offered one by one); plain text is offered as ".txt".
_DOCUMENT_KINDS = (SourceKind.PDF, SourceKind.MARKDOWN, SourceKind.OFFICE, SourceKind.IMAGE)


def extensions_by_kind() -> dict[SourceKind, frozenset[str]]:
    """Every converter kind with the file extensions it reads."""
    from haiku.rag.ingest.images import IMAGE_EXTENSIONS
    from haiku.rag.ingest.office import OFFICE_EXTENSIONS
    from haiku.rag.ingest.text import CODE_EXTENSIONS, MARKDOWN_EXTENSIONS, PLAIN_TEXT_EXTENSIONS

    return {
        SourceKind.PDF: PDF_EXTENSIONS,
        SourceKind.MARKDOWN: MARKDOWN_EXTENSIONS,
        SourceKind.TEXT: PLAIN_TEXT_EXTENSIONS,
        SourceKind.CODE: CODE_EXTENSIONS,
        SourceKind.OFFICE: OFFICE_EXTENSIONS,
        SourceKind.IMAGE: IMAGE_EXTENSIONS,
    }


def supported_extensions() -> list[str]:
    """Every extension some converter reads, sorted."""
    return sorted(frozenset().union(*extensions_by_kind().values()))


def document_extensions() -> list[str]:
    """The extensions of documents a person adds by hand (PDF, Markdown, ``.txt``, office
    files, images), sorted, for a file dialog's filter: a new converter's formats show up
    there without an app change."""
    registry = extensions_by_kind()
    return sorted({".txt"}.union(*(registry[kind] for kind in _DOCUMENT_KINDS)))
