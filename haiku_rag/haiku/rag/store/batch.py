"""Writing many new documents a batch at a time.

One transaction per document makes a new version of every table per document: a folder of
3,000 small files left ~3,000 versions and ~9,000 data files per table, and each write got
slower as they piled up. ``DocumentBatch`` collects parsed documents and writes them in one
transaction (one append per table) once enough documents or bytes have piled up. Atomicity
per document is unchanged: a batch commits whole or not at all, so no document is ever half
written, and every document committed before an interruption stays.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from haiku.rag.store.documents import NewDocument, write_documents
from haiku.rag.store.engine import Store
from haiku.rag.store.models import Document

# A batch is written once it holds this many documents or this many bytes (file, text and
# structure): few versions for small files, bounded memory for big ones.
BATCH_DOCUMENTS = 64
BATCH_BYTES = 32 * 1024 * 1024


def _weight(new: NewDocument) -> int:
    return len(new.source_bytes) + len(new.content) + len(new.docling_json)


@dataclass(slots=True)
class DocumentBatch:
    """Pending new documents, keyed by the caller's handle (e.g. its outcome's index)."""

    store: Store
    max_documents: int = BATCH_DOCUMENTS
    max_bytes: int = BATCH_BYTES
    _pending: list[tuple[Hashable, NewDocument]] = field(default_factory=list)
    _uris: set[str] = field(default_factory=set)
    _bytes: int = 0

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, key: Hashable, new: NewDocument) -> list[tuple[Hashable, Document]]:
        """Queue ``new``; returns the documents written if this filled the batch."""
        written = self.flush() if new.uri in self._uris else []  # one row per URI per write
        self._pending.append((key, new))
        self._uris.add(new.uri)
        self._bytes += _weight(new)
        if len(self._pending) >= self.max_documents or self._bytes >= self.max_bytes:
            written += self.flush()
        return written

    def flush(self) -> list[tuple[Hashable, Document]]:
        """Write every pending document in one transaction; returns (key, stored document)."""
        if not self._pending:
            return []
        pending, self._pending, self._uris, self._bytes = self._pending, [], set(), 0
        stored = write_documents(self.store, [new for _, new in pending])
        return [(key, document) for (key, _), (document, _) in zip(pending, stored, strict=True)]
