"""The library's rows as values: a :class:`LibraryEntry` per document (stored, on its way in,
or failed), its :class:`DocumentState`, and :class:`PendingWork` (what Quit would stop).

Plain data, no Qt: the rows (:mod:`~haiku_desk.services.rows`), the queue runner
(:mod:`~haiku_desk.services.queue_runner`), watch folders and the views all read these.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from haiku.rag.errors import IngestCategory
from haiku_desk.services import failures
from haiku_desk.services.failures import NextStep

__all__ = [
    "CATEGORY_LABELS",
    "STATE_LABELS",
    "DocumentState",
    "LibraryEntry",
    "OverallStatus",
    "PendingWork",
    "dialog_filters",
    "document_extensions",
    "fold",
    "path_from_uri",
    "uri_for",
]


# A row's key is its source file's URI.
def uri_for(path: Path) -> str:
    return path.resolve().as_uri()


def path_from_uri(uri: str) -> str | None:
    """The local path of a ``file://`` URI on this OS (a Windows drive letter or UNC share
    included), None for any other URI."""
    from haiku.rag.files import path_from_file_uri

    if not uri.startswith("file://"):
        return None
    return path_from_file_uri(uri)


def document_extensions() -> list[str]:
    """The file name extensions the library ingests (".pdf", ".docx", …), for a file dialog."""
    from haiku.rag.formats import document_extensions as extensions

    return extensions()


def dialog_filters() -> str:
    """The Add files dialog's filter: exactly the types that ingest (the library's list), the
    documents a person adds by hand first (PDF, Word, PowerPoint, Excel, ODT, EPUB, HTML,
    Markdown, text, images), then text variants and source code; no "All files"."""
    from haiku.rag.formats import dialog_filters as filters

    return ";;".join(f"{label} ({' '.join('*' + e for e in extensions)})" for label, extensions in filters())


class DocumentState(StrEnum):
    QUEUED = "queued"
    PARSING = "parsing"
    TEXT = "text"  # searchable by full text, vectors pending
    EMBEDDING = "embedding"  # searchable by full text, vectors being computed
    HYBRID = "hybrid"  # searchable by full text and by meaning
    DELETING = "deleting"  # a delete is queued or running (Cancel keeps the document)
    FAILED = "failed"
    CANCELLED = "cancelled"


STATE_LABELS = {
    DocumentState.QUEUED: "queued",
    DocumentState.PARSING: "parsing…",
    DocumentState.TEXT: "searchable (text)",
    DocumentState.EMBEDDING: "searchable (text), embedding…",
    DocumentState.HYBRID: "searchable (hybrid)",
    DocumentState.DELETING: "deleting…",
    DocumentState.FAILED: "failed",
    DocumentState.CANCELLED: "cancelled",
}

CATEGORY_LABELS = {
    IngestCategory.UNEXPECTED: "unexpected error",
    IngestCategory.STORE_LOCKED: "library locked",
    IngestCategory.DISK_FULL: "disk full",
}


@dataclass(frozen=True)
class LibraryEntry:
    """One row of the library: a stored document, or a file on its way in (or that failed).

    ``key`` is the source URI, stable across re-ingests and failures.
    """

    key: str
    name: str
    state: DocumentState
    path: str | None = None
    document_id: str | None = None
    generation: str = ""
    mime_type: str = ""
    page_count: int = 0
    chunk_count: int = 0
    category: IngestCategory | None = None
    reason: str | None = None
    stage: str = ""
    done: int = 0
    total: int = 0
    watched_folder: str | None = None
    authors: str = ""  # the bibliographic record's authors, "Vaswani, Shazeer" (the filter reads them)
    year: int | None = None
    # the file's name where the key is no file path (a Zotero attachment's "paper.pdf", not
    # its storage key); empty when ``path`` names the file
    file_name: str = ""
    recognised_pages: int = 0  # pages read by text recognition (OCR) at ingest

    @property
    def searchable(self) -> bool:
        return self.state in (DocumentState.TEXT, DocumentState.EMBEDDING, DocumentState.HYBRID)

    @property
    def busy(self) -> bool:
        return self.state in (
            DocumentState.QUEUED,
            DocumentState.PARSING,
            DocumentState.EMBEDDING,
            DocumentState.DELETING,
        )

    @property
    def needs_password(self) -> bool:
        return self.state is DocumentState.FAILED and self.category in (
            IngestCategory.PASSWORD_REQUIRED,
            IngestCategory.WRONG_PASSWORD,
        )

    @property
    def state_label(self) -> str:
        if self.state is DocumentState.FAILED:
            category = self.category or IngestCategory.UNEXPECTED
            return f"failed: {CATEGORY_LABELS.get(category, category.value.replace('_', ' '))}"
        return STATE_LABELS[self.state]

    @property
    def stopped(self) -> bool:
        """A file that failed, or was cancelled before it was added: it needs the person."""
        return self.state is DocumentState.FAILED or (
            self.state is DocumentState.CANCELLED and self.document_id is None and self.category is not None
        )

    @property
    def hint(self) -> str:
        return failures.hint(self.category) if self.stopped else ""

    @property
    def next_steps(self) -> tuple[NextStep, ...]:
        """What can be done about a failed or cancelled file (empty for every other state)."""
        return failures.next_steps(self.category) if self.stopped else ()

    @property
    def fraction(self) -> float | None:
        """Progress of the current step in 0..1, None when not measurable."""
        if not self.busy or self.total <= 0:
            return None
        return min(1.0, self.done / self.total)


@dataclass(frozen=True)
class PendingWork:
    """What Quit would stop: the running job, the jobs waiting, the embeddings not done."""

    running: str | None = None  # the running job's title
    ingests: int = 0
    deletes: int = 0
    embeddings: int = 0

    @property
    def jobs(self) -> int:
        return (1 if self.running else 0) + self.ingests + self.deletes + self.embeddings

    def __bool__(self) -> bool:
        return self.jobs > 0


@dataclass(frozen=True)
class OverallStatus:
    """What the library's overall bar says: the phase of the work in this busy period and how
    far it is. Files are read first (each searchable by full text once read), then embedded
    (search by meaning); the bar measures the phase under way, never the two as one number,
    so it does not sit at "16 %" while everything is already searchable.

    ``done``/``total`` are the phase's work units (pages read, chunks embedded, weighed);
    ``files_done``/``files_total`` its files; ``removing`` deletes still to run. Idle: phase "".
    """

    phase: str = ""  # "", "reading", "removing" or "embedding"
    done: int = 0
    total: int = 0
    files_done: int = 0
    files_total: int = 0
    removing: int = 0
    all_searchable: bool = True  # no file of this busy period failed to be read
    detail: str = ""  # the running file's long step: "text recognition 2 of 4 pages"

    @property
    def idle(self) -> bool:
        return not self.phase or self.total <= 0

    @property
    def percent(self) -> int:
        return 0 if self.total <= 0 else min(100, 100 * self.done // self.total)

    def text(self, *, short: bool = False) -> str:
        """The bar's words: "Reading files: 5 of 24 · 21 %", "All searchable · improving
        search: 3 of 24 embedded" (``short``: "Searchable · embedding 3 of 24")."""
        if self.idle:
            return ""
        if self.phase == "embedding":
            searchable = "All searchable" if self.all_searchable else "Searchable"
            if short:
                return f"{searchable} · embedding {self.files_done} of {self.files_total}"
            return f"{searchable} · improving search: {self.files_done} of {self.files_total} embedded"
        removing = f"removing {self.removing}" if self.removing else ""
        if self.phase == "removing" or not self.files_total:
            return f"Removing {self.removing} document{'s' if self.removing != 1 else ''} · {self.percent} %"
        reading = f"Reading {self.files_done} of {self.files_total}" if short else (
            f"Reading files: {self.files_done} of {self.files_total}"
        )
        detail = self.detail
        if short:  # "OCR 2/4"
            detail = detail.replace("text recognition", "OCR").replace(" of ", "/").removesuffix(" pages").removesuffix(" page")
        return " · ".join(part for part in (reading, detail, removing, f"{self.percent} %") if part)

    def description(self) -> str:
        """For a screen reader: the phase, its files and how far it is."""
        if self.idle:
            return ""
        return f"{self.text()}; {self.percent} percent of this step done"


def fold(text: str) -> str:
    """``text`` as the app's filters compare it: case and accents folded (NFKD, combining marks
    dropped, casefold), so "oguz" finds "Oğuz" and "kereon" finds "Kéréon", as the library's
    search does."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
