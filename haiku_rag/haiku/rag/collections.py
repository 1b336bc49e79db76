"""Collections: named sets of documents inside a library (a project, a chapter, a reading list).

Why the ``settings`` table and not per-document metadata: a re-ingest rewrites a document's
metadata from the new parse, and membership must survive it; one row per collection
(key ``collection:<name>``) makes every change a single-row write. Each write is one
``merge_insert`` (a rename included) or one delete, so a reader in another process never sees a half-made
change, and it runs inside ``Store.write_transaction`` (serialised, rolled back on error).

Documents are referenced by id, which a re-ingest keeps (documents are replaced in place).
Ids of documents deleted since are dropped when a collection is read, so counts and scopes
only ever name live documents.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
from pydantic import BaseModel, Field

from haiku.rag.errors import DocumentNotFoundError, HaikuRAGError
from haiku.rag.store import schema as S
from haiku.rag.store.engine import Store, sql_quote

KEY_PREFIX = "collection:"
MAX_NAME_CHARS = 200


class CollectionError(HaikuRAGError):
    """A collection name is invalid or the operation does not fit the collection's state."""


class CollectionNotFoundError(CollectionError):
    """No collection with that name."""


class CollectionExistsError(CollectionError):
    """A collection with that name already exists."""


class Collection(BaseModel):
    name: str
    document_ids: list[str] = Field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""
    # where it came from, e.g. "zotero:ABCD1234" for an imported Zotero collection
    source: str | None = None

    @property
    def count(self) -> int:
        return len(self.document_ids)

    def to_dict(self) -> dict[str, Any]:
        return {**self.model_dump(mode="json"), "count": self.count}


def check_name(name: str) -> str:
    """The stripped name, or a ``CollectionError`` saying what is wrong with it."""
    if not isinstance(name, str):
        raise CollectionError(f"a collection name must be text, got {type(name).__name__}")
    cleaned = name.strip()
    if not cleaned:
        raise CollectionError("a collection name cannot be empty")
    if len(cleaned) > MAX_NAME_CHARS:
        raise CollectionError(f"a collection name has at most {MAX_NAME_CHARS} characters ({len(cleaned)} given)")
    if any(unicodedata.category(ch) == "Cc" for ch in cleaned):
        raise CollectionError(f"a collection name cannot contain control characters: {cleaned!r}")
    return cleaned


def _now() -> str:
    from haiku.rag.store.documents import now_iso

    return now_iso()


# --- reads -------------------------------------------------------------------------------


def _rows(store: Store, name: str | None = None) -> list[dict[str, Any]]:
    table = store.table(S.SETTINGS)
    where = f"key = {sql_quote(KEY_PREFIX + name)}" if name is not None else f"key LIKE '{KEY_PREFIX}%'"
    return table.search().where(where).limit(None).to_list()


def _parse(row: dict[str, Any], live: dict[str, str]) -> Collection:
    data = json.loads(row["value"])
    data["name"] = row["key"][len(KEY_PREFIX) :]
    data["document_ids"] = [i for i in data.get("document_ids", []) if i in live]
    return Collection(**data)


def list_collections(store: Store) -> list[Collection]:
    live = store.current_generations()
    return sorted((_parse(r, live) for r in _rows(store)), key=lambda c: (c.name.casefold(), c.name))


def find_collection(store: Store, name: str) -> Collection | None:
    rows = _rows(store, check_name(name))
    return _parse(rows[0], store.current_generations()) if rows else None


def get_collection(store: Store, name: str) -> Collection:
    found = find_collection(store, name)
    if found is None:
        known = ", ".join(c.name for c in list_collections(store)) or "none yet"
        raise CollectionNotFoundError(f"no collection named {name.strip()!r} (collections: {known})")
    return found


def collection_document_ids(store: Store, name: str) -> list[str]:
    """The ids of the live documents in collection ``name`` (raises if there is none)."""
    return get_collection(store, name).document_ids


def collections_of(store: Store, document_id: str) -> list[str]:
    return [c.name for c in list_collections(store) if document_id in c.document_ids]


# --- writes ------------------------------------------------------------------------------


def _write(store: Store, collection: Collection, *, replacing: str | None = None) -> None:
    """One commit: an insert for a new key, an in-place update for an existing one, and
    (a rename) the deletion of the ``replacing`` collection's row in the same commit."""
    value = collection.model_dump(mode="json", exclude={"name"})
    row = pa.Table.from_pylist(
        [{"key": KEY_PREFIX + collection.name, "value": json.dumps(value, sort_keys=True)}],
        schema=S.SETTINGS_SCHEMA,
    )
    merge = store.table(S.SETTINGS).merge_insert("key").when_matched_update_all().when_not_matched_insert_all()
    if replacing is not None:
        merge = merge.when_not_matched_by_source_delete(f"key = {sql_quote(KEY_PREFIX + replacing)}")
    merge.execute(row)


