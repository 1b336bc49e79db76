"""DOCX / PPTX / XLSX / HTML -> DoclingDocument.

Office formats go through docling's ``DocumentConverter``, which is the optional ``docling``
extra (it needs torch; see README). docling is imported inside the function: importing it
takes seconds, and the core install must work without it. HTML has a small native
converter used when docling is absent (headings, paragraphs, lists, tables, code).
"""

from __future__ import annotations

import functools
import importlib.util
import io
from html.parser import HTMLParser
from typing import Any

from docling_core.types.doc import (
    CodeLanguageLabel,
    DocItemLabel,
    DoclingDocument,
    GroupItem,
    TableCell,
    TableData,
)

from haiku.rag.errors import DamagedDocumentError, EmptyDocumentError, ExtraMissingError
from haiku.rag.ingest.records import Conversion
from haiku.rag.ingest.text import decode_text

OFFICE_MIME_TYPES = {
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".html": "text/html",
    ".htm": "text/html",
    ".xhtml": "application/xhtml+xml",
}
OFFICE_EXTENSIONS = frozenset(OFFICE_MIME_TYPES)
HTML_EXTENSIONS = frozenset({".html", ".htm", ".xhtml"})
DOCLING_INSTALL_HINT = "pip install 'haiku-desk[docling]' (see README)"


def convert_office(data: bytes, *, source: str, extension: str) -> Conversion:
    """Convert an Office or HTML file. Without docling, HTML uses the native converter and
    the other formats raise ExtraMissingError."""
    extension = extension.lower()
    try:
        from docling.datamodel.base_models import ConversionStatus, DocumentStream

        converter = _docling_converter()
    except ImportError as exc:
        if extension in HTML_EXTENSIONS:
            return convert_html(data, source=source)
        if importlib.util.find_spec("docling") is None:
            reason = DOCLING_INSTALL_HINT
        else:  # e.g. docling-slim without torch: "No module named 'torch'"
            reason = f"it is installed but does not load ({_one_line(exc)}); see README"
        raise ExtraMissingError(
            f"{source}: {extension} files need the docling extra: {reason}", source=source
        ) from exc

    stream = DocumentStream(name=_docling_name(source, extension), stream=io.BytesIO(data))
    try:
        result = converter.convert(stream, raises_on_error=False)
    except Exception as exc:  # docling wraps backend failures in many exception types
        raise DamagedDocumentError(
            f"{source}: docling could not read this {extension} file ({_one_line(exc)})",
            source=source,
        ) from exc
    if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
        reasons = "; ".join(e.error_message for e in result.errors) or str(result.status)
        raise DamagedDocumentError(
            f"{source}: docling could not read this {extension} file ({_one_line(reasons)})",
            source=source,
        )
    document = result.document
    if not any(True for _ in document.iterate_items()):
        raise EmptyDocumentError(f"{source}: the document contains no text", source=source)
    warnings = [f"{source}: docling: {_one_line(e.error_message)}" for e in result.errors]
    return Conversion(
        document=document,
        mime_type=OFFICE_MIME_TYPES[extension],
        title=_first_title(document),
        warnings=warnings,
    )


@functools.cache
def _docling_converter() -> Any:
    """One DocumentConverter per process: building it loads docling's format backends."""
    from docling.document_converter import DocumentConverter

    return DocumentConverter()


def _docling_name(source: str, extension: str) -> str:
    """docling picks the backend from the stream name's extension."""
    return source if source.lower().endswith(extension) else f"{source}{extension}"


def _first_title(document: DoclingDocument) -> str | None:
    for label in (DocItemLabel.TITLE, DocItemLabel.SECTION_HEADER):
        for item, _ in document.iterate_items():
            if item.label == label and getattr(item, "text", ""):
                return item.text
    return None


def _one_line(value: object) -> str:
    return " ".join(str(value).split()) or type(value).__name__


# --- native HTML --------------------------------------------------------------------------


def convert_html(data: bytes, *, source: str) -> Conversion:
    """A small HTML converter for when docling is absent: <title>, h1-h6, p / div text,
    ul/ol items, tables (one row per <tr>, spans ignored), <pre> as code. Scripts, styles,
    navigation and forms are skipped."""
    text, warnings = decode_text(data, source=source)
    parser = _HtmlToDocling(DoclingDocument(name=source))
    parser.feed(text)
    parser.close()
    if not any(True for _ in parser.doc.iterate_items()):
        raise EmptyDocumentError(f"{source}: the HTML page contains no text", source=source)
    return Conversion(
        document=parser.doc,
        mime_type="text/html",
        title=parser.title or _first_title(parser.doc),
        warnings=warnings,
    )


