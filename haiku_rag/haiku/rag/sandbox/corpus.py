"""The virtual files the sandbox shows, built from the store.

``/documents/{document_id}/``
  ``metadata.json``  ``{"id", "title", "uri", "created_at"}``
  ``content.txt``    the stored Markdown text of the document
  ``items.jsonl``    one JSON object per document item in reading order (line index = item
                     position): ``self_ref``, ``label``, ``text``, ``page_numbers``,
                     ``heading_level`` (0 unless a section header), ``chunk_ids`` (the chunks
                     that contain the item, so it is citable)
  ``toc.json``       ``{"doc_id", "title", "tree"}``: the section tree, each node
                     ``{self_ref, level, title, page_numbers, item_range: [start, end),
                     chunk_ids, children}``

Only documents the document filter admits are listed. Files are built on first read and kept
for the sandbox's lifetime.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from haiku.rag.ingest.records import ItemRecord
from haiku.rag.store.models import Chunk, Document, SearchResult

DOCUMENTS_ROOT = "/documents"
FILE_NAMES = ("metadata.json", "content.txt", "items.jsonl", "toc.json")


def metadata_json(document: Document) -> str:
    return json.dumps(document_summary(document), ensure_ascii=False)


def document_summary(document: Document) -> dict[str, Any]:
    """What ``list_documents()`` returns for a document and ``metadata.json`` holds."""
    return {
        "id": document.id,
        "title": document.title,
        "uri": document.uri,
        "created_at": str(document.created_at),
    }


def item_chunk_ids(chunks: Sequence[Chunk]) -> dict[str, list[str]]:
    """For each item ref, the chunks (in chunk order) whose items include it."""
    owners: dict[str, list[str]] = {}
    for chunk in sorted(chunks, key=lambda c: c.order):
        for ref in chunk.doc_item_refs:
            ids = owners.setdefault(ref, [])
            if chunk.id not in ids:
                ids.append(chunk.id)
    return owners


def item_rows(items: Sequence[ItemRecord], chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
    owners = item_chunk_ids(chunks)
    return [
        {
            "self_ref": item.self_ref,
            "label": item.label,
            "text": item.text,
            "page_numbers": list(item.page_numbers),
            "heading_level": item.heading_level if item.label == "section_header" else 0,
            "chunk_ids": owners.get(item.self_ref, []),
        }
        for item in sorted(items, key=lambda i: i.position)
    ]


def items_jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def toc_tree(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The section tree of a document's items.

    A section starts at a header (``heading_level > 0``) and ends before the next header of the
    same or a higher level (a lower or equal number), or at the end of the document. A header
    nests under the nearest preceding header of a higher level.
    """
    headers = [(i, row) for i, row in enumerate(rows) if row["heading_level"] > 0]
    roots: list[dict[str, Any]] = []
    stack: list[dict[str, Any]] = []
    for index, (position, row) in enumerate(headers):
        level = row["heading_level"]
        end = next(
            (p for p, later in headers[index + 1 :] if later["heading_level"] <= level),
            len(rows),
        )
        node = {
            "self_ref": row["self_ref"],
            "level": level,
            "title": row["text"],
            "page_numbers": row["page_numbers"],
            "item_range": [position, end],
            "chunk_ids": list(
                dict.fromkeys(cid for item in rows[position:end] for cid in item["chunk_ids"])
            ),
            "children": [],
        }
        while stack and stack[-1]["level"] >= level:
            stack.pop()
        (stack[-1]["children"] if stack else roots).append(node)
        stack.append(node)
    return roots


def toc_json(document: Document, rows: Sequence[dict[str, Any]]) -> str:
    return json.dumps(
        {"doc_id": document.id, "title": document.title, "tree": toc_tree(rows)},
        ensure_ascii=False,
    )


def search_result_dict(result: SearchResult) -> dict[str, Any]:
    """A search hit as sandbox code sees it: plain data, no picture bytes, no scores hidden."""
    return {
        "chunk_id": result.chunk_id,
        "content": result.content,
        "document_id": result.document_id,
        "document_title": result.document_title,
        "document_uri": result.document_uri,
        "score": result.score,
        "page_numbers": list(result.page_numbers),
        "headings": list(result.headings),
        "doc_item_refs": list(result.doc_item_refs),
        "labels": list(result.labels),
        "picture_refs": [r for r in result.doc_item_refs if r.startswith("#/pictures/")],
    }


@dataclass
class CorpusReader:
    """The store reads the virtual files need (the capability supplies them from its client)."""

    list_documents: Callable[[], Awaitable[list[Document]]]
    content: Callable[[Document], Awaitable[str]]
    items: Callable[[Document], Awaitable[list[ItemRecord]]]
    chunks: Callable[[Document], Awaitable[list[Chunk]]]


@dataclass
class CorpusFiles:
    """The filter-scoped document tree and its files, each built once, on first read."""

    reader: CorpusReader
    documents: dict[str, Document] = field(default_factory=dict)
    _files: dict[tuple[str, str], str] = field(default_factory=dict)
    _rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def load(self) -> None:
        listed = await self.reader.list_documents()
        self.documents = {d.id: d for d in listed}

    def summaries(self) -> list[dict[str, Any]]:
        return [document_summary(d) for d in self.documents.values()]

    async def read(self, document_id: str, name: str) -> str:
        key = (document_id, name)
        async with self._lock:
            if key not in self._files:
                self._files[key] = await self._build(self.documents[document_id], name)
            return self._files[key]

    async def _build(self, document: Document, name: str) -> str:
        if name == "metadata.json":
            return metadata_json(document)
        if name == "content.txt":
            return await self.reader.content(document)
        rows = await self._item_rows(document)
        if name == "items.jsonl":
            return items_jsonl(rows)
        if name == "toc.json":
            return toc_json(document, rows)
        raise FileNotFoundError(name)

    async def _item_rows(self, document: Document) -> list[dict[str, Any]]:
        if document.id not in self._rows:
            items = await self.reader.items(document)
            chunks = await self.reader.chunks(document)
            self._rows[document.id] = item_rows(items, chunks)
        return self._rows[document.id]
