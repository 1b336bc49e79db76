"""``HaikuRAG``: the store-and-search facade the CLI, the capabilities and the desktop app use.

It answers nothing itself: questions go through ``haiku.rag.answering``, which sits above this
facade (and above the capabilities), never below it.

The class is what one client holds (``ClientBase``: the store, the config, the embedder and the
reranker) plus its methods, each written as a function in the module of its domain and listed
here by domain. Store and CPU work is synchronous underneath and runs in worker threads
(``asyncio.to_thread``) so an event loop (the app's GUI loop included) never blocks. Ingestion
has two speeds: a document is written, and searchable by full text, as soon as it is chunked;
its vectors follow and turn it into a hybrid-searchable document. An interrupted embedding
phase leaves a text-searchable document whose missing vectors ``embed_pending`` completes later.
"""

from __future__ import annotations

from haiku.rag.client import bibliography, collections, documents, ingestion, maintenance
from haiku.rag.client import search as searching  # the class's own ``search`` is the method
from haiku.rag.client.base import ClientBase


class HaikuRAG(ClientBase):
    """Async client over one store.

    ``db_path`` resolves as the spec says: the argument, then ``HAIKU_RAG_DB``, then
    ``<data_dir>/haiku.rag.lancedb``; ``lancedb.uri`` in the config, when set, wins
    (object storage or LanceDB Cloud).
    """

    async def __aenter__(self) -> HaikuRAG:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    # documents (client/documents.py)
    get_document = documents.get_document
    get_document_by_uri = documents.get_document_by_uri
    resolve_document = documents.resolve_document
    list_documents = documents.list_documents
    get_chunks = documents.get_chunks
    get_chunk = documents.get_chunk
    get_items = documents.get_items
    get_item = documents.get_item
    get_items_near = documents.get_items_near
    get_source_bytes = documents.get_source_bytes
    get_content = documents.get_content
    delete_document = documents.delete_document
    update_document = documents.update_document
    rename_document = documents.rename_document

    # bibliographic records (client/bibliography.py)
    update_bibliographic = bibliography.update_bibliographic
    bibliographic_record = bibliography.bibliographic_record

    # ingestion (client/ingestion.py; its sources and outcomes in client/sources.py)
    create_document = ingestion.create_document
    create_document_from_source = ingestion.create_document_from_source
    ingest_file = ingestion.ingest_file
    ingest_bytes = ingestion.ingest_bytes
    add_source = ingestion.add_source
    import_documents = ingestion.import_documents

    # vectors, index upkeep, rebuild, figures (client/maintenance.py)
    embed_pending = maintenance.embed_pending
    maintain_indexes = maintenance.maintain_indexes
    rebuild = maintenance.rebuild
    info = maintenance.info

    # search, context and visual grounding (client/search.py)
    search = searching.search
    search_sync = searching.search_sync
    expand_context = searching.expand_context
    visualize = searching.visualize
    visualize_chunk = searching.visualize_chunk

    # collections (client/collections.py)
    list_collections = collections.list_collections
    get_collection = collections.get_collection
    create_collection = collections.create_collection
    add_to_collection = collections.add_to_collection
    remove_from_collection = collections.remove_from_collection
    rename_collection = collections.rename_collection
    delete_collection = collections.delete_collection
    collection_document_ids = collections.collection_document_ids
    collections_of = collections.collections_of
