"""Evidence tables: one question asked of many documents, every cell cited to its page.

:class:`ExtractionService` is what the evidence table view uses (methods and signals) over
haiku.rag's extraction package (``haiku.rag.extraction``: tables, cells and their store, the
fill, the export). The library keeps the tables in the library itself, a cell written as soon
as it is answered; the app keeps only which table was open and which fill was running at quit
(``<library>/haiku-desk/evidence.json``), so a relaunch shows the same table and continues its
fill where it stopped.

Filling is a :class:`Fill` (an :class:`~haiku_desk.bridge.Operation`): progress is cells done /
total, Stop cancels it (the cells done so far are kept), each filled cell is a partial result
(``cell_filled``), and a failure goes to the one error sink. Cells are answered the way the
chat answers: with the chat's model (:class:`~haiku_desk.services.ports.AnswerModels`), with
tools when it calls them, from retrieved passages when it cannot, and search-only (the best
passage) when no model is connected. Changes to a table (columns, rows, a hand-edited value)
are written one after another, in the order they were made; a change of what a table asks
stops its fill first and continues it after.

The views get plain values (:class:`TableState`, :class:`ColumnSpec`, :class:`CellValue`),
never the library's types; a cell's citations are the library's ``Citation`` objects, which the
citation panel shows.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from PySide6.QtCore import QObject, Signal

from haiku_desk.bridge import Operation, OperationBody
from haiku_desk.services.app_folder import read_json, write_json
from haiku_desk.services.notifications import EXPORTED_KEY, Notifications
from haiku_desk.services.ports import AnswerModels

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance

    from haiku.rag.client import HaikuRAG
    from haiku.rag.collections import Collection
    from haiku_desk.services.entries import LibraryEntry

__all__ = ["COLUMN_TYPES", "EXPORT_FORMATS", "CellValue", "ColumnSpec", "ExtractionService", "Fill"]
__all__ += ["TableState", "TableSummary", "answer_mode"]

log = logging.getLogger("haiku_desk")

# how haiku.rag.extraction's reason starts when a document never names a column's words (and
# how it started in the first build that said so)
NOT_NAMED_PREFIX = ("the document's text ", "this document ")
STATE_FILE_NAME = "evidence.json"  # in the library's app folder: the open table, fills to resume
COLUMN_TYPES = ("text", "number", "yes-no", "category")
# format -> (menu label, file suffix)
EXPORT_FORMATS: dict[str, tuple[str, str]] = {
    "csv": ("CSV", ".csv"),
    "xlsx": ("Excel workbook (XLSX)", ".xlsx"),
    "markdown": ("Markdown", ".md"),
    "bibtex": ("BibTeX of the rows", ".bib"),
}

T = TypeVar("T")


class ExtractionLibrary(Protocol):
    """What the evidence tables need of the library service."""

    async def ensure_open(self) -> HaikuRAG: ...

    @property
    def app_folder(self) -> Path: ...

    @property
    def entries(self) -> list[LibraryEntry]: ...

    def entry_for_document(self, document_id: str) -> LibraryEntry | None: ...

    @property
    def opened(self) -> SignalInstance: ...

    @property
    def library_changed(self) -> SignalInstance: ...

    @property
    def entry_removed(self) -> SignalInstance: ...  # (entry key) a document left the library


class TableModels(AnswerModels, Protocol):
    """The chat's model (the cells are answered with it), and when it changes."""

    @property
    def model_changed(self) -> SignalInstance: ...  # (ModelConfig | None)


class TableCollections(Protocol):
    """The library's collections, where a table's rows can come from."""

    @property
    def collections(self) -> list[Collection]: ...

    def find(self, name: str) -> Collection | None: ...


# --- the values the views see ---------------------------------------------------------------


@dataclass(frozen=True)
class ColumnSpec:
    """A column: its header, the question asked of each document, and the kind of answer."""

    id: str
    name: str
    question: str = ""
    type: str = "text"  # COLUMN_TYPES
    unit: str | None = None
    categories: tuple[str, ...] = ()

    @property
    def asked(self) -> str:
        """The question as the user wrote it (the name when none was written)."""
        return self.question or self.name

    def describe_type(self) -> str:
        if self.type == "number":
            return f"number ({self.unit})" if self.unit else "number"
        if self.type == "category":
            return "one of: " + ", ".join(self.categories)
        return self.type


