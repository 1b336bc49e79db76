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

    task = library.watch.add(folder)
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
    library.watch.rescan()
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
    # Read when `opened` is emitted, before the first rescan could fill it in: the rows come up
    # with their watched folder (this raced the rescan and failed CI once).
    again.opened.connect(lambda: opened.append(again.entry(uri_for(added)).watched_folder))
    again.start()
    run_until(qloop, lambda: bool(opened), SLOW)
    try:
        assert again.watch.folders == [str(folder.resolve())]
        assert opened == [str(folder.resolve())]
        assert again.entry(uri_for(added)).watched_folder == str(folder.resolve())
    finally:
        again.close()


def test_the_file_system_watcher_triggers_a_rescan(qloop, library, tmp_path, make_pdf):
    folder = tmp_path / "inbox"
    folder.mkdir()
    library.watch.add(folder)
    scans = []
    library.rescanned.connect(scans.append)
    run_until(qloop, lambda: not library.busy)
    new = make_pdf(folder / "new.pdf", "Midnight census of the lighthouse keepers.")
    run_until(qloop, lambda: library.entry(uri_for(new)) is not None, SLOW)  # no explicit rescan
    assert scans
    run_until(qloop, lambda: _hybrid(library, new), SLOW)


def test_a_document_deleted_from_a_watched_folder_stays_out_until_added_again_by_hand(
    qloop, library, tmp_path, make_pdf, db_path, config, notifications
):
    folder = tmp_path / "watched"
    folder.mkdir()
    keep = make_pdf(folder / "keep.pdf", "Narwhal pipelines carry cold brine.")
    unwanted = make_pdf(folder / "unwanted.pdf", "Obsolete refrigeration equipment at the depot.")
    library.watch.add(folder)
    run_until(qloop, lambda: _hybrid(library, keep) and _hybrid(library, unwanted), SLOW)

    library.delete([uri_for(unwanted)])
    run_until(qloop, lambda: library.entry(uri_for(unwanted)) is None and not library.busy, SLOW)
    assert library.watch.excluded_files(str(folder)) == [uri_for(unwanted)]

    def rescan(service):
        scans = []
        service.rescanned.connect(scans.append)
        service.watch.rescan()
        run_until(qloop, lambda: bool(scans) and not service.busy, SLOW)

    def stored(service):
        return {d.uri for d in qloop.run_until_complete(service.client.list_documents())}

    rescan(library)
    assert library.entry(uri_for(unwanted)) is None
    assert stored(library) == {uri_for(keep)}

    # Its content changes on disk: still excluded, and still after reopening the library.
    make_pdf(unwanted, "Refurbished refrigeration equipment returned to the depot.")
    stat = os.stat(unwanted)
    os.utime(unwanted, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000_000))
    rescan(library)
    assert library.entry(uri_for(unwanted)) is None
    library.close()
    again = LibraryService(db_path, config, notifications)
    opened = []
    again.opened.connect(lambda: opened.append(True))
    again.start()
    run_until(qloop, lambda: bool(opened), SLOW)
    try:
        assert again.watch.excluded_files(str(folder)) == [uri_for(unwanted)]
        rescan(again)
        assert again.entry(uri_for(unwanted)) is None and stored(again) == {uri_for(keep)}

        # Added again by hand (Add files, a drop): welcome back, and kept by later rescans.
        again.add_paths([unwanted])
        run_until(qloop, lambda: _hybrid(again, unwanted), SLOW)
        assert again.watch.excluded_files(str(folder)) == []
        assert again.entry(uri_for(unwanted)).watched_folder == str(folder.resolve())
        rescan(again)
        assert _hybrid(again, unwanted) and stored(again) == {uri_for(keep), uri_for(unwanted)}
        assert "refurbished" in _search_uris_text(qloop, again, "refurbished refrigeration")
    finally:
        again.close()


def _search_uris_text(qloop, library, query):
    hits = qloop.run_until_complete(library.search_passages(query, limit=1))
    return hits[0].content.lower() if hits else ""


def test_a_file_removed_from_a_watched_folder_comes_back_when_it_reappears(
    qloop, library, tmp_path, make_pdf
):
    folder = tmp_path / "watched"
    folder.mkdir()
    moved = make_pdf(folder / "moved.pdf", "Gannet colonies along the northern cliffs.")
    library.watch.add(folder)
    run_until(qloop, lambda: _hybrid(library, moved), SLOW)
    aside = tmp_path / "moved.pdf"
    moved.rename(aside)
    scans = []
    library.rescanned.connect(scans.append)
    library.watch.rescan()
    run_until(qloop, lambda: bool(scans) and library.entry(uri_for(moved)) is None, SLOW)
    assert library.watch.excluded_files(str(folder)) == []  # gone from disk is not "deleted by you"

    aside.rename(moved)
    library.watch.rescan()
    run_until(qloop, lambda: _hybrid(library, moved), SLOW)


def test_unwatching_a_folder_keeps_its_documents(qloop, library, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    note = folder / "otters.md"
    note.write_text("# Otters\n\nLantern otters hold hands while they sleep.\n")
    library.watch.add(folder)
    run_until(qloop, lambda: library.entry(uri_for(note)) is not None and library.entry(uri_for(note)).searchable, SLOW)
    assert library.entry(uri_for(note)).watched_folder == str(folder.resolve())

    library.watch.remove(str(folder))
    assert library.watch.folders == []
    entry = library.entry(uri_for(note))
    assert entry is not None and entry.watched_folder is None  # the user's own document now
    assert uri_for(note) in [d.uri for d in qloop.run_until_complete(library.client.list_documents())]
