"""What the chat and the bibliography services need of the library service, as Protocols:
they are typed against these (not ``Any`` probed with ``getattr``), and
:class:`~haiku_desk.services.library.LibraryService` is the one implementation. The chat's
parts get the models (:class:`~haiku_desk.services.models.ModelsService`) and the collections
(:class:`~haiku_desk.services.collections.CollectionsService`) the same way."""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pydantic_ai.models import Model
    from PySide6.QtCore import SignalInstance

    from haiku.rag.client import HaikuRAG
    from haiku.rag.collections import Collection
    from haiku.rag.config import ModelConfig
    from haiku_desk.services.entries import LibraryEntry

__all__ = ["AnswerModels", "BibliographyLibrary", "ChatLibrary", "OpenLibrary", "ScopeCollections"]


class OpenLibrary(Protocol):
    """A library whose client can be awaited, and which says when it becomes another."""

    async def ensure_open(self) -> HaikuRAG: ...

    @property
    def library_changed(self) -> SignalInstance: ...  # (db path) another library is open now


class ChatLibrary(OpenLibrary, Protocol):
    """The chat: where the conversations are kept, which documents there are (for the answer
    to a question with nothing to search), and when they are listed."""

    @property
    def app_folder(self) -> Path: ...

    @property
    def entries(self) -> list[LibraryEntry]: ...

    @property
    def opened(self) -> SignalInstance: ...  # the documents are listed


class BibliographyLibrary(OpenLibrary, Protocol):
    """The bibliography: a row that changed (its record is read again), and a refresh of the
    rows after an edit of a document's details."""

    @property
    def entry_changed(self) -> SignalInstance: ...  # (LibraryEntry)

    async def refresh(self) -> None: ...


class AnswerModels(Protocol):
    """The chat's questions: whether a model is connected and calls tools, the model that
    answers now and its settings."""

    def is_configured(self) -> bool: ...

    def supports_tools(self) -> bool: ...

    @property
    def uses_model_instance(self) -> bool: ...  # a model object was handed in (no settings)

    def create_model(self) -> Model | None: ...

    def model_config(self) -> ModelConfig: ...


class ScopeCollections(Protocol):
    """The chat's scope: a collection by name, listed again before a question, and its
    changes (membership, rename, delete)."""

    def find(self, name: str) -> Collection | None: ...

    def refresh(self) -> Awaitable[Any]: ...

    @property
    def collections_changed(self) -> SignalInstance: ...  # (list[Collection])

    @property
    def collection_renamed(self) -> SignalInstance: ...  # (old name, new name)

    @property
    def collection_deleted(self) -> SignalInstance: ...  # (name)
