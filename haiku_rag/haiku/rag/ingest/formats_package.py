"""OpenDocument text (.odt) and EPUB (.epub) -> DoclingDocument, with the standard library's
ZIP and XML readers (no format library: both are a ZIP of XML files with a published layout).

ODT: ``content.xml``'s body in order: headings (their outline level), paragraphs (the
"Title" style as the title), lists (numbered when their list style numbers them), tables (the
header rows ODF marks, else the first row, as the header), sections walked into.
EPUB: the chapters of the spine in reading order, each read by the HTML converter into one
document, the book's title from its package file. Locations are headings, as for Word.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING
from urllib.parse import unquote

from docling_core.types.doc import DocItemLabel, DoclingDocument

from haiku.rag.errors import DamagedDocumentError, EmptyDocumentError
from haiku.rag.ingest.formats_common import (
    ListBuilder,
    add_table,
    clean,
    open_package,
    parse_xml,
    read_member,
    read_optional,
)
from haiku.rag.ingest.records import Conversion

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

ODT_MIME = "application/vnd.oasis.opendocument.text"
EPUB_MIME = "application/epub+zip"

_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_OPF = "{http://www.idpf.org/2007/opf}"
_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
# A table cell repeated more than this many times is an empty formatting run to the sheet's
# edge (ODF writes "1,024 empty columns" that way), not content.
MAX_REPEAT = 100


def _has_items(doc: DoclingDocument) -> bool:
    return any(True for _ in doc.iterate_items())


# --- OpenDocument text --------------------------------------------------------------------


def convert_odt(data: bytes, *, source: str) -> Conversion:
    package = open_package(data, source=source, kind="OpenDocument")
    with package:
        content = parse_xml(read_member(package, "content.xml", source=source, kind="OpenDocument"), source=source, what="content.xml")
        styles_xml = read_optional(package, "styles.xml", source=source, kind="OpenDocument")
        meta_xml = read_optional(package, "meta.xml", source=source, kind="OpenDocument")
        styles = parse_xml(styles_xml, source=source, what="styles.xml") if styles_xml else None
        meta = parse_xml(meta_xml, source=source, what="meta.xml") if meta_xml else None
    body = content.find(f"{_OFFICE}body/{_OFFICE}text")
    if body is None:
        raise DamagedDocumentError(
            f"{source}: not an OpenDocument text (content.xml has no office:text body)", source=source
        )
    builder = _OdtBuilder(DoclingDocument(name=source), _numbered_list_styles(content, styles), _title_styles(content))
    builder.walk(body)
    builder.lists.end()
    if not _has_items(builder.doc):
        raise EmptyDocumentError(f"{source}: the document contains no text", source=source)
    title = None
    if meta is not None:
        found = meta.find(f"{_OFFICE}meta/{_DC}title")
        title = clean(found.text or "") or None if found is not None else None
    return Conversion(document=builder.doc, mime_type=ODT_MIME, title=title or builder.title, warnings=[])


def _numbered_list_styles(*trees: Element | None) -> set[str]:
    """The list styles whose first level is numbered (text:list-level-style-number)."""
    numbered = set()
    for tree in trees:
        if tree is None:
            continue
        for style in tree.iter(f"{_TEXT}list-style"):
            first = next(iter(style), None)
            if first is not None and first.tag == f"{_TEXT}list-level-style-number":
                numbered.add(style.get(f"{_STYLE}name", ""))
    return numbered


def _title_styles(content: Element) -> set[str]:
    """"Title" and the automatic paragraph styles derived from it."""
    names = {"Title"}
    for style in content.iter(f"{_STYLE}style"):
        if style.get(f"{_STYLE}parent-style-name") == "Title":
            names.add(style.get(f"{_STYLE}name", ""))
    return names


def odf_text(element: Element) -> str:
    """An element's text with ODF's spacing elements (text:s, text:tab, text:line-break)
    honoured and notes (footnote bodies) left out."""
    parts: list[str] = []

    def walk(node: Element) -> None:
        if node.text:
            parts.append(node.text)
        for child in node:
            tag = child.tag
            if tag == f"{_TEXT}s":
                parts.append(" " * min(int(child.get(f"{_TEXT}c", "1") or 1), 100))
            elif tag in (f"{_TEXT}tab", f"{_TEXT}line-break"):
                parts.append(" ")
            elif tag != f"{_TEXT}note":
                walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(element)
    return clean("".join(parts))


class _OdtBuilder:
    def __init__(self, doc: DoclingDocument, numbered: set[str], title_styles: set[str]) -> None:
        self.doc = doc
        self.numbered = numbered
        self.title_styles = title_styles
        self.lists = ListBuilder(doc)
        self.title: str | None = None

    def walk(self, parent: Element) -> None:
        for node in parent:
            tag = node.tag
            if tag == f"{_TEXT}h":
                self.lists.end()
                text = odf_text(node)
                if text:
                    level = int(node.get(f"{_TEXT}outline-level", "1") or 1)
                    self.doc.add_heading(text=text, level=max(1, min(level, 6)))
                    self.title = self.title or text
            elif tag == f"{_TEXT}p":
                self.lists.end()
                text = odf_text(node)
                if not text:
                    continue
                if node.get(f"{_TEXT}style-name") in self.title_styles:
                    self.doc.add_title(text=text)
                    self.title = text
                else:
                    self.doc.add_text(label=DocItemLabel.TEXT, text=text)
            elif tag == f"{_TEXT}list":
                self._list(node, ordered=node.get(f"{_TEXT}style-name", "") in self.numbered)
            elif tag == f"{_TABLE}table":
                self.lists.end()
                self._table(node)
            elif tag in (f"{_TEXT}section", f"{_TEXT}index-body", f"{_TEXT}soft-page-break"):
                self.walk(node)

    def _list(self, node: Element, *, ordered: bool) -> None:
        for item in node:
            if item.tag not in (f"{_TEXT}list-item", f"{_TEXT}list-header"):
                continue
            for child in item:
                if child.tag in (f"{_TEXT}p", f"{_TEXT}h"):
                    text = odf_text(child)
                    if text:
                        self.lists.add(text, ordered=ordered)
                elif child.tag == f"{_TEXT}list":  # nested: same list, items in order
                    self._list(child, ordered=ordered)

    def _table(self, node: Element) -> None:
        rows: list[list[str]] = []
        header_rows = 0
        for part in node:
            if part.tag == f"{_TABLE}table-header-rows":
                for row in part.iter(f"{_TABLE}table-row"):
                    rows.append(self._row(row))
                    header_rows += 1
            elif part.tag in (f"{_TABLE}table-row", f"{_TABLE}table-rows"):
                for row in [part] if part.tag == f"{_TABLE}table-row" else part.iter(f"{_TABLE}table-row"):
                    repeat = min(int(row.get(f"{_TABLE}number-rows-repeated", "1") or 1), MAX_REPEAT)
                    cells = self._row(row)
                    rows.extend([cells] * (repeat if any(cells) else 1))
        add_table(self.doc, rows, header_rows=header_rows or 1)

    def _row(self, row: Element) -> list[str]:
        cells: list[str] = []
        for cell in row:
            if cell.tag not in (f"{_TABLE}table-cell", f"{_TABLE}covered-table-cell"):
                continue
            text = " ".join(odf_text(p) for p in cell if p.tag in (f"{_TEXT}p", f"{_TEXT}h", f"{_TEXT}list"))
            repeat = int(cell.get(f"{_TABLE}number-columns-repeated", "1") or 1)
            cells.extend([clean(text)] * min(repeat, MAX_REPEAT))
        return cells


# --- EPUB ---------------------------------------------------------------------------------

_HTML_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/x-dtbook+xml"})


def convert_epub(data: bytes, *, source: str) -> Conversion:
    """The spine's XHTML chapters in order, through the HTML converter, into one document."""
    from haiku.rag.ingest.formats_html import html_into

    package = open_package(data, source=source, kind="EPUB")
    warnings: list[str] = []
    with package:
        container = parse_xml(
            read_member(package, "META-INF/container.xml", source=source, kind="EPUB"),
            source=source,
            what="META-INF/container.xml",
        )
        rootfile = container.find(f"{_CONTAINER}rootfiles/{_CONTAINER}rootfile")
        opf_path = rootfile.get("full-path", "") if rootfile is not None else ""
        if not opf_path:
            raise DamagedDocumentError(f"{source}: not a readable EPUB file (its container names no package file)", source=source)
        opf = parse_xml(read_member(package, opf_path, source=source, kind="EPUB"), source=source, what=opf_path)
        base = posixpath.dirname(opf_path)
        manifest = {
            item.get("id", ""): item
            for item in opf.iter(f"{_OPF}item")
        }
        title_node = opf.find(f"{_OPF}metadata/{_DC}title")
        title = clean(title_node.text or "") or None if title_node is not None else None
        doc = DoclingDocument(name=source)
        for itemref in opf.iter(f"{_OPF}itemref"):
            item = manifest.get(itemref.get("idref", ""))
            if item is None or item.get("media-type") not in _HTML_TYPES:
                continue
            path = posixpath.normpath(posixpath.join(base, unquote(item.get("href", "").split("#")[0])))
            chapter = read_optional(package, path, source=source, kind="EPUB")
            if chapter is None:
                warnings.append(f"{source}: the chapter {path} listed in the book is missing")
                continue
            html_into(doc, chapter, source=f"{source}:{path}", warnings=warnings)
    if not _has_items(doc):
        raise EmptyDocumentError(f"{source}: the book contains no text", source=source)
    return Conversion(document=doc, mime_type=EPUB_MIME, title=title, warnings=warnings)