def _check_documents(store: Store, document_ids: Iterable[str]) -> list[str]:
    return existing_document_ids(store, document_ids, DocumentNotFoundError, "the collection")


def existing_document_ids(
    store: Store, document_ids: Iterable[str], error: type[Exception], changed: str
) -> list[str]:
    """``document_ids`` without repeats, in order; ``error`` naming the first few that are not
    in the library ("…; ``changed`` was not changed") if any is missing."""
    ids = list(dict.fromkeys(document_ids))
    live = store.current_generations()
    missing = [i for i in ids if i not in live]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise error(f"no document with id {shown}; {changed} was not changed")
    return ids


def create_collection(
    store: Store, name: str, document_ids: Iterable[str] = (), *, source: str | None = None
) -> Collection:
    name = check_name(name)
    with store.write_transaction():
        if _rows(store, name):
            raise CollectionExistsError(f"a collection named {name!r} already exists")
        ids = _check_documents(store, document_ids)
        now = _now()
        collection = Collection(name=name, document_ids=ids, created_at=now, updated_at=now, source=source)
        _write(store, collection)
    return collection


def add_to_collection(
    store: Store, name: str, document_ids: Iterable[str], *, create: bool = False, source: str | None = None
) -> Collection:
    """Add documents (already present ones are kept once); ``create`` makes the collection
    when it does not exist. Writes nothing when nothing changes."""
    name = check_name(name)
    with store.write_transaction():
        ids = _check_documents(store, document_ids)
        existing = find_collection(store, name)
        if existing is None:
            if not create:
                raise CollectionNotFoundError(f"no collection named {name!r}; create it first")
            now = _now()
            collection = Collection(name=name, document_ids=ids, created_at=now, updated_at=now, source=source)
            _write(store, collection)
            return collection
        merged = list(dict.fromkeys([*existing.document_ids, *ids]))
        if merged == existing.document_ids and _stored_ids(store, name) == merged:
            return existing
        existing.document_ids = merged
        existing.updated_at = _now()
        _write(store, existing)
        return existing


def set_collection_documents(
    store: Store, name: str, document_ids: Iterable[str], *, source: str | None = None
) -> tuple[Collection, bool]:
    """Make the collection hold exactly ``document_ids`` (created if missing). Returns the
    collection and whether anything was written (an import re-run writes nothing)."""
    name = check_name(name)
    with store.write_transaction():
        ids = _check_documents(store, document_ids)
        existing = find_collection(store, name)
        if existing is not None and existing.document_ids == ids and _stored_ids(store, name) == ids:
            return existing, False
        now = _now()
        collection = Collection(
            name=name,
            document_ids=ids,
            created_at=existing.created_at if existing else now,
            updated_at=now,
            source=source if source is not None else (existing.source if existing else None),
        )
        _write(store, collection)
        return collection, True


def _stored_ids(store: Store, name: str) -> list[str]:
    rows = _rows(store, name)
    return json.loads(rows[0]["value"]).get("document_ids", []) if rows else []


def remove_from_collection(store: Store, name: str, document_ids: Iterable[str]) -> Collection:
    name = check_name(name)
    drop = set(document_ids)
    with store.write_transaction():
        collection = get_collection(store, name)
        kept = [i for i in collection.document_ids if i not in drop]
        if kept != collection.document_ids or _stored_ids(store, name) != kept:
            collection.document_ids = kept
            collection.updated_at = _now()
            _write(store, collection)
    return collection


def rename_collection(store: Store, old: str, new: str) -> Collection:
    old, new = check_name(old), check_name(new)
    with store.write_transaction():
        collection = get_collection(store, old)
        if old == new:
            return collection
        if _rows(store, new):
            raise CollectionExistsError(f"a collection named {new!r} already exists")
        renamed = collection.model_copy(update={"name": new, "updated_at": _now()})
        _write(store, renamed, replacing=old)
    return renamed


def delete_collection(store: Store, name: str) -> Collection:
    """Delete the collection (its documents stay in the library)."""
    name = check_name(name)
    with store.write_transaction():
        collection = get_collection(store, name)
        store.table(S.SETTINGS).delete(f"key = {sql_quote(KEY_PREFIX + name)}")
    return collection
