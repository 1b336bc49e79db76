"""Word (.docx), PowerPoint (.pptx) and Excel (.xlsx) -> DoclingDocument, with the format
libraries made for each (python-docx, python-pptx, openpyxl: pure Python, no torch).

These documents have no pages. Their places are named by headings, which the chunker puts on
every chunk and citations show as the passage's location: a Word document's own headings, a
heading ``Slide N: <slide title>`` per slide, and ``Sheet: <name>`` per worksheet. Tables keep
their rows with the first row as the header (``formats_common.add_table``); lists are list
items; speaker notes follow their slide. Why these libraries and not docling's backends:
docs/formats.md.
"""

from __future__ import annotations

import datetime as dt
import io
import re
from collections.abc import Iterator
from typing import Any

from docling_core.types.doc import DocItemLabel, DoclingDocument

from haiku.rag.errors import DamagedDocumentError, EmptyDocumentError, IngestError
from haiku.rag.ingest.formats_common import ListBuilder, add_table, clean, open_package
from haiku.rag.ingest.records import Conversion

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX_MIME = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

# A worksheet is read up to this many non-empty rows (a sheet of a million rows is data for a
# spreadsheet, not a passage to cite); the rest is named in a warning.
MAX_SHEET_ROWS = 20_000
HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.I)
# Word's numbering formats that are not numbers (the rest, decimal, roman, letters, are).
BULLET_FORMATS = frozenset({"bullet", "none", ""})


def _damaged(source: str, kind: str, exc: BaseException) -> DamagedDocumentError:
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return DamagedDocumentError(f"{source}: not a readable {kind} file ({detail})", source=source)


def _conversion(doc: DoclingDocument, *, source: str, mime: str, title: str | None, warnings: list[str]) -> Conversion:
    if not any(True for _ in doc.iterate_items()):
        raise EmptyDocumentError(f"{source}: the document contains no text", source=source)
    return Conversion(document=doc, mime_type=mime, title=title, warnings=warnings)


# --- Word ---------------------------------------------------------------------------------


def convert_docx(data: bytes, *, source: str) -> Conversion:
    """Paragraphs, headings (Heading N styles, the Title style), bulleted and numbered lists,
    and tables, in body order."""
    open_package(data, source=source, kind="Word").close()
    import docx

    try:
        word = docx.Document(io.BytesIO(data))
        blocks = list(_body_blocks(word))
    except Exception as exc:  # python-docx raises KeyError, ValueError, lxml errors...
        raise _damaged(source, "Word", exc) from exc
    try:
        return _docx_document(word, blocks, source=source)
    except IngestError:
        raise
    except Exception as exc:  # a part that is missing or malformed
        raise _damaged(source, "Word", exc) from exc


def _docx_document(word: Any, blocks: list[Any], *, source: str) -> Conversion:
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    doc = DoclingDocument(name=source)
    numbering = _NumberingFormats(word)
    style_names = _StyleNames(word)
    lists = ListBuilder(doc)
    title = clean(word.core_properties.title or "") or None
    first_heading: str | None = None
    for block in blocks:
        if isinstance(block, Table):
            lists.end()
            add_table(doc, _docx_rows(block))
            continue
        if not isinstance(block, Paragraph):
            continue
        text = _paragraph_text(block._p)
        if not text:
            continue
        style = style_names.of(block)
        heading = HEADING_STYLE.match(style)
        list_format = numbering.of(block)
        if style.lower() == "title":
            lists.end()
            doc.add_title(text=text)
            title = title or text
        elif heading:
            lists.end()
            doc.add_heading(text=text, level=max(1, min(int(heading.group(1)), 6)))
            first_heading = first_heading or text
        elif list_format is not None or style.lower().startswith("list"):
            ordered = (list_format not in BULLET_FORMATS) if list_format is not None else "number" in style.lower()
            lists.add(text, ordered=ordered)
        else:
            lists.end()
            doc.add_text(label=DocItemLabel.TEXT, text=text)
    return _conversion(doc, source=source, mime=DOCX_MIME, title=title or first_heading, warnings=[])


class _StyleNames:
    """Paragraph style names by style id, read once: python-docx's ``paragraph.style`` searches
    every style per call (80% of the conversion time of a 40-section report)."""

    def __init__(self, word: Any) -> None:
        self._names: dict[str, str] = {}
        self._default = ""
        try:
            for style in word.styles:
                if style.style_id:
                    self._names[style.style_id] = str(style.name or "")
            default = word.styles.default(_paragraph_style_type())
            self._default = str(default.name or "") if default is not None else ""
        except (KeyError, ValueError, AttributeError):
            pass

    def of(self, paragraph: Any) -> str:
        style_id = paragraph._p.style
        return self._names.get(style_id, "") if style_id else self._default


