"""Watch folders: new, changed and removed files are ingested, updated or removed on a
rescan, and the list of watched folders survives reopening the library."""

from __future__ import annotations

import os

from qt_helpers import run_until

from haiku_desk.services.library import DocumentState, LibraryService, uri_for

SLOW = 180


def _hybrid(library, path):
    entry = library.entry(uri_for(path))
    return entry is not None and entry.state is DocumentState.HYBRID


def _search_uris(qloop, library, query):
    return [h.document_uri for h in qloop.run_until_complete(library.search_passages(query, limit=3))]


def test_rescan_picks_up_new_changed_and_removed_files(qloop, library, tmp_path, make_pdf, db_path, config, notifications):
    folder = tmp_path / "watched"
    (folder / "sub").mkdir(parents=True)
    keep = make_pdf(folder / "keep.pdf", "Narwhal pipelines carry cold brine.")
    change = make_pdf(folder / "sub" / "change.pdf", "The pelican cranes were audited in spring.")
    remove = make_pdf(folder / "remove.pdf", "Obsolete refrigeration equipment at the depot.")
    changed = []
    library.watched_folders_changed.connect(changed.append)

    task = library.add_watched_folder(folder)
    assert task is not None and changed == [[str(folder.resolve())]]
    run_until(qloop, lambda: all(_hybrid(library, p) for p in (keep, change, remove)), SLOW)
    assert library.entry(uri_for(keep)).watched_folder == str(folder.resolve())
    keep_generation = library.entry(uri_for(keep)).generation

    added = make_pdf(folder / "added.pdf", "Gannet colonies along the northern cliffs.")
    make_pdf(change, "The pelican cranes were replaced by zeppelin hoists.")
    os.utime(change, ns=(os.stat(change).st_atime_ns, os.stat(change).st_mtime_ns + 10_000_000_000))
    remove.unlink()

    scans = []
    library.rescanned.connect(scans.append)
    library.rescan()
    run_until(qloop, lambda: bool(scans), SLOW)
    run_until(qloop, lambda: not library.busy and _hybrid(library, added) and library.entry(uri_for(remove)) is None, SLOW)

    assert _hybrid(library, change)
    assert _search_uris(qloop, library, "zeppelin hoists")[0] == uri_for(change)
    assert library.entry(uri_for(keep)).generation == keep_generation  # unchanged file untouched
    stored = {d.uri for d in qloop.run_until_complete(library.client.list_documents())}
    assert stored == {uri_for(keep), uri_for(change), uri_for(added)}

    library.close()
    again = LibraryService(db_path, config, notifications)
    opened = []
    again.opened.connect(lambda: opened.append(True))
    again.start()
    run_until(qloop, lambda: bool(opened), SLOW)
    try:
        assert again.watched_folders == [str(folder.resolve())]
        assert again.entry(uri_for(added)).watched_folder == str(folder.resolve())
    finally:
        again.close()


def test_the_file_system_watcher_triggers_a_rescan(qloop, library, tmp_path, make_pdf):
    folder = tmp_path / "inbox"
    folder.mkdir()
    library.add_watched_folder(folder)
    scans = []
    library.rescanned.connect(scans.append)
    run_until(qloop, lambda: not library.busy)
    new = make_pdf(folder / "new.pdf", "Midnight census of the lighthouse keepers.")
    run_until(qloop, lambda: library.entry(uri_for(new)) is not None, SLOW)  # no explicit rescan
    assert scans
    run_until(qloop, lambda: _hybrid(library, new), SLOW)
