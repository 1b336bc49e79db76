"""The chat's scope: which documents a conversation searches.

A scope is kept per conversation (``ConversationRecord.scope``: None for the whole library,
``()`` for none ticked), and, with no conversation open, for the next new one. A scope chosen
as a collection keeps the collection's name and follows it: its documents as they are now (the
collections are listed again before a question), its rename, and its delete (the conversation
keeps searching the documents it held, shown as documents, never silently the whole library).

:class:`ChatScope` gets what it uses of the chat as callables (the current conversation, saving
one, every conversation of the library, the scope's announcement) and the collections as the
narrow :class:`~haiku_desk.services.ports.ScopeCollections`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from haiku_desk.services.conversations import ConversationRecord
    from haiku_desk.services.ports import ScopeCollections

__all__ = ["ChatScope"]

Scope = tuple[str, ...] | None


class ChatScope:
    """The scope of the current conversation (or of the next new one), and the collections'
    changes it follows."""

    def __init__(
        self,
        current: Callable[[], ConversationRecord | None],
        save: Callable[[ConversationRecord], None],
        records: Callable[[], Iterable[ConversationRecord]],
        changed: Callable[[Scope], object],
        error: Callable[[str], object],
    ) -> None:
        self._current = current
        self._save = save
        self._records = records  # every conversation of the library, the loaded ones as in memory
        self._changed = changed  # the scope now searched (the chat's scope_changed)
        self._error = error
        self._ids: list[str] | None = None  # of the next new conversation
        self._collection: str | None = None  # the collection it was chosen as, if any
        self.collections: ScopeCollections | None = None  # once attached

    def attach(self, collections: ScopeCollections) -> None:
        """Follow the library's collections: a conversation scoped to one searches its
        documents as they are now, and follows its rename; a deleted one leaves the scope as
        the documents it held (shown as such)."""
        self.collections = collections
        collections.collections_changed.connect(lambda _found: self._follow_collections())
        collections.collection_renamed.connect(self._collection_renamed)
        collections.collection_deleted.connect(self._collection_deleted)

    def ids(self) -> Scope:
        """The documents the chat searches, kept per conversation: None for the whole library,
        ``()`` when the user ticked none."""
        record = self._current()
        scope = record.scope if record is not None else self._ids
        return None if scope is None else tuple(scope)

    def collection(self) -> str | None:
        """The collection the scope was chosen as (its name), or None for documents ticked
        one by one (or the whole library)."""
        record = self._current()
        return record.scope_collection if record is not None else self._collection

    def set_documents(self, document_ids: Iterable[str] | None) -> None:
        """Search only ``document_ids`` (None: the whole library; empty: nothing)."""
        ids = None if document_ids is None else list(dict.fromkeys(document_ids))
        self._set(ids, None)

    def set_collection(self, name: str | None) -> None:
        """Search the documents of the collection ``name`` (None: back to the whole library),
        following its membership from now on."""
        if name is None:
            self._set(None, None)
            return
        collection = self.collections.find(name) if self.collections is not None else None
        if collection is None:
            self._error(f"There is no collection named {name!r} in this library")
            return
        self._set(list(collection.document_ids), collection.name)

    def _set(self, ids: list[str] | None, collection: str | None) -> None:
        self._ids, self._collection = ids, collection
        record = self._current()
        if record is not None and (record.scope, record.scope_collection) != (ids, collection):
            record.scope, record.scope_collection = ids, collection
            self._save(record)
        self._changed(self.ids())

    async def refresh(self) -> None:
        """A collection's documents as they are now (the CLI may add), before a question."""
        if self.collection() is not None and self.collections is not None:
            await self.collections.refresh()

    def sync(self, record: ConversationRecord | None) -> None:
        """``record``, scoped to a collection, searches the collection's documents as they
        are now (when it is opened or the collections were listed)."""
        if record is None or record.scope_collection is None or self.collections is None:
            return
        found = self.collections.find(record.scope_collection)
        if found is not None and record.scope != found.document_ids:
            record.scope = list(found.document_ids)
            self._save(record)

    def _follow_collections(self) -> None:
        """A collection's membership changed (or the list was read): scopes chosen as that
        collection search its documents as they are now."""
        if self.collections is None:
            return
        if self._collection is not None:
            found = self.collections.find(self._collection)
            if found is not None:
                self._ids = list(found.document_ids)
        self.sync(self._current())
        self._changed(self.ids())

    def _collection_renamed(self, old: str, new: str) -> None:
        self._retarget(old, new)

    def _collection_deleted(self, name: str) -> None:
        """The collection is gone: its conversations keep searching the documents it held,
        now shown as documents (the header says so), never silently the whole library."""
        self._retarget(name, None)

    def _retarget(self, old: str, new: str | None) -> None:
        """Conversations scoped to collection ``old`` follow it to ``new`` (None: gone)."""
        if self._collection == old:
            self._collection = new
        for record in self._records():
            if record.scope_collection == old:
                record.scope_collection = new
                self._save(record)
        self._changed(self.ids())
