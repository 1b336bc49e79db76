"""The LanceDB store: schema, atomic multi-table writes, crash recovery, reads.

``Store`` loads on first use: the record models (``Document``, ``Chunk``, ``SearchResult``)
are imported by code that must stay light, such as the app reading saved conversations before
its window appears, and the engine pulls in pyarrow and LanceDB.
"""

from typing import TYPE_CHECKING, Any

from haiku.rag.store.models import Chunk, Document, SearchResult

if TYPE_CHECKING:
    from haiku.rag.store.engine import Store

__all__ = ["Chunk", "Document", "SearchResult", "Store"]


def __getattr__(name: str) -> Any:
    if name == "Store":
        from haiku.rag.store.engine import Store

        return Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
