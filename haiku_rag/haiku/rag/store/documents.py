"""Document-level reads and writes over the store's tables."""

from __future__ import annotations

import json
import uuid
import zlib
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from haiku.rag.errors import DocumentNotFoundError, StoreError
from haiku.rag.ingest.records import Box, ChunkRecord, ItemRecord, NewDocument
from haiku.rag.store import schema as S
from haiku.rag.store.engine import Store, new_generation
from haiku.rag.store.models import Chunk, Document
from haiku.rag.store.sql import sql_in, sql_quote

# NewDocument (ingestion's output) is defined in ingest.records, with the records it holds.
_DOCUMENT_COLUMNS = [f.name for f in S.DOCUMENTS_SCHEMA]
# metadata keys of a renamed document: the user's title, and the one found in the file
USER_TITLE = "user_title"
INGEST_TITLE = "ingest_title"
MAX_TITLE_CHARS = 500


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def boxes_json(boxes: list[Box]) -> str:
    return json.dumps([b.to_dict() for b in boxes], separators=(",", ":"))


def boxes_from_json(text: str | None) -> list[Box]:
    return [Box.from_dict(d) for d in json.loads(text)] if text else []


def document_from_row(row: dict[str, Any]) -> Document:
    data = {k: row[k] for k in _DOCUMENT_COLUMNS if k in row}
    data["metadata"] = json.loads(data.get("metadata") or "{}")
    return Document(**data)


def chunk_from_row(row: dict[str, Any]) -> Chunk:
    return Chunk(
        id=row["id"],
        document_id=row["document_id"],
        order=row["order"],
        content=row["content"],
        headings=row["headings"] or [],
        labels=row["labels"] or [],
        doc_item_refs=row["doc_item_refs"] or [],
        page_numbers=row["page_numbers"] or [],
        boxes=boxes_from_json(row["boxes"]),
    )


# --- reads -------------------------------------------------------------------------------


def get_document(store: Store, document_id: str) -> Document:
    document = _first_document(store, f"id = {sql_quote(document_id)}")
    if document is None:
        raise DocumentNotFoundError(f"no document with id {document_id}")
    return document


def find_document_by_uri(store: Store, uri: str) -> Document | None:
    return _first_document(store, f"uri = {sql_quote(uri)}")


def find_same_content(store: Store, content_hash: str, other_than: str) -> Document | None:
    """Another document stored from the same bytes (a copy of a file under another path), or
    None."""
    return _first_document(store, f"content_hash = {sql_quote(content_hash)} AND id != {sql_quote(other_than)}")


def _first_document(store: Store, where: str) -> Document | None:
    rows = store.table(S.DOCUMENTS).search().where(where).select(_DOCUMENT_COLUMNS).limit(1).to_list()
    return document_from_row(rows[0]) if rows else None


def list_documents(
    store: Store,
    *,
    filter: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    document_ids: list[str] | None = None,
) -> list[Document]:
    """Documents by creation, those matching ``filter`` (SQL over document fields, from a
    command line or a host) and among ``document_ids`` (a scope: none when it is empty)."""
    if document_ids is None:
        wheres: list[str | None] = [filter or None]
    else:
        scope = [sql_in("id", group) for group in _groups(sorted(set(document_ids)), 500)]
        wheres = [f"({where}) AND ({filter})" if filter else where for where in scope]
    rows: list[dict[str, Any]] = []
    for where in wheres:
        query = store.table(S.DOCUMENTS).search().select(_DOCUMENT_COLUMNS)
        if where:
            query = query.where(where)
        try:
            rows += query.limit(None).to_list() if limit is None else query.limit(limit + offset).to_list()
        except (ValueError, RuntimeError) as exc:
            if not filter:
                raise
            raise StoreError(f"invalid filter {filter!r}: {_first_line(exc)}") from exc
    docs = sorted((document_from_row(r) for r in rows), key=lambda d: (d.created_at, d.uri))
    return docs[offset : None if limit is None else offset + limit]


def count_documents(store: Store) -> int:
    return store.table(S.DOCUMENTS).count_rows()


def document_ids_matching(store: Store, filter: str) -> list[str]:
    """Resolve a SQL filter over document columns to document ids (for pre-limit filtering)."""
    try:
        rows = store.table(S.DOCUMENTS).search().where(filter).select(["id"]).limit(None).to_arrow()
    except Exception as exc:  # lance reports bad SQL as a generic error
        raise StoreError(f"invalid filter {filter!r}: {_first_line(exc)}") from exc
    return rows["id"].to_pylist()


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def get_source_bytes(store: Store, document: Document) -> bytes:
    return _blob_value(store, document, "source_bytes")


