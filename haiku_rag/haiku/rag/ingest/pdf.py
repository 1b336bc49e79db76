"""PDF -> DoclingDocument with line-level provenance, built from PyMuPDF.

Why our own builder: docling's PDF pipelines need model downloads (or give one item per
line), while PyMuPDF already gives lines, fonts, images and ruled tables offline.

Pipeline, page by page:
1. read the page: one text extraction that also collects vector paths, plus image boxes
   when the page has images -- the only PyMuPDF calls allowed to fail; a failing page is
   skipped with a warning;
2. turn text lines into ``_Line`` records (text, box in the reading frame, box in display
   space for provenance, font size, boldness);
3. cut the page into ``_Block`` s: ``fast`` splits PyMuPDF's blocks into runs of same-styled
   lines and rebuilds ruled tables from the vector rules; ``layout`` groups lines under the
   labelled boxes of PyMuPDF's bundled ONNX layout analyser;
4. order the blocks column by column.
Then, document-wide: running headers/footers, the body font, captions, headings and their
levels, list items, the title; finally the DoclingDocument, with one ``ProvenanceItem`` per
line whose ``charspan`` locates that line in the item text.

Coordinates: PyMuPDF extracts text in the *unrotated* page space. Provenance must be in the
display space that ``page.get_pixmap()`` renders (see ``records.py``), so every box is mapped
with ``page.rotation_matrix``. Reading order is worked out in a separate "reading frame" in
which the page's dominant text direction runs left to right, so sideways text still reads
top-to-bottom.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pymupdf
from docling_core.types.doc import (
    BoundingBox,
    ContentLayer,
    CoordOrigin,
    DocItem,
    DocItemLabel,
    DoclingDocument,
    GroupItem,
    ProvenanceItem,
    Size,
    TableCell,
    TableData,
)
from haiku.rag.errors import (
    DamagedDocumentError,
    EmptyDocumentError,
    NeedsOCRError,
    PasswordRequiredError,
    WrongPasswordError,
)
from haiku.rag.ingest.records import Conversion
from haiku.rag.operations import CancelToken, Progress, ProgressCallback, Stage, check_cancelled
from haiku.rag.operations import report as report_progress

PDF_MIME_TYPE = "application/pdf"
PdfLayoutMode = Literal["fast", "layout"]

Bbox = tuple[float, float, float, float]
Matrix = tuple[float, float, float, float, float, float]
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)

# One text extraction pass also collects vector paths (as type-3 blocks). Images are not
# collected there: the dict would carry their decoded payloads, which made it 6x slower.
TEXT_FLAGS = pymupdf.TEXT_MEDIABOX_CLIP | pymupdf.TEXT_COLLECT_VECTORS
# Guards against pathological pages (fuzzed or generated files with absurd content).
MAX_CHARS_PER_PAGE = 200_000
MAX_LINES_PER_PAGE = 10_000
MAX_PATHS_FOR_TABLES = 5_000  # grid reconstruction is quadratic in rules: skip beyond this
# Share of a ruled grid's cells that must hold text for it to be a table. Measured on the
# real-PDF set: tables 0.56-1.0, vector diagrams and forms 0.0-0.38 (a few UML diagrams more).
MIN_FILLED_CELLS = 0.5
MAX_LINES_FOR_LAYOUT_MODEL = 3_000
# A page with fewer usable characters than this needs OCR if it shows image or vector content
# (a scan) or if its text does not decode (fonts without a Unicode map give U+FFFD).
MIN_USABLE_CHARS = 20
SCAN_IMAGE_AREA_FRACTION = 0.25
SCAN_MIN_VECTOR_PATHS = 200

# Running headers/footers live in this fraction of the page height at its top or bottom.
FURNITURE_ZONE = 0.1
MIN_PICTURE_SIDE = 24.0  # points; smaller images are icons, bullets, rules
PICTURE_JOIN_GAP = 12.0  # images closer than this belong to the same figure
MAX_HEADING_CHARS = 200
MAX_HEADING_LINES = 3
MAX_HEADING_LEVEL = 6

BULLET_CHARS = "•·◦▪▫‣⁃∙●○■□►▶➢➤✓✔❖\uf0b7\uf0a7\uf076\uf0d8\uf0fc\uf06e*-–—"
LIST_MARKER = re.compile(
    rf"^(?:(?P<bullet>[{re.escape(BULLET_CHARS)}])"
    r"|(?P<enum>\(?(?:\d{1,3}|[a-z]|[ivx]{1,4})[.)]))\s+(?P<rest>\S.*)$"
)
MARKER_ONLY = re.compile(rf"^(?:[{re.escape(BULLET_CHARS)}]|\(?(?:\d{{1,3}}|[a-z])[.)])$")
CAPTION_START = re.compile(r"^(?:Figure|Fig\.|Table|Tab\.|Chart|Exhibit|Plate)\s*[0-9IVX]+[A-Za-z]?\s*[:.|—–-]")
SECTION_NUMBER = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,4})\.?\s+\S")
PAGE_NUMBER_ONLY = re.compile(r"^(?:page\s*)?[-–—]?\s*#+\s*[-–—]?(?:\s*(?:of|/)\s*#+)?$|^[ivxlc]{1,6}$")
HYPHENS = ("-", "\u00ad", "\u2010")
# Metadata titles that name nothing: placeholders, and file names ("Binder1.pdf", "x.odp").
JUNK_TITLE = re.compile(r"^(?:untitled|title|document\d*|slide \d+|\W+)$|^\S+\.[A-Za-z0-9]{2,5}$", re.I)
WORD_EXPORT_PREFIX = re.compile(r"^Microsoft (?:Word|PowerPoint) - ")

BlockKind = Literal[
    "text", "title", "heading", "list_item", "caption", "footnote", "formula",
    "header", "footer", "table", "picture",
]


# --- records ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Line:
    text: str
    box: Bbox  # reading frame: dominant text direction runs left to right
    unrotated: Bbox  # PyMuPDF's extraction space (tables and layout boxes come in it)
    display: Bbox  # display space (page.rect, top-left origin): what provenance records
    size: float
    bold: bool
    source_block: int  # PyMuPDF block number (fast-mode runs never cross blocks)
    direction: tuple[int, int] | None  # axis-aligned writing direction, None when slanted
    on_axis: bool = True  # runs along the page's dominant direction (set by _orient_lines)


@dataclass(slots=True)
class _Block:
    kind: BlockKind
    page_no: int
    box: Bbox
    display: Bbox
    lines: list[_Line] = field(default_factory=list)
    table: TableData | None = None
    heading_level: int = 0
    # list items: the stripped marker ("•", "1.") and whether it counts
    marker: str = ""
    enumerated: bool = False


@dataclass(slots=True)
class _Page:
    page_no: int
    width: float
    height: float  # display size
    frame_box: Bbox  # the page in the reading frame (for header/footer zones, the title)
    blocks: list[_Block]
    usable_chars: int
    needs_ocr: bool
    garbled: bool  # it has text, but the text does not decode


@dataclass(slots=True)
class _PageGraphics:
    """Boxes of the page's non-text content, in unrotated page space."""

    images: list[Bbox]
    stroke_paths: list[Bbox]
    fill_paths: list[Bbox]


