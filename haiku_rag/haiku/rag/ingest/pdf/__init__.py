"""PDF -> DoclingDocument with line-level provenance, built from PyMuPDF.

Why our own builder: docling's PDF pipelines need model downloads (or give one item per
line), while PyMuPDF already gives lines, fonts, images and ruled tables offline.

Pipeline, page by page:
1. ``extract``: read the page -- one text extraction that also collects vector paths, plus
   image boxes when the page has images; the only PyMuPDF calls allowed to fail (a failing
   page is skipped with a warning) -- and turn its text lines into ``Line`` records;
2. cut the page into ``Block`` s: ``fast`` splits PyMuPDF's blocks into runs of same-styled
   lines (``page_blocks``) and rebuilds ruled tables from the vector rules (``tables``);
   ``layout`` groups lines under the labelled boxes of PyMuPDF's bundled ONNX layout
   analyser (``layout_model``);
3. order the blocks column by column (``page_blocks.order_blocks``).
Then, document-wide (``structure``): running headers/footers, the body font, captions,
headings and their levels, list items, the title; finally (``builder``) the DoclingDocument,
with one ``ProvenanceItem`` per line whose ``charspan`` locates that line in the item text.
Coordinates: see ``blocks``.
"""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pymupdf

from haiku.rag.errors import (
    DamagedDocumentError,
    EmptyDocumentError,
    NeedsOCRError,
    OperationCancelled,
    PasswordRequiredError,
    WrongPasswordError,
)
from haiku.rag.ingest.gc_pause import cyclic_gc_paused
from haiku.rag.ingest.pdf import layout_model
from haiku.rag.ingest.pdf.blocks import Line, Page, PageGeometry
from haiku.rag.ingest.pdf.builder import build_document
from haiku.rag.ingest.pdf.continued_tables import join_continued_tables
from haiku.rag.ingest.pdf.extract import (
    MIN_USABLE_CHARS,
    RawPage,
    assess_text_layer,
    extract_lines,
    mark_form_lines,
    one_line,
    orient_lines,
    read_page,
)
from haiku.rag.ingest.pdf.figure_regions import mark_captions, outside_figures, page_pictures
from haiku.rag.ingest.pdf.geometry import IDENTITY, as_matrix, center_in, transform
from haiku.rag.ingest.pdf.ocr_page import (
    DEFAULT_OCR_DPI,
    RenderedPage,
    group_lines,
    merge_row_fragments,
    render_page,
    rendered_lines,
)
from haiku.rag.ingest.pdf.page_blocks import order_blocks, picture_blocks, runs
from haiku.rag.ingest.pdf.structure import classify_styles, mark_running_furniture
from haiku.rag.ingest.pdf.tables import page_rules, ruled_tables
from haiku.rag.ingest.pdf.text_tables import text_tables
from haiku.rag.ingest.pdf.title import find_title
from haiku.rag.ingest.records import Box, Conversion
from haiku.rag.mupdf import MUPDF_LOCK
from haiku.rag.operations import CancelToken, Progress, ProgressCallback, Stage, check_cancelled
from haiku.rag.operations import report as report_progress

if TYPE_CHECKING:
    from haiku.rag.ingest.ocr import DetectedPage

__all__ = ["PDF_MIME_TYPE", "OcrOptions", "PdfLayoutMode", "convert_pdf"]

PDF_MIME_TYPE = "application/pdf"
PdfLayoutMode = Literal["fast", "layout"]


@dataclass(frozen=True, slots=True)
class OcrOptions:
    """Whether pages without a usable text layer are recognised, and at what resolution."""

    enabled: bool = True
    dpi: int = DEFAULT_OCR_DPI


