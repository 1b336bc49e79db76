"""What the chat and the bibliography services need of the library service, as Protocols:
they are typed against these (not ``Any`` probed with ``getattr``), and
:class:`~haiku_desk.services.library.LibraryService` is the one implementation."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance

    from haiku.rag.client import HaikuRAG
    from haiku_desk.services.entries import LibraryEntry

__all__ = ["BibliographyLibrary", "ChatLibrary", "OpenLibrary"]


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
