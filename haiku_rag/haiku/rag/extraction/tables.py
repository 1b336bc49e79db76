"""Evidence tables of a library: create, list, load, change, delete; a value set by hand.

Async over the client: the store work (``extraction.storage``) runs in a worker thread, as the
client's own methods do, so an event loop (the app's) never blocks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from haiku.rag.extraction import storage
from haiku.rag.extraction.errors import ExtractionError
from haiku.rag.extraction.models import Cell, Column, ExtractionTable, check_text

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG

MAX_VALUE_CHARS = 2_000


async def _run(client: HaikuRAG, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await client._store_thread(functools.partial(func, client.store, *args, **kwargs))


def _numbered(columns: Sequence[Column | str | dict[str, Any]], taken: Sequence[Column] = ()) -> list[Column]:
    """Checked columns, each given the next free id ``cN``; names unique within the table."""
    used = {c.id for c in taken}
    names = {c.name.casefold() for c in taken}
    out: list[Column] = []
    n = 1
    for raw in columns:
        column = Column.of(raw)
        if column.name.casefold() in names:
            raise ExtractionError(f"the table already has a column named {column.name!r}")
        names.add(column.name.casefold())
        while f"c{n}" in used:
            n += 1
        used.add(f"c{n}")
        out.append(column.model_copy(update={"id": f"c{n}"}))
    return out


async def create_table(
    client: HaikuRAG,
    name: str,
    columns: Sequence[Column | str | dict[str, Any]],
    *,
    document_ids: Sequence[str] | None = None,
    collection: str | None = None,
) -> ExtractionTable:
    """A new, empty table: rows are ``document_ids``, else the documents of ``collection``
    (given with ids, the collection is only noted as where they came from)."""
    name = check_text("a table name", name, 200)
    if document_ids is None and collection is None:
        raise ExtractionError("give the rows as document ids or as a collection")
    if isinstance(document_ids, str):
        raise ExtractionError("document_ids is a list of document ids, not one string")
    if document_ids is None and collection is not None:
        document_ids = await client.collection_document_ids(collection)
    rows = list(dict.fromkeys(document_ids or []))
    if not rows:
        where = f"the collection {collection!r} has no documents" if collection else "no documents given"
        raise ExtractionError(f"a table needs at least one document: {where}")
    made = _numbered(columns)
    if not made:
        raise ExtractionError("a table needs at least one column")
    table = ExtractionTable(id="new", name=name, columns=made, document_ids=rows, collection=collection)
    created: ExtractionTable = await _run(client, storage.create_table, table)
    return created


async def list_tables(client: HaikuRAG) -> list[ExtractionTable]:
    """The library's tables (without their cells), by name."""
    tables: list[ExtractionTable] = await _run(client, storage.list_tables)
    return tables


async def load_table(client: HaikuRAG, table: str) -> ExtractionTable:
    """The table (by id or name) with its cells."""
    loaded: ExtractionTable = await _run(client, storage.load_table, table)
    return loaded


async def delete_table(client: HaikuRAG, table: str) -> ExtractionTable:
    """Delete the table and its cells (the documents stay in the library)."""
    deleted: ExtractionTable = await _run(client, storage.delete_table, table)
    return deleted


async def _update(client: HaikuRAG, table: str, change: Callable[[ExtractionTable], ExtractionTable]) -> ExtractionTable:
    updated: ExtractionTable = await _run(client, storage.update_table, table, change)
    return updated


async def rename_table(client: HaikuRAG, table: str, name: str) -> ExtractionTable:
    name = check_text("a table name", name, 200)
    return await _update(client, table, lambda t: t.model_copy(update={"name": name}))


async def add_column(client: HaikuRAG, table: str, column: Column | str | dict[str, Any]) -> Column:
    """Add a column (its cells start empty); returns it with its id."""
    added: list[Column] = []

    def change(t: ExtractionTable) -> ExtractionTable:
        added[:] = _numbered([column], t.columns)
        return t.model_copy(update={"columns": [*t.columns, *added]})

    await _update(client, table, change)
    return added[0]