def convert_pdf(
    data: bytes,
    *,
    source: str,
    password: str | None = None,
    layout: PdfLayoutMode = "fast",
    ocr: OcrOptions | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    while_open: Callable[[pymupdf.Document, Conversion], None] | None = None,
) -> Conversion:
    """Convert PDF bytes into a DoclingDocument whose items carry one provenance per line.

    ``layout="fast"`` uses font and geometry heuristics (~120-130 pages per CPU-second);
    ``layout="layout"`` runs PyMuPDF's bundled ONNX layout analyser (~1 page per second)
    for better headings, figures and borderless tables. See docs/pdf-layout.md.
    Pages without a usable text layer are recognised by OCR (``ocr``, on by default), with
    a ``Stage.RECOGNISING`` progress report per page; they stay in ``pages_needing_ocr``
    only when OCR is off or recognised nothing.
    Raises PasswordRequiredError, WrongPasswordError, DamagedDocumentError,
    EmptyDocumentError or NeedsOCRError, each naming ``source``.
    ``while_open(doc, conversion)`` runs after the conversion, before the document is closed
    (the parse worker reads the bibliographic record there: the file is opened once).
    """
    if layout not in ("fast", "layout"):
        raise ValueError(f"unknown PDF layout mode {layout!r}: use 'fast' or 'layout'")
    doc = _open(data, source=source, password=password)
    try:
        with cyclic_gc_paused():
            conversion = _convert_open_document(doc, source, layout, ocr or OcrOptions(), progress, cancel)
        if while_open is not None:
            while_open(doc, conversion)
        return conversion
    finally:
        doc.close()


def _open(data: bytes, *, source: str, password: str | None) -> pymupdf.Document:
    if not data:
        raise EmptyDocumentError(f"{source}: the file is empty (0 bytes)", source=source)
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase) as exc:
        raise DamagedDocumentError(
            f"{source}: not a readable PDF ({one_line(exc)})", source=source
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
            f"{source}: the PDF's page tree is unreadable ({one_line(exc)})", source=source
        ) from exc
    if page_count == 0:
        doc.close()
        raise EmptyDocumentError(f"{source}: the PDF has no pages", source=source)
    return doc


def _convert_open_document(
    doc: pymupdf.Document,
    source: str,
    layout: PdfLayoutMode,
    ocr: OcrOptions,
    progress: ProgressCallback | None,
    cancel: CancelToken | None,
) -> Conversion:
    page_count = doc.page_count
    warnings: list[str] = []
    pages: list[Page] = []
    failed: list[int] = []
    images_of: dict[int, list] = {}  # image boxes of the pages that need OCR
    analyser = layout_model.load() if layout == "layout" else None
    for index in range(page_count):
        check_cancelled(cancel)
        page_no = index + 1
        try:
            page = doc.load_page(index)
            raw = read_page(page)
        except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase) as exc:
            failed.append(page_no)
            warnings.append(f"page {page_no} skipped: it could not be parsed ({one_line(exc)})")
        else:
            analysed = _analyse_page(page, page_no, raw, analyser, warnings)
            if analysed.needs_ocr:
                images_of[page_no] = raw.graphics.images
            pages.append(analysed)
        report_progress(
            progress, Progress(Stage.PARSING, source=source, done=page_no, total=page_count)
        )

    if len(failed) == page_count:
        raise DamagedDocumentError(
            f"{source}: {_none_of_its(page_count)} ({warnings[0]})",
            source=source,
        )
    recognised: list[int] = []
    if ocr.enabled and images_of:
        recognised = _recognise_pages(doc, pages, images_of, ocr, source, progress, cancel, warnings)
    if all(p.needs_ocr or not p.usable_chars for p in pages):
        _raise_for_missing_text(source, page_count, pages, ocr_ran=ocr.enabled)

    mark_running_furniture(pages)
    classify_styles(pages, authors=(doc.metadata or {}).get("author") or "", recognised=set(recognised))
    item_boxes: dict[str, list[Box]] = {}
    document = build_document(pages, name=source, boxes=item_boxes)
    join_continued_tables(document)
    return Conversion(
        document=document,
        item_boxes=item_boxes,
        mime_type=PDF_MIME_TYPE,
        page_count=page_count,
        title=find_title(doc.metadata or {}, pages, source),
        pages_needing_ocr=[p.page_no for p in pages if p.needs_ocr],
        pages_recognised=recognised,
        warnings=warnings,
    )