def get_content(store: Store, document: Document) -> str:
    return _blob_value(store, document, "content")


def get_docling_json(store: Store, document: Document) -> str:
    return zlib.decompress(_blob_value(store, document, "docling_json")).decode("utf-8")


def _blob_value(store: Store, document: Document, column: str) -> Any:
    rows = (
        store.table(S.DOCUMENT_BLOBS)
        .search()
        .where(f"generation = {sql_quote(document.generation)}")
        .select([column])
        .limit(1)
        .to_list()
    )
    if not rows:
        raise StoreError(f"the stored data of document {document.id} is missing; run `haiku-rag doctor`")
    return rows[0][column]


def get_chunks(store: Store, document: Document) -> list[Chunk]:
    rows = (
        store.table(S.CHUNKS)
        .search()
        .where(f"generation = {sql_quote(document.generation)}")
        .limit(None)
        .to_list()
    )
    return sorted((chunk_from_row(r) for r in rows), key=lambda c: c.order)


def get_chunks_by_id(store: Store, chunk_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Raw chunk rows by id, current generations only."""
    if not chunk_ids:
        return {}
    rows = store.table(S.CHUNKS).search().where(sql_in("id", set(chunk_ids))).limit(None).to_list()
    live = store.current_generations()
    return {r["id"]: r for r in rows if live.get(r["document_id"]) == r["generation"]}


def get_items(
    store: Store, document: Document, *, start: int | None = None, stop: int | None = None
) -> list[ItemRecord]:
    where = f"generation = {sql_quote(document.generation)}"
    if start is not None:
        where += f" AND position >= {int(start)}"
    if stop is not None:
        where += f" AND position < {int(stop)}"
    rows = store.table(S.DOCUMENT_ITEMS).search().where(where).limit(None).to_list()
    items = [
        ItemRecord(
            position=r["position"],
            self_ref=r["self_ref"],
            label=r["label"],
            text=r["text"],
            page_numbers=r["page_numbers"] or [],
            heading_level=r["heading_level"],
            boxes=boxes_from_json(r["boxes"]),
        )
        for r in rows
    ]
    return sorted(items, key=lambda i: i.position)


def item_positions(store: Store, document: Document, refs: list[str]) -> dict[str, int]:
    if not refs:
        return {}
    where = f"generation = {sql_quote(document.generation)} AND {sql_in('self_ref', set(refs))}"
    rows = store.table(S.DOCUMENT_ITEMS).search().where(where).select(["self_ref", "position"]).limit(None).to_list()
    return {r["self_ref"]: r["position"] for r in rows}


# --- writes ------------------------------------------------------------------------------


def write_document(
    store: Store, new: NewDocument, *, replaces: Document | None = None, vectors: Any = None
) -> tuple[Document, list[str]]:
    """Create a document, or replace ``replaces`` in place (same id), atomically.

    With ``vectors`` (one row per chunk of ``new``, in order; the vectors table must exist)
    the chunks' vectors are written in the same transaction and the document is searchable
    by meaning from its commit: a document written one at a time then costs one version per
    table, instead of a text-only write followed by a vectors pass that reads it all back.

    Returns the stored document and its chunk ids in order. Content rows go first and the
    ``documents`` row last (the commit point); the old generation's rows are deleted after.
    """
    if replaces is None:
        return write_documents(store, [new], vectors=None if vectors is None else [vectors])[0]
    with store.write_transaction():
        # Read again under the write lock: a rename made while this version was parsed counts.
        replaces = _document_or(store, replaces)
        row, chunk_ids, content = _prepare_rows(new, replaces, embedded=vectors is not None)
        # content appends, and the documents row rewritten by its update: two fragments there
        store.note_append(rows=max(t.num_rows for t in content), fragments=2)
        _add_content(store, *content)
        if vectors is not None:
            _add_vectors_of(store, [(row, chunk_ids, vectors)])
        # One atomic update: a crash can never leave the URI with no document row.
        changes = {k: v for k, v in row.items() if k != "id"}
        store.table(S.DOCUMENTS).update(where=f"id = {sql_quote(replaces.id)}", values=changes)
        _delete_content(
            store, f"document_id = {sql_quote(replaces.id)} AND generation != {sql_quote(row['generation'])}"
        )
    return document_from_row(row), chunk_ids


def write_documents(
    store: Store, news: list[NewDocument], *, vectors: list[Any] | None = None
) -> list[tuple[Document, list[str]]]:
    """Create several new documents in one transaction (one append per table); with
    ``vectors`` (per document, one row per chunk) their vectors too (see ``write_document``)."""
    embedded = vectors is not None
    prepared = [_prepare_rows(new, None, embedded=embedded) for new in news]
    blobs, items, chunks = [], [], []
    for _, _, (b, i, c) in prepared:
        blobs.append(b)
        items.append(i)
        chunks.append(c)
    with store.write_transaction():
        store.note_append(rows=max(len(news), *(sum(t.num_rows for t in ts) for ts in (blobs, items, chunks))))
        _add_content(store, pa.concat_tables(blobs), pa.concat_tables(items), pa.concat_tables(chunks))
        if vectors is not None:
            _add_vectors_of(store, [(row, ids, v) for (row, ids, _), v in zip(prepared, vectors, strict=True)])
        store.table(S.DOCUMENTS).add(pa.Table.from_pylist([row for row, _, _ in prepared], schema=S.DOCUMENTS_SCHEMA))
    return [(document_from_row(row), chunk_ids) for row, chunk_ids, _ in prepared]


def _add_vectors_of(store: Store, documents: list[tuple[dict[str, Any], list[str], Any]]) -> None:
    """Append the vectors of documents being written: (documents row, chunk ids, vectors)."""
    import numpy as np

    dim = store.table(S.CHUNK_VECTORS).schema.field("vector").type.list_size
    chunk_ids: list[str] = []
    document_ids: list[str] = []
    generations: list[str] = []
    parts = []
    for row, ids, rows in documents:
        if not ids:
            continue
        rows = np.asarray(rows, dtype=np.float32)
        if rows.shape != (len(ids), dim):
            raise ValueError(f"{len(ids)} chunks need {len(ids)} vectors of {dim} values, got shape {rows.shape}")
        chunk_ids += ids
        document_ids += [row["id"]] * len(ids)
        generations += [row["generation"]] * len(ids)
        parts.append(rows)
    if chunk_ids:
        _append_vectors(store, chunk_ids, document_ids, generations, np.concatenate(parts))


def _append_vectors(
    store: Store, chunk_ids: list[str], document_ids: list[str], generations: list[str], vectors: Any
) -> None:
    """One append to the vectors table (rows in the order of ``chunk_ids``). Vectors of the
    wrong size, or with a NaN, an infinite value or a zero length, are refused: a search with
    them would rank nothing right while the document looked ``hybrid``."""
    import numpy as np

    table = store.table(S.CHUNK_VECTORS)
    dim = table.schema.field("vector").type.list_size
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape != (len(chunk_ids), dim):
        raise StoreError(f"refused to store vectors of shape {vectors.shape}: {len(chunk_ids)} × {dim} expected")
    bad = ~np.isfinite(vectors).all(axis=1) | ~(np.linalg.norm(vectors.astype(np.float64), axis=1) > 0)
    if bad.any():
        raise StoreError(
            f"refused to store {int(bad.sum())} of {len(vectors)} vectors: NaN, infinite or all-zero "
            "(the embedder is not producing embeddings); nothing was stored"
        )
    data = pa.table(
        {
            "chunk_id": pa.array(chunk_ids, pa.string()),
            "document_id": pa.array(document_ids, pa.string()),
            "generation": pa.array(generations, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.astype("float32").ravel(), pa.float32()), dim),
        },
        schema=table.schema,
    )
    table.add(data)


def _prepare_rows(
    new: NewDocument, replaces: Document | None, *, embedded: bool = False
) -> tuple[dict[str, Any], list[str], tuple[pa.Table, pa.Table, pa.Table]]:
    generation = new_generation()
    document_id = replaces.id if replaces else uuid.uuid4().hex
    timestamp = now_iso()
    chunk_ids = [uuid.uuid4().hex for _ in new.chunks]
    title, metadata = _keep_user_title(new, replaces)
    row = {
        "id": document_id,
        "uri": new.uri,
        "title": title,
        "metadata": json.dumps(metadata, sort_keys=True, default=str),
        "content_hash": new.content_hash,
        "mime_type": new.mime_type,
        "page_count": new.page_count,
        "size_bytes": len(new.source_bytes),
        "chunk_count": len(new.chunks),
        "index_state": "hybrid" if embedded else "text",
        "generation": generation,
        "created_at": replaces.created_at if replaces else timestamp,
        "updated_at": timestamp,
    }
    blob = pa.Table.from_pylist(
        [
            {
                "document_id": document_id,
                "generation": generation,
                "content": new.content,
                "source_bytes": new.source_bytes,
                "docling_json": zlib.compress(new.docling_json.encode("utf-8"), 6),
            }
        ],
        schema=S.DOCUMENT_BLOBS_SCHEMA,
    )
    content = (
        blob,
        _items_table(document_id, generation, new.items),
        _chunks_table(document_id, generation, new.chunks, chunk_ids),
    )
    return row, chunk_ids, content


def _add_content(store: Store, blobs: pa.Table, items: pa.Table, chunks: pa.Table) -> None:
    store.table(S.DOCUMENT_BLOBS).add(blobs)
    if items.num_rows:
        store.table(S.DOCUMENT_ITEMS).add(items)
    if chunks.num_rows:
        store.table(S.CHUNKS).add(chunks)


def _items_table(document_id: str, generation: str, items: list[ItemRecord]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "document_id": document_id,
                "generation": generation,
                "position": item.position,
                "self_ref": item.self_ref,
                "label": item.label,
                "text": item.text,
                "page_numbers": item.page_numbers,
                "heading_level": item.heading_level,
                "boxes": boxes_json(item.boxes),
            }
            for item in items
        ],
        schema=S.DOCUMENT_ITEMS_SCHEMA,
    )


def _chunks_table(document_id: str, generation: str, chunks: list[ChunkRecord], ids: list[str]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "id": chunk_id,
                "document_id": document_id,
                "generation": generation,
                "order": chunk.order,
                "content": chunk.text,
                "content_fts": chunk.embed_text,
                "headings": chunk.headings,
                "labels": chunk.labels,
                "doc_item_refs": chunk.doc_item_refs,
                "page_numbers": chunk.page_numbers,
                "boxes": boxes_json(chunk.boxes),
            }
            for chunk_id, chunk in zip(ids, chunks, strict=True)
        ],
        schema=S.CHUNKS_SCHEMA,
    )


def _delete_content(store: Store, where: str) -> None:
    for name in S.CONTENT_TABLES:
        if store.has_table(name):
            store.table(name).delete(where)


def delete_document(store: Store, document_id: str) -> Document:
    document = get_document(store, document_id)
    with store.write_transaction():
        store.table(S.DOCUMENTS).delete(f"id = {sql_quote(document_id)}")  # commit point first
        _delete_content(store, f"document_id = {sql_quote(document_id)}")
    return document


def _document_or(store: Store, document: Document) -> Document:
    try:
        return get_document(store, document.id)
    except DocumentNotFoundError:
        return document


def _keep_user_title(new: NewDocument, replaces: Document | None) -> tuple[str | None, dict[str, Any]]:
    """A new version of a document the user renamed keeps the user's title; the title found
    in the file is kept beside it (``ingest_title``), for going back to it."""
    user_title = replaces.metadata.get(USER_TITLE) if replaces is not None else None
    if not user_title:
        return new.title, new.metadata
    return user_title, {**new.metadata, USER_TITLE: user_title, INGEST_TITLE: new.title}


def rename_document(store: Store, document_id: str, title: str | None) -> Document:
    """Store the user's own title of a document (kept across re-ingests); None or blank goes
    back to the title found in the file."""
    title = _checked_title(title)
    with store.write_transaction():
        document = get_document(store, document_id)
        metadata = dict(document.metadata)
        if title is None:
            new_title = metadata.pop(INGEST_TITLE, None) or document.title
            metadata.pop(USER_TITLE, None)
        else:
            new_title = _give_user_title(metadata, document.title, title)
        _write_document_row(store, document_id, new_title, metadata)
    return get_document(store, document_id)


def update_metadata(
    store: Store, document_id: str, changes: dict[str, Any], *, title: str | None = None
) -> Document:
    """Merge ``changes`` into a document's metadata and, with ``title``, give it the user's
    title (as :func:`rename_document` does), read and written in one transaction: one table
    version of the documents row only, so chunks, vectors and the generation are untouched
    and nothing is re-embedded."""
    title = _checked_title(title)
    with store.write_transaction():
        document = get_document(store, document_id)
        metadata = {**document.metadata, **changes}
        new_title = document.title
        if title is not None and title != document.title:
            new_title = _give_user_title(metadata, document.title, title)
        _write_document_row(store, document_id, new_title, metadata)
    return get_document(store, document_id)


def _checked_title(title: str | None) -> str | None:
    """Whitespace collapsed; None when blank. Raises ValueError when too long."""
    title = " ".join((title or "").split()) or None
    if title is not None and len(title) > MAX_TITLE_CHARS:
        raise ValueError(f"a title has at most {MAX_TITLE_CHARS} characters (this one has {len(title)})")
    return title


def _give_user_title(metadata: dict[str, Any], current: str | None, title: str) -> str:
    """Record ``title`` as the user's in ``metadata``, keeping the file's own title beside it
    the first time (for going back to it)."""
    if USER_TITLE not in metadata:
        metadata[INGEST_TITLE] = current
    metadata[USER_TITLE] = title
    return title


def _write_document_row(store: Store, document_id: str, title: str | None, metadata: dict[str, Any]) -> None:
    values = {
        "title": title,
        "metadata": json.dumps(metadata, sort_keys=True, default=str),
        "updated_at": now_iso(),
    }
    store.table(S.DOCUMENTS).update(where=f"id = {sql_quote(document_id)}", values=values)


def update_document_meta(
    store: Store, document_id: str, *, title: str | None = None, metadata: dict[str, Any] | None = None
) -> Document:
    get_document(store, document_id)
    values: dict[str, Any] = {"updated_at": now_iso()}
    if title is not None:
        values["title"] = title
    if metadata is not None:
        values["metadata"] = json.dumps(metadata, sort_keys=True, default=str)
    with store.write_transaction():
        store.table(S.DOCUMENTS).update(where=f"id = {sql_quote(document_id)}", values=values)
    return get_document(store, document_id)


# --- vectors -----------------------------------------------------------------------------


def chunks_missing_vectors(
    store: Store, documents: list[Document], *, include_embedded: bool = False
) -> list[tuple[Document, str, str]]:
    """(owner, chunk id, text to embed) for every chunk of ``documents`` without a vector
    (with ``include_embedded``: every chunk, for a rebuild), in document then chunk order.
    A few queries in all, however many documents."""
    by_generation = {d.generation: d for d in documents}
    rows: list[dict[str, Any]] = []
    have: set[str] = set()
    for group in _groups(sorted(by_generation), 500):
        rows += (
            store.table(S.CHUNKS)
            .search()
            .where(sql_in("generation", group))
            .select(["id", "generation", "order", "content_fts"])
            .limit(None)
            .to_list()
        )
        if store.has_table(S.CHUNK_VECTORS) and not include_embedded:
            found = store.table(S.CHUNK_VECTORS).search().where(sql_in("generation", group)).select(["chunk_id"]).limit(None)
            have.update(found.to_arrow()["chunk_id"].to_pylist())
    rank = {d.generation: i for i, d in enumerate(documents)}
    pending = sorted((r for r in rows if r["id"] not in have), key=lambda r: (rank[r["generation"]], r["order"]))
    return [(by_generation[r["generation"]], r["id"], r["content_fts"]) for r in pending]


def _groups(values: list[str], size: int) -> list[list[str]]:
    return [values[i : i + size] for i in range(0, len(values), size)]


def get_documents(store: Store, document_ids: list[str]) -> list[Document]:
    """Current rows of these documents (missing ones are skipped), in the given order."""
    found: dict[str, Document] = {}
    for group in _groups(document_ids, 500):
        for row in store.table(S.DOCUMENTS).search().where(sql_in("id", group)).select(_DOCUMENT_COLUMNS).limit(None).to_list():
            found[row["id"]] = document_from_row(row)
    return [found[i] for i in document_ids if i in found]


def add_vectors(store: Store, owners: list[Document], chunk_ids: list[str], vectors: Any) -> None:
    """Append vectors; ``owners[i]`` is the document of ``chunk_ids[i]`` (one write for all)."""
    with store.write_transaction():
        _append_vectors(store, chunk_ids, [d.id for d in owners], [d.generation for d in owners], vectors)


def mark_hybrid(store: Store, documents: list[Document]) -> None:
    """Flag documents whose vectors have all landed (only if still at that generation)."""
    if not documents:
        return
    with store.write_transaction():
        for group in _groups(sorted({d.generation for d in documents}), 500):
            store.table(S.DOCUMENTS).update(where=sql_in("generation", group), values={"index_state": "hybrid"})
