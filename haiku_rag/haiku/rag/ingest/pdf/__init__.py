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

from dataclasses import dataclass
from typing import Any, Literal

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
from haiku.rag.ingest.pdf.extract import (
    MIN_USABLE_CHARS,
    RawPage,
    assess_text_layer,
    extract_lines,
    one_line,
    orient_lines,
    read_page,
)
from haiku.rag.ingest.pdf.geometry import IDENTITY, as_matrix, transform
from haiku.rag.ingest.pdf.ocr_page import (
    DEFAULT_OCR_DPI,
    group_lines,
    merge_row_fragments,
    ocr_page_lines,
)
from haiku.rag.ingest.pdf.page_blocks import order_blocks, picture_blocks, runs
from haiku.rag.ingest.pdf.structure import classify_styles, mark_running_furniture
from haiku.rag.ingest.pdf.tables import ruled_tables
from haiku.rag.ingest.pdf.title import find_title
from haiku.rag.ingest.records import Box, Conversion
from haiku.rag.operations import CancelToken, Progress, ProgressCallback, Stage, check_cancelled
from haiku.rag.operations import report as report_progress

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
    """
    if layout not in ("fast", "layout"):
        raise ValueError(f"unknown PDF layout mode {layout!r}: use 'fast' or 'layout'")
    doc = _open(data, source=source, password=password)
    try:
        with cyclic_gc_paused():
            return _convert_open_document(doc, source, layout, ocr or OcrOptions(), progress, cancel)
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
    classify_styles(pages)
    item_boxes: dict[str, list[Box]] = {}
    document = build_document(pages, name=source, boxes=item_boxes)
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
    frame = orient_lines(lines)
    unrotated = (0.0, 0.0, height, width) if angle in (90, 270) else (0.0, 0.0, width, height)

    usable, needs_ocr, garbled = assess_text_layer(lines, raw.graphics, unrotated)
    geometry = PageGeometry(page_no, rotation, frame)
    pictures = picture_blocks(raw.graphics.images, unrotated, geometry, lines)
    blocks = None
    if analyser is not None and lines:
        blocks = layout_model.layout_blocks_or_none(page, lines, pictures, geometry, analyser, warnings)
    if blocks is None:
        tables = ruled_tables(unrotated, raw.graphics, lines, geometry, warnings)
        flow = lines
        if tables:
            in_tables = {id(line) for table in tables for line in table.lines}
            flow = [line for line in lines if id(line) not in in_tables]
        blocks = order_blocks(runs(flow, page_no) + tables + pictures)
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
    reported per page ("recognising text 3/12"), which also keeps the parse worker's
    no-progress timeout from firing on a long scan."""
    from haiku.rag.ingest.ocr import OcrUnavailableError

    todo = [i for i, p in enumerate(pages) if p.page_no in images_of]
    recognised: list[int] = []
    report_progress(progress, Progress(Stage.RECOGNISING, source=source, done=0, total=len(todo)))
    for done, index in enumerate(todo, start=1):
        check_cancelled(cancel)
        page_no = pages[index].page_no
        try:
            page = doc.load_page(page_no - 1)
            lines = ocr_page_lines(page, ocr.dpi, cancel)
        except OperationCancelled:
            raise
        except OcrUnavailableError as exc:
            warnings.append(f"OCR is unavailable ({one_line(exc)}); scanned pages were not read")
            break
        except Exception as exc:  # noqa: BLE001 - onnxruntime/OpenCV errors have no common base
            # One page the engine fails on stays "needs OCR"; the rest of the file is kept.
            warnings.append(f"page {page_no}: OCR failed ({type(exc).__name__}: {one_line(exc)})")
        else:
            analysed = _analyse_ocr_page(page, page_no, lines, images_of[page_no])
            if analysed.usable_chars >= MIN_USABLE_CHARS:
                pages[index] = analysed
                recognised.append(page_no)
            else:
                warnings.append(f"page {page_no}: OCR recognised no text on it")
        report_progress(
            progress, Progress(Stage.RECOGNISING, source=source, done=done, total=len(todo))
        )
    return recognised


def _analyse_ocr_page(
    page: pymupdf.Page, page_no: int, lines: list[Line], images: list
) -> Page:
    """Like ``_analyse_page``, from OCR lines: no ruled tables (the rules are pixels)."""
    angle = page.rotation
    display_rect = page.rect
    width, height = display_rect.width, display_rect.height
    rotation = as_matrix(page.rotation_matrix) if angle else IDENTITY
    unrotated = (0.0, 0.0, height, width) if angle in (90, 270) else (0.0, 0.0, width, height)
    frame = orient_lines(lines)
    lines = group_lines(merge_row_fragments(lines))
    geometry = PageGeometry(page_no, rotation, frame)
    pictures = picture_blocks(images, unrotated, geometry, lines)
    usable = sum(len(line.text) - line.text.count(" ") for line in lines)
    return Page(
        page_no=page_no,
        width=width,
        height=height,
        frame_box=transform(unrotated, frame),
        blocks=order_blocks(runs(lines, page_no) + pictures),
        usable_chars=usable,
        needs_ocr=False,
        garbled=False,
    )


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