def _analyse_page(
    page: pymupdf.Page,
    page_no: int,
    raw: RawPage,
    analyser: Any | None,
    warnings: list[str],
) -> Page:
    # Page properties are read once: each access re-reads the PDF objects.
    angle = page.rotation
    display_rect = page.rect
    width, height = display_rect.width, display_rect.height
    rotation = as_matrix(page.rotation_matrix) if angle else IDENTITY
    lines = extract_lines(raw.text, rotation, page_no, warnings)
    mark_form_lines(lines, raw.graphics.widgets)
    frame = orient_lines(lines)
    unrotated = (0.0, 0.0, height, width) if angle in (90, 270) else (0.0, 0.0, width, height)

    usable, needs_ocr, garbled, readable = assess_text_layer(lines, raw.graphics, unrotated)
    # lines that do not decode are never stored as text: not on a garbled page when OCR
    # cannot replace its text (off, failed, out of memory: a real review's pages were kept as
    # chunks of U+FFFD beside their OCR'd neighbours), nor a chart's numbered glyphs beside a
    # readable body (they came first in a real paper's quotes)
    lines = readable
    geometry = PageGeometry(page_no, rotation, frame)
    layout = analyser is not None and bool(lines)
    pictures, captions = page_pictures(unrotated, raw.graphics, geometry, lines)
    tables = [] if layout else ruled_tables(unrotated, raw.graphics, lines, geometry, warnings)
    tables = outside_figures(tables, pictures)
    blocks = None
    if layout:
        blocks = layout_model.layout_blocks_or_none(page, lines, pictures, geometry, analyser, warnings)
        if blocks is None:
            tables = ruled_tables(unrotated, raw.graphics, lines, geometry, warnings)
            tables = outside_figures(tables, pictures)
    if blocks is None:
        horizontal, vertical = page_rules(raw.graphics, frame)
        read = None  # the unruled tables among all the page's lines (read when it has grids)
        if tables:
            read = text_tables(lines, geometry, horizontal, vertical)
            tables = _narrower_than_text(tables, read)
        flow = _outside(lines, tables)
        # no grid left: the flow is all the lines, and their tables were just read
        unruled = read if read is not None and not tables else text_tables(flow, geometry, horizontal, vertical)
        unruled = outside_figures(unruled, pictures)  # a chart's labels are not a table
        if unruled:
            tables = [*tables, *unruled]
            flow = _outside(flow, unruled)
        blocks = order_blocks(runs(flow, page_no) + tables + pictures, transform(unrotated, frame))
    mark_captions(blocks, captions)
    return Page(
        page_no=page_no,
        width=width,
        height=height,
        frame_box=transform(unrotated, frame),
        blocks=blocks,
        usable_chars=usable,
        needs_ocr=needs_ocr,
        garbled=garbled,
    )


def _recognise_pages(
    doc: pymupdf.Document,
    pages: list[Page],
    images_of: dict[int, list],
    ocr: OcrOptions,
    source: str,
    progress: ProgressCallback | None,
    cancel: CancelToken | None,
    warnings: list[str],
) -> list[int]:
    """OCR the pages that need it, in place; returns the pages that got text. Progress is
    reported per page ("recognising text 3/12"), and while one page's work moves on
    (``_PageReporter``), which keeps the parse worker's no-progress timeout from firing on a
    long scan or one large page.

    Pipelined one page ahead: while a page's lines are read (``read_lines``, on the
    recognition threads), the next page is rendered and its lines detected (``_OcrAhead``,
    one thread); on 2 cores that fills the core the serial parts of a page (render,
    detection's pre- and post-processing, cropping, the last lines, this page's layout)
    left idle. Pages are still read, analysed and reported one by one, in order."""
    todo = [i for i, p in enumerate(pages) if p.page_no in images_of]
    reporter = _PageReporter(progress, source, len(todo))
    reporter.report(0)
    try:
        return _read_pages(doc, pages, todo, images_of, ocr, cancel, warnings, reporter)
    finally:
        reporter.close()  # no report from an OCR thread still running after this


