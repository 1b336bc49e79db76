"""Arrow schemas of the store's tables.

Why six tables rather than one wide one:
- ``documents`` holds the small, mutable per-document row (uri, title, metadata, state) so
  listings and filters never read blobs, and a title change never rewrites file bytes;
- ``document_blobs`` holds the write-once heavy data (original file bytes, DoclingDocument);
- ``chunk_vectors`` is separate from ``chunks`` so a document is searchable by full text the
  moment its chunks land (two-speed ingestion) and vectors are appended later without
  rewriting chunk rows; re-embedding with another model replaces only this table.

Every content row carries the ``generation`` of the document version it belongs to. The
``documents`` row names the current generation and is written last: it is the commit point.
Rows of any other generation are leftovers of an interrupted write and are ignored by reads
and removed by recovery.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 1

DOCUMENTS = "documents"
DOCUMENT_BLOBS = "document_blobs"
DOCUMENT_ITEMS = "document_items"
CHUNKS = "chunks"
CHUNK_VECTORS = "chunk_vectors"
SETTINGS = "settings"

# Restore order on rollback: the commit point last, so a half-restored store never shows a
# document whose content is gone.
TABLES = (SETTINGS, DOCUMENT_BLOBS, DOCUMENT_ITEMS, CHUNKS, CHUNK_VECTORS, DOCUMENTS)
CONTENT_TABLES = (DOCUMENT_BLOBS, DOCUMENT_ITEMS, CHUNKS, CHUNK_VECTORS)

DOCUMENTS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("uri", pa.string()),
        ("title", pa.string()),
        ("metadata", pa.string()),  # JSON object
        ("content_hash", pa.string()),  # sha256 of the source bytes
        ("mime_type", pa.string()),
        ("page_count", pa.int32()),
        ("size_bytes", pa.int64()),
        ("chunk_count", pa.int32()),
        ("index_state", pa.string()),  # "text" (full text only) | "hybrid" (vectors landed)
        ("generation", pa.string()),
        ("created_at", pa.string()),  # ISO 8601 UTC
        ("updated_at", pa.string()),
    ]
)

DOCUMENT_BLOBS_SCHEMA = pa.schema(
    [
        ("document_id", pa.string()),
        ("generation", pa.string()),
        ("content", pa.large_string()),  # Markdown export, for `get` and analysis
        ("source_bytes", pa.large_binary()),  # the original file, so pages render after it moves
        ("docling_json", pa.large_binary()),  # zlib-compressed DoclingDocument JSON
    ]
)

DOCUMENT_ITEMS_SCHEMA = pa.schema(
    [
        ("document_id", pa.string()),
        ("generation", pa.string()),
        ("position", pa.int32()),
        ("self_ref", pa.string()),
        ("label", pa.string()),
        ("text", pa.large_string()),
        ("page_numbers", pa.list_(pa.int32())),
        ("heading_level", pa.int32()),
        ("boxes", pa.string()),  # JSON list of Box dicts
    ]
)

CHUNKS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("document_id", pa.string()),
        ("generation", pa.string()),
        ("order", pa.int32()),
        ("content", pa.large_string()),
        ("content_fts", pa.large_string()),  # headings + content: what full text search sees
        ("headings", pa.list_(pa.string())),
        ("labels", pa.list_(pa.string())),
        ("doc_item_refs", pa.list_(pa.string())),
        ("page_numbers", pa.list_(pa.int32())),
        ("boxes", pa.string()),  # JSON list of Box dicts
    ]
)


def chunk_vectors_schema(vector_dim: int) -> pa.Schema:
    return pa.schema(
        [
            ("chunk_id", pa.string()),
            ("document_id", pa.string()),
            ("generation", pa.string()),
            ("vector", pa.list_(pa.float32(), vector_dim)),
        ]
    )


SETTINGS_SCHEMA = pa.schema([("key", pa.string()), ("value", pa.string())])
