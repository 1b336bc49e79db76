"""Evidence tables in the store's ``settings`` table, as collections are kept.

One row per table (key ``extraction:<id>``, its definition: name, columns, rows) and one row
per cell (key ``extraction-cell:<id>:<document id>:<column id>``). Why rows of their own and not
one row per table: a fill writes each cell as soon as it is answered (so a quit loses at most the
cell in flight), and a one-row write of a cell is small where a whole table's would grow with
every cell. Each write is one ``merge_insert`` or one delete inside ``Store.write_transaction``
(serialised, rolled back on error), so a reader never sees half a change; a cell written for a
row or column removed meanwhile, or over a hand edit, is not written (checked in the same
transaction).

Synchronous: ``haiku.rag.extraction.tables`` runs these in a worker thread.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from haiku.rag.extraction.errors import ExtractionError, TableExistsError, TableNotFoundError
from haiku.rag.extraction.models import Cell, ExtractionTable, cell_key, check_text
from haiku.rag.store import schema as S
from haiku.rag.store.engine import Store
from haiku.rag.store.sql import sql_in, sql_quote

log = logging.getLogger("haiku.rag")

TABLE_PREFIX = "extraction:"
CELL_PREFIX = "extraction-cell:"


def now_iso() -> str:
    from haiku.rag.store.documents import now_iso as stamp

    return stamp()


def _table_key(table_id: str) -> str:
    return TABLE_PREFIX + table_id


def _cell_key(table_id: str, document_id: str, column_id: str) -> str:
    return f"{CELL_PREFIX}{table_id}:{cell_key(document_id, column_id)}"


def _cells_prefix(table_id: str) -> str:
    return f"{CELL_PREFIX}{table_id}:"


def _like(prefix: str) -> str:
    """A ``LIKE`` pattern for keys starting with ``prefix`` (ids are ours: hex, letters, digits)."""
    if any(ch in prefix for ch in "%_\\'"):
        raise ExtractionError(f"not a valid key prefix: {prefix!r}")
    return f"key LIKE '{prefix}%'"


def _select(store: Store, where: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = store.table(S.SETTINGS).search().where(where).limit(None).to_list()
    return rows


def _put(store: Store, rows: Iterable[tuple[str, str]]) -> None:
    import pyarrow as pa

    data = pa.Table.from_pylist([{"key": k, "value": v} for k, v in rows], schema=S.SETTINGS_SCHEMA)
    if data.num_rows:
        store.table(S.SETTINGS).merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(data)


def _delete(store: Store, where: str) -> None:
    store.table(S.SETTINGS).delete(where)


def _parse_table(row: dict[str, Any], live: dict[str, str]) -> ExtractionTable:
    """A stored table; a row whose document is no longer in the library is a removed row
    (kept with its cells, marked removed), not a row to fill."""
    data = json.loads(row["value"])
    data["id"] = row["key"][len(TABLE_PREFIX) :]
    stored = data.get("document_ids", [])
    data["document_ids"] = [i for i in stored if i in live]
    gone = [*data.get("removed_document_ids", []), *(i for i in stored if i not in live)]
    data["removed_document_ids"] = list(dict.fromkeys(gone))
    data.pop("cells", None)
    return ExtractionTable.model_validate(data)


def _definition(table: ExtractionTable) -> str:
    return json.dumps(table.model_dump(mode="json", exclude={"id", "cells"}), sort_keys=True)


# --- reads ---------------------------------------------------------------------------------


def list_tables(store: Store) -> list[ExtractionTable]:
    live = store.current_generations()
    tables = [_parse_table(r, live) for r in _select(store, _like(TABLE_PREFIX))]
    return sorted(tables, key=lambda t: (t.name.casefold(), t.name))


def find_table(store: Store, table: str) -> ExtractionTable | None:
    """The table with id ``table``, else the one named ``table`` (without cells)."""
    if not isinstance(table, str) or not table.strip():
        raise ExtractionError("a table is named by its id or its name")
    live = store.current_generations()
    if all(ch in "0123456789abcdef" for ch in table) and len(table) == 32:
        rows = _select(store, f"key = {sql_quote(_table_key(table))}")
        if rows:
            return _parse_table(rows[0], live)
    wanted = " ".join(table.split()).casefold()
    for found in list_tables(store):
        if found.name.casefold() == wanted:
            return found
    return None


def get_table(store: Store, table: str) -> ExtractionTable:
    found = find_table(store, table)
    if found is None:
        known = ", ".join(t.name for t in list_tables(store)) or "none yet"
        raise TableNotFoundError(f"no evidence table {table.strip()!r} (tables: {known})")
    return found


def _read_cell(value: str, key: str) -> Cell | None:
    """A stored cell, or None when this build cannot read it (one written by a newer build, with
    a mode or status it does not know): its table still opens, the cell counts as not filled."""
    try:
        return Cell.model_validate_json(value)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        log.warning("evidence table cell %s cannot be read by this version, skipped: %s", key, exc)
        return None


def load_cells(store: Store, table: ExtractionTable) -> dict[str, Cell]:
    """The table's cells of its current rows (removed ones too) and columns."""
    rows = {*table.document_ids, *table.removed_document_ids}
    columns = {c.id for c in table.columns}
    cells: dict[str, Cell] = {}
    prefix = _cells_prefix(table.id)
    for row in _select(store, _like(prefix)):
        cell = _read_cell(row["value"], row["key"])
        if cell is not None and cell.document_id in rows and cell.column_id in columns:
            cells[cell_key(cell.document_id, cell.column_id)] = cell
    return cells


