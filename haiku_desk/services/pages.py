"""Page renders for the citation panel and exports, through haiku.rag's one page renderer
(``haiku.rag.pages``: PyMuPDF pixels and the highlight of the cited boxes, its colours defined
there); this service adds only the cache, the render thread and the conversion to a QImage.

Pages render from the original bytes kept in the store, so they still work after the file
moved. PyMuPDF is not thread-safe: every render runs on one render thread, whose renderer
keeps a few documents open so the next page of the same document is quick. Renders are
cached (LRU) per document generation, page and zoom; highlights are painted on a copy, so a
cached page serves every citation on it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import sys
import tempfile
import unicodedata
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from PySide6.QtCore import QObject, QRectF, Signal
from PySide6.QtGui import QImage

from haiku.rag.mupdf import MUPDF_LOCK, import_pymupdf
from haiku_desk.services.notifications import Notifications

if TYPE_CHECKING:  # haiku.rag.pages loads numpy: on the first render, not at start-up
    import numpy as np

    from haiku.rag.citations import Box
    from haiku.rag.pages import PageImage, PageRenderer
    from haiku_desk.services.library import LibraryService

RENDER_CACHE_SIZE = 48  # page images (a 150 % A4 page is ~2.7 MB)
OPEN_DOCUMENTS = 8  # documents kept open on the render thread, least recently used closed first
SOURCE_BYTES_BUDGET = 96 * 1024 * 1024  # stored originals kept in memory (an answer cites several)
MAX_ZOOM = 6.0
MIN_ZOOM = 0.25


MAX_FIND_HITS = 2000  # find-in-document stops counting here (a word on every line of a book)
REMOVED_MESSAGE = "This document was removed from the library"


class NotRenderableError(Exception):
    """The document has no pages to render (plain text, Markdown...)."""


class DocumentRemovedError(NotRenderableError):
    """The document is no longer in the library (a citation made before it was deleted)."""


@dataclass(frozen=True)
class DocumentLayout:
    """What the reader needs to lay a document out before any page is drawn: a PDF's page
    sizes (points, display space), or a text source's own text (its stored Markdown), or that
    the document is gone."""

    document_id: str
    kind: Literal["pages", "text", "removed"]
    title: str = ""
    page_sizes: tuple[tuple[float, float], ...] = ()
    text: str = ""
    mime_type: str = ""

    @property
    def page_count(self) -> int:
        return len(self.page_sizes)


@dataclass(frozen=True)
class FindHit:
    """Where find-in-document found the text on a PDF page (points, top-left origin)."""

    page: int
    x0: float
    y0: float
    x1: float
    y1: float


@dataclass(frozen=True)
class PageRender:
    """A rendered page, cached: haiku.rag's pixels (no highlights) and where they came from."""

    document_id: str
    page: int  # 1-based
    page_count: int
    zoom: float  # pixels per PDF point
    width_pt: float
    height_pt: float
    pixels: PageImage  # haiku.rag.pages' render, without highlights

    @cached_property
    def image(self) -> QImage:
        """The page as a QImage (RGB888), without highlights."""
        import numpy as np

        return _qimage(np.frombuffer(self.pixels.samples, np.uint8), self.pixels.width, self.pixels.height)

    def to_pixels(self, box: Box) -> QRectF:
        """A stored box (PDF points, top-left origin) in this image's pixels."""
        z = self.zoom
        return QRectF(box.x0 * z, box.y0 * z, (box.x1 - box.x0) * z, (box.y1 - box.y0) * z)


def _qimage(rgb: np.ndarray, width: int, height: int) -> QImage:
    import numpy as np

    data = np.ascontiguousarray(rgb, dtype=np.uint8).tobytes()
    return QImage(data, width, height, width * 3, QImage.Format.Format_RGB888).copy()


