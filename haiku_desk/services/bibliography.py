"""Bibliographic records for the views: how a source is cited, its BibTeX/CSL-JSON, and the
person's own edits of a document's details.

A citation carries no bibliographic metadata, so the records of cited documents are read from
the library once (``record`` answers from a cache at once and loads what it lacks; the views
re-render on ``records_changed``). Edits go to ``HaikuRAG.update_bibliographic``: one atomic
write of the document's row, nothing re-embedded; the library's checks name a bad field.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

if TYPE_CHECKING:
    from haiku.rag.bibliography import Bibliographic
    from haiku.rag.citations import Citation
    from haiku_desk.services.entries import LibraryEntry
    from haiku_desk.services.notifications import Notifications
    from haiku_desk.services.ports import BibliographyLibrary

log = logging.getLogger("haiku_desk.bibliography")

_UNKNOWN = object()  # not loaded yet (None: loaded, no record)


class BibliographyService(QObject):
    records_changed = Signal(list)  # document ids whose record (or title) was loaded or changed
    details_saved = Signal(str)  # document id, after an edit was stored

    def __init__(self, library: BibliographyLibrary, notifications: Notifications, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.library = library
        self.notifications = notifications
        self._records: dict[str, Any] = {}  # document id -> Bibliographic | None
        self._titles: dict[str, str] = {}  # document id -> the document's title as stored
        self._loading: set[str] = set()
        self._tasks: set[asyncio.Future[Any]] = set()
        library.entry_changed.connect(self._entry_changed)  # a re-ingest or a rename: read it again
        library.library_changed.connect(lambda _path: self._forget())

    # --- records ------------------------------------------------------------------------------

    def record(self, document_id: str) -> Bibliographic | None:
        """The document's record if loaded (None until then, or when it has none); loading
        starts here and ends with ``records_changed``."""
        found = self._records.get(document_id, _UNKNOWN)
        if found is _UNKNOWN:
            self.load([document_id])
            return None
        return found

    def title(self, document_id: str) -> str | None:
        """The document's title as stored now (a rename or an edit shows in old answers)."""
        return self._titles.get(document_id)

    def is_loaded(self, document_id: str) -> bool:
        return document_id in self._records

    def load(self, document_ids: Iterable[str]) -> asyncio.Future[Any] | None:
        wanted = [d for d in dict.fromkeys(document_ids) if d not in self._loading]
        if not wanted:
            return None
        self._loading.update(wanted)
        return self._keep(asyncio.ensure_future(self._load(wanted)))

    async def _load(self, document_ids: list[str]) -> None:
        from haiku.rag.bibliography import bibliographic
        from haiku.rag.errors import DocumentNotFoundError

        changed: list[str] = []
        try:
            client = await self.library.ensure_open()
            for document_id in document_ids:
                try:
                    document = await client.get_document(document_id)
                except DocumentNotFoundError:  # deleted since it was cited: its title stays
                    record, title = None, None
                else:
                    record, title = bibliographic(document.metadata), document.display_name
                if self._records.get(document_id, _UNKNOWN) != record or self._titles.get(document_id) != title:
                    changed.append(document_id)
                self._records[document_id] = record
                if title:
                    self._titles[document_id] = title
        except Exception:  # the library is closing or unreadable: citations keep their titles
            log.warning("reading bibliographic records failed", exc_info=True)
        finally:
            self._loading.difference_update(document_ids)
        if changed:
            self.records_changed.emit(changed)

    def _entry_changed(self, entry: LibraryEntry) -> None:
        document_id = entry.document_id
        if document_id is not None and document_id in self._records and not entry.busy:
            self.load([document_id])

    def _forget(self) -> None:
        self._records.clear()
        self._titles.clear()

    def _keep(self, future: asyncio.Future[Any]) -> asyncio.Future[Any]:
        self._tasks.add(future)
        future.add_done_callback(self._tasks.discard)
        return future

    # --- how a source is cited ----------------------------------------------------------------

    def label(self, citation: Citation) -> str:
        """"Sørensen et al., 2021, p. 4" for a document with authors, else its title."""
        from haiku_desk.citations import source_label

        return source_label(citation, self.record(citation.document_id), self.title(citation.document_id))

    def citation_text(self, citation: Citation) -> str:
        """What "Copy citation" copies: the quoted passage and its author–year–page citation."""
        from haiku_desk.citations import quoted_citation

        return quoted_citation(citation, self.record(citation.document_id), self.title(citation.document_id))

    def bibliography(self, citations: Iterable[Citation], format: str = "bibtex") -> asyncio.Future[str]:
        """The BibTeX (or ``"csl-json"``) of the documents ``citations`` cite, one entry each,
        from the library's export (Zotero keys kept)."""
        from haiku.rag.bibliography import bibliography_of_answer

        cited = list(citations)

        async def build() -> str:
            try:
                client = await self.library.ensure_open()
                return await bibliography_of_answer(client, cited, format)
            except Exception as exc:
                self.notifications.report_failure("Making the bibliography of the sources", exc)
                raise

        return self._keep(asyncio.ensure_future(build()))

    # --- editing ------------------------------------------------------------------------------

    @staticmethod
    def authors_text(record: Bibliographic | None) -> str:
        """The authors as the edit form shows them, one "Family, Given" per line."""
        from haiku.rag.bibliography import authors_text

        return authors_text(record)

    @staticmethod
    def edited(record: Bibliographic | None, **fields: str) -> Bibliographic:
        """``record`` with the form's fields (title, authors, year, venue, doi), checked by the
        library: a bad field raises an error :meth:`field_error` names."""
        from haiku.rag.bibliography import edited_record

        return edited_record(record, **fields)

    @staticmethod
    def field_error(exc: BaseException | None) -> tuple[str, str] | None:
        """(field, message) when ``exc`` is the library refusing a field the user typed."""
        from haiku.rag.bibliography import BibliographicError

        return (exc.field, str(exc)) if isinstance(exc, BibliographicError) else None

    def details(self, document_id: str) -> asyncio.Future[tuple[Any, str]]:
        """(record or None, title) of a stored document, for the edit dialog."""
        from haiku.rag.bibliography import bibliographic

        async def read() -> tuple[Any, str]:
            try:
                client = await self.library.ensure_open()
                document = await client.get_document(document_id)
            except Exception as exc:
                self.notifications.report_failure("Reading the document's details", exc)
                raise
            return bibliographic(document.metadata), document.display_name

        return self._keep(asyncio.ensure_future(read()))

    def save_details(self, document_id: str, record: Bibliographic, title: str | None) -> asyncio.Future[Any]:
        """Store ``record`` (checked by the library: a ``BibliographicError`` names a bad
        field and nothing is written) and the title; the library row and every citation of
        the document follow."""

        async def save() -> Any:
            from haiku.rag.bibliography import bibliographic

            client = await self.library.ensure_open()
            document = await client.update_bibliographic(document_id, record, title=title)
            self._records[document_id] = bibliographic(document.metadata)
            self._titles[document_id] = document.display_name
            await self.library.refresh()  # the row shows the title
            self.records_changed.emit([document_id])
            self.details_saved.emit(document_id)
            return document

        return self._keep(asyncio.ensure_future(save()))