def _paragraph_style_type() -> Any:
    from docx.enum.style import WD_STYLE_TYPE

    return WD_STYLE_TYPE.PARAGRAPH


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _body_blocks(word: Any) -> Iterator[Any]:
    """The body's paragraphs and tables in order, including those inside content controls
    (``w:sdt``: cover pages, tables of contents, form templates) and custom XML, which
    python-docx's ``iter_inner_content`` skips."""
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    body = word.element.body

    def walk(parent: Any) -> Iterator[Any]:
        for child in parent.iterchildren():
            if child.tag == f"{_W}p":
                yield Paragraph(child, word._body)
            elif child.tag == f"{_W}tbl":
                yield Table(child, word._body)
            elif child.tag == f"{_W}sdt":
                for content in child.iterchildren(f"{_W}sdtContent"):
                    yield from walk(content)
            elif child.tag == f"{_W}customXml":
                yield from walk(child)

    yield from walk(body)


def _paragraph_text(paragraph: Any) -> str:
    """A paragraph's text from every run in it, also those inside tracked insertions, smart
    tags, fields and content controls (python-docx's ``Paragraph.text`` reads only its direct
    runs and hyperlinks); deleted text (``w:delText``) stays out."""
    parts = []
    for node in paragraph.iter(f"{_W}t", f"{_W}tab", f"{_W}br", f"{_W}cr"):
        parts.append(node.text or "" if node.tag == f"{_W}t" else " ")
    return clean("".join(parts))


def _cell_paragraphs(tc: Any) -> str:
    return clean(" ".join(_paragraph_text(p) for p in tc.iter(f"{_W}p")))


def _docx_rows(table: Any) -> list[list[str]]:
    """Each row's cell texts by grid column (a merged cell's text in each column it spans)."""
    rows = []
    for row in table.rows:
        try:
            rows.append([_cell_paragraphs(cell._tc) for cell in row.cells])
        except (IndexError, ValueError):  # a malformed grid: keep the row's own cells
            rows.append([clean(tc.xpath("string(.)")) for tc in row._tr.tc_lst])
    return rows


class _NumberingFormats:
    """A list paragraph's numbering format (``decimal``, ``bullet``, ...) from numbering.xml;
    None for a paragraph outside a list."""

    def __init__(self, word: Any) -> None:
        self._formats: dict[tuple[str, str], str] = {}
        try:
            numbering = word.part.numbering_part.element
        except (KeyError, NotImplementedError, AttributeError):
            return
        w = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
        abstract: dict[str, dict[str, str]] = {}
        for node in numbering.findall(f"{w}abstractNum"):
            levels = {}
            for level in node.findall(f"{w}lvl"):
                fmt = level.find(f"{w}numFmt")
                levels[level.get(f"{w}ilvl", "0")] = fmt.get(f"{w}val", "") if fmt is not None else ""
            abstract[node.get(f"{w}abstractNumId", "")] = levels
        for num in numbering.findall(f"{w}num"):
            ref = num.find(f"{w}abstractNumId")
            levels = abstract.get(ref.get(f"{w}val", "") if ref is not None else "", {})
            for ilvl, fmt in levels.items():
                self._formats[(num.get(f"{w}numId", ""), ilvl)] = fmt

    def of(self, paragraph: Any) -> str | None:
        ppr = paragraph._p.pPr
        numpr = ppr.numPr if ppr is not None else None
        if numpr is None or numpr.numId is None or numpr.numId.val == 0:
            return None
        ilvl = str(numpr.ilvl.val) if numpr.ilvl is not None else "0"
        return self._formats.get((str(numpr.numId.val), ilvl), "bullet")


# --- PowerPoint ---------------------------------------------------------------------------


def convert_pptx(data: bytes, *, source: str) -> Conversion:
    """One heading per slide (``Slide N: title``), then the slide's text frames top to bottom,
    left to right (a body placeholder's paragraphs as list items), its tables, and its speaker
    notes."""
    open_package(data, source=source, kind="PowerPoint").close()
    from pptx import Presentation

    try:
        deck = Presentation(io.BytesIO(data))
        slides = list(deck.slides)
    except Exception as exc:  # python-pptx raises KeyError, ValueError, lxml errors...
        raise _damaged(source, "PowerPoint", exc) from exc
    try:
        return _pptx_document(deck, slides, source=source)
    except IngestError:
        raise
    except Exception as exc:  # a slide whose layout, master or part is missing or malformed
        raise _damaged(source, "PowerPoint", exc) from exc