def _read_pages(
    doc: pymupdf.Document,
    pages: list[Page],
    todo: list[int],
    images_of: dict[int, list],
    ocr: OcrOptions,
    cancel: CancelToken | None,
    warnings: list[str],
    reporter: _PageReporter,
) -> list[int]:
    from haiku.rag.ingest.ocr import OcrUnavailableError, read_lines

    recognised: list[int] = []
    with _OcrAhead(doc, [pages[i].page_no for i in todo], ocr.dpi, cancel, reporter.work) as ahead:
        for done, index in enumerate(todo, start=1):
            check_cancelled(cancel)
            page_no = pages[index].page_no
            try:
                rendered, detected = ahead.next_page()
                lines = rendered_lines(rendered, read_lines(detected, cancel, reporter.work))
            except OperationCancelled:
                raise
            except OcrUnavailableError as exc:
                warnings.append(
                    f"OCR is unavailable ({one_line(exc)}); scanned pages were not read"
                )
                break
            except Exception as exc:  # noqa: BLE001 - onnxruntime/OpenCV errors have no common base
                # One page the engine fails on stays "needs OCR"; the rest of the file is kept.
                warnings.append(
                    f"page {page_no}: OCR failed ({type(exc).__name__}: {one_line(exc)})"
                )
            else:
                analysed = _analyse_ocr_page(rendered, page_no, lines, images_of[page_no])
                if analysed.usable_chars >= MIN_USABLE_CHARS:
                    pages[index] = analysed
                    recognised.append(page_no)
                else:
                    warnings.append(f"page {page_no}: OCR recognised no text on it")
            reporter.report(done)
    return recognised


class _PageReporter:
    """The RECOGNISING reports of ``_recognise_pages``: one per page read, and in between,
    at most one a ``WORK_REPORT_SECONDS`` while a page's work moves on (a detection strip
    done, a line read; ``work``, called from the OCR threads). One page of a large scan is
    minutes of work on a slow machine: the parse worker's watchdog, which stops a parse that
    reports nothing for ``processing.parse_timeout_seconds``, must see it moving, and only
    when it does (a page stuck in one call still times out). Reports are sent one at a time
    (the worker's progress callback writes to its socket)."""

    WORK_REPORT_SECONDS = 2.0

    def __init__(self, progress: ProgressCallback | None, source: str, total: int) -> None:
        self._progress, self._source, self._total = progress, source, total
        self._lock = threading.Lock()
        self._done = 0
        self._last = 0.0

    def report(self, done: int) -> None:
        import time

        with self._lock:
            if self._progress is None:
                return
            self._done = done
            self._send()
            self._last = time.monotonic()

    def close(self) -> None:
        with self._lock:
            self._progress = None

    def work(self) -> None:
        import time

        if self._progress is None:
            return
        now = time.monotonic()
        with self._lock:
            if self._progress is not None and now - self._last >= self.WORK_REPORT_SECONDS:
                self._last = now
                self._send()

    def _send(self) -> None:
        report_progress(
            self._progress,
            Progress(Stage.RECOGNISING, source=self._source, done=self._done, total=self._total),
        )


