"""File › Import Zotero library…: the library service imports a generated Zotero library,
lists its documents, reports the missing file, and the queue embeds what was imported."""

from __future__ import annotations

import pytest
import zotero_factory as zf
from qt_helpers import run_until

from haiku_desk.services.library import DocumentState

SLOW = 240  # parsing three PDFs + embedding on 2 shared cores


@pytest.mark.timeout(600)  # two generous waits on a shared, loaded machine
def test_import_zotero_lists_documents_reports_missing_and_embeds(qloop, library, notifications, tmp_path):
    zotero = zf.build_library(tmp_path)
    task = library.import_zotero(zotero.data_dir)
    run_until(qloop, task.done, SLOW)
    result = task.result()
    assert result.counts() == {"ingested": 3, "missing": 1}

    keys = {f"zotero://select/library/items/{zotero.keys[k]}" for k in ("a_main", "a_supplement", "b_linked")}
    assert keys <= {e.key for e in library.entries}
    names = {library.entry(k).name for k in keys}
    assert zf.PAPER_A["title"] in names
    notice = next(n for n in notifications.history if n.message.startswith("Zotero import"))
    assert "3 ingested" in notice.message and "1 missing" in notice.message and "otters.pdf" in notice.detail
    run_until(qloop, lambda: all(library.entry(k).state is DocumentState.HYBRID for k in keys), SLOW)
    collections = qloop.run_until_complete(library.client.list_collections())
    assert {c.name: c.count for c in collections} == {"Reading list": 1, "Thesis": 3}

