"""A document's bibliographic record: the one a person edited, stored; and the one read from a
PDF at ingest (unless the caller gave one, or the person's edit is kept across a re-ingest)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import PurePath
from typing import Any

from haiku.rag.client.base import ClientBase
from haiku.rag.config import BibliographyConfig
from haiku.rag.store import documents as docs
from haiku.rag.store.models import Document

log = logging.getLogger("haiku.rag")


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


def add_bibliographic(
    new: docs.NewDocument,
    filename: str,
    replaces: Document | None = None,
    settings: BibliographyConfig | None = None,
) -> None:
    """Authors, year, DOI... read from a PDF itself, unless the caller gave them (Zotero) or
    the person edited them (kept from the version this one replaces). With
    ``settings.lookup`` on (off by default), the record is confirmed and filled online
    (``haiku.rag.bibliography_lookup``)."""
    from haiku.rag.bibliography import METADATA_KEY, USER_SOURCE

    edited = replaces.metadata.get(METADATA_KEY) if replaces is not None else None
    if METADATA_KEY not in new.metadata and isinstance(edited, dict) and edited.get("source") == USER_SOURCE:
        new.metadata[METADATA_KEY] = edited
        return
    if new.mime_type != "application/pdf" or METADATA_KEY in new.metadata:
        return
    from haiku.rag.pdf_metadata import extract_pdf_metadata

    # the title the library shows (the first page's title block), not a file-name fallback
    shown = new.title if new.title and new.title != PurePath(filename).stem else None
    try:
        record = extract_pdf_metadata(new.source_bytes, filename=filename, title=shown)
    except Exception:  # metadata is a bonus: never fail an ingest over it
        log.warning("could not read bibliographic metadata of %s", filename, exc_info=True)
        return
    if record is not None and settings is not None and settings.lookup:
        from haiku.rag.bibliography_lookup import lookup_record

        record = lookup_record(record, settings)
    if record is not None:
        new.metadata[METADATA_KEY] = record.to_metadata()