def load_table(store: Store, table: str) -> ExtractionTable:
    found = get_table(store, table)
    return found.model_copy(update={"cells": load_cells(store, found)})


# --- writes ---------------------------------------------------------------------------------


def _check_documents(store: Store, document_ids: Iterable[str]) -> list[str]:
    from haiku.rag.collections import existing_document_ids

    return existing_document_ids(store, document_ids, ExtractionError, "the table")


def _check_unique_name(store: Store, name: str, except_id: str | None = None) -> None:
    for other in list_tables(store):
        if other.id != except_id and other.name.casefold() == name.casefold():
            raise TableExistsError(f"an evidence table named {other.name!r} already exists")


def create_table(store: Store, table: ExtractionTable) -> ExtractionTable:
    """Store a new table (its id is made here); its columns are checked and numbered."""
    name = check_text("a table name", table.name, 200)
    with store.write_transaction():
        _check_unique_name(store, name)
        ids = _check_documents(store, table.document_ids)
        now = now_iso()
        made = table.model_copy(
            update={
                "id": uuid.uuid4().hex, "name": name, "document_ids": ids,
                "created_at": now, "updated_at": now, "cells": {},
            }
        )  # fmt: skip
        _put(store, [(_table_key(made.id), _definition(made))])
    return made


def update_table(
    store: Store, table: str, change: Callable[[ExtractionTable], ExtractionTable]
) -> ExtractionTable:
    """Apply ``change`` to the stored table in one transaction. The cells it makes obsolete
    go in the same transaction: those of removed rows and columns, and of columns that now ask
    something else."""
    with store.write_transaction():
        before = get_table(store, table)
        after = change(before.model_copy(deep=True))
        name = check_text("a table name", after.name, 200)
        if name != before.name:
            _check_unique_name(store, name, except_id=before.id)
        # a removed row can be dropped (it is never made one again: its document is gone)
        removed = [i for i in after.removed_document_ids if i in before.removed_document_ids]
        after = after.model_copy(
            update={"name": name, "updated_at": now_iso(), "cells": {}, "removed_document_ids": removed}
        )
        _check_documents(store, after.document_ids)
        prompts = {c.id: c.prompt for c in after.columns}
        rows = {*after.document_ids, *removed}
        stale = []
        for row in _select(store, _like(_cells_prefix(before.id))):
            cell = json.loads(row["value"])
            if cell.get("document_id") not in rows or cell.get("question") != prompts.get(cell.get("column_id")):
                if cell.get("status") == "edited" and cell.get("document_id") in rows and cell.get("column_id") in prompts:
                    continue  # a hand edit stays while its row and column do
                stale.append(row["key"])
        _delete_keys(store, stale)
        _put(store, [(_table_key(after.id), _definition(after))])
    return after


def _delete_keys(store: Store, keys: list[str]) -> None:
    for start in range(0, len(keys), 200):
        _delete(store, sql_in("key", keys[start : start + 200]))


def delete_table(store: Store, table: str) -> ExtractionTable:
    with store.write_transaction():
        found = get_table(store, table)
        _delete(store, f"key = {sql_quote(_table_key(found.id))} OR {_like(_cells_prefix(found.id))}")
    return found


def put_cell(store: Store, table_id: str, cell: Cell, *, over_edited: bool = True, question: str | None = None) -> bool:
    """Write ``cell``; False (nothing written) when its row or column is no longer in the
    table, when its column now asks something else than ``question``, or when the stored cell
    is a hand edit and ``over_edited`` is false."""
    with store.write_transaction():
        rows = _select(store, f"key = {sql_quote(_table_key(table_id))}")
        if not rows:
            raise TableNotFoundError(f"no evidence table with id {table_id!r}")
        current = _parse_table(rows[0], store.current_generations())
        if cell.document_id not in current.document_ids:
            return False
        column = next((c for c in current.columns if c.id == cell.column_id), None)
        if column is None or (question is not None and column.prompt != question):
            return False
        key = _cell_key(table_id, cell.document_id, cell.column_id)
        if not over_edited:
            stored = _select(store, f"key = {sql_quote(key)}")
            if stored and json.loads(stored[0]["value"]).get("status") == "edited":
                return False
        _put(store, [(key, cell.model_dump_json())])
    return True


def get_cell(store: Store, table_id: str, document_id: str, column_id: str) -> Cell | None:
    rows = _select(store, f"key = {sql_quote(_cell_key(table_id, document_id, column_id))}")
    return _read_cell(rows[0]["value"], rows[0]["key"]) if rows else None


def delete_cells(store: Store, table_id: str, cells: Iterable[tuple[str, str]]) -> int:
    """Delete the given cells (to be filled again); how many there were."""
    keys = [_cell_key(table_id, r, c) for r, c in cells]
    with store.write_transaction():
        present = [
            row["key"]
            for start in range(0, len(keys), 200)
            for row in _select(store, sql_in("key", keys[start : start + 200]))
        ]
        _delete_keys(store, present)
    return len(present)
