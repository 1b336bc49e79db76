"""Hand-built records for store tests (no converter or embedder needed)."""

from __future__ import annotations

from haiku.rag.ingest.records import Box, ChunkRecord, ItemRecord
from haiku.rag.store.documents import NewDocument

PARAGRAPHS = [
    "The albatross consignment reached the harbour of Nordvik.",
    "Customs brokers recorded every crate of marmalade in triplicate.",
    "The fog over the Quillmoor route delayed the night convoys.",
]


def new_document(uri: str = "file:///tmp/report.pdf", *, content_hash: str = "hash-1", paragraphs=PARAGRAPHS, title="Report") -> NewDocument:
    items = [ItemRecord(0, "#/texts/0", "section_header", "1 Introduction", [1], 1, [Box(1, 72, 70, 300, 90)])]
    chunks = []
    for i, text in enumerate(paragraphs, start=1):
        box = Box(1, 72, 100 + 30 * i, 500, 114 + 30 * i)
        items.append(ItemRecord(i, f"#/texts/{i}", "text", text, [1], 0, [box]))
        chunks.append(
            ChunkRecord(i - 1, text, f"1 Introduction\n{text}", ["1 Introduction"], ["text"], [f"#/texts/{i}"], [1], [box])
        )
    return NewDocument(
        uri=uri,
        title=title,
        metadata={"kind": "test"},
        content_hash=content_hash,
        mime_type="application/pdf",
        page_count=1,
        source_bytes=b"%PDF-fake",
        content="\n\n".join(paragraphs),
        docling_json="{}",
        items=items,
        chunks=chunks,
    )


def table_counts(store) -> dict[str, int]:
    from haiku.rag.store import schema

    return {name: store.table(name).count_rows() for name in schema.TABLES if store.has_table(name)}


class FailingAdd:
    """A table whose ``add`` fails like a full disk; everything else is the real table's."""

    def __init__(self, table):
        self._table = table

    def __getattr__(self, name):
        return getattr(self._table, name)

    def add(self, *args, **kwargs):
        raise OSError("disk full")