class _OcrAhead:
    """Renders and detects the pages to OCR (``page_nos``, in order) on one thread of its
    own, at most one page ahead of the page being read: ``next_page`` returns a page's
    render and detected lines (or raises what rendering or detecting it raised) and starts
    the page after it. MuPDF calls hold ``MUPDF_LOCK``. Leaving the ``with`` block waits
    for the page in flight (it stops at its next cancellation check when ``cancel`` is
    set), so nothing renders from the document once it is closed.

    The thread is the process's one (``_ahead_thread``), kept between documents: OpenVINO
    compiles the detector once per calling thread (~0.2 CPU-s), and a thread per document
    compiled it again for every scan."""

    def __init__(
        self,
        doc: pymupdf.Document,
        page_nos: list[int],
        dpi: int,
        cancel: CancelToken | None,
        on_work: Callable[[], None] | None = None,
    ) -> None:
        self._doc, self._dpi, self._cancel, self._on_work = doc, dpi, cancel, on_work
        self._waiting = iter(page_nos)
        self._executor = _ahead_thread()
        self._in_flight: Future[tuple[RenderedPage, DetectedPage]] | None = None
        self._start_next()

    def __enter__(self) -> _OcrAhead:
        return self

    def __exit__(self, *exc_info: object) -> None:
        from concurrent.futures import wait

        if self._in_flight is not None and not self._in_flight.cancel():
            wait([self._in_flight])
        self._in_flight = None

    def _start_next(self) -> None:
        page_no = next(self._waiting, None)
        self._in_flight = (
            None if page_no is None else self._executor.submit(self._prepare, page_no)
        )

    def _prepare(self, page_no: int) -> tuple[RenderedPage, DetectedPage]:
        from haiku.rag.ingest.ocr import detect_lines

        check_cancelled(self._cancel)
        with MUPDF_LOCK:
            rendered = render_page(self._doc.load_page(page_no - 1), self._dpi)
        return rendered, detect_lines(rendered.image, self._cancel, self._on_work)

    def next_page(self) -> tuple[RenderedPage, DetectedPage]:
        current = self._in_flight
        if current is None:
            raise RuntimeError("no page left to recognise")
        try:
            return current.result()
        finally:
            self._start_next()


_ahead: ThreadPoolExecutor | None = None
_ahead_lock = threading.Lock()


def _ahead_thread() -> ThreadPoolExecutor:
    global _ahead
    with _ahead_lock:
        if _ahead is None:
            _ahead = ThreadPoolExecutor(1, thread_name_prefix="haiku-ocr-ahead")
        return _ahead


def _analyse_ocr_page(
    rendered: RenderedPage, page_no: int, lines: list[Line], images: list
) -> Page:
    """Like ``_analyse_page``, from OCR lines: no ruled tables (the rules are pixels)."""
    width, height = rendered.width, rendered.height
    rotation = rendered.rotation_matrix
    if rendered.rotation in (90, 270):
        unrotated = (0.0, 0.0, height, width)
    else:
        unrotated = (0.0, 0.0, width, height)
    frame = orient_lines(lines)
    lines = group_lines(merge_row_fragments(lines))
    geometry = PageGeometry(page_no, rotation, frame)
    pictures = picture_blocks(images, unrotated, geometry, lines)
    usable = sum(len(line.text) - line.text.count(" ") for line in lines)
    # tables rebuilt from the recognised line boxes (their rules are pixels, not paths); not
    # inside a picture, whose text is the picture's (a comic's panels were a 3-column table)
    tables = [
        table for table in text_tables(lines, geometry)
        if not any(center_in(table.box, picture.box) for picture in pictures)
    ]
    flow = _outside(lines, tables)
    return Page(
        page_no=page_no,
        width=width,
        height=height,
        frame_box=transform(unrotated, frame),
        blocks=order_blocks(runs(flow, page_no) + tables + pictures),
        usable_chars=usable,
        needs_ocr=False,
        garbled=False,
    )


def _narrower_than_text(ruled: list, read: list) -> list:
    """The ruled tables that are the whole table: a grid whose rules enclose only some of a
    table's columns (rules between column groups, the first and last column open; rows in
    pairs between rules) gives way to the table read from its text (``read``: the unruled
    tables among all the page's lines), when that one reaches beyond the grid on the same
    rows."""
    if not read:
        return ruled
    kept = []
    for grid in ruled:
        x0, y0, x1, y1 = grid.box
        wider = any(
            min(y1, t.box[3]) - max(y0, t.box[1]) > 0.5 * (y1 - y0)
            and (t.box[0] < x0 - 0.05 * (x1 - x0) or t.box[2] > x1 + 0.05 * (x1 - x0))
            and min(x1, t.box[2]) > max(x0, t.box[0])
            for t in read
        )
        overlapping = any(min(y1, t.box[3]) > max(y0, t.box[1]) and min(x1, t.box[2]) > max(x0, t.box[0]) for t in read)
        if not wider and not (overlapping and _stacked_rows(grid)):
            kept.append(grid)
    return kept


