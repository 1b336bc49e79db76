"""LibraryService against a real store: the ingest queue, two-speed states, failures with
their reasons, cancel, delete, re-ingest, password retry and search within an explicit scope."""

from __future__ import annotations

import pdf_factory
from qt_helpers import run_until

from haiku_desk.services.library import DocumentState, LibraryService, uri_for

SLOW = 180  # parsing + embedding on 2 shared cores


def _state(library, path):
    entry = library.entry(uri_for(path))
    return entry.state if entry else None


def _stored_uris(qloop, library):
    return {d.uri for d in qloop.run_until_complete(library.client.list_documents())}


def test_files_become_text_then_hybrid_searchable_and_search_takes_an_explicit_scope(qloop, library, tmp_path, make_pdf):
    a = make_pdf(tmp_path / "a.pdf", "The marmoset orchestra rehearsed in the glasshouse.")
    b = make_pdf(tmp_path / "b.pdf", "Quarterly tungsten prices rose along the canal.")
    seen_states: dict[str, set] = {uri_for(a): set(), uri_for(b): set()}
    library.entry_changed.connect(lambda e: seen_states.get(e.key, set()).add(e.state))
    overall = []
    library.overall_progress.connect(overall.append)

    library.add_paths([a, b])
    assert _state(library, a) is DocumentState.QUEUED  # visible at once
    run_until(qloop, lambda: _state(library, a) is DocumentState.HYBRID and _state(library, b) is DocumentState.HYBRID, SLOW)

    for states in seen_states.values():
        assert {DocumentState.PARSING, DocumentState.TEXT, DocumentState.HYBRID} <= states
    # per-batch progress by phase (reading, then embedding: tests/app/test_library_second_hour.py),
    # idle at the end; the embedding never reads as finished before its last vector
    assert overall[0].phase == "reading" and overall[0].done == 0 and overall[0].total > 0
    assert overall[-1].idle
    embedding = [s for s in overall if s.phase == "embedding"]
    assert embedding and all(s.done < s.total for s in embedding[:-1])
    assert all(s.phase in ("embedding", "") for s in overall[overall.index(embedding[0]) :])
    assert _stored_uris(qloop, library) == {uri_for(a), uri_for(b)}

    hits = qloop.run_until_complete(library.search_passages("marmoset orchestra", limit=3))
    assert hits and hits[0].document_uri == uri_for(a)
    assert hits[0].boxes and hits[0].page_numbers == [1]

    only_b = library.entry(uri_for(b)).document_id
    scoped = qloop.run_until_complete(library.search_passages("marmoset orchestra", limit=3, document_ids=[only_b]))
    assert scoped and {h.document_id for h in scoped} == {only_b}
    assert qloop.run_until_complete(library.search_passages("marmoset orchestra", limit=3, document_ids=[])) == []


def test_bad_and_locked_pdfs_fail_with_their_reason_and_leave_the_library_intact(qloop, library, tmp_path, make_pdf, notifications):
    good = make_pdf(tmp_path / "good.pdf", "Lighthouse keepers counted the gannets.")
    library.add_paths([good])
    run_until(qloop, lambda: _state(library, good) is DocumentState.HYBRID, SLOW)

    garbage = tmp_path / "x.pdf"
    garbage.write_bytes(b"this is not a pdf at all" * 50)
    locked = tmp_path / "locked.pdf"
    pdf_factory.make_encrypted_pdf(locked, "walnut")
    unsupported = tmp_path / "notes.xyz"
    unsupported.write_text("hello")
    prompts = []
    library.password_required.connect(prompts.append)

    library.add_paths([garbage, locked, unsupported])
    failed = (garbage, locked, unsupported)
    run_until(qloop, lambda: all(_state(library, p) is DocumentState.FAILED for p in failed), SLOW)

    bad = library.entry(uri_for(garbage))
    assert bad.category == "damaged" and "not a PDF" in bad.reason and bad.hint
    assert library.entry(uri_for(unsupported)).category == "unsupported_type"
    lock = library.entry(uri_for(locked))
    assert lock.category == "password_required" and lock.needs_password
    assert [p.key for p in prompts] == [lock.key]
    assert any("x.pdf" in n.message for n in notifications.history)
    assert _stored_uris(qloop, library) == {uri_for(good)}  # nothing written for the failures
    assert _state(library, good) is DocumentState.HYBRID

    library.retry_with_password(lock.key, "wrong")
    run_until(qloop, lambda: library.entry(lock.key).category == "wrong_password", SLOW)
    assert len(prompts) == 2
    library.retry_with_password(lock.key, "walnut")
    run_until(qloop, lambda: library.entry(lock.key).searchable, SLOW)
    # ranked first once its vectors landed: before, its full-text hit ties with the other
    # document's lone vector hit (each arm's best counts 1), and a loaded machine searched then
    run_until(qloop, lambda: _state(library, locked) is DocumentState.HYBRID, SLOW)
    hits = qloop.run_until_complete(library.search_passages("vault combination walnut bookcase", limit=1))
    assert hits and hits[0].document_uri == lock.key