@dataclass(frozen=True)
class CellValue:
    """One filled cell: its value, the quote and citations it rests on, and its status
    (``grounded``, ``not_found``, ``low_confidence`` or ``edited``)."""

    document_id: str
    column_id: str
    value: str
    status: str
    mode: str  # tools | fallback | search-only | record (the bibliographic record): how it was filled
    quote: str = ""
    answer: str = ""
    reasons: tuple[str, ...] = ()
    citations: tuple[Any, ...] = ()  # haiku.rag Citation, each of this row's document
    pages: tuple[int, ...] = ()
    edited_from: str | None = None
    first_page: str = ""  # the page it names first as printed ("p. 22"), "" without pages

    @property
    def key(self) -> tuple[str, str]:
        return (self.document_id, self.column_id)

    @property
    def search_only(self) -> bool:
        return self.mode == "search-only"

    @property
    def from_record(self) -> bool:
        """Its value is the row's bibliographic record's (a year, authors, title, venue, DOI)."""
        return self.mode == "record"

    @property
    def not_named(self) -> bool:
        """Not found because the document never names the column's words (absent), as opposed
        to named but in no sentence that can be the value (not matched)."""
        return self.status == "not_found" and any(r.startswith(NOT_NAMED_PREFIX) for r in self.reasons)


@dataclass
class TableState:
    """The open table: its columns, its rows (document ids, in order) and the cells filled."""

    id: str
    name: str
    columns: list[ColumnSpec]
    rows: list[str]
    collection: str | None = None
    cells: dict[tuple[str, str], CellValue] = field(default_factory=dict)
    # rows whose document was removed from the library: document id -> the title it had. Shown
    # after the rows, marked so, with their cells; never filled again, not counted.
    removed: dict[str, str] = field(default_factory=dict)

    def cell(self, document_id: str, column_id: str) -> CellValue | None:
        return self.cells.get((document_id, column_id))

    def column(self, column_id: str) -> ColumnSpec | None:
        return next((c for c in self.columns if c.id == column_id), None)

    @property
    def total(self) -> int:
        return len(self.rows) * len(self.columns)

    @property
    def filled(self) -> int:
        rows, columns = set(self.rows), {c.id for c in self.columns}
        return sum(1 for (d, c) in self.cells if d in rows and c in columns)


@dataclass(frozen=True)
class TableSummary:
    id: str
    name: str
    rows: int
    columns: int
    document_ids: tuple[str, ...] = ()  # its rows' documents


def _column(column: Any) -> ColumnSpec:
    return ColumnSpec(
        id=column.id,
        name=column.name,
        question=column.question or "",
        type=column.type,
        unit=column.unit,
        categories=tuple(column.categories or ()),
    )


def _cell(cell: Any) -> CellValue:
    return CellValue(
        document_id=cell.document_id,
        column_id=cell.column_id,
        value=cell.value,
        status=cell.status,
        mode=cell.mode,
        quote=cell.quote or "",
        answer=cell.answer or "",
        reasons=tuple(cell.reasons or ()),
        citations=tuple(cell.citations or ()),
        pages=tuple(cell.pages),
        edited_from=cell.edited_from,
        first_page=cell.first_page,
    )


def _table(table: Any) -> TableState:
    state = TableState(
        id=table.id,
        name=table.name,
        columns=[_column(c) for c in table.columns],
        rows=list(table.document_ids),
        collection=table.collection,
        removed={i: table.removed_title(i) for i in getattr(table, "removed_document_ids", [])},
    )
    for cell in (table.cells or {}).values():
        value = _cell(cell)
        state.cells[value.key] = value
    return state


def _summary(table: Any) -> TableSummary:
    return TableSummary(
        table.id, table.name, len(table.document_ids), len(table.columns), tuple(table.document_ids)
    )


def answer_mode(models: AnswerModels) -> str:
    """How the cells are answered now, as the chat would answer: ``tools``, ``fallback`` (a
    model that cannot call tools) or ``search-only`` (no model connected)."""
    if not models.is_configured():
        return "search-only"
    return "tools" if models.supports_tools() else "fallback"


