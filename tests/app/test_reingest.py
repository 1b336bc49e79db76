"""Re-ingest is the person's explicit ask: it reads a file stored unchanged again, in place
(same document id, so evidence-table rows, collections and citations stay attached); adding
the same unchanged file again does nothing, and says so."""

from __future__ import annotations

import pdf_factory
from qt_helpers import run_until

from haiku_desk.services.library import DocumentState, LibraryService, uri_for
from haiku_desk.services.work_queue import IngestJob, WorkQueue

SLOW = 180  # parsing + embedding on 2 shared cores


def _settled(library, key) -> bool:
    entry = library.entry(key)
    return entry is not None and entry.state is DocumentState.HYBRID and not library.busy


def _document(qloop, library, key):
    return qloop.run_until_complete(library.client.get_document(library.entry(key).document_id))


def test_reingest_reads_an_unchanged_file_again_keeping_its_id(qloop, library, tmp_path, config, notifications):
    pdf = pdf_factory.make_report_pdf(tmp_path / "report.pdf").path
    key = uri_for(pdf)
    library.add_paths([pdf])
    run_until(qloop, lambda: _settled(library, key), SLOW)
    first = _document(qloop, library, key)

    config.processing.chunk_size = 64  # a parser fix in a newer build: the file is unchanged
    library.reingest([key])
    assert library.entry(key).state is DocumentState.QUEUED
    run_until(qloop, lambda: _settled(library, key), SLOW)
    again = _document(qloop, library, key)
    assert again.id == first.id
    assert again.chunk_count > first.chunk_count  # read again with the fix
    assert again.index_state == "hybrid"
    assert [d.id for d in qloop.run_until_complete(library.client.list_documents())] == [first.id]


def test_adding_an_unchanged_file_again_says_it_is_already_in_the_library(
    qloop, library, tmp_path, make_pdf, notifications
):
    pdf = make_pdf(tmp_path / "a.pdf", "The marmoset orchestra rehearsed in the glasshouse.")
    key = uri_for(pdf)
    library.add_paths([pdf])
    run_until(qloop, lambda: _settled(library, key), SLOW)
    document_id = library.entry(key).document_id
    before = len(notifications.history)

    library.add_paths([pdf])
    run_until(qloop, lambda: _settled(library, key), SLOW)
    assert library.entry(key).document_id == document_id
    said = [n for n in notifications.history[before:] if n.key == key]
    name = library.entry(key).name  # the row's name (the document's title)
    assert [n.message for n in said] == [f"{name}: unchanged — already in the library"]
    assert said[0].level == "info"


def test_adding_a_copy_of_a_stored_file_says_it_is_the_same_file(qloop, library, tmp_path, make_pdf, notifications):
    """A watched folder's byte-identical copy was added silently as a second row."""
    import shutil

    pdf = make_pdf(tmp_path / "a.pdf", "The marmoset orchestra rehearsed in the glasshouse.")
    library.add_paths([pdf])
    run_until(qloop, lambda: _settled(library, uri_for(pdf)), SLOW)
    copy = tmp_path / "copy.pdf"
    shutil.copy(pdf, copy)
    before = len(notifications.history)
    library.add_paths([copy])
    run_until(qloop, lambda: _settled(library, uri_for(copy)), SLOW)
    said = [n for n in notifications.history[before:] if n.key == f"same:{uri_for(copy)}"]
    # named by their files (a title taken from a file name is not said again); it stays
    assert library.entry(uri_for(copy)).name == "copy"
    assert [n.message for n in said] == ["copy.pdf is the same file as a.pdf, already in the library"]
    assert "delete one" in said[0].detail and said[0].level == "info" and said[0].lasting


def test_a_reingest_left_by_quit_is_still_a_reingest_at_the_next_start(tmp_path):
    queue = WorkQueue(tmp_path, on_error=print)
    queue.append(IngestJob("file:///x/a.pdf", tmp_path / "a.pdf", force=True))
    queue.append(IngestJob("file:///x/b.pdf", tmp_path / "b.pdf"))
    loaded = WorkQueue(tmp_path, on_error=print).load()
    assert [(job.key, job.force) for job in loaded] == [("file:///x/a.pdf", True), ("file:///x/b.pdf", False)]


def test_reingest_of_a_file_already_waiting_to_be_added_makes_it_a_reingest(qloop, library, tmp_path, make_pdf):
    pdf = make_pdf(tmp_path / "a.pdf", "Quarterly tungsten prices rose along the canal.")
    key = uri_for(pdf)
    library.add_paths([pdf])
    run_until(qloop, lambda: _settled(library, key), SLOW)
    blocker = make_pdf(tmp_path / "b.pdf", "Kerosene shortages delayed the night convoys.")
    library.add_paths([blocker, pdf])  # a.pdf waits behind b.pdf, as a plain add
    library.reingest([key])
    jobs = [job for job in library.queue._queue if job.key == key]
    assert [job.force for job in jobs] == [True]
    run_until(qloop, lambda: _settled(library, key) and _settled(library, uri_for(blocker)), SLOW)


def test_a_reingest_left_in_the_queue_by_quit_runs_forced_at_the_next_start(
    qloop, library, db_path, config, notifications, tmp_path
):
    pdf = pdf_factory.make_report_pdf(tmp_path / "report.pdf").path
    key = uri_for(pdf)
    library.add_paths([pdf])
    run_until(qloop, lambda: _settled(library, key), SLOW)
    first = _document(qloop, library, key)
    folder = library.app_folder
    qloop.run_until_complete(library.aclose())
    # what Quit leaves when the re-ingest had not run yet
    WorkQueue(folder, on_error=print).append(IngestJob(key, pdf, force=True))

    config.processing.chunk_size = 64
    again = LibraryService(db_path, config, notifications)
    opened = []
    again.opened.connect(lambda: opened.append(True))
    again.start()
    try:
        run_until(qloop, lambda: bool(opened) and _settled(again, key), SLOW)
        document = _document(qloop, again, key)
        assert document.id == first.id and document.chunk_count > first.chunk_count
    finally:
        qloop.run_until_complete(again.aclose())
