"""Word, PowerPoint, Excel, OpenDocument text, EPUB and HTML -> DoclingDocument, natively.

Every format here converts in the default install, without torch or docling's converters:
Word/PowerPoint/Excel with the format libraries made for each (``formats_ooxml``), ODT and
EPUB with the standard library's ZIP and XML readers (``formats_package``), HTML with the small
parser of ``formats_html`` (EPUB chapters go through it too). The choice was measured: docs/formats.md.
"""

from __future__ import annotations

from haiku.rag.ingest.formats_html import convert_html, html_into
from haiku.rag.ingest.records import Conversion

__all__ = ["HTML_EXTENSIONS", "OFFICE_EXTENSIONS", "convert_html", "convert_office", "html_into"]

OFFICE_MIME_TYPES = {
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".odt": "application/vnd.oasis.opendocument.text",
    ".epub": "application/epub+zip",
    ".html": "text/html",
    ".htm": "text/html",
    ".xhtml": "application/xhtml+xml",
}
OFFICE_EXTENSIONS = frozenset(OFFICE_MIME_TYPES)
HTML_EXTENSIONS = frozenset({".html", ".htm", ".xhtml"})


def convert_office(data: bytes, *, source: str, extension: str) -> Conversion:
    """Convert a Word, PowerPoint, Excel, ODT, EPUB or HTML file (chosen by ``extension``)."""
    extension = extension.lower()
    if extension in HTML_EXTENSIONS:
        return convert_html(data, source=source)
    if extension in (".odt", ".epub"):
        from haiku.rag.ingest.formats_package import convert_epub, convert_odt

        return convert_odt(data, source=source) if extension == ".odt" else convert_epub(data, source=source)
    from haiku.rag.ingest.formats_ooxml import convert_docx, convert_pptx, convert_xlsx

    converters = {".docx": convert_docx, ".pptx": convert_pptx, ".xlsx": convert_xlsx}
    return converters[extension](data, source=source)
