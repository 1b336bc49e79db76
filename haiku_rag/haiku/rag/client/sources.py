"""What ingestion takes and what it reports: one ``IngestSource`` (bytes, file name, URI and
what the caller says about it), the public ``ImportItem`` and ``IngestOutcome``, and reading a
file into a source (or into the outcome that says why it cannot be read)."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from haiku.rag.config import AppConfig
from haiku.rag.errors import IngestCategory, IngestError, SourceNotFoundError
from haiku.rag.ingest.pipeline import check_size, file_uri
from haiku.rag.store.models import Document

IngestStatus = Literal["ingested", "updated", "unchanged", "failed", "skipped"]


@dataclass(frozen=True, slots=True)
class IngestSource:
    """One source to parse and store: its bytes, the file name whose extension picks the
    converter, the URI it is stored under (the key of its document), and what the caller says
    about it: a title, metadata (e.g. a Zotero record), a PDF's password."""

    data: bytes
    filename: str
    uri: str
    title: str | None = None
    metadata: dict[str, Any] | None = None
    password: str | None = None


@dataclass(slots=True)
class ImportItem:
    """An in-memory document for ``import_documents``: its bytes or text, where it comes
    from, and a file name whose extension says how to parse it (``.md``, ``.txt``, ``.pdf``…)."""

    content: str | bytes
    uri: str
    filename: str = "document.md"
    title: str | None = None
    metadata: dict[str, Any] | None = None

    def source(self) -> IngestSource:
        data = self.content.encode("utf-8") if isinstance(self.content, str) else self.content
        return IngestSource(data, self.filename, self.uri, self.title, self.metadata)


@dataclass(slots=True)
class IngestOutcome:
    """What happened to one source; ``--json`` prints these, the app shows them per file.

    ``source`` is always the source's URI (``file://…`` for files), the same key a stored
    document has; ``category`` is set when ``status`` is ``failed``.
    """

    source: str
    status: IngestStatus
    document: Document | None = None
    category: IngestCategory | None = None
    reason: str | None = None
    # reading, parsing and storing this source (embedding excluded: it is batched across files)
    seconds: float | None = None
    # a document stored before from the same bytes under another URI (a copy of the file):
    # both are searched, so an answer can cite one passage twice; the caller says so
    same_as: Document | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "status": self.status,
            "document_id": self.document.id if self.document else None,
            "title": self.document.title if self.document else None,
            "index_state": self.document.index_state if self.document else None,
            "category": None if self.category is None else self.category.value,
            "reason": self.reason,
            "seconds": None if self.seconds is None else round(self.seconds, 3),
            "same_as": None if self.same_as is None else {"document_id": self.same_as.id, "uri": self.same_as.uri},
        }


def read_source(
    path: Path,
    config: AppConfig,
    *,
    title: str | None = None,
    metadata: dict[str, Any] | None = None,
    password: str | None = None,
) -> IngestSource | IngestOutcome:
    """The file as a source (its bytes, its name, its ``file://`` URI), or the outcome that
    says why it cannot be read (keyed by URI)."""
    if path.is_symlink():
        # a loop cannot be resolved, so its URI is the link's own absolute path
        loop = IngestOutcome(
            path.absolute().as_uri(), "skipped", category=IngestCategory.SYMLINK_LOOP, reason="symlink loop"
        )
        try:
            path.resolve(strict=True)
        except RuntimeError:  # Python 3.11 reports a loop so; 3.13 raises OSError(ELOOP)
            return loop
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return loop
    uri = file_uri(path)
    try:
        if not path.is_file():
            raise SourceNotFoundError(f"{path} does not exist or is not a file", source=str(path))
        check_size(path, path.stat().st_size, config)
        data = path.read_bytes()
    except IngestError as exc:
        return IngestOutcome(uri, "failed", category=exc.category, reason=str(exc))
    except OSError as exc:
        category = (
            IngestCategory.PERMISSION_DENIED if exc.errno in (errno.EPERM, errno.EACCES) else IngestCategory.NOT_FOUND
        )
        return IngestOutcome(uri, "failed", category=category, reason=f"{path}: {exc.strerror or exc}")
    return IngestSource(data, path.name, uri, title, metadata, password)


def source_size(source: str | os.PathLike[str] | ImportItem) -> int:
    """Bytes of a source, to start a batch's largest parses first (0 when unknown)."""
    if isinstance(source, ImportItem):
        return len(source.content)
    try:
        return os.stat(source).st_size
    except (OSError, ValueError):
        return 0
