"""A document's bibliographic record: the one a person edited, stored; and the one read from a
PDF at ingest (unless the caller gave one, or the person's edit is kept across a re-ingest)."""

from __future__ import annotations

import asyncio
from typing import Any

from haiku.rag.client.base import ClientBase
from haiku.rag.config import BibliographyConfig
from haiku.rag.store import documents as docs
from haiku.rag.store.models import Document


async def update_bibliographic(
    client: ClientBase, document_id: str, record: Any, *, title: str | None = None
) -> Document:
    """Store the bibliographic record a person edited (a ``Bibliographic``, see
    ``haiku.rag.bibliography.edited_record``) and, with ``title``, the document's title:
    checked first (``BibliographicError`` names a bad field and nothing is written), then
    one atomic write of the documents row; nothing is re-parsed or re-embedded. A record
    whose ``source`` is ``"user"`` is kept when the file is re-ingested."""
    from haiku.rag.bibliography import METADATA_KEY, Bibliographic, check_record

    checked = check_record(Bibliographic.model_validate(record))
    return await asyncio.to_thread(
        client._reading(docs.update_metadata),
        client.store,
        document_id,
        {METADATA_KEY: checked.to_metadata()},
        title=title,
    )


async def bibliographic_record(client: ClientBase, document: Document) -> Any:
    """The stored record of a document (a ``Bibliographic``, or None); for a PDF ingested
    before records existed, read from its stored file (not stored: reads never write)."""
    from haiku.rag.bibliography import bibliographic

    record = bibliographic(document.metadata)
    if record is None and document.mime_type == "application/pdf":
        from haiku.rag.pdf_metadata import extract_pdf_metadata

        data = await client._store_thread(docs.get_source_bytes, client.store, document)
        record = await asyncio.to_thread(extract_pdf_metadata, data, filename=document.metadata.get("filename"))
    if record is not None and record.title is None and document.title:
        record = record.model_copy(update={"title": document.title})
    return record


def edited_record(replaces: Document | None) -> dict[str, Any] | None:
    """The record a person edited on the version being replaced (kept across re-ingests)."""
    from haiku.rag.bibliography import METADATA_KEY, USER_SOURCE

    edited = replaces.metadata.get(METADATA_KEY) if replaces is not None else None
    return edited if isinstance(edited, dict) and edited.get("source") == USER_SOURCE else None


def reads_bibliographic(metadata: dict[str, Any] | None, replaces: Document | None) -> bool:
    """Whether the parse reads a PDF's record itself (in the parse worker, in the same open of
    the file): not when the caller gave one (Zotero) or the person edited the one replaced."""
    from haiku.rag.bibliography import METADATA_KEY

    return METADATA_KEY not in (metadata or {}) and edited_record(replaces) is None


def add_bibliographic(
    new: docs.NewDocument,
    replaces: Document | None = None,
    settings: BibliographyConfig | None = None,
    *,
    read: bool = False,
) -> None:
    """After the parse: the person's edit of the version replaced is kept (unless the caller
    gave a record); a record the parse read from the PDF (``read``) is, with
    ``settings.lookup`` on (off by default), confirmed and filled online
    (``haiku.rag.bibliography_lookup``)."""
    from haiku.rag.bibliography import METADATA_KEY, bibliographic

    edited = edited_record(replaces)
    if METADATA_KEY not in new.metadata and edited is not None:
        new.metadata[METADATA_KEY] = edited
        return
    if not read or settings is None or not settings.lookup:
        return
    record = bibliographic(new.metadata)
    if record is not None:
        from haiku.rag.bibliography_lookup import lookup_record

        new.metadata[METADATA_KEY] = lookup_record(record, settings).to_metadata()