# --- public entry point -------------------------------------------------------------------


def convert_pdf(
    data: bytes,
    *,
    source: str,
    password: str | None = None,
    layout: PdfLayoutMode = "fast",
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> Conversion:
    """Convert PDF bytes into a DoclingDocument whose items carry one provenance per line.

    ``layout="fast"`` uses font and geometry heuristics (~90-100 pages per second, one core);
    ``layout="layout"`` runs PyMuPDF's bundled ONNX layout analyser (~1 page per second)
    for better headings, figures and borderless tables. See docs/pdf-layout.md.
    Raises PasswordRequiredError, WrongPasswordError, DamagedDocumentError,
    EmptyDocumentError or NeedsOCRError, each naming ``source``.
    """
    if layout not in ("fast", "layout"):
        raise ValueError(f"unknown PDF layout mode {layout!r}: use 'fast' or 'layout'")
    doc = _open(data, source=source, password=password)
    try:
        return _convert_open_document(doc, source, layout, progress, cancel)
    finally:
        doc.close()


def _open(data: bytes, *, source: str, password: str | None) -> pymupdf.Document:
    if not data:
        raise EmptyDocumentError(f"{source}: the file is empty (0 bytes)", source=source)
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase) as exc:
        raise DamagedDocumentError(
            f"{source}: not a readable PDF ({_one_line(exc)})", source=source
        ) from exc
    if doc.needs_pass:
        if not password:
            doc.close()
            raise PasswordRequiredError(
                f"{source}: the PDF is password-protected; give its password to index it",
                source=source,
            )
        if not doc.authenticate(password):
            doc.close()
            raise WrongPasswordError(
                f"{source}: the password given does not open this PDF", source=source
            )
    try:
        page_count = doc.page_count
    except (RuntimeError, pymupdf.mupdf.FzErrorBase) as exc:
        doc.close()
        raise DamagedDocumentError(
            f"{source}: the PDF's page tree is unreadable ({_one_line(exc)})", source=source
        ) from exc
    if page_count == 0:
        doc.close()
        raise EmptyDocumentError(f"{source}: the PDF has no pages", source=source)
    return doc


def _convert_open_document(
    doc: pymupdf.Document,
    source: str,
    layout: PdfLayoutMode,
    progress: ProgressCallback | None,
    cancel: CancelToken | None,
) -> Conversion:
    page_count = doc.page_count
    warnings: list[str] = []
    pages: list[_Page] = []
    failed: list[int] = []
    layout_model = _layout_model() if layout == "layout" else None
    for index in range(page_count):
        check_cancelled(cancel)
        page_no = index + 1
        try:
            page = doc.load_page(index)
            raw = _read_page(page)
        except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase) as exc:
            failed.append(page_no)
            warnings.append(f"page {page_no} skipped: it could not be parsed ({_one_line(exc)})")
        else:
            pages.append(_analyse_page(page, page_no, raw, layout_model, warnings))
        report_progress(
            progress, Progress(Stage.PARSING, source=source, done=page_no, total=page_count)
        )

    if len(failed) == page_count:
        raise DamagedDocumentError(
            f"{source}: none of its {page_count} pages could be parsed ({warnings[0]})",
            source=source,
        )
    if all(p.needs_ocr or not p.usable_chars for p in pages):
        _raise_for_missing_text(source, page_count, pages)

    _mark_running_furniture(pages)
    _classify_styles(pages)
    document = _build_document(pages, name=source)
    return Conversion(
        document=document,
        mime_type=PDF_MIME_TYPE,
        page_count=page_count,
        title=_choose_title(doc.metadata or {}, pages),
        pages_needing_ocr=[p.page_no for p in pages if p.needs_ocr],
        warnings=warnings,
    )


def _raise_for_missing_text(source: str, page_count: int, pages: list[_Page]) -> None:
    if any(p.needs_ocr and not p.garbled for p in pages):
        raise NeedsOCRError(
            f"{source}: no text layer on any of its {page_count} pages (scanned?); "
            "it needs OCR before it can be indexed",
            source=source,
        )
    if any(p.garbled for p in pages):
        raise NeedsOCRError(
            f"{source}: its text cannot be decoded (fonts without a Unicode map); "
            "it needs OCR before it can be indexed",
            source=source,
        )
    raise EmptyDocumentError(f"{source}: its {page_count} pages contain no text", source=source)


# --- reading one page ---------------------------------------------------------------------


@dataclass(slots=True)
class _RawPage:
    text: dict[str, Any]
    graphics: _PageGraphics


def _read_page(page: pymupdf.Page) -> _RawPage:
    """The only PyMuPDF calls that may fail on a damaged page."""
    text = page.get_textpage(flags=TEXT_FLAGS).extractDICT()
    strokes, fills = [], []
    has_text = False
    for block in text["blocks"]:
        kind = block["type"]
        if kind == 3:
            (strokes if block["stroked"] else fills).append(block["bbox"])
        elif kind == 0:
            has_text = True
    images: list[Bbox] = []
    # Image boxes cost a second pass over the page, so only when the page's resources list
    # images, or when it has no text (an inline-image scan would not be listed).
    if not has_text or page.get_images():
        images = [info["bbox"] for info in page.get_image_info()]
    return _RawPage(text, _PageGraphics(images, strokes, fills))


def _analyse_page(
    page: pymupdf.Page,
    page_no: int,
    raw: _RawPage,
    layout_model: Any | None,
    warnings: list[str],
) -> _Page:
    rotation = _matrix(page.rotation_matrix) if page.rotation else IDENTITY
    lines = _extract_lines(raw.text, rotation, page_no, warnings)
    frame = _orient_lines(lines)
    unrotated = (0.0, 0.0, page.rect.width, page.rect.height)
    if page.rotation in (90, 270):
        unrotated = (0.0, 0.0, page.rect.height, page.rect.width)

    usable, needs_ocr, garbled = _assess_text_layer(lines, raw.graphics, unrotated)
    geometry = _Geometry(page_no, rotation, frame)
    pictures = _picture_blocks(raw.graphics.images, unrotated, geometry, lines)
    blocks = None
    if layout_model is not None and lines:
        blocks = _layout_blocks_or_none(page, lines, pictures, geometry, layout_model, warnings)
    if blocks is None:
        tables = _ruled_tables(unrotated, raw.graphics, lines, geometry, warnings)
        in_tables = {id(line) for table in tables for line in table.lines}
        flow = [line for line in lines if id(line) not in in_tables]
        blocks = _order_blocks(_runs(flow, page_no) + tables + pictures)
    return _Page(
        page_no=page_no,
        width=page.rect.width,
        height=page.rect.height,
        frame_box=_transform(unrotated, frame),
        blocks=blocks,
        usable_chars=usable,
        needs_ocr=needs_ocr,
        garbled=garbled,
    )


