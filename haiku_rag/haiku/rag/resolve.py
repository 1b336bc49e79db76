"""Which document a person means by a title or URI (``delete``, ``get``, ``cite``, MCP tools).

Titles are compared in Unicode NFC, so "Café" typed on one system finds a "Café" stored in
decomposed form (NFD, as macOS file names are) — the two look the same in ``list``. A name two
documents share is refused with the candidates' ids, never resolved to whichever came first:
``delete`` must not remove a document the person did not mean.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING

from haiku.rag.errors import DocumentNotFoundError, HaikuRAGError

if TYPE_CHECKING:
    from haiku.rag.store.models import Document

MAX_LISTED = 10


class AmbiguousDocumentError(HaikuRAGError):
    """A title or URI names more than one document: the message lists their ids."""

    def __init__(self, name: str, candidates: list[Document]) -> None:
        shown = "; ".join(f"{d.id} ({d.title or '-'}, {d.uri})" for d in candidates[:MAX_LISTED])
        more = f"; and {len(candidates) - MAX_LISTED} more" if len(candidates) > MAX_LISTED else ""
        super().__init__(
            f"{len(candidates)} documents have the title or URI {name!r}: {shown}{more}. "
            "Name the one you mean by its id."
        )
        self.candidates = [d.id for d in candidates]


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def match_document(documents: Iterable[Document], name: str) -> Document:
    """The one document whose title or URI is ``name`` (compared in NFC)."""
    wanted = nfc(name)
    found = [d for d in documents if wanted in (nfc(d.title or ""), nfc(d.uri))]
    if not found:
        raise DocumentNotFoundError(f"no document with id, title or URI {name!r}")
    if len(found) > 1:
        raise AmbiguousDocumentError(name, found)
    return found[0]