class Fill(Operation):
    """Filling a table's cells: progress is cells done / total of the cells it was asked for
    (the whole table for Fill and a resumed fill), those already filled counted as done, so a
    fill continued after a quit shows "8 / 40 cells", not "1 / 33"; every cell answered is a
    partial result, kept (written) at once."""

    cell_started = Signal(object)  # (document id, column id) of the cell being answered
    cell_filled = Signal(object)  # CellValue

    def __init__(self, table_id: str, mode: str, body: OperationBody, parent: QObject | None = None) -> None:
        super().__init__("Filling the evidence table", body, parent)
        self.table_id = table_id
        self.mode = mode
        self.done = 0  # cells of its selection filled, those filled before it started included
        self.total = 0  # cells of its selection (0 until it has counted them)
        self.halted = False  # stopped by quitting or another library: continues at the next start


FILL_FAILED_KEY = "evidence-fill-failed"  # the notice of a fill that stopped on an error


class ExtractionService(QObject):
    """The library's evidence tables, the open one, and its fill. Views call methods and
    listen to signals."""

    tables_changed = Signal(list)  # list[TableSummary], by name
    table_changed = Signal(object)  # TableState of the open table (whole), or None
    cell_changed = Signal(object)  # CellValue of the open table: filled, edited
    fill_started = Signal(object)  # Fill
    fill_progressed = Signal(int, int)  # cells filled, cells selected (the table's, for Fill)
    mode_changed = Signal(str)  # how the next cells are answered (answer_mode), after a model change
    busy_changed = Signal(bool)
    listed_changed = Signal(bool)  # the library's tables are listed (False while it opens)

    def __init__(
        self,
        library: ExtractionLibrary,
        models: TableModels,
        notifications: Notifications,
        parent: QObject | None = None,
        *,
        collections: TableCollections | None = None,
    ) -> None:
        super().__init__(parent)
        self.library = library
        self.collections = collections
        self.models = models
        self.notifications = notifications
        self.tables: list[TableSummary] = []
        self.current: TableState | None = None
        self._fill: Fill | None = None  # the last fill started
        self._active: Fill | None = None  # the fill running (None from its ``ended`` on)
        self._writes: asyncio.Future[Any] | None = None  # the last write: the next waits for it
        self._opening: asyncio.Future[Any] | None = None  # the start's listing and resume
        self._reloading: asyncio.Future[Any] | None = None  # the open table read again
        # False until the start has listed the library's tables (and opened the last one): a
        # view says "Loading…" meanwhile, never "No table yet"
        self.listed = False
        library.opened.connect(self._library_opened)
        models.model_changed.connect(lambda _config: self.mode_changed.emit(self.answer_mode()))
        library.library_changed.connect(self._library_changed)
        library.entry_removed.connect(self._document_removed)

    # --- what the app keeps (evidence.json) ---------------------------------------------------

    def _state_path(self) -> Path:
        return Path(self.library.app_folder) / STATE_FILE_NAME

    def _read_state(self) -> dict[str, Any]:
        try:
            data = read_json(self._state_path())
        except (OSError, ValueError) as exc:
            log.warning("Ignoring unreadable %s: %s", self._state_path(), exc)
            return {}
        return data if isinstance(data, dict) else {}

    def _write_state(self, **changes: Any) -> None:
        state = self._read_state()
        state.update(changes)
        try:
            write_json(self._state_path(), state)
        except OSError as exc:
            self.notifications.report_failure("Saving which evidence table is open", exc)

    def _mark_filling(self, table_id: str, filling: bool) -> None:
        ids = [i for i in self._read_state().get("filling", []) if isinstance(i, str) and i != table_id]
        if filling:
            ids.append(table_id)
        self._write_state(filling=ids)

    def filling_to_resume(self) -> list[str]:
        """Tables whose fill was running when the app last quit (continued on open)."""
        return [i for i in self._read_state().get("filling", []) if isinstance(i, str)]

    # --- the library's life -------------------------------------------------------------------

    def _library_opened(self) -> None:
        self._opening = asyncio.ensure_future(self._start())

    async def _start(self) -> None:
        """List the tables, open the one open at quit, continue its fill if one was running."""
        try:
            await self.refresh()
            state = self._read_state()
            current = state.get("current")
            if not isinstance(current, str) or not any(t.id == current for t in self.tables):
                return
            table = await self.open_table(current)
            if table is not None and current in self.filling_to_resume():
                self.fill()
        finally:
            self._set_listed(True)

    def _set_listed(self, listed: bool) -> None:
        if self.listed != listed:
            self.listed = listed
            self.listed_changed.emit(listed)

    async def wait_started(self) -> None:
        """Until the start's listing (and the open table, and its resumed fill) are there."""
        if self._opening is not None:
            await asyncio.wait({self._opening})

    def _library_changed(self, _db_path: str) -> None:
        self.halt()
        self._set_listed(False)
        self.tables = []
        self.current = None
        self.tables_changed.emit([])
        self.table_changed.emit(None)

    def halt(self) -> None:
        """Stop the running fill because the app quits (or the library changes): the cells
        done are kept and the fill continues at the next start."""
        fill = self._fill
        if fill is not None and fill.running:
            fill.halted = True
            fill.cancel()

    # --- reads --------------------------------------------------------------------------------

    async def _client(self) -> HaikuRAG:
        return await self.library.ensure_open()

    async def refresh(self) -> list[TableSummary]:
        """List the library's tables again."""
        from haiku.rag.extraction import list_tables

        try:
            found = await list_tables(await self._client())
        except Exception as exc:
            log.exception("listing the evidence tables failed")
            self.notifications.report_failure("Listing the evidence tables", exc)
            return self.tables
        self.tables = [_summary(t) for t in found]
        self.tables_changed.emit(list(self.tables))
        return self.tables

    def tables_with_rows(self, document_ids: Iterable[str]) -> list[str] | None:
        """The names of the tables with a row for any of ``document_ids`` (by name): deleting
        them takes those rows and their filled cells. None until the tables are listed."""
        if not self.listed:
            return None
        wanted = set(document_ids)
        return [t.name for t in self.tables if wanted.intersection(t.document_ids)]

    async def open_table(self, table_id: str) -> TableState | None:
        """Open a table (with its cells): it becomes the one shown, and is reopened at the next
        start. A fill of another table is stopped first."""
        from haiku.rag.extraction import load_table

        if self._fill is not None and self._fill.running and self._fill.table_id != table_id:
            await self._stop_and_wait()
        try:
            table = await load_table(await self._client(), table_id)
        except Exception as exc:
            self._refused("Opening the evidence table", exc)
            return None
        self._show(table)
        self._write_state(current=table.id)
        return self.current

    def _show(self, table: Any) -> None:
        self.current = _table(table)
        self.table_changed.emit(self.current)

    def _document_removed(self, _key: str) -> None:
        """A document left the library: the open table is read again (the library drops the
        rows of deleted documents); a burst of deletes reads it once."""
        if self.current is not None and self._reloading is None:
            self._reloading = asyncio.ensure_future(self._reload_current())

    async def _reload_current(self) -> None:
        from haiku.rag.extraction import load_table

        try:
            await asyncio.sleep(0)  # the other removals of the same burst first
            table = self.current
            if table is None:
                return
            loaded = await load_table(await self._client(), table.id)
            if self.current is not None and self.current.id == loaded.id:
                self._show(loaded)
                await self.refresh()  # its row count in the list
        except Exception as exc:
            self._refused("Reading the evidence table again", exc)
        finally:
            self._reloading = None

    async def wait_reloaded(self) -> None:
        """Until the open table has been read again after a document left (tests)."""
        while self._reloading is not None and not self._reloading.done():
            await asyncio.wait({self._reloading})

    def document_title(self, document_id: str) -> str:
        entry = self.library.entry_for_document(document_id)
        return entry.name if entry is not None else document_id

    def searchable_documents(self) -> list[str]:
        """Every document a table could have as a row (the library's searchable documents)."""
        return [e.document_id for e in self.library.entries if e.document_id and e.searchable]

    def collection_choices(self) -> list[tuple[str, int]]:
        """The library's collections a table's rows can come from: (name, documents)."""
        if self.collections is None:
            return []
        return [(c.name, c.count) for c in self.collections.collections]

    def collection_documents(self, name: str) -> list[str] | None:
        """The documents of the collection ``name`` as last listed (None: no such collection)."""
        found = self.collections.find(name) if self.collections is not None else None
        return list(found.document_ids) if found is not None else None

    def answer_mode(self) -> str:
        return answer_mode(self.models)

    # --- writes, one after another --------------------------------------------------------------

    def _refused(self, what: str, exc: BaseException) -> None:
        from haiku.rag.errors import HaikuRAGError

        if isinstance(exc, HaikuRAGError):  # refused (bad name, unknown column): say why
            self.notifications.error(f"{what}: {exc}", type(exc).__name__)
        else:
            log.exception("%s failed", what, exc_info=exc)
            self.notifications.report_failure(what, exc)

    def _write(self, what: str, work: Callable[[HaikuRAG], Awaitable[T]]) -> asyncio.Future[T | None]:
        """Run ``work`` after the writes asked before it; a refusal or a failure is said once
        (the future then gives None)."""
        previous = self._writes

        async def run() -> T | None:
            if previous is not None and not previous.done():
                await asyncio.wait({previous})
            try:
                return await work(await self._client())
            except Exception as exc:
                self._refused(what, exc)
                return None

        future = asyncio.ensure_future(run())
        self._writes = future
        return future

    async def wait_writes(self) -> None:
        """Until every write asked so far is done (tests, and before a fill)."""
        while self._writes is not None and not self._writes.done():
            await asyncio.wait({self._writes})

    def create_table(
        self,
        name: str,
        columns: Sequence[ColumnSpec | dict[str, Any]],
        *,
        document_ids: Sequence[str] | None = None,
        collection: str | None = None,
        fill: bool = True,
    ) -> asyncio.Future[TableState | None]:
        """A new table over ``document_ids`` or the documents of ``collection``; it opens at once
        and (``fill``) its cells start filling."""
        from haiku.rag.extraction import create_table

        specs = [_column_dict(c) for c in columns]

        async def work(client: HaikuRAG) -> TableState | None:
            table = await create_table(
                client,
                name,
                specs,
                document_ids=list(document_ids) if document_ids is not None else None,
                collection=collection,
            )
            await self.refresh()
            opened = await self.open_table(table.id)
            if opened is not None and fill:
                self.fill()
            return opened

        return self._write(f"Creating the evidence table {name.strip()!r}", work)

    def rename_table(self, table_id: str, name: str) -> asyncio.Future[Any]:
        from haiku.rag.extraction import rename_table

        async def work(client: HaikuRAG) -> Any:
            table = await rename_table(client, table_id, name)
            await self.refresh()
            if self.current is not None and self.current.id == table.id:
                self.current.name = table.name
                self.table_changed.emit(self.current)
            return table

        return self._write(f"Renaming the evidence table to {name.strip()!r}", work)

    def delete_table(self, table_id: str) -> asyncio.Future[Any]:
        from haiku.rag.extraction import delete_table

        async def work(client: HaikuRAG) -> Any:
            if self._fill is not None and self._fill.table_id == table_id:
                await self._stop_and_wait()
            table = await delete_table(client, table_id)
            self._mark_filling(table_id, False)
            if self.current is not None and self.current.id == table_id:
                self.current = None
                self._write_state(current=None)
                self.table_changed.emit(None)
            await self.refresh()
            return table

        return self._write("Deleting the evidence table", work)

    def _restructure(self, what: str, change: Callable[[HaikuRAG, str], Awaitable[Any]], *, refill: bool = True) -> asyncio.Future[Any]:
        """Change what the open table asks (its columns or rows): a running fill is stopped
        first; the table is read again and its missing cells fill (``refill``)."""
        from haiku.rag.extraction import load_table

        table = self.current
        if table is None:
            self.notifications.info("Open or create an evidence table first")
            future: asyncio.Future[Any] = asyncio.get_event_loop().create_future()
            future.set_result(None)
            return future
        table_id = table.id

        async def work(client: HaikuRAG) -> Any:
            was_filling = self._fill is not None and self._fill.running
            if was_filling:
                await self._stop_and_wait()
            try:
                result = await change(client, table_id)
            finally:
                if self.current is not None and self.current.id == table_id:
                    self._show(await load_table(client, table_id))
                    await self.refresh()
            if (refill or was_filling) and self.current is not None and self.current.id == table_id:
                self.fill()
            return result

        return self._write(what, work)

    def add_column(self, column: ColumnSpec | dict[str, Any]) -> asyncio.Future[Any]:
        """A new column; its cells fill at once."""
        from haiku.rag.extraction import add_column

        spec = _column_dict(column)
        return self._restructure(
            f"Adding the column {spec.get('name', '')!r}", lambda client, t: add_column(client, t, spec)
        )

    def update_column(self, column_id: str, **changes: Any) -> asyncio.Future[Any]:
        """Change a column's name, question or type; a changed question fills its cells again."""
        from haiku.rag.extraction import update_column

        if "categories" in changes and changes["categories"] is not None:
            changes["categories"] = list(changes["categories"])
        return self._restructure(
            "Changing the column", lambda client, t: update_column(client, t, column_id, **changes)
        )

    def remove_column(self, column_id: str) -> asyncio.Future[Any]:
        from haiku.rag.extraction import remove_column

        return self._restructure(
            "Removing the column", lambda client, t: remove_column(client, t, column_id), refill=False
        )

    def set_rows(self, document_ids: Sequence[str]) -> asyncio.Future[Any]:
        """The table's rows become ``document_ids`` (cells of rows removed go, new rows fill)."""
        from haiku.rag.extraction import set_rows

        ids = list(document_ids)
        return self._restructure("Changing the table's documents", lambda client, t: set_rows(client, t, ids))

    def set_value(self, document_id: str, column_id: str, value: str) -> asyncio.Future[Any]:
        """A value written by hand: kept, marked edited (its citations stay)."""
        from haiku.rag.extraction import set_value

        table = self.current
        if table is None:
            return self._write("Editing a value", _nothing)
        table_id = table.id

        async def work(client: HaikuRAG) -> CellValue | None:
            cell = _cell(await set_value(client, table_id, document_id, column_id, value))
            self._cell_arrived(table_id, cell)
            return cell

        return self._write("Saving the edited value", work)

    def _cell_arrived(self, table_id: str, cell: CellValue) -> None:
        if self.current is not None and self.current.id == table_id:
            self.current.cells[cell.key] = cell
            self.cell_changed.emit(cell)

    # --- filling ------------------------------------------------------------------------------

    @property
    def filling(self) -> Fill | None:
        """The running fill, if any (none once it has ended, when ``busy_changed`` says so)."""
        return self._active

    @property
    def busy(self) -> bool:
        return self._active is not None

    def fill(
        self,
        *,
        rows: Iterable[str] | None = None,
        columns: Iterable[str] | None = None,
        recompute: bool = False,
    ) -> Fill | None:
        """Fill the open table's missing cells (of ``rows`` × ``columns``, default all), or answer
        them again (``recompute``: a hand-edited value is kept). Returns the running fill."""
        table = self.current
        if table is None:
            self.notifications.info("Open or create an evidence table first")
            return None
        if self.busy:
            self.notifications.info("The table is filling; stop it first, or wait")
            return None
        mode = self.answer_mode()
        table_id = table.id
        row_ids = list(rows) if rows is not None else None
        column_ids = list(columns) if columns is not None else None

        async def body(token: Any, report: Callable[[Any], None]) -> int:
            return await self._run_fill(operation, token, report, row_ids, column_ids, recompute)

        operation = Fill(table_id, mode, body, self)
        operation.progressed.connect(lambda p: self.fill_progressed.emit(p.done, p.total))
        operation.cell_filled.connect(lambda cell: self._cell_arrived(table_id, cell))
        operation.succeeded.connect(lambda _n: self._fill_succeeded(table_id))
        operation.cancelled.connect(lambda: None if operation.halted else self._mark_filling(table_id, False))
        operation.failed.connect(lambda exc: self._fill_failed(table_id, exc))
        operation.ended.connect(lambda: self._fill_ended(operation))
        self._fill = self._active = operation
        self._mark_filling(table_id, True)
        operation.start()
        self.fill_started.emit(operation)
        self.busy_changed.emit(True)
        return operation

    async def _run_fill(
        self,
        operation: Fill,
        token: Any,
        report: Callable[[Any], None],
        rows: list[str] | None,
        columns: list[str] | None,
        recompute: bool,
    ) -> int:
        from haiku.rag.extraction import CellFilled, CellStarted, FillStarted, fill
        from haiku.rag.operations import Progress, Stage

        stage = Stage.EXTRACTING
        already = answered = 0
        await self.wait_writes()  # a change asked before the fill is in the table it fills
        options = self._fill_options(operation.mode)
        client = await self._client()
        async for event in fill(
            client, operation.table_id, options, rows=rows, columns=columns, recompute=recompute, cancel=token
        ):
            # counted against the cells selected, those filled before (by a fill stopped or quit,
            # or kept as edited by hand) included: a resumed fill goes on from "7 / 40"
            if isinstance(event, FillStarted):
                already = event.already
                operation.done, operation.total = already, already + event.total
                report(Progress(stage=stage, done=operation.done, total=operation.total, message="cells"))
            elif isinstance(event, CellStarted):
                operation.cell_started.emit((event.document_id, event.column_id))
            elif isinstance(event, CellFilled):
                operation.done, operation.total = already + event.done, already + event.total
                answered += 1
                if event.stored:  # not stored: a hand edit (or a change of the table) came first
                    operation.cell_filled.emit(_cell(event.cell))
                report(Progress(stage=stage, done=operation.done, total=operation.total, message="cells"))
        return answered

    def _fill_options(self, mode: str) -> Any:
        from haiku.rag.extraction import FillOptions

        if mode == "search-only":
            return FillOptions(mode="search-only")
        model = self.models.create_model()
        settings: dict[str, Any] = {}
        if not self.models.uses_model_instance:
            from haiku.rag.models import model_settings

            settings = dict(model_settings(self.models.model_config()) or {})
        return FillOptions(
            mode=mode,  # type: ignore[arg-type]
            model=model,
            model_settings=settings,
            supports_tools=self.models.supports_tools(),
        )

    def _fill_ended(self, operation: Fill) -> None:
        if self._active is operation:
            self._active = None
            self.busy_changed.emit(False)

    def _fill_succeeded(self, table_id: str) -> None:
        self._mark_filling(table_id, False)
        # a fill that went through: why an earlier one stopped is solved (its banner stayed
        # after the model was back and every cell filled: tester 17:17)
        self.notifications.withdraw(FILL_FAILED_KEY)

    def _fill_failed(self, table_id: str, exc: BaseException) -> None:
        self._mark_filling(table_id, False)
        message = " ".join(str(exc).split()) or type(exc).__name__
        self.notifications.error(  # one banner per problem, however many fills stop on it
            f"Filling the evidence table stopped: {message}. The cells filled so far are kept; "
            "Fill continues with the rest.",
            type(exc).__name__,
            key=FILL_FAILED_KEY,
        )

    def stop(self) -> None:
        """Stop the fill; the cells filled so far are kept (Fill continues with the rest)."""
        fill = self._fill
        if fill is not None and fill.running:
            fill.cancel()

    async def _stop_and_wait(self) -> None:
        fill = self._fill
        if fill is not None and fill.running:
            fill.cancel()
            await fill.wait()

    # --- export -------------------------------------------------------------------------------

    def export(self, fmt: str, path: str | Path) -> asyncio.Future[Path | None]:
        """Write the open table as ``fmt`` (CSV, XLSX, Markdown: value, quote and "Author, year,
        p. N" per cell; BibTeX: the rows' records) to ``path``, through the library's export."""
        from haiku.rag.extraction import export_table

        if fmt not in EXPORT_FORMATS:
            raise ValueError(f"unknown export format {fmt!r}")
        table = self.current
        target = Path(path)

        async def work(client: HaikuRAG) -> Path | None:
            if table is None:
                self.notifications.info("Open or create an evidence table first")
                return None
            await export_table(client, table.id, fmt, target)  # type: ignore[arg-type]
            self.notifications.info(f"Exported “{table.name}” to {target}", key=EXPORTED_KEY)
            return target

        return self._write(f"Exporting the table as {EXPORT_FORMATS[fmt][0]}", work)


async def _nothing(_client: HaikuRAG) -> None:
    return None


def _column_dict(column: ColumnSpec | dict[str, Any]) -> dict[str, Any]:
    """A column as the library takes it (a dict; the library sets its id)."""
    if isinstance(column, ColumnSpec):
        data: dict[str, Any] = {"name": column.name, "question": column.question, "type": column.type}
        if column.unit:
            data["unit"] = column.unit
        if column.categories:
            data["categories"] = list(column.categories)
        return data
    return {k: v for k, v in dict(column).items() if k != "id"}
