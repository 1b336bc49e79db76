"""Evidence tables: one question asked of many documents, every cell cited to its page.

A table's rows are documents (ids, or a collection's), its columns are questions with a type
(text, number with unit, yes/no/unclear, one of a list of categories), and each cell is the
question answered from that row's document alone, through ``haiku.rag.answering`` in any mode
(a tool-calling model, a model without tools, or no model: the best passage). A cell holds its
value, a quote from the cited text, its citations (pages, boxes) and a status: grounded, not
found, low confidence, or edited by hand. Tables are stored per library and filled cell by cell,
so a fill survives a quit and continues; re-running a cell, a row or a column recomputes just
that. Exports: CSV, XLSX, Markdown, JSON and the rows' BibTeX.

Importing this package is cheap; each name loads its module on first use (see
``docs/extraction.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from haiku.rag.lazy import lazy_exports

if TYPE_CHECKING:
    from haiku.rag.extraction.cells import FillOptions, answer_cell, cell_from_answer
    from haiku.rag.extraction.errors import ExtractionError, TableExistsError, TableNotFoundError
    from haiku.rag.extraction.export import EXPORT_FORMATS, ExportFormat, export_table
    from haiku.rag.extraction.filling import (
        CellFilled,
        CellStarted,
        FillEvent,
        FillFinished,
        FillStarted,
        fill,
        fill_table,
    )
    from haiku.rag.extraction.models import (
        Cell,
        CellMode,
        CellStatus,
        Column,
        ColumnType,
        ExtractionTable,
        cell_key,
    )
    from haiku.rag.extraction.tables import (
        add_column,
        clear_cells,
        create_table,
        delete_table,
        drop_removed_rows,
        list_tables,
        load_table,
        remove_column,
        rename_table,
        set_rows,
        set_value,
        update_column,
    )

_HOMES = {
    "FillOptions": "cells",
    "answer_cell": "cells",
    "cell_from_answer": "cells",
    "ExtractionError": "errors",
    "TableExistsError": "errors",
    "TableNotFoundError": "errors",
    "EXPORT_FORMATS": "export",
    "ExportFormat": "export",
    "export_table": "export",
    "CellFilled": "filling",
    "CellStarted": "filling",
    "FillEvent": "filling",
    "FillFinished": "filling",
    "FillStarted": "filling",
    "fill": "filling",
    "fill_table": "filling",
    "Cell": "models",
    "CellMode": "models",
    "CellStatus": "models",
    "Column": "models",
    "ColumnType": "models",
    "ExtractionTable": "models",
    "cell_key": "models",
    "add_column": "tables",
    "clear_cells": "tables",
    "create_table": "tables",
    "delete_table": "tables",
    "list_tables": "tables",
    "load_table": "tables",
    "remove_column": "tables",
    "rename_table": "tables",
    "set_rows": "tables",
    "drop_removed_rows": "tables",
    "set_value": "tables",
    "update_column": "tables",
}

__getattr__ = lazy_exports(globals(), _HOMES)


__all__ = [
    "Cell",
    "CellFilled",
    "CellMode",
    "CellStarted",
    "CellStatus",
    "Column",
    "ColumnType",
    "EXPORT_FORMATS",
    "ExportFormat",
    "ExtractionError",
    "ExtractionTable",
    "FillEvent",
    "FillFinished",
    "FillOptions",
    "FillStarted",
    "TableExistsError",
    "TableNotFoundError",
    "add_column",
    "answer_cell",
    "cell_from_answer",
    "cell_key",
    "clear_cells",
    "create_table",
    "delete_table",
    "export_table",
    "fill",
    "fill_table",
    "list_tables",
    "load_table",
    "remove_column",
    "rename_table",
    "set_rows",
    "drop_removed_rows",
    "set_value",
    "update_column",
]