@dataclass(slots=True)
class _Geometry:
    """How to map an unrotated page box to the reading frame and to display space."""

    page_no: int
    rotation: Matrix
    frame: Matrix

    def block(self, kind: BlockKind, unrotated: Bbox, lines: list[_Line] | None = None) -> _Block:
        return _Block(
            kind=kind,
            page_no=self.page_no,
            box=_transform(unrotated, self.frame),
            display=_transform(unrotated, self.rotation),
            lines=lines or [],
        )


def _extract_lines(
    text: dict[str, Any], rotation: Matrix, page_no: int, warnings: list[str]
) -> list[_Line]:
    lines: list[_Line] = []
    chars = 0
    for block in text["blocks"]:
        if block.get("type", 0) != 0:
            continue
        for raw_line in block["lines"]:
            line = _make_line(raw_line, block["number"], rotation)
            if line is None:
                continue
            chars += len(line.text)
            if chars > MAX_CHARS_PER_PAGE or len(lines) >= MAX_LINES_PER_PAGE:
                warnings.append(
                    f"page {page_no}: text truncated after {len(lines)} lines "
                    f"({chars} characters); the page is abnormally dense"
                )
                return lines
            lines.append(line)
    return lines


def _make_line(raw: dict[str, Any], block_no: int, rotation: Matrix) -> _Line | None:
    """One text line. Hot path (tens of thousands of calls per long document): plain loops."""
    dx, dy = raw["dir"]
    horizontal = dy == 0 and dx > 0
    parts: list[str] = []
    previous_box = None
    size = 0.0
    longest = bold_chars = total_chars = 0
    for span in raw["spans"]:
        span_text = span["text"]
        if not span_text:
            continue
        box = span["bbox"]
        if previous_box is not None and not parts[-1].endswith(" ") and not span_text.startswith(" "):
            # Spans are joined with "" (word-per-span PDFs already carry their spaces), but a
            # visibly wide gap between two spans is a word break the PDF did not encode.
            gap = box[0] - previous_box[2] if horizontal else _gap_along(previous_box, box, (dx, dy))
            if gap > 0.25 * span["size"]:
                parts.append(" ")
        parts.append(span_text)
        previous_box = box
        n = len(span_text)
        total_chars += n
        if n > longest:
            longest, size = n, span["size"]
        if span["flags"] & BOLD_FLAG or _is_bold_font(span["font"]):
            bold_chars += n
    line_text = " ".join("".join(parts).split())
    if not line_text:
        return None
    box = tuple(raw["bbox"])
    return _Line(
        text=line_text,
        box=box,
        unrotated=box,
        display=_transform(box, rotation),
        size=size,
        bold=bold_chars >= 0.6 * total_chars,
        source_block=block_no,
        direction=_axis_direction(dx, dy),
    )


BOLD_FLAG = pymupdf.TEXT_FONT_BOLD
_BOLD_FONTS: dict[str, bool] = {}


def _is_bold_font(font: str) -> bool:
    bold = _BOLD_FONTS.get(font)
    if bold is None:
        lowered = font.lower()
        bold = any(word in lowered for word in ("bold", "black", "heavy", "semibold"))
        _BOLD_FONTS[font] = bold
    return bold


def _axis_direction(dx: float, dy: float) -> tuple[int, int] | None:
    """The writing direction as a unit axis vector, or None for slanted text."""
    if abs(dy) < 0.02:
        return (1, 0) if dx > 0 else (-1, 0)
    if abs(dx) < 0.02:
        return (0, 1) if dy > 0 else (0, -1)
    return None


def _gap_along(a: Sequence[float], b: Sequence[float], direction: Sequence[float]) -> float:
    """Distance from the end of box ``a`` to the start of box ``b`` along the line direction."""
    dx, dy = direction

    def extent(box: Sequence[float]) -> tuple[float, float]:
        xs = (box[0] * dx, box[2] * dx)
        ys = (box[1] * dy, box[3] * dy)
        return min(xs) + min(ys), max(xs) + max(ys)

    return extent(b)[0] - extent(a)[1]


def _orient_lines(lines: list[_Line]) -> Matrix:
    """Find the page's dominant writing direction (by characters), mark the lines that
    follow it, and put every line's ``box`` into the reading frame where it runs left to
    right. Returns the frame's matrix."""
    weights: Counter[tuple[int, int]] = Counter()
    for line in lines:
        if line.direction is not None:
            weights[line.direction] += len(line.text)
    dominant = weights.most_common(1)[0][0] if weights else (1, 0)
    frame = _FRAME_FOR_DIRECTION[dominant]
    for line in lines:
        line.on_axis = line.direction == dominant
        if frame != IDENTITY:
            line.box = _transform(line.unrotated, frame)
    return frame


# Rotations (no translation: only relative positions matter for ordering) mapping the
# direction vector to (1, 0). PyMuPDF's top-left space has y downwards.
_FRAME_FOR_DIRECTION: dict[tuple[int, int], Matrix] = {
    (1, 0): IDENTITY,
    (0, 1): (0.0, -1.0, 1.0, 0.0, 0.0, 0.0),  # text running down the page
    (-1, 0): (-1.0, 0.0, 0.0, -1.0, 0.0, 0.0),  # upside down
    (0, -1): (0.0, 1.0, -1.0, 0.0, 0.0, 0.0),  # text running up the page
}


def _matrix(m: pymupdf.Matrix) -> Matrix:
    return (m.a, m.b, m.c, m.d, m.e, m.f)


def _transform(box: Sequence[float], m: Matrix) -> Bbox:
    if m == IDENTITY:
        return box if isinstance(box, tuple) else (box[0], box[1], box[2], box[3])
    a, b, c, d, e, f = m
    xs, ys = [], []
    for x in (box[0], box[2]):
        for y in (box[1], box[3]):
            xs.append(a * x + c * y + e)
            ys.append(b * x + d * y + f)
    return (min(xs), min(ys), max(xs), max(ys))


