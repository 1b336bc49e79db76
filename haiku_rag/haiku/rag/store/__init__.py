"""The LanceDB store: schema, atomic multi-table writes, crash recovery, reads."""

from haiku.rag.store.engine import Store
from haiku.rag.store.models import Chunk, Document, SearchResult

__all__ = ["Chunk", "Document", "SearchResult", "Store"]
