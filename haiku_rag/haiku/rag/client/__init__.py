"""The client: ``HaikuRAG``, a facade over one store, and what its ingestion takes and reports.

The package, by domain (each module a set of functions over ``base.ClientBase``, which
``HaikuRAG`` lists as its methods):

- ``base``         what one client holds (store, config, embedder, reranker) and how its work
                   runs off the event loop
- ``facade``       ``HaikuRAG`` itself
- ``documents``    reading and editing stored documents and chunks
- ``sources``      ``IngestSource`` (one source's bytes, name, URI, title, metadata, password),
                   ``ImportItem``, ``IngestOutcome``; reading a file into a source
- ``ingestion``    files, folders, bytes and text: parsed, written, then embedded
- ``bibliography`` a document's bibliographic record: edited, or read from a PDF at ingest
- ``maintenance``  missing vectors, index upkeep, rebuild with another embedder, info
- ``search``       search, context expansion, page rendering with boxes
- ``collections``  named sets of documents
"""

from haiku.rag.client.base import installed_embedders
from haiku.rag.client.facade import HaikuRAG
from haiku.rag.client.ingestion import COMPACT_AFTER_DOCUMENTS
from haiku.rag.client.maintenance import VECTOR_WRITE_BATCH
from haiku.rag.client.sources import ImportItem, IngestOutcome, IngestSource, IngestStatus

__all__ = [
    "COMPACT_AFTER_DOCUMENTS",
    "VECTOR_WRITE_BATCH",
    "HaikuRAG",
    "ImportItem",
    "IngestOutcome",
    "IngestSource",
    "IngestStatus",
    "installed_embedders",
]