def _assess_text_layer(
    lines: list[_Line], graphics: _PageGraphics, page_box: Bbox
) -> tuple[int, bool, bool]:
    """(usable characters, needs OCR, text garbled). A page needs OCR when it has almost no
    usable text but shows a scan (images or outlined glyphs), or when its text is there but
    does not decode."""
    usable = sum(_usable_chars(line.text) for line in lines)
    if usable >= MIN_USABLE_CHARS:
        return usable, False, False
    garbled = sum(len(line.text) for line in lines) - usable >= MIN_USABLE_CHARS
    return usable, garbled or _has_scan_like_content(graphics, page_box), garbled


_UNUSABLE = re.compile("[\x00-\x1f\x7f\ufffd]")


def _usable_chars(text: str) -> int:
    """Characters that carry meaning: not spaces (line text is whitespace-normalised), not
    control characters or U+FFFD (what fonts without a Unicode map extract as)."""
    return len(text) - text.count(" ") - len(_UNUSABLE.findall(text))


def _has_scan_like_content(graphics: _PageGraphics, page_box: Bbox) -> bool:
    page_area = _area(page_box)
    image_area = sum(_area(_intersect(box, page_box)) for box in graphics.images)
    if page_area > 0 and image_area >= SCAN_IMAGE_AREA_FRACTION * page_area:
        return True
    # Text converted to outlines shows up as many filled paths.
    return len(graphics.fill_paths) >= SCAN_MIN_VECTOR_PATHS


# --- fast mode: runs, tables, pictures, column order --------------------------------------


def _runs(lines: list[_Line], page_no: int) -> list[_Block]:
    """Cut each PyMuPDF block into runs of consistently styled, adjacent lines; a list
    marker always starts a new run. Off-axis lines (vertical stamps) become their own runs."""
    runs: list[_Block] = []
    current: list[_Line] = []

    def close() -> None:
        if current:
            runs.append(_text_block(current, page_no))

    previous: _Line | None = None
    for line in lines:
        if previous is None or _starts_new_run(previous, line):
            close()
            current = []
        if previous is not None and current and MARKER_ONLY.match(previous.text) and (
            len(current) == 1 and _same_row(previous, line)
        ):
            # A bullet glyph extracted as its own line: fold it into the text line.
            line = _merge_marker(previous, line)
            current = []
        current.append(line)
        previous = line
    close()
    return runs


def _starts_new_run(previous: _Line, line: _Line) -> bool:
    if line.source_block != previous.source_block or line.on_axis != previous.on_axis:
        return True
    if MARKER_ONLY.match(previous.text) and _same_row(previous, line):
        return False
    if abs(line.size - previous.size) > 0.6 or line.bold != previous.bold:
        return True
    if LIST_MARKER.match(line.text):
        return True
    gap = line.box[1] - previous.box[3]
    return gap > 0.9 * max(line.size, previous.size)


def _same_row(a: _Line, b: _Line) -> bool:
    overlap = min(a.box[3], b.box[3]) - max(a.box[1], b.box[1])
    return overlap > 0.5 * min(a.box[3] - a.box[1], b.box[3] - b.box[1])


def _merge_marker(marker: _Line, line: _Line) -> _Line:
    return _Line(
        text=f"{marker.text} {line.text}",
        box=_union((marker.box, line.box)),
        unrotated=_union((marker.unrotated, line.unrotated)),
        display=_union((marker.display, line.display)),
        size=line.size,
        bold=line.bold,
        source_block=line.source_block,
        direction=line.direction,
        on_axis=line.on_axis,
    )


def _text_block(lines: list[_Line], page_no: int, kind: BlockKind = "text") -> _Block:
    box = _union([line.box for line in lines])
    # On an upright, unrotated page the three spaces coincide: skip the second union.
    same_space = all(line.display is line.box for line in lines)
    return _Block(
        kind=kind,
        page_no=page_no,
        box=box,
        display=box if same_space else _union([line.display for line in lines]),
        lines=list(lines),
    )


def _mark_list_item(block: _Block) -> bool:
    """Make a block whose first line starts with a list marker a list item."""
    match = LIST_MARKER.match(block.lines[0].text)
    if match is None:
        return False
    block.kind = "list_item"
    block.enumerated = match.group("enum") is not None
    block.marker = match.group("bullet") or match.group("enum")
    return True


Segment = tuple[float, float, float]  # (position, start, end): a horizontal or vertical rule


def _ruled_tables(
    page_box: Bbox,
    graphics: _PageGraphics,
    lines: list[_Line],
    geometry: _Geometry,
    warnings: list[str],
) -> list[_Block]:
    """Tables drawn as ruled grids, rebuilt from the page's vector rules.

    PyMuPDF's find_tables() was measured at 40-700 ms per table page (it turns every
    character into a Python dict); the grid is already known from get_bboxlog(), so cells
    come from the rules directly: each row band x column band is a cell, and a missing
    rule between two neighbours merges them (row and column spans)."""
    if len(graphics.stroke_paths) + len(graphics.fill_paths) > MAX_PATHS_FOR_TABLES:
        warnings.append(
            f"page {geometry.page_no}: table detection skipped, too many vector paths"
        )
        return []
    rows, columns = _rules(graphics, page_box)
    if len(rows) < 3 or len(columns) < 2:
        return []
    tables = []
    for region in _grid_regions(rows, columns):
        block = _grid_table(region, rows, columns, lines, geometry)
        if block is not None:
            tables.append(block)
    return tables


def _rules(graphics: _PageGraphics, page_box: Bbox) -> tuple[list[Segment], list[Segment]]:
    """Horizontal and vertical rules on the page. A rectangle (stroked cell, shaded band)
    contributes its four edges; collinear pieces are joined (tables drawn cell by cell).
    Page frames and crop marks outside the page are ignored."""
    horizontal: list[Segment] = []
    vertical: list[Segment] = []
    max_box_area = 0.5 * _area(page_box)
    for box in (*graphics.stroke_paths, *graphics.fill_paths):
        x0, y0, x1, y1 = _intersect(box, page_box)
        width, height = x1 - x0, y1 - y0
        if height <= 3 and width >= 10:
            horizontal.append(((y0 + y1) / 2, x0, x1))
        elif width <= 3 and height >= 6:
            vertical.append(((x0 + x1) / 2, y0, y1))
        elif width >= 10 and height >= 6 and width * height <= max_box_area:
            horizontal += [(y0, x0, x1), (y1, x0, x1)]
            vertical += [(x0, y0, y1), (x1, y0, y1)]
    return _join_collinear(horizontal), _join_collinear(vertical)


