"""A stored cell this build cannot read (written by a newer one: a mode it does not know) does
not make its table unopenable: the table opens with its other cells, and that cell counts as not
filled."""

from __future__ import annotations

import json

from extraction.conftest import COLUMNS, Library
from haiku.rag import extraction as X
from haiku.rag.client import HaikuRAG
from haiku.rag.extraction import storage


async def test_a_cell_of_a_newer_build_is_skipped_and_the_table_opens(client: HaikuRAG, library: Library) -> None:
    row = library.document_ids[0]
    table = await X.create_table(client, "Newer", COLUMNS[:2], document_ids=[row])
    filled = await X.fill_table(client, table.id, X.FillOptions(mode="search-only"))
    first, second = (c.id for c in filled.columns)
    assert filled.cell(row, first) is not None and filled.cell(row, second) is not None
    key = storage._cell_key(table.id, row, second)
    data = json.loads(filled.cell(row, second).model_dump_json()) | {"mode": "from-the-future"}
    storage._put(client.store, [(key, json.dumps(data))])

    loaded = await X.load_table(client, table.id)
    assert loaded.cell(row, first) == filled.cell(row, first)
    assert loaded.cell(row, second) is None and loaded.missing() == [(row, second)]