def _stacked_rows(grid: Any) -> bool:
    """Whether the grid's rows hold several printed rows each (rules every few rows: five
    states between two rules, an OTSL/HTML pair): two or more cells of one grid row with
    lines on two or more baselines. Such a grid reads its rows wrong; the text's rows are
    right."""
    table = grid.table
    if table is None:
        return False
    rows_of: dict[int, list[tuple[float, list[float]]]] = defaultdict(list)
    for cell in table.table_cells:
        box = cell.bbox
        if box is None or cell.row_span > 1:
            continue
        inside = [
            line for line in grid.lines
            if box.l - 1 <= (line.display[0] + line.display[2]) / 2 <= box.r + 1
            and box.t - 1 <= (line.display[1] + line.display[3]) / 2 <= box.b + 1
        ]
        if not inside:
            continue
        tall = max(line.display[3] - line.display[1] for line in inside)
        middles = sorted((line.display[1] + line.display[3]) / 2 for line in inside)
        rows_of[cell.start_row_offset_idx].append((tall, _baselines(middles, tall)))
    return any(_printed_rows(cells) for cells in rows_of.values())


def _baselines(middles: list[float], tall: float) -> list[float]:
    """The middles of a cell's printed lines, one per baseline (pieces of one line joined)."""
    baselines = [middles[0]]
    for middle in middles[1:]:
        if middle - baselines[-1] > 0.8 * tall:
            baselines.append(middle)
    return baselines


def _printed_rows(cells: list[tuple[float, list[float]]]) -> bool:
    """Whether a grid row's cells hold several printed rows: two or more cells on two or
    more baselines, and every one-line cell on one of those baselines. A one-line cell
    between them (centred in its ruled cell) says the others are wrapped text, each one
    cell ("Bold-monospaced" / "(2,0)" beside "Italic (2,1)")."""
    stacked = [baselines for _, baselines in cells if len(baselines) >= 2]
    if len(stacked) < 2:
        return False
    rows = sorted(middle for baselines in stacked for middle in baselines)
    for tall, baselines in cells:
        if len(baselines) == 1:
            index = bisect.bisect_left(rows, baselines[0])
            near = [rows[i] for i in (index - 1, index) if 0 <= i < len(rows)]
            if not any(abs(baselines[0] - middle) <= 0.3 * tall for middle in near):
                return False
    return True


def _outside(lines: list[Line], tables: list) -> list[Line]:
    """The lines that are not in any of ``tables``."""
    if not tables:
        return lines
    inside = {id(line) for table in tables for line in table.lines}
    return [line for line in lines if id(line) not in inside]


def _raise_for_missing_text(
    source: str, page_count: int, pages: list[Page], *, ocr_ran: bool
) -> None:
    why = (
        "and OCR recognised no text on them"
        if ocr_ran
        else "and OCR is off (processing.ocr); turn it on to index it"
    )
    if any(p.needs_ocr and not p.garbled for p in pages):
        raise NeedsOCRError(
            f"{source}: no text layer on {_any_of_its(page_count)} (scanned?) {why}",
            source=source,
        )
    if any(p.garbled for p in pages):
        raise NeedsOCRError(
            f"{source}: its text cannot be decoded (fonts without a Unicode map) {why}",
            source=source,
        )
    raise EmptyDocumentError(
        f"{source}: {'its page contains' if page_count == 1 else f'its {page_count} pages contain'} no text",
        source=source,
    )


def _none_of_its(page_count: int) -> str:
    if page_count == 1:
        return "its one page could not be parsed"
    return f"none of its {page_count} pages could be parsed"


def _any_of_its(page_count: int) -> str:
    return "its one page" if page_count == 1 else f"any of its {page_count} pages"