def _join_collinear(segments: list[Segment]) -> list[Segment]:
    """Join segments on the same line (within 1.5 pt) that touch or overlap."""
    joined: list[Segment] = []
    for position, start, end in sorted(segments):
        if joined and abs(joined[-1][0] - position) <= 1.5 and start <= joined[-1][2] + 2:
            last = joined[-1]
            joined[-1] = (last[0], last[1], max(last[2], end))
        else:
            joined.append((position, start, end))
    return joined


def _grid_regions(rows: list[Segment], columns: list[Segment]) -> list[Bbox]:
    """Boxes of the separate grids on the page. A grid needs two or more vertical rules that
    each cross three or more horizontal rules; lone boxes and page frames do not qualify."""
    spines: list[Bbox] = []
    for x, top, bottom in columns:
        crossed = [
            (y, left, right) for y, left, right in rows
            if left - 2 <= x <= right + 2 and top - 2 <= y <= bottom + 2
        ]
        if len({round(y) for y, _, _ in crossed}) >= 3:
            spines.append(_union([(x, top, x, bottom)] + [(a, y, b, y) for y, a, b in crossed]))
    regions: list[Bbox] = []
    for spine in spines:  # merge spines of the same grid (their boxes overlap)
        touching = [r for r in regions if _boxes_touch(r, spine)]
        for region in touching:
            regions.remove(region)
        regions.append(_union([spine, *touching]))
    return regions


def _boxes_touch(a: Bbox, b: Bbox, slack: float = 2.0) -> bool:
    return a[0] - slack <= b[2] and b[0] - slack <= a[2] and a[1] - slack <= b[3] and b[1] - slack <= a[3]


def _grid_table(
    region: Bbox,
    rows: list[Segment],
    columns: list[Segment],
    lines: list[_Line],
    geometry: _Geometry,
) -> _Block | None:
    inside = _expand(region, 2.0)
    rows = [r for r in rows if inside[1] <= r[0] <= inside[3] and r[1] < inside[2] and r[2] > inside[0]]
    columns = [c for c in columns if inside[0] <= c[0] <= inside[2] and c[1] < inside[3] and c[2] > inside[1]]
    ys = _cluster_edges(r[0] for r in rows)
    xs = _cluster_edges(c[0] for c in columns)
    n_rows, n_cols = len(ys) - 1, len(xs) - 1
    if n_rows < 2 or n_cols < 2:
        return None  # a framed list or a shaded band, not a table
    cell_of = _merge_unruled_neighbours(ys, xs, rows, columns)
    table_box = (xs[0], ys[0], xs[-1], ys[-1])
    texts: dict[int, list[str]] = {}
    members = []
    for line in lines:
        cx = (line.unrotated[0] + line.unrotated[2]) / 2
        cy = (line.unrotated[1] + line.unrotated[3]) / 2
        if not (table_box[0] <= cx <= table_box[2] and table_box[1] <= cy <= table_box[3]):
            continue
        members.append(line)
        row = min(max(bisect.bisect_right(ys, cy) - 1, 0), n_rows - 1)
        col = min(max(bisect.bisect_right(xs, cx) - 1, 0), n_cols - 1)
        texts.setdefault(cell_of[row * n_cols + col], []).append(line.text)
    if len(texts) < 2 or len(texts) < MIN_FILLED_CELLS * len(set(cell_of)):
        # Mostly empty cells: the boxes and arrows of a diagram, or a form, not a table.
        return None
    spans: dict[int, list[int]] = {}  # root -> [row0, row1, col0, col1]
    for index, root in enumerate(cell_of):
        row, col = divmod(index, n_cols)
        span = spans.setdefault(root, [row, row, col, col])
        span[0], span[1] = min(span[0], row), max(span[1], row)
        span[2], span[3] = min(span[2], col), max(span[3], col)
    cells = [
        TableCell(
            text=" ".join(texts.get(root, [])),
            start_row_offset_idx=row0,
            end_row_offset_idx=row1 + 1,
            start_col_offset_idx=col0,
            end_col_offset_idx=col1 + 1,
            row_span=row1 + 1 - row0,
            col_span=col1 + 1 - col0,
            column_header=row0 == 0,
        )
        for root, (row0, row1, col0, col1) in spans.items()
    ]
    block = geometry.block("table", table_box, members)
    block.table = TableData(num_rows=n_rows, num_cols=n_cols, table_cells=cells)
    return block


def _merge_unruled_neighbours(
    ys: list[float], xs: list[float], rows: list[Segment], columns: list[Segment]
) -> list[int]:
    """For each grid slot (row-major), the slot that represents its merged cell: two
    neighbouring slots with no rule between them belong to the same cell."""
    n_rows, n_cols = len(ys) - 1, len(xs) - 1
    parent = list(range(n_rows * n_cols))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    rules_at_x = _segments_by_edge(xs, columns)
    rules_at_y = _segments_by_edge(ys, rows)

    def ruled(rules: list[tuple[float, float]], along: float) -> bool:
        return any(start - 2.0 <= along <= end + 2.0 for start, end in rules)

    for row in range(n_rows):
        middle_y = (ys[row] + ys[row + 1]) / 2
        for col in range(n_cols):
            here = row * n_cols + col
            if col + 1 < n_cols and not ruled(rules_at_x[col + 1], middle_y):
                parent[find(here + 1)] = find(here)
            middle_x = (xs[col] + xs[col + 1]) / 2
            if row + 1 < n_rows and not ruled(rules_at_y[row + 1], middle_x):
                parent[find(here + n_cols)] = find(here)
    return [find(i) for i in range(n_rows * n_cols)]


def _segments_by_edge(edges: list[float], segments: list[Segment]) -> list[list[tuple[float, float]]]:
    """The (start, end) extents of the segments lying on each grid edge."""
    by_edge: list[list[tuple[float, float]]] = [[] for _ in edges]
    for position, start, end in segments:
        index = bisect.bisect_left(edges, position - 2.0)
        if index < len(edges) and abs(edges[index] - position) <= 2.0:
            by_edge[index].append((start, end))
    return by_edge


def _cluster_edges(values: Iterable[float], tolerance: float = 2.0) -> list[float]:
    edges: list[float] = []
    for value in sorted(values):
        if not edges or value - edges[-1] > tolerance:
            edges.append(value)
    return edges


def _picture_blocks(
    images: list[Bbox], page_box: Bbox, geometry: _Geometry, lines: list[_Line]
) -> list[_Block]:
    """Raster images big enough to be figures; a full-page image behind text (a scanned page
    with an OCR layer, a background) is not a figure."""
    has_text = bool(lines)
    page_area = _area(page_box)
    kept: list[Bbox] = []
    for box in sorted(images, key=_area, reverse=True):
        box = _intersect(box, page_box)
        if box[2] - box[0] < MIN_PICTURE_SIDE or box[3] - box[1] < MIN_PICTURE_SIDE:
            continue
        if has_text and _area(box) >= 0.8 * page_area:
            continue
        kept.append(box)
    return [geometry.block("picture", box) for box in _merge_nearby(kept, PICTURE_JOIN_GAP)]


