"""Named sets of documents stored in the library (see ``haiku.rag.collections``)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence

from haiku.rag import collections
from haiku.rag.client.base import ClientBase
from haiku.rag.collections import Collection


async def list_collections(client: ClientBase) -> list[Collection]:
    return await asyncio.to_thread(client._reading(collections.list_collections), client.store)


async def get_collection(client: ClientBase, name: str) -> Collection:
    return await asyncio.to_thread(client._reading(collections.get_collection), client.store, name)


async def create_collection(client: ClientBase, name: str, document_ids: Sequence[str] = ()) -> Collection:
    return await asyncio.to_thread(
        client._reading(collections.create_collection), client.store, name, list(document_ids)
    )


async def add_to_collection(
    client: ClientBase, name: str, document_ids: Sequence[str], *, create: bool = False
) -> Collection:
    return await asyncio.to_thread(
        client._reading(
            functools.partial(collections.add_to_collection, client.store, name, list(document_ids), create=create)
        )
    )


async def remove_from_collection(client: ClientBase, name: str, document_ids: Sequence[str]) -> Collection:
    return await asyncio.to_thread(
        client._reading(collections.remove_from_collection), client.store, name, list(document_ids)
    )


async def rename_collection(client: ClientBase, old: str, new: str) -> Collection:
    return await asyncio.to_thread(client._reading(collections.rename_collection), client.store, old, new)


async def delete_collection(client: ClientBase, name: str) -> Collection:
    return await asyncio.to_thread(client._reading(collections.delete_collection), client.store, name)


async def collection_document_ids(client: ClientBase, name: str) -> list[str]:
    """The live document ids of collection ``name``: the one resolver for a scope."""
    return await asyncio.to_thread(client._reading(collections.collection_document_ids), client.store, name)


async def collections_of(client: ClientBase, document_id: str) -> list[str]:
    return await asyncio.to_thread(client._reading(collections.collections_of), client.store, document_id)