SKIPPED_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "nav", "form"})
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# Tags that end the current run of text (block-level elements).
BLOCK_TAGS = frozenset({
    "p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote",
    "li", "ul", "ol", "dl", "dt", "dd", "table", "tr", "td", "th", "pre", "hr",
    "figure", "figcaption", "body", *HEADINGS,
})
VOID_TAGS = frozenset({"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "wbr"})


class _HtmlToDocling(HTMLParser):
    def __init__(self, doc: DoclingDocument) -> None:
        super().__init__(convert_charrefs=True)
        self.doc = doc
        self.title: str | None = None
        self._text: list[str] = []
        self._skip_depth = 0
        self._in_title = False
        self._in_pre = False
        self._heading_level = 0
        self._lists: list[tuple[GroupItem, bool]] = []
        self._in_item = False
        self._table_rows: list[list[tuple[str, bool]]] | None = None
        self._cell: list[str] | None = None
        self._cell_is_header = False

    # -- tags --

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIPPED_TAGS:
            self._skip_depth += 1
            return
        if self._skip_depth and tag not in VOID_TAGS:
            return
        if tag == "title":
            self._in_title = True
            return
        if tag == "br":  # a line break inside a paragraph, not a new paragraph
            (self._cell if self._cell is not None else self._text).append("\n" if self._in_pre else " ")
            return
        if self._cell is not None and tag not in ("td", "th", "tr", "table"):
            return  # inline structure inside a cell stays in the cell text
        if tag in BLOCK_TAGS:
            self._flush()
        if tag in HEADINGS:
            self._heading_level = HEADINGS[tag]
        elif tag in ("ul", "ol"):
            self._lists.append((self.doc.add_list_group(), tag == "ol"))
        elif tag == "li":
            self._in_item = True
        elif tag == "pre":
            self._in_pre = True
        elif tag == "table":
            self._table_rows = []
        elif tag == "tr" and self._table_rows is not None:
            self._table_rows.append([])
        elif tag in ("td", "th") and self._table_rows is not None:
            self._cell = []
            self._cell_is_header = tag == "th"

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED_TAGS:
            self._skip_depth = max(0, self._skip_depth - 1)
            return
        if self._skip_depth:
            return
        if tag == "title":
            self._in_title = False
            return
        if tag in ("td", "th") and self._cell is not None:
            if self._table_rows is not None:
                if not self._table_rows:
                    self._table_rows.append([])
                self._table_rows[-1].append((" ".join(" ".join(self._cell).split()), self._cell_is_header))
            self._cell = None
            return
        if self._cell is not None:
            return
        if tag in BLOCK_TAGS:
            self._flush()
        if tag in HEADINGS:
            self._heading_level = 0
        elif tag in ("ul", "ol") and self._lists:
            self._lists.pop()
        elif tag == "li":
            self._in_item = False
        elif tag == "pre":
            self._in_pre = False
        elif tag == "table":
            self._add_table()

    def handle_data(self, data: str) -> None:
        if self._skip_depth:
            return
        if self._in_title:
            self.title = " ".join(((self.title or "") + " " + data).split()) or None
        elif self._cell is not None:
            self._cell.append(data)
        else:
            self._text.append(data)

    # -- output --

    def _flush(self) -> None:
        raw = "".join(self._text)
        self._text = []
        if self._in_pre:
            code = raw.strip("\n")
            if code.strip():
                self.doc.add_code(text=code, code_language=CodeLanguageLabel.UNKNOWN)
            return
        text = " ".join(raw.split())
        if not text:
            return
        if self._heading_level:
            self.doc.add_heading(text=text, level=self._heading_level)
        elif self._in_item and self._lists:
            group, ordered = self._lists[-1]
            self.doc.add_list_item(text=text, enumerated=ordered, parent=group)
        else:
            self.doc.add_text(label=DocItemLabel.TEXT, text=text)

    def _add_table(self) -> None:
        rows = [row for row in (self._table_rows or []) if row]
        self._table_rows = None
        if not rows:
            return
        width = max(len(row) for row in rows)
        cells = [
            TableCell(
                text=row[col][0] if col < len(row) else "",
                start_row_offset_idx=r,
                end_row_offset_idx=r + 1,
                start_col_offset_idx=col,
                end_col_offset_idx=col + 1,
                column_header=col < len(row) and row[col][1],
            )
            for r, row in enumerate(rows)
            for col in range(width)
        ]
        self.doc.add_table(data=TableData(num_rows=len(rows), num_cols=width, table_cells=cells))