def paint_highlights(render: PageRender, matched: Iterable[Box], context: Iterable[Box] = ()) -> QImage:
    """A copy of the page with the boxes on this page highlighted by haiku.rag's renderer
    (context faint, matches strong, the colours its PNGs have): only the QImage is ours."""
    pixels = render.pixels.with_boxes(matched, context)
    return _qimage(pixels.highlighted_rgb(), pixels.width, pixels.height)


class _RenderThread:
    """What lives on the render thread: haiku.rag's renderer (made on the first render) and
    the documents it keeps open per generation. A plain object, not the service: a worker
    thread must never hold a reference to a Qt object."""

    def __init__(self) -> None:
        self._renderer: PageRenderer | None = None

    def render(self, document_id: str, generation: str, data: bytes, page: int, zoom: float) -> PageRender:
        if self._renderer is None:
            from haiku.rag.pages import PageRenderer

            self._renderer = PageRenderer(keep_open=OPEN_DOCUMENTS)
        pixels = self._renderer.render((document_id, generation), data, page, zoom)
        return PageRender(document_id, page, pixels.page_count, zoom, pixels.width_pt, pixels.height_pt, pixels)

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()

    @staticmethod
    def page_sizes(data: bytes) -> tuple[tuple[float, float], ...]:
        """Every page's size in points (display space, rotation applied), in order."""
        with MUPDF_LOCK:
            pymupdf = import_pymupdf()
            with pymupdf.open(stream=data, filetype="pdf") as doc:
                return tuple((page.rect.width, page.rect.height) for page in doc)

    @staticmethod
    def find(data: bytes, text: str, limit: int = MAX_FIND_HITS) -> list[FindHit]:
        """Where ``text`` is on the pages, in reading order, at most ``limit`` places: case
        and accents folded on both sides, and a page's accents drawn as glyphs of their own
        ("na¨ıve", TeX's way) read as the letter they sit on, so "naïve" and "naive" both find
        it (tester 20:26: PyMuPDF's search_for on the raw text found neither)."""
        needle = " ".join(find_fold(text).split())
        hits: list[FindHit] = []
        if not needle:
            return hits
        with MUPDF_LOCK:
            pymupdf = import_pymupdf()
            with pymupdf.open(stream=data, filetype="pdf") as doc:
                for index, page in enumerate(doc):
                    if needle not in " ".join(find_fold(page.get_text("text")).split()):
                        continue  # the cheap look first; the characters' places only here
                    matrix = page.rotation_matrix if page.rotation else None
                    for rect in _places(pymupdf, page, needle):
                        if matrix is not None:
                            rect = rect * matrix  # to the display space the page renders in
                        hits.append(FindHit(index + 1, rect.x0, rect.y0, rect.x1, rect.y1))
                        if len(hits) >= limit:
                            return hits
        return hits


def find_fold(text: str) -> str:
    """``text`` as find-in-document compares it: a spacing accent (¨ ´ ˆ, drawn as a glyph of
    its own) dropped, a dotless ı read as i, then case and accents folded."""
    from haiku_desk.services.entries import fold

    kept = "".join("i" if c == "ı" else c for c in text if unicodedata.category(c) != "Sk")
    return fold(kept)


def _places(pymupdf: Any, page: Any, needle: str) -> list[Any]:
    """The rectangles (one per line a match spans) of ``needle`` among ``page``'s characters,
    each folded as ``find_fold`` does; spaces and line ends count as one space."""
    chars: list[str] = []
    owners: list[tuple[tuple[float, float, float, float] | None, int]] = []
    line_no = 0
    for block in page.get_text("rawdict")["blocks"]:
        for line in block.get("lines", []):
            line_no += 1
            for span in line["spans"]:
                for char in span["chars"]:
                    folded = find_fold(char["c"])
                    if folded.isspace():
                        folded = " "
                        if not chars or chars[-1] == " ":
                            continue
                    for c in folded:
                        chars.append(c)
                        owners.append((tuple(char["bbox"]), line_no))
            if chars and chars[-1] != " ":
                chars.append(" ")
                owners.append((None, line_no))
    text = "".join(chars)
    rects: list[Any] = []
    start = text.find(needle)
    while start >= 0:
        by_line: dict[int, Any] = {}
        for bbox, line in owners[start : start + len(needle)]:
            if bbox is not None:
                rect = pymupdf.Rect(bbox)
                by_line[line] = by_line[line] | rect if line in by_line else rect
        rects.extend(by_line.values())
        start = text.find(needle, start + len(needle))
    return rects


