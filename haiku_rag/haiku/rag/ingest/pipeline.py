"""From source bytes to a ``NewDocument`` ready for the store (CPU work, no store access)."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any

from haiku.rag.config import AppConfig
from haiku.rag.errors import EmptyDocumentError, SourceTooLargeError
from haiku.rag.ingest.gc_pause import cyclic_gc_paused
from haiku.rag.ingest.records import NewDocument
from haiku.rag.mupdf import MUPDF_LOCK, import_pymupdf
from haiku.rag.operations import (
    CancelToken,
    Progress,
    ProgressCallback,
    Stage,
    check_cancelled,
    report,
)

log = logging.getLogger("haiku.rag")


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_uri(path: Path) -> str:
    return path.resolve().as_uri()


def check_size(path: Path, size: int, config: AppConfig) -> None:
    limit = config.processing.max_file_mb * 1024 * 1024
    if size > limit:
        raise SourceTooLargeError(
            f"{path.name}: {size / 1024 / 1024:.0f} MB is over the {config.processing.max_file_mb} MB "
            "limit (processing.max_file_mb)",
            source=str(path),
        )


@cyclic_gc_paused()
def prepare_document(
    data: bytes,
    *,
    filename: str,
    uri: str,
    config: AppConfig,
    title: str | None = None,
    metadata: dict[str, Any] | None = None,
    password: str | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    bibliographic: bool = False,
) -> NewDocument:
    """Convert, extract items and chunk one source. Raises ``IngestError`` subclasses.

    With ``bibliographic``, a PDF's bibliographic record (``haiku.rag.pdf_metadata``) is read
    while the converter has the file open, and stored in the metadata: the file is opened once
    per ingest, here, in the parse worker's time and memory bounds.

    Runs with the cyclic garbage collector paused (``cyclic_gc_paused``): the converted
    document is alive until the end, and each collection in between rescanned it."""
    from haiku.rag.ingest.chunker import chunk_document
    from haiku.rag.ingest.converters import convert_source
    from haiku.rag.ingest.figures import figure_chunks
    from haiku.rag.ingest.items import ItemBoxes, ItemTexts, extract_items, reading_order
    from haiku.rag.ingest.pdf import OcrOptions

    if not data:
        raise EmptyDocumentError(f"{filename}: the file is empty", source=uri)
    record: dict[str, Any] = {}

    def read_record(doc: Any, conversion: Any) -> None:
        record.update(_page_labels(doc, conversion.document, filename))
        if bibliographic:
            record.update(_bibliographic_record(doc, filename, title or conversion.title))

    conversion = convert_source(
        data,
        filename=filename,
        password=password,
        pdf_layout=config.processing.pdf_layout,
        ocr=OcrOptions(enabled=config.processing.ocr, dpi=config.processing.ocr_dpi),
        progress=progress,
        cancel=cancel,
        while_open=read_record,
    )
    check_cancelled(cancel)
    report(progress, Progress(Stage.CHUNKING, uri))
    document = conversion.document
    ordered = reading_order(document)  # docling-core's tree walked once for all four uses
    # each made once, used thrice; the PDF converter's boxes are already made
    texts, boxes = ItemTexts(document), ItemBoxes(document, conversion.item_boxes)
    items = extract_items(document, texts, ordered, boxes)
    chunks = chunk_document(
        document,
        max_tokens=config.processing.chunk_size,
        merge_peers=config.processing.merge_peers,
        ordered=ordered,
        boxes=boxes,
        texts=texts,
    )
    if not chunks:
        raise EmptyDocumentError(_nothing_to_index(filename, items), source=uri)
    # Figures as evidence: a chunk per picture with words about it (ingest/figures.py).
    chunks += figure_chunks(document, first_order=len(chunks), ordered=ordered, boxes=boxes)
    check_cancelled(cancel)

    meta = dict(metadata or {})
    meta.setdefault("filename", filename)
    if conversion.pages_needing_ocr:
        meta["pages_needing_ocr"] = conversion.pages_needing_ocr
    if conversion.pages_recognised:
        meta["pages_recognised"] = conversion.pages_recognised
    if conversion.warnings:
        meta["warnings"] = conversion.warnings[:20]
    meta.update(record)

    stored_bytes = conversion.stored_bytes or data
    if password and conversion.mime_type == "application/pdf":
        # Keep a decrypted copy so cited pages render later without asking for the password
        # again; the library already holds this document's text in clear.
        stored_bytes = decrypted_pdf(data, password)
        meta["stored_decrypted"] = True

    return NewDocument(
        uri=uri,
        title=title or conversion.title or Path(filename).stem,
        metadata=meta,
        content_hash=content_hash(data),
        mime_type=conversion.mime_type,
        page_count=conversion.page_count,
        source_bytes=stored_bytes,
        content=texts.document_markdown(ordered),
        # Not stored any more (issue 16): nothing reads it back (chunks, items and boxes are
        # stored on their own) and dumping it cost ~1/8 of a PDF's parse. Old stores keep theirs.
        docling_json="",
        items=items,
        chunks=chunks,
    )


def _bibliographic_record(doc: Any, filename: str, title: str | None) -> dict[str, Any]:
    """``{"bibliographic": …}`` read from the open PDF, or nothing: the record is a bonus, never
    a reason to fail an ingest. ``title``: the one the document will show (the caller's, else
    the first page's title block), not a file-name fallback."""
    from haiku.rag.bibliography import METADATA_KEY
    from haiku.rag.pdf_metadata import read_pdf_metadata

    shown = title if title and title != Path(filename).stem else None
    try:
        with MUPDF_LOCK:  # uncontended in the worker; in-process parses share MuPDF with renders
            found = read_pdf_metadata(doc, filename=filename, title=shown)
    except Exception:
        log.warning("could not read bibliographic metadata of %s", filename, exc_info=True)
        return {}
    return {} if found is None else {METADATA_KEY: found.to_metadata()}


def _page_labels(doc: Any, document: Any, filename: str) -> dict[str, Any]:
    """``{"page_labels": {"36": "22", …}}``: the pages whose printed label differs from their
    sheet number (``ingest.pdf.page_labels``), or nothing; never a reason to fail an ingest."""
    from haiku.rag.ingest.pdf.page_labels import pdf_page_labels
    from haiku.rag.printed_pages import PAGE_LABELS_KEY

    try:
        with MUPDF_LOCK:
            labels = pdf_page_labels(doc, document)
    except Exception:
        log.warning("could not read the page labels of %s", filename, exc_info=True)
        return {}
    return {PAGE_LABELS_KEY: {str(sheet): label for sheet, label in sorted(labels.items())}} if labels else {}


def _nothing_to_index(filename: str, items: list[Any]) -> str:
    """Why a document with no chunks is refused, naming the text that was dropped."""
    texts = [item for item in items if item.text.strip()]
    if not texts:
        return f"{filename}: no text was found in it"
    sample = ", ".join(repr(item.text.strip()[:60]) for item in texts[:3])
    if all(item.label in ("section_header", "title") for item in texts):
        return (
            f"{filename}: it holds only headings ({sample}) and no text under them; "
            "a heading alone is not indexed"
        )
    chars = sum(len(item.text) for item in texts)
    return f"{filename}: its {len(texts)} text item(s) ({chars:,} characters: {sample}) produced nothing to index"


def decrypted_pdf(data: bytes, password: str) -> bytes:
    pymupdf = import_pymupdf()

    with MUPDF_LOCK, pymupdf.open(stream=data, filetype="pdf") as doc:
        if doc.needs_pass:
            doc.authenticate(password)
        return doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_NONE, garbage=1)


def iter_source_files(folder: Path) -> list[Path]:
    """Files below ``folder``, sorted; hidden entries and links leaving it are skipped.

    Unsupported types are listed too, so a folder report accounts for every file.
    """
    root = folder.resolve()
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            if path.is_symlink() and not _link_stays_inside(path, root):
                continue
            found.append(path)
    return found


def _link_stays_inside(link: Path, root: Path) -> bool:
    """Whether a link points inside ``root``; a link loop counts as inside, so the folder
    report lists it (as skipped) instead of the walk stopping with an error."""
    try:
        return link.resolve().is_relative_to(root)
    except (RuntimeError, OSError):  # Python 3.11: RuntimeError("Symlink loop"); later: ELOOP
        return True