def _merge_nearby(boxes: list[Bbox], gap: float) -> list[Bbox]:
    """Union boxes that overlap or lie within ``gap`` of each other: one figure made of
    several images (tiles, panels, an image and its soft mask) is one picture."""
    merged: list[Bbox] = []
    for box in boxes:
        touching = [m for m in merged if _boxes_touch(m, box, slack=gap)]
        for other in touching:
            merged.remove(other)
        merged.append(_union([box, *touching]))
    return merged


def _order_blocks(blocks: list[_Block]) -> list[_Block]:
    """Reading order for one page: split the page into horizontal bands at blocks that span
    the column gutter (titles, wide figures, one-column paragraphs), and inside each band
    read the left column top to bottom, then the right column. Off-axis text goes last."""
    axis = [b for b in blocks if _is_on_axis(b)]
    off_axis = [b for b in blocks if not _is_on_axis(b)]
    if not axis:
        return off_axis
    left_edge = min(b.box[0] for b in axis)
    right_edge = max(b.box[2] for b in axis)
    middle = (left_edge + right_edge) / 2
    slack = 0.02 * (right_edge - left_edge)

    def side(block: _Block) -> str:
        if block.box[2] <= middle + slack:
            return "left"
        if block.box[0] >= middle - slack:
            return "right"
        return "spanning"

    ordered: list[_Block] = []
    band: list[_Block] = []

    def flush_band() -> None:
        left = sorted((b for b in band if side(b) == "left"), key=_top_left)
        right = sorted((b for b in band if side(b) == "right"), key=_top_left)
        if left and right:
            ordered.extend(left + right)
        else:
            ordered.extend(sorted(band, key=_top_left))
        band.clear()

    for block in sorted(axis, key=_top_left):
        if side(block) == "spanning":  # it closes the band of columns above it
            flush_band()
            ordered.append(block)
        else:
            band.append(block)
    flush_band()
    return ordered + sorted(off_axis, key=_top_left)


def _is_on_axis(block: _Block) -> bool:
    return not block.lines or any(line.on_axis for line in block.lines)


def _top_left(block: _Block) -> tuple[float, float]:
    return (round(block.box[1], 1), block.box[0])


# --- layout mode: PyMuPDF's ONNX layout analyser ------------------------------------------

_LAYOUT_KINDS: dict[str, BlockKind] = {
    "text": "text",
    "title": "title",
    "section-header": "heading",
    "list-item": "list_item",
    "caption": "caption",
    "footnote": "footnote",
    "formula": "formula",
    "page-header": "header",
    "page-footer": "footer",
    "table": "table",
    "picture": "picture",
}


def _layout_model() -> Any:
    """The analyser bundled with PyMuPDF 2.0 (``pymupdf.layout``, ONNX models inside the
    wheel). Importing it registers ``pymupdf._get_layout``; pymupdf4llm can unregister it,
    so re-activate it if needed."""
    import pymupdf.layout  # noqa: F401  (registers the model on import)

    if not callable(pymupdf._get_layout):
        pymupdf.layout.activate()
    return pymupdf._get_layout


def _layout_blocks_or_none(
    page: pymupdf.Page,
    lines: list[_Line],
    pictures: list[_Block],
    geometry: _Geometry,
    layout_model: Any,
    warnings: list[str],
) -> list[_Block] | None:
    """The layout model's blocks, or None (with a warning) when the fast heuristics must
    do: on very dense pages (the model's cost grows with the line count), or when the
    model fails on the page."""
    if len(lines) > MAX_LINES_FOR_LAYOUT_MODEL:
        warnings.append(
            f"page {geometry.page_no}: {len(lines)} text lines, too many for the layout "
            "model; used the fast heuristics"
        )
        return None
    try:
        groups = layout_model(page, return_raw=True) or []
    except Exception as exc:  # third-party model code on untrusted input: any error type
        warnings.append(
            f"page {geometry.page_no}: the layout model failed ({type(exc).__name__}: "
            f"{_one_line(exc)}); used the fast heuristics"
        )
        return None
    return _layout_blocks(groups, lines, pictures, geometry)


def _layout_blocks(
    groups: list[dict[str, Any]],
    lines: list[_Line],
    pictures: list[_Block],
    geometry: _Geometry,
) -> list[_Block]:
    """Blocks from the analyser's labelled boxes. Each text line joins the box holding its
    centre; lines outside every box are kept as paragraphs, and images the analyser did not
    report as pictures. The analyser's own order is not kept: on the two-column papers of
    the benchmark it switched columns twice as often as our column ordering, which is
    applied to its blocks instead (see docs/pdf-layout.md)."""
    blocks: list[_Block] = []
    claimed: set[int] = set()
    for group in groups:
        kind = _LAYOUT_KINDS.get(group.get("class_name", ""), "text")
        box = tuple(group["group_bbox"][:4])
        members = [
            line for line in lines
            if id(line) not in claimed and _center_in(line.unrotated, box)
        ]
        claimed.update(id(line) for line in members)
        if kind == "picture":
            blocks.append(geometry.block("picture", box))
            continue
        if kind == "table":
            table = _layout_table(group, box, members, geometry)
            if table is not None:
                blocks.append(table)
                continue
            kind = "text"  # no grid recognised: keep its text readable
        if members:
            block = geometry.block(kind, box, members)
            block.box = _union(line.box for line in members)
            block.display = _union(line.display for line in members)
            blocks.append(block)
    orphans = [line for line in lines if id(line) not in claimed]
    extras = _runs(orphans, geometry.page_no) + [
        p for p in pictures
        if not any(_overlap_fraction(p.box, b.box) > 0.5 for b in blocks)
    ]
    return _order_blocks(blocks + extras)


def _layout_table(
    group: dict[str, Any], box: Bbox, members: list[_Line], geometry: _Geometry
) -> _Block | None:
    cells_info = group.get("table_cells") or []
    if not cells_info:
        return None
    cells = [
        TableCell(
            text=" ".join(str(cell.text or "").split()),
            start_row_offset_idx=cell.row_start,
            end_row_offset_idx=cell.row_end,
            start_col_offset_idx=cell.col_start,
            end_col_offset_idx=cell.col_end,
            row_span=cell.row_end - cell.row_start,
            col_span=cell.col_end - cell.col_start,
            column_header=cell.row_start == 0,
        )
        for cell in cells_info
    ]
    block = geometry.block("table", box, members)
    block.table = TableData(
        num_rows=max(c.end_row_offset_idx for c in cells),
        num_cols=max(c.end_col_offset_idx for c in cells),
        table_cells=cells,
    )
    return block


