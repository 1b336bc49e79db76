"""Hand-built paged documents for search tests: chunks placed on chosen pages."""

from __future__ import annotations

from haiku.rag.ingest.records import Box, ChunkRecord, ItemRecord
from haiku.rag.store.documents import NewDocument


def paged_document(uri: str, pages: list[tuple[int, str]], *, title: str | None = None) -> NewDocument:
    """One chunk (and item) per (page, text), in that order; page 0 means no page."""
    items, chunks = [], []
    for i, (page, text) in enumerate(pages):
        on = [page] if page else []
        box = [Box(page, 72, 100, 500, 114)] if page else []
        items.append(ItemRecord(i, f"#/texts/{i}", "text", text, on, 0, box))
        chunks.append(ChunkRecord(i, text, text, [], ["text"], [f"#/texts/{i}"], on, box))
    return NewDocument(
        uri=uri,
        title=title,
        metadata={},
        content_hash=uri,
        mime_type="application/pdf",
        page_count=max((p for p, _ in pages), default=0),
        source_bytes=b"%PDF-fake",
        content="\n\n".join(text for _, text in pages),
        docling_json="{}",
        items=items,
        chunks=chunks,
    )