def test_cancel_delete_and_reingest(qloop, library, tmp_path, make_pdf):
    a = make_pdf(tmp_path / "a.pdf", "Saffron tariffs were renegotiated with the guild.")
    b = make_pdf(tmp_path / "b.pdf", "The porcupine protocol governs forklift crews.")
    library.add_paths([a, b])
    library.cancel([uri_for(a), uri_for(b)])  # still queued: nothing runs
    run_until(qloop, lambda: not library.busy)
    assert _state(library, a) is DocumentState.CANCELLED and _state(library, b) is DocumentState.CANCELLED
    assert _stored_uris(qloop, library) == set()

    library.reingest([uri_for(a)])
    run_until(qloop, lambda: _state(library, a) is DocumentState.EMBEDDING, SLOW)
    library.cancel([uri_for(a)])  # cancelling the embedding keeps the text-searchable document
    run_until(qloop, lambda: not library.busy and _state(library, a) is DocumentState.TEXT, SLOW)
    hits = qloop.run_until_complete(library.search_passages("saffron tariffs guild", limit=1))
    assert hits and hits[0].document_uri == uri_for(a)

    library.reingest([uri_for(a)])  # completes the missing vectors
    run_until(qloop, lambda: _state(library, a) is DocumentState.HYBRID, SLOW)

    library.delete([uri_for(a), uri_for(b)])
    run_until(qloop, lambda: library.entry(uri_for(a)) is None and library.entry(uri_for(b)) is None, SLOW)
    assert _stored_uris(qloop, library) == set()


def test_a_reopened_library_lists_its_documents(qloop, library, tmp_path, make_pdf, db_path, config, notifications):
    a = make_pdf(tmp_path / "a.pdf", "Kerosene shortages delayed the night convoys.")
    library.add_paths([a])
    run_until(qloop, lambda: _state(library, a) is DocumentState.TEXT or _state(library, a) is DocumentState.HYBRID, SLOW)
    library.cancel([uri_for(a)])
    run_until(qloop, lambda: not library.busy, SLOW)
    paused = _state(library, a) is DocumentState.TEXT  # its embedding was cancelled
    library.close()

    again = LibraryService(db_path, config, notifications)
    opened = []
    again.opened.connect(lambda: opened.append(True))
    again.start()
    run_until(qloop, lambda: bool(opened), SLOW)
    try:
        assert again.entry(uri_for(a)) is not None and again.entry(uri_for(a)).searchable
        # the user's Cancel is remembered (tests/app/test_library_second_hour.py); Re-ingest
        # completes the vectors
        if paused:
            again.reingest([uri_for(a)])
        run_until(qloop, lambda: _state(again, a) is DocumentState.HYBRID, SLOW)
    finally:
        again.close()


def test_a_closed_library_leaves_no_socket_notifier_behind(qloop, library):
    """Its file-system watcher is deleted on close, on the GUI thread. A QObject that owns a
    socket notifier and is destroyed on another thread (where the garbage collector may
    free the service) leaves the notifier registered with the GUI event loop on a closed
    descriptor: Qt then read freed memory, spun printing "QSocketNotifier: Invalid socket"
    until memory ran out, or aborted."""
    from PySide6.QtCore import QSocketNotifier

    assert library.findChildren(QSocketNotifier)  # the watcher's inotify descriptor
    qloop.run_until_complete(library.aclose())
    assert library.findChildren(QSocketNotifier) == []


def test_when_the_queue_drains_the_embedder_session_and_search_caches_are_released(qloop, library, tmp_path, make_pdf):
    a = make_pdf(tmp_path / "a.pdf", "The marmoset orchestra rehearsed in the glasshouse.")
    library.add_paths([a])
    run_until(qloop, lambda: _state(library, a) is DocumentState.HYBRID and not library.busy, SLOW)
    assert library.release_task is not None
    qloop.run_until_complete(library.release_task)  # the release runs on a worker thread
    embedder = library.client._embedder
    assert embedder is not None and embedder._session is None  # idle: no model session held
    assert library.client.store._vector_matrix is None
    hits = qloop.run_until_complete(library.search_passages("marmoset orchestra glasshouse", limit=3))
    assert hits and hits[0].document_uri == uri_for(a)
    assert embedder._session is not None  # loaded again by the question's embedding