# --- document-wide passes -----------------------------------------------------------------


def _mark_running_furniture(pages: list[_Page]) -> None:
    """Text repeated in the top or bottom zone of several pages (digits ignored, so "Page 3"
    matches "Page 4") is a running header/footer; so is a bare page number there."""
    seen: Counter[tuple[str, str]] = Counter()
    candidates: list[tuple[_Block, str, str]] = []
    for page in pages:
        page_keys = set()
        for block in page.blocks:
            if block.kind not in ("text", "header", "footer") or not block.lines:
                continue
            zone = _zone(block, page)
            if zone is None:
                continue
            key = _normalise_furniture(block)
            candidates.append((block, zone, key))
            page_keys.add((zone, key))
        seen.update(page_keys)
    for block, zone, key in candidates:
        if block.kind == "text" and (seen[(zone, key)] >= 2 or PAGE_NUMBER_ONLY.match(key)):
            block.kind = "header" if zone == "top" else "footer"
    text_blocks = [b for page in pages for b in page.blocks if b.lines and b.kind != "table"]
    if all(b.kind in ("header", "footer") for b in text_blocks):
        # A document of nothing but repeated lines: keep them as text, or nothing is indexed.
        for block in text_blocks:
            block.kind = "text"


def _zone(block: _Block, page: _Page) -> str | None:
    top, bottom = page.frame_box[1], page.frame_box[3]
    band = FURNITURE_ZONE * (bottom - top)
    if block.box[3] <= top + band:
        return "top"
    if block.box[1] >= bottom - band:
        return "bottom"
    return None


def _normalise_furniture(block: _Block) -> str:
    text = " ".join(line.text for line in block.lines).lower()
    return " ".join(re.sub(r"\d+", "#", text).split())


def _classify_styles(pages: list[_Page]) -> None:
    """Captions, headings, list items, the title and heading levels, from the document's
    body font. A heading-styled "1. Introduction" is a heading, not a list item."""
    body_size, body_bold = _body_style(pages)
    for page in pages:
        for block in page.blocks:
            if block.kind == "list_item":  # named by the layout model: find its marker
                _mark_list_item(block)
            if block.kind != "text":
                continue
            first = block.lines[0].text
            if CAPTION_START.match(first):
                block.kind = "caption"
            elif first[0] not in BULLET_CHARS and _looks_like_heading(block, body_size, body_bold):
                block.kind = "heading"
            else:
                _mark_list_item(block)
        page.blocks = _merge_wrapped_headings(page.blocks)
    headings = [b for page in pages for b in page.blocks if b.kind in ("heading", "title")]
    if not headings:
        return
    heading_styles = Counter(_style(b) for b in headings)
    title = _find_title(pages, headings)
    if title is not None:
        title.kind = "title"
        if heading_styles[_style(title)] == 1:
            del heading_styles[_style(title)]
    ranked = sorted(heading_styles, key=lambda s: (-s[0], not s[1]))
    for block in headings:
        if block.kind != "heading":
            continue
        numbered = SECTION_NUMBER.match(_block_text(block))
        if numbered:
            level = numbered.group(1).count(".") + 1
        else:
            style = _style(block)
            level = ranked.index(style) + 1 if style in ranked else 1
        block.heading_level = min(level, MAX_HEADING_LEVEL)


def _merge_wrapped_headings(blocks: list[_Block]) -> list[_Block]:
    """Join a heading that wraps onto a second block ("Trace-based ... for Dynamic" /
    "Languages"): same style, right below, overlapping horizontally, not numbered."""
    merged: list[_Block] = []
    for block in blocks:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and block.kind == previous.kind
            and block.kind in ("heading", "title")
            and _style(block) == _style(previous)
            and len(previous.lines) + len(block.lines) <= MAX_HEADING_LINES + 1
            and 0 <= block.box[1] - previous.box[3] < 0.6 * _style(block)[0]
            and min(block.box[2], previous.box[2]) > max(block.box[0], previous.box[0])
            and not SECTION_NUMBER.match(block.lines[0].text)
        ):
            previous.lines.extend(block.lines)
            previous.box = _union((previous.box, block.box))
            previous.display = _union((previous.display, block.display))
            continue
        merged.append(block)
    return merged


def _body_style(pages: list[_Page]) -> tuple[float, bool]:
    sizes: Counter[float] = Counter()
    bold = plain = 0
    for page in pages:
        for block in page.blocks:
            if block.kind in ("header", "footer", "table"):
                continue
            for line in block.lines:
                n = len(line.text)
                sizes[round(line.size * 2) / 2] += n
                if line.bold:
                    bold += n
                else:
                    plain += n
    body_size = sizes.most_common(1)[0][0] if sizes else 10.0
    return body_size, bold > plain


def _looks_like_heading(block: _Block, body_size: float, body_bold: bool) -> bool:
    if len(block.lines) > MAX_HEADING_LINES or not all(line.on_axis for line in block.lines):
        return False  # sideways text is a margin stamp ("arXiv:2004.04906v3 [cs.CL]")
    size = max(line.size for line in block.lines)
    larger = size >= body_size * 1.12 + 0.2
    bolder = all(line.bold for line in block.lines) and not body_bold and size >= body_size - 0.6
    if not (larger or bolder):
        return False
    text = _block_text(block)
    if len(text) > MAX_HEADING_CHARS or len(text.split()) > 20:
        return False
    if text.count(",") >= 3:
        return False  # a list of names (the authors under a title), not a heading
    if sum(ch.isalpha() for ch in text) < 2:
        return False
    # A bold body-size line ending in a full stop is a sentence set in bold, not a heading.
    return larger or not text.endswith((".", ",", ";"))


def _style(block: _Block) -> tuple[float, bool]:
    size = max(line.size for line in block.lines)
    return (round(size * 2) / 2, all(line.bold for line in block.lines))


def _find_title(pages: list[_Page], headings: list[_Block]) -> _Block | None:
    """The largest heading in the top 40% of the first page, if nothing else is as large."""
    if any(b.kind == "title" for b in headings):
        return None  # the layout analyser named one
    first = pages[0]
    largest = max(_style(b)[0] for b in headings)
    candidates = [
        b for b in headings
        if b.page_no == first.page_no and _style(b)[0] == largest
        and b.box[1] - first.frame_box[1] <= 0.4 * (first.frame_box[3] - first.frame_box[1])
    ]
    if not candidates:
        return None
    title = min(candidates, key=_top_left)
    larger_than_rest = all(_style(b)[0] < largest for b in headings if b is not title)
    return title if larger_than_rest or len(headings) == 1 else None


