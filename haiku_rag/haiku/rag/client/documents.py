"""Reading and editing stored documents: by id, URI or title, their chunks, text and source
bytes; deleting, retitling and updating them. ``HaikuRAG``'s methods of the same names."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from haiku.rag.client.base import ClientBase
from haiku.rag.errors import DocumentNotFoundError
from haiku.rag.ingest.records import ItemRecord
from haiku.rag.store import documents as docs
from haiku.rag.store.models import Chunk, Document


async def get_document(client: ClientBase, document_id: str) -> Document:
    return await client._store_thread(docs.get_document, client.store, document_id)


async def get_document_by_uri(client: ClientBase, uri: str) -> Document | None:
    return await client._store_thread(docs.find_document_by_uri, client.store, uri)


async def resolve_document(client: ClientBase, id_or_title: str) -> Document:
    """By id, then title or URI (``haiku.rag.resolve``: NFC, and a name two documents share
    is an ``AmbiguousDocumentError`` listing their ids)."""
    from haiku.rag.resolve import match_document

    def find() -> Document:
        try:
            return docs.get_document(client.store, id_or_title)
        except DocumentNotFoundError:
            pass
        return match_document(docs.list_documents(client.store), id_or_title)

    return await client._store_thread(find)


async def list_documents(
    client: ClientBase,
    *,
    filter: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    document_ids: Sequence[str] | None = None,
) -> list[Document]:
    """Documents by creation: all, those matching ``filter`` (SQL over document fields: a
    command line's or a host's) and those among ``document_ids`` (a scope, e.g. a chat's)."""
    ids = None if document_ids is None else list(document_ids)
    return await client._store_thread(
        docs.list_documents, client.store, filter=filter, limit=limit, offset=offset, document_ids=ids
    )


async def get_chunks(client: ClientBase, document: Document) -> list[Chunk]:
    return await client._store_thread(docs.get_chunks, client.store, document)


async def get_chunk(client: ClientBase, chunk_id: str) -> Chunk:
    rows = await client._store_thread(docs.get_chunks_by_id, client.store, [chunk_id])
    if chunk_id not in rows:
        raise DocumentNotFoundError(f"no chunk with id {chunk_id}")
    return docs.chunk_from_row(rows[chunk_id])


async def get_items(
    client: ClientBase, document: Document, *, start: int | None = None, stop: int | None = None
) -> list[ItemRecord]:
    """The document's items (text, tables, pictures with their boxes) by position."""
    return await client._store_thread(docs.get_items, client.store, document, start=start, stop=stop)


async def get_item(client: ClientBase, document_id: str, self_ref: str) -> ItemRecord | None:
    """The item ``self_ref`` (e.g. ``#/pictures/0``) of a document; None when it has none."""

    def find() -> ItemRecord | None:
        document = docs.get_document(client.store, document_id)
        position = docs.item_positions(client.store, document, [self_ref]).get(self_ref)
        if position is None:
            return None
        items = docs.get_items(client.store, document, start=position, stop=position + 1)
        return items[0] if items else None

    return await client._store_thread(find)


async def get_items_near(
    client: ClientBase, document_id: str, self_ref: str, window: int
) -> list[ItemRecord]:
    """The items within ``window`` positions of ``self_ref`` (it included), in reading order;
    empty when the document has no such item (a figure's caption is found among these)."""

    def near() -> list[ItemRecord]:
        document = docs.get_document(client.store, document_id)
        position = docs.item_positions(client.store, document, [self_ref]).get(self_ref)
        if position is None:
            return []
        start = max(0, position - window)
        return docs.get_items(client.store, document, start=start, stop=position + window + 1)

    return await client._store_thread(near)


async def get_source_bytes(client: ClientBase, document: Document) -> bytes:
    return await client._store_thread(docs.get_source_bytes, client.store, document)


async def get_content(client: ClientBase, document: Document) -> str:
    return await client._store_thread(docs.get_content, client.store, document)


async def delete_document(client: ClientBase, document_id: str) -> Document:
    return await client._store_thread(docs.delete_document, client.store, document_id)


async def update_document(
    client: ClientBase, document_id: str, *, title: str | None = None, metadata: dict[str, Any] | None = None
) -> Document:
    return await client._store_thread(
        docs.update_document_meta, client.store, document_id, title=title, metadata=metadata
    )


async def rename_document(client: ClientBase, document_id: str, title: str | None) -> Document:
    """Give a document the user's own title, kept across re-ingests (``metadata``'s
    ``user_title``); ``None`` or "" goes back to the title found in the file."""
    return await asyncio.to_thread(client._reading(docs.rename_document), client.store, document_id, title)