async def update_column(client: HaikuRAG, table: str, column_id: str, **changes: Any) -> Column:
    """Change a column's name, question, type, unit or categories; when what it asks changes,
    its cells are dropped (hand edits stay) and filled again by the next fill."""
    allowed = {"name", "question", "type", "unit", "categories"}
    unknown = set(changes) - allowed
    if unknown:
        raise ExtractionError(f"a column has no field {', '.join(sorted(unknown))} (fields: {', '.join(sorted(allowed))})")
    updated: list[Column] = []

    def change(t: ExtractionTable) -> ExtractionTable:
        old = t.column(column_id)
        new = Column.of({**old.model_dump(), **changes})
        if new.name.casefold() != old.name.casefold() and any(
            c.name.casefold() == new.name.casefold() for c in t.columns
        ):
            raise ExtractionError(f"the table already has a column named {new.name!r}")
        updated[:] = [new]
        return t.model_copy(update={"columns": [new if c.id == column_id else c for c in t.columns]})

    await _update(client, table, change)
    return updated[0]


async def remove_column(client: HaikuRAG, table: str, column_id: str) -> ExtractionTable:
    """Remove a column and its cells."""

    def change(t: ExtractionTable) -> ExtractionTable:
        t.column(column_id)  # raises for an unknown one
        if len(t.columns) == 1:
            raise ExtractionError("a table keeps at least one column")
        return t.model_copy(update={"columns": [c for c in t.columns if c.id != column_id]})

    return await _update(client, table, change)


async def set_rows(client: HaikuRAG, table: str, document_ids: Sequence[str]) -> ExtractionTable:
    """Make the table's rows exactly ``document_ids`` (removed rows' cells go; new rows start
    empty)."""
    if isinstance(document_ids, str):
        raise ExtractionError("document_ids is a list of document ids, not one string")
    rows = list(dict.fromkeys(document_ids))
    if not rows:
        raise ExtractionError("a table needs at least one document")
    return await _update(client, table, lambda t: t.model_copy(update={"document_ids": rows}))


async def drop_removed_rows(
    client: HaikuRAG, table: str, document_ids: Sequence[str] | None = None
) -> ExtractionTable:
    """Drop rows whose document was removed from the library (all, or ``document_ids``):
    their kept cells go with them."""
    if isinstance(document_ids, str):
        raise ExtractionError("document_ids is a list of document ids, not one string")
    dropped = None if document_ids is None else set(document_ids)

    def change(t: ExtractionTable) -> ExtractionTable:
        kept = [] if dropped is None else [i for i in t.removed_document_ids if i not in dropped]
        return t.model_copy(update={"removed_document_ids": kept})

    return await _update(client, table, change)


async def set_value(client: HaikuRAG, table: str, document_id: str, column_id: str, value: str) -> Cell:
    """A value set by hand: kept, marked ``edited`` (``edited_from`` holds the value before),
    its citations and quote kept; a later fill leaves it unless asked to recompute it."""
    if not isinstance(value, str):
        raise ExtractionError(f"a value is text, got {type(value).__name__}")
    value = value.strip()
    if len(value) > MAX_VALUE_CHARS:
        raise ExtractionError(f"a value has at most {MAX_VALUE_CHARS} characters ({len(value)} given)")
    found: ExtractionTable = await _run(client, storage.get_table, table)
    column = found.column(column_id)
    found.selection([document_id], [column_id])  # an unknown row is refused
    before: Cell | None = await _run(client, storage.get_cell, found.id, document_id, column_id)
    from haiku.rag.extraction.values import read_number

    number, unit = read_number(value) if column.type == "number" else (None, None)
    cell = (before or Cell(document_id=document_id, column_id=column_id, question=column.prompt)).model_copy(
        update={
            "value": value, "number": number, "unit": unit, "status": "edited",
            "edited_from": (before.edited_from if before and before.status == "edited" else (before.value if before else "")),
            "updated_at": storage.now_iso(),
        }
    )  # fmt: skip
    if before is None:
        cell = cell.model_copy(update={"reasons": []})
    written = await _run(client, storage.put_cell, found.id, cell)
    if not written:  # the row or column went meanwhile
        raise ExtractionError(f"the cell ({document_id}, {column_id}) is no longer in the table {found.name!r}")
    return cell


async def clear_cells(
    client: HaikuRAG, table: str, *, rows: Sequence[str] | None = None, columns: Sequence[str] | None = None
) -> int:
    """Empty the selected cells (all by default); how many held something."""
    found: ExtractionTable = await _run(client, storage.get_table, table)
    selected = found.selection(None if rows is None else list(rows), None if columns is None else list(columns))
    cleared: int = await _run(client, storage.delete_cells, found.id, selected)
    return cleared