class PagesService(QObject):
    """Renders stored pages off the GUI thread; ``request`` answers with ``page_ready``."""

    page_ready = Signal(int, object)  # request id, PageRender
    page_failed = Signal(int, str)  # request id, message
    original_ready = Signal(str, str)  # document id, local path of the original file
    layout_ready = Signal(int, object)  # request id, DocumentLayout
    found = Signal(int, object)  # request id, list[FindHit]

    def __init__(
        self,
        library: LibraryService,
        notifications: Notifications,
        parent: QObject | None = None,
        cache_size: int = RENDER_CACHE_SIZE,
    ) -> None:
        super().__init__(parent)
        self.library = library
        self.notifications = notifications
        self._cache: OrderedDict[tuple[str, str, int, float], PageRender] = OrderedDict()
        self._cache_size = cache_size
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="haiku-pages")
        self._renderer = _RenderThread()  # used on the render thread only
        # Stored originals per document generation, least recently used first: reading one from
        # the store is a table scan, so clicking between an answer's sources must not repeat it.
        self._bytes_tasks: OrderedDict[tuple[str, str], asyncio.Future[bytes]] = OrderedDict()
        self._ids = itertools.count(1)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._closed = False
        self._warm: concurrent.futures.Future[None] | None = None
        self._layouts: OrderedDict[tuple[str, str], DocumentLayout] = OrderedDict()

    # --- rendering ---------------------------------------------------------------------------

    @staticmethod
    def zoom_key(zoom: float) -> float:
        """The zoom a request for ``zoom`` is rendered and cached at."""
        return round(max(MIN_ZOOM, min(MAX_ZOOM, zoom)), 3)

    def _generation(self, document_id: str) -> str:
        entry = self.library.entry_for_document(document_id)
        return entry.generation if entry is not None else ""

    def cached(self, document_id: str, page: int, zoom: float) -> PageRender | None:
        """The render if it is cached (no waiting: the panel shows it at once)."""
        key = (document_id, self._generation(document_id), page, self.zoom_key(zoom))
        render = self._cache.get(key)
        if render is not None:
            self._cache.move_to_end(key)
        return render

    async def render(self, document_id: str, page: int, zoom: float = 1.5) -> PageRender:
        """Page ``page`` (1-based) of a stored document at ``zoom`` pixels per point."""
        zoom = self.zoom_key(zoom)
        generation = self._generation(document_id)
        key = (document_id, generation, page, zoom)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        data = await self._source_bytes(document_id, generation)
        loop = asyncio.get_running_loop()
        render = await loop.run_in_executor(
            self._executor, self._renderer.render, document_id, generation, data, page, zoom
        )
        self._cache[key] = render
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return render

    def request(self, document_id: str, page: int, zoom: float = 1.5) -> int:
        """Render in the background; the answer is ``page_ready`` or ``page_failed`` with the id."""
        request_id = next(self._ids)
        asyncio.ensure_future(self._answer(request_id, document_id, page, zoom))
        return request_id

    async def _answer(self, request_id: int, document_id: str, page: int, zoom: float) -> None:
        try:
            render = await self.render(document_id, page, zoom)
        except NotRenderableError as exc:
            self.page_failed.emit(request_id, str(exc))
        except Exception as exc:
            self.page_failed.emit(request_id, str(exc))
            self.notifications.report_failure(f"Showing page {page}", exc)
        else:
            self.page_ready.emit(request_id, render)

    def prefetch(self, document_id: str, page: int, zoom: float = 1.5) -> None:
        """Render into the cache ahead of a click (a new answer's cited pages); quiet on failure."""
        if self._closed or (
            self.cached(document_id, page, zoom) is not None and self.cached_layout(document_id) is not None
        ):
            return

        async def render_quietly() -> None:
            try:
                await self.layout(document_id)  # the reader lays the document out first
                await self.render(document_id, page, zoom)
            except Exception:  # a click on it reports the failure; a prefetch stays quiet
                pass

        asyncio.ensure_future(render_quietly())

    def warm_up(self) -> None:
        """Load PyMuPDF and initialise MuPDF on the render thread now (call once the window is
        idle), so the first citation click does not wait for them."""
        if self._closed or self._warm is not None:
            return
        self._warm = self._executor.submit(self._warm_sync)

    @staticmethod
    def _warm_sync() -> None:
        try:
            with MUPDF_LOCK:
                if "pymupdf" in sys.modules:
                    return  # loaded already, and maybe in use by code that does not take the lock
                pymupdf = import_pymupdf()
                doc = pymupdf.open()  # a first render loads MuPDF's colour spaces and base fonts
                try:
                    page = doc.new_page(width=72, height=72)
                    page.insert_text((8, 36), "Aa")
                    page.get_pixmap(alpha=False)
                finally:
                    doc.close()
        except Exception:  # only a head start: the first real render reports any real problem
            pass

    async def _source_bytes(self, document_id: str, generation: str) -> bytes:
        key = (document_id, generation)
        task = self._bytes_tasks.get(key)
        if task is None:
            task = asyncio.ensure_future(self._fetch_bytes(document_id))
            self._bytes_tasks[key] = task
            self._trim_source_bytes()
        else:
            self._bytes_tasks.move_to_end(key)
        try:
            return await asyncio.shield(task)
        except Exception:
            self._bytes_tasks.pop(key, None)
            raise

    def _trim_source_bytes(self) -> None:
        """Forget the least recently used originals beyond the budget (the newest always stays)."""
        total = 0
        for key in reversed(self._bytes_tasks):
            task = self._bytes_tasks[key]
            if task.done() and not task.cancelled() and task.exception() is None:
                total += len(task.result())
            if total > SOURCE_BYTES_BUDGET and key != next(reversed(self._bytes_tasks)):
                break
        else:
            return
        keys = list(self._bytes_tasks)
        for old in keys[: keys.index(key) + 1]:
            self._bytes_tasks.pop(old)

    async def _fetch_bytes(self, document_id: str) -> bytes:
        from haiku.rag.errors import DocumentNotFoundError

        client = await self.library.ensure_open()
        try:
            document = await client.get_document(document_id)
        except DocumentNotFoundError as exc:
            raise DocumentRemovedError(REMOVED_MESSAGE) from exc
        if document.mime_type != "application/pdf":
            raise NotRenderableError(f"{document.display_name} has no pages to show ({document.mime_type or 'text'})")
        return await client.get_source_bytes(document)

    # --- a document's layout and find-in-document ---------------------------------------------

    def cached_layout(self, document_id: str) -> DocumentLayout | None:
        """The document's layout if known (no waiting: a prefetched citation opens at once)."""
        return self._layouts.get((document_id, self._generation(document_id)))

    async def layout(self, document_id: str) -> DocumentLayout:
        """A PDF's page sizes, a text source's text, or ``removed`` when the library no longer
        holds the document."""
        from haiku.rag.errors import DocumentNotFoundError

        generation = self._generation(document_id)
        key = (document_id, generation)
        known = self._layouts.get(key)
        if known is not None:
            return known
        client = await self.library.ensure_open()
        try:
            document = await client.get_document(document_id)
        except DocumentNotFoundError:
            return DocumentLayout(document_id, "removed")
        if document.mime_type == "application/pdf":
            data = await self._source_bytes(document_id, generation)
            loop = asyncio.get_running_loop()
            sizes = await loop.run_in_executor(self._executor, _RenderThread.page_sizes, data)
            layout = DocumentLayout(document_id, "pages", document.display_name, sizes, mime_type=document.mime_type)
        else:
            text = await client.get_content(document)
            layout = DocumentLayout(document_id, "text", document.display_name, text=text, mime_type=document.mime_type)
        self._layouts[key] = layout
        while len(self._layouts) > RENDER_CACHE_SIZE:
            self._layouts.popitem(last=False)
        return layout

    def request_layout(self, document_id: str) -> int:
        """``layout`` in the background: answers with ``layout_ready`` (or ``page_failed``)."""
        request_id = next(self._ids)

        async def answer() -> None:
            try:
                layout = await self.layout(document_id)
            except Exception as exc:
                self.page_failed.emit(request_id, str(exc))
                self.notifications.report_failure("Opening the document", exc)
            else:
                self.layout_ready.emit(request_id, layout)

        asyncio.ensure_future(answer())
        return request_id

    async def find(self, document_id: str, text: str) -> list[FindHit]:
        """Where ``text`` is on a PDF's pages (from its stored original)."""
        if not text.strip():
            return []
        data = await self._source_bytes(document_id, self._generation(document_id))
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, _RenderThread.find, data, text)

    def request_find(self, document_id: str, text: str) -> int:
        """``find`` in the background: answers with ``found`` (nothing found on failure)."""
        request_id = next(self._ids)

        async def answer() -> None:
            try:
                hits = await self.find(document_id, text)
            except Exception as exc:
                self.notifications.report_failure("Finding in the document", exc)
                hits = []
            self.found.emit(request_id, hits)

        asyncio.ensure_future(answer())
        return request_id

    # --- the original file ---------------------------------------------------------------------

    async def original_path(self, document_id: str) -> Path:
        """The original file: where it was added from if still there and unchanged, otherwise
        a temporary copy of the stored bytes."""
        from haiku.rag.formats import content_hash
        from haiku_desk.services.library import path_from_uri

        client = await self.library.ensure_open()
        document = await client.get_document(document_id)
        local = path_from_uri(document.uri)
        if local and Path(local).is_file():
            same = await asyncio.to_thread(lambda: content_hash(Path(local).read_bytes()) == document.content_hash)
            if same:
                return Path(local)
        data = await client.get_source_bytes(document)
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="haiku-desk-originals-")
        name = Path(local).name if local else f"{document.id}"
        target = Path(self._tmp.name) / document.id / name
        target.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(target.write_bytes, data)
        return target

    def request_original(self, document_id: str) -> None:
        """Find (or write out) the original file; answers with ``original_ready``."""

        async def find() -> None:
            try:
                path = await self.original_path(document_id)
            except Exception as exc:
                self.notifications.report_failure("Opening the original file", exc)
            else:
                self.original_ready.emit(document_id, str(path))

        asyncio.ensure_future(find())

    def close(self) -> None:
        self._closed = True
        # Wait: PyMuPDF is not thread-safe across the process, so no render may still be running
        # when other code (a test's PDF factory, an export) calls PyMuPDF next.
        self._executor.submit(self._renderer.close)
        self._executor.shutdown(wait=True, cancel_futures=False)
        self._cache.clear()
        self._layouts.clear()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def font_bytes(name: str) -> bytes:
    """The TrueType bytes of one of PyMuPDF's bundled fonts (``"cjk"``: Droid Sans Fallback),
    under the MuPDF lock; no Qt, safe in a worker thread (the views' fallback font)."""
    with MUPDF_LOCK:
        pymupdf = import_pymupdf()
        return bytes(pymupdf.Font(name).buffer)