def _pptx_document(deck: Any, slides: list[Any], *, source: str) -> Conversion:
    doc = DoclingDocument(name=source)
    title = clean(deck.core_properties.title or "") or None
    for number, slide in enumerate(slides, start=1):
        title_shape = _title_shape(slide)
        slide_title = clean(title_shape.text_frame.text) if title_shape is not None else ""
        doc.add_heading(text=f"Slide {number}: {slide_title}" if slide_title else f"Slide {number}", level=1)
        title = title or slide_title or None
        lists = ListBuilder(doc)
        for shape in _reading_order(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            _add_shape(doc, shape, lists)
        lists.end()
        notes = _notes(slide)
        if notes:
            doc.add_text(label=DocItemLabel.TEXT, text=f"Speaker notes: {notes}")
    return _conversion(doc, source=source, mime=PPTX_MIME, title=title, warnings=[])


def _title_shape(slide: Any) -> Any:
    try:
        shape = slide.shapes.title
    except (KeyError, ValueError):
        return None
    return shape if shape is not None and shape.has_text_frame else None


def _reading_order(shapes: Any) -> list[Any]:
    return sorted(shapes, key=lambda s: ((s.top or 0) // 20, s.left or 0))  # rows ~0.2 mm apart


def _add_shape(doc: DoclingDocument, shape: Any, lists: ListBuilder) -> None:
    from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER

    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        for inner in _reading_order(shape.shapes):
            _add_shape(doc, inner, lists)
        return
    if getattr(shape, "has_table", False) and shape.has_table:
        lists.end()
        add_table(doc, [[clean(cell.text) for cell in row.cells] for row in shape.table.rows])
        return
    if not shape.has_text_frame:
        return
    bulleted = shape.is_placeholder and shape.placeholder_format.type in (
        PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT
    )
    for paragraph in shape.text_frame.paragraphs:
        text = clean("".join(run.text for run in paragraph.runs) or paragraph.text)
        if not text:
            continue
        if bulleted or paragraph.level > 0:
            lists.add(text, ordered=False)
        else:
            lists.end()
            doc.add_text(label=DocItemLabel.TEXT, text=text)


def _notes(slide: Any) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    return clean(frame.text) if frame is not None else ""


# --- Excel --------------------------------------------------------------------------------


def convert_xlsx(data: bytes, *, source: str) -> Conversion:
    """One heading per worksheet (``Sheet: name``), then its tables: runs of rows between empty
    rows, each with its first row as the header. Cached formula results are read, not the
    formulas."""
    open_package(data, source=source, kind="Excel").close()
    import openpyxl

    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises KeyError, ValueError, InvalidFileException...
        raise _damaged(source, "Excel", exc) from exc
    doc = DoclingDocument(name=source)
    warnings: list[str] = []
    try:
        for sheet in book.worksheets:
            rows, cut = _sheet_rows(sheet)
            if cut:
                warnings.append(
                    f"{source}: sheet {sheet.title!r} has more than {MAX_SHEET_ROWS} rows; "
                    f"only the first {MAX_SHEET_ROWS} were read"
                )
            blocks = list(_blocks(rows))
            if not blocks:
                continue
            doc.add_heading(text=f"Sheet: {sheet.title}", level=1)
            for block in blocks:
                if len(block) == 1 and sum(1 for cell in block[0] if cell) == 1:
                    doc.add_text(label=DocItemLabel.TEXT, text=next(cell for cell in block[0] if cell))
                else:
                    add_table(doc, block)
    except IngestError:
        raise
    except Exception as exc:
        raise _damaged(source, "Excel", exc) from exc
    finally:
        book.close()
    properties = book.properties
    title = (clean(properties.title or "") or None) if properties is not None else None
    return _conversion(doc, source=source, mime=XLSX_MIME, title=title, warnings=warnings)


def _sheet_rows(sheet: Any) -> tuple[list[list[str]], bool]:
    rows: list[list[str]] = []
    kept = 0
    for values in sheet.iter_rows(values_only=True):
        row = [_cell_text(value) for value in values]
        if any(row):
            kept += 1
            if kept > MAX_SHEET_ROWS:
                return rows, True
        rows.append(row)
    return rows, False


def _blocks(rows: list[list[str]]) -> Iterator[list[list[str]]]:
    block: list[list[str]] = []
    for row in rows:
        if any(row):
            block.append(row)
        elif block:
            yield block
            block = []
    if block:
        yield block


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="minutes") if (value.hour or value.minute) else value.date().isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return clean(str(value))