def _choose_title(metadata: dict[str, str], pages: list[_Page]) -> str | None:
    meta = WORD_EXPORT_PREFIX.sub("", (metadata.get("title") or "").strip())
    if len(meta) >= 3 and sum(ch.isalpha() for ch in meta) >= 3 and not JUNK_TITLE.search(meta):
        return meta
    for kind in ("title", "heading"):
        for page in pages:
            for block in page.blocks:
                if block.kind == kind:
                    return _block_text(block)
    return None


# --- building the DoclingDocument ---------------------------------------------------------


def _build_document(pages: list[_Page], *, name: str) -> DoclingDocument:
    """Skipped (unparseable) pages get no page entry: nothing on them can be cited."""
    doc = DoclingDocument(name=name)
    for page in pages:
        doc.add_page(page_no=page.page_no, size=Size(width=page.width, height=page.height))
    list_group: GroupItem | None = None
    list_enumerated = False
    pending_caption: tuple[DocItem, _Block] | None = None  # a caption above its table/figure
    last_float: tuple[DocItem, _Block] | None = None  # the last table/picture, for captions below
    for page in pages:
        for block in page.blocks:
            if block.kind in ("header", "footer"):
                _add_text_item(doc, block, None)
                continue  # furniture neither ends a list nor separates a caption
            if block.kind == "list_item":
                if list_group is None or list_enumerated != block.enumerated:
                    list_group = doc.add_list_group()
                    list_enumerated = block.enumerated
                _add_text_item(doc, block, list_group)
                continue
            list_group = None
            if block.kind in ("table", "picture"):
                item = _add_float(doc, block)
                if pending_caption and _near(pending_caption[1], block):
                    item.captions.append(pending_caption[0].get_ref())
                pending_caption = None
                last_float = (item, block)
                continue
            item = _add_text_item(doc, block, None)
            if block.kind == "caption":
                if last_float and _near(last_float[1], block):
                    last_float[0].captions.append(item.get_ref())
                    last_float = None
                else:
                    pending_caption = (item, block)
                continue
            pending_caption = None
            last_float = None
    return doc


def _near(a: _Block, b: _Block) -> bool:
    """Whether a caption and a table/figure sit next to each other on the same page."""
    if a.page_no != b.page_no:
        return False
    vertical_gap = max(a.box[1] - b.box[3], b.box[1] - a.box[3])
    shares_column = min(a.box[2], b.box[2]) > max(a.box[0], b.box[0])
    return vertical_gap < 36.0 and shares_column


def _add_float(doc: DoclingDocument, block: _Block) -> DocItem:
    prov = _prov(block.page_no, block.display, (0, 0))
    if block.kind == "table":
        assert block.table is not None
        return doc.add_table(data=block.table, prov=prov)
    return doc.add_picture(prov=prov)


def _add_text_item(doc: DoclingDocument, block: _Block, parent: GroupItem | None) -> DocItem:
    line_texts = [line.text for line in block.lines]
    if block.kind == "list_item":
        first = LIST_MARKER.match(line_texts[0])
        if first is not None:
            line_texts[0] = first.group("rest")
    text, spans = _compose(line_texts)
    provs = [
        _prov(block.page_no, line.display, span)
        for line, span in zip(block.lines, spans, strict=True)
    ]
    match block.kind:
        case "title":
            item = doc.add_title(text=text, prov=provs[0])
        case "heading":
            item = doc.add_heading(text=text, level=max(block.heading_level, 1), prov=provs[0])
        case "list_item":
            item = doc.add_list_item(
                text=text, enumerated=block.enumerated, marker=block.marker,
                prov=provs[0], parent=parent,
            )
        case "header" | "footer":
            label = DocItemLabel.PAGE_HEADER if block.kind == "header" else DocItemLabel.PAGE_FOOTER
            item = doc.add_text(
                label=label, text=text, prov=provs[0], content_layer=ContentLayer.FURNITURE
            )
        case _:
            item = doc.add_text(label=_TEXT_LABELS[block.kind], text=text, prov=provs[0])
    item.prov.extend(provs[1:])
    return item


_TEXT_LABELS: dict[str, DocItemLabel] = {
    "text": DocItemLabel.TEXT,
    "caption": DocItemLabel.CAPTION,
    "footnote": DocItemLabel.FOOTNOTE,
    "formula": DocItemLabel.FORMULA,
}


def _compose(lines: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """Join lines with single spaces, undoing end-of-line hyphenation ("exam-" + "ple"), and
    return each line's (start, end) character span inside the joined text."""
    text = ""
    spans: list[tuple[int, int]] = []
    for line in lines:
        if text:
            if text.endswith(HYPHENS) and len(text) >= 2 and text[-2].isalpha() and line[:1].islower():
                text = text[:-1]
                start, end = spans[-1]
                spans[-1] = (start, end - 1)
            else:
                text += " "
        start = len(text)
        text += line
        spans.append((start, len(text)))
    return text, spans


def _prov(page_no: int, box: Bbox, charspan: tuple[int, int]) -> ProvenanceItem:
    return ProvenanceItem(
        page_no=page_no,
        bbox=BoundingBox(l=box[0], t=box[1], r=box[2], b=box[3], coord_origin=CoordOrigin.TOPLEFT),
        charspan=charspan,
    )


def _block_text(block: _Block) -> str:
    return _compose([line.text for line in block.lines])[0]


# --- small geometry helpers ---------------------------------------------------------------


def _union(boxes: Iterable[Sequence[float]]) -> Bbox:
    x0s, y0s, x1s, y1s = zip(*boxes, strict=True)
    return (min(x0s), min(y0s), max(x1s), max(y1s))


def _intersect(a: Sequence[float], b: Sequence[float]) -> Bbox:
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[2], b[2]), min(a[3], b[3])
    return (x0, y0, max(x0, x1), max(y0, y1))


def _expand(box: Sequence[float], margin: float) -> Bbox:
    return (box[0] - margin, box[1] - margin, box[2] + margin, box[3] + margin)


def _area(box: Sequence[float]) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def _overlap_fraction(a: Sequence[float], b: Sequence[float]) -> float:
    """Share of the smaller box covered by the other."""
    smaller = min(_area(a), _area(b))
    return _area(_intersect(a, b)) / smaller if smaller > 0 else 0.0


def _center_in(box: Sequence[float], container: Sequence[float]) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return container[0] <= cx <= container[2] and container[1] <= cy <= container[3]


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
