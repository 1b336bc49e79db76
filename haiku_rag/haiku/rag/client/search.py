"""Searching the library, widening results to their context, and rendering the pages a
result's boxes fall on (visual grounding)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

from haiku.rag.citations import pages_to_render
from haiku.rag.client.base import ClientBase
from haiku.rag.client.documents import get_chunk
from haiku.rag.ingest.records import Box
from haiku.rag.pages import PageImage, render_page
from haiku.rag.search.hybrid import SearchType
from haiku.rag.store import documents as docs
from haiku.rag.store.models import Chunk, SearchResult

log = logging.getLogger("haiku.rag")


async def search(
    client: ClientBase,
    query: str,
    limit: int | None = None,
    search_type: SearchType = "hybrid",
    filter: str | None = None,
    *,
    document_ids: Sequence[str] | None = None,
    notices: list[str] | None = None,
) -> list[SearchResult]:
    return await client._store_thread(
        functools.partial(
            search_sync, client, query, limit, search_type, filter, document_ids=document_ids, notices=notices
        )
    )


def search_sync(
    client: ClientBase,
    query: str,
    limit: int | None = None,
    search_type: SearchType = "hybrid",
    filter: str | None = None,
    *,
    document_ids: Sequence[str] | None = None,
    notices: list[str] | None = None,
) -> list[SearchResult]:
    """``document_ids`` (e.g. a collection's) restricts the search; with ``filter`` too,
    only documents matching both are searched. A hybrid search whose query cannot be
    embedded answers from full text and appends why to ``notices``."""
    from haiku.rag.search.hybrid import SearchSettings, search_chunks

    config = client.config
    limit = config.search.limit if limit is None else limit
    # Lone surrogates (undecodable bytes in a command line) break the tokenizers.
    query = query.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    scope = docs.document_ids_matching(client.store, filter) if filter else None
    if document_ids is not None:
        allowed = set(document_ids)
        scope = [i for i in (scope if scope is not None else document_ids) if i in allowed]
    document_ids = scope
    vector = None
    if search_type in ("hybrid", "vector") and client._has_vectors():
        # embedded inside search_chunks, while the full-text arm runs
        vector = functools.partial(client.embedder.embed_query, query)
    elif search_type == "vector":
        return []
    return search_chunks(
        client.store,
        query,
        query_vector=vector,
        search_type=search_type,
        limit=limit,
        document_ids=document_ids,
        settings=SearchSettings.from_config(config.search),
        reranker=_reranker_or_none(client),
        notices=notices,
    )


def _reranker_or_none(client: ClientBase) -> Any:
    # A misconfigured reranker (no key, no URL) must not fail searches: say why, search on.
    try:
        return client.reranker
    except ValueError as exc:
        log.warning("reranking is off for this search: %s", exc)
        return None


async def expand_context(
    client: ClientBase, results: list[SearchResult], max_chars: int | None = None
) -> list[SearchResult]:
    from haiku.rag.search.expansion import expand_context

    budget = client.config.search.max_context_chars if max_chars is None else max_chars
    return await client._store_thread(expand_context, client.store, results, budget)


# --- visual grounding -------------------------------------------------------------------------


async def visualize(
    client: ClientBase,
    document_id: str,
    matched: list[Box],
    context: list[Box] | None = None,
    page_numbers: list[int] | None = None,
    *,
    dpi: float = 150,
) -> list[PageImage]:
    """Render the pages the boxes fall on, from the stored file, with the boxes in pixels."""

    def render() -> list[PageImage]:
        document = docs.get_document(client.store, document_id)
        if document.mime_type != "application/pdf":
            return []
        data = docs.get_source_bytes(client.store, document)
        pages = pages_to_render(matched, context or [], page_numbers or [])
        return [render_page(data, p, matched=matched, context=context or [], dpi=dpi) for p in pages]

    return await client._store_thread(render)


async def visualize_chunk(
    client: ClientBase, chunk: str | Chunk | SearchResult, *, dpi: float = 150
) -> list[PageImage]:
    """Pages of a chunk (by id), or of a search result, with its boxes highlighted."""
    if isinstance(chunk, str):
        chunk = await get_chunk(client, chunk)
    context = chunk.context_boxes if isinstance(chunk, SearchResult) else []
    return await visualize(client, chunk.document_id, chunk.boxes, context, chunk.page_numbers, dpi=dpi)
