"""HTML into the document model, without docling's converters: the pages of an HTML file, and
the chapters of an EPUB (``formats_package``), go through the same small parser."""

from __future__ import annotations

from html.parser import HTMLParser

from docling_core.types.doc import (
    CodeLanguageLabel,
    DocItemLabel,
    DoclingDocument,
    GroupItem,
    TableCell,
    TableData,
)

from haiku.rag.errors import EmptyDocumentError
from haiku.rag.ingest.records import Conversion
from haiku.rag.ingest.text import decode_text


def _first_title(document: DoclingDocument) -> str | None:
    for label in (DocItemLabel.TITLE, DocItemLabel.SECTION_HEADER):
        for item, _ in document.iterate_items():
            if item.label == label and getattr(item, "text", ""):
                return item.text
    return None


# --- native HTML --------------------------------------------------------------------------


def convert_html(data: bytes, *, source: str) -> Conversion:
    """A small HTML converter: <title>, h1-h6, p / div text, ul/ol items, tables (one row per
    <tr>, spans ignored), <pre> as code. Scripts, styles, navigation and forms are skipped."""
    text, warnings = decode_text(data, source=source)
    parser = _HtmlToDocling(DoclingDocument(name=source))
    parser.feed(text)
    parser.close()
    parser.finish()
    if not any(True for _ in parser.doc.iterate_items()):
        raise EmptyDocumentError(f"{source}: the HTML page contains no text", source=source)
    return Conversion(
        document=parser.doc,
        mime_type="text/html",
        title=parser.title or _first_title(parser.doc),
        warnings=warnings,
    )


def html_into(doc: DoclingDocument, data: bytes, *, source: str, warnings: list[str]) -> None:
    """Add one HTML page's items to ``doc`` (an EPUB's chapters, one after another); a page
    with no text adds nothing."""
    try:
        text, decoded = decode_text(data, source=source)
    except EmptyDocumentError:
        return
    warnings.extend(decoded)
    parser = _HtmlToDocling(doc)
    parser.feed(text)
    parser.close()
    parser.finish()


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

    def finish(self) -> None:
        """Keep the text after the last block's end (a page cut short, a bare fragment)."""
        if self._cell is not None or self._table_rows is not None:
            self._cell = None
            self._add_table()
        self._flush()

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
