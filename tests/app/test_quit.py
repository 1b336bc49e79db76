"""Quit and relaunch with the real window and a real library: quitting with an ingest running
and a delete queued asks once, stops every process of the app, keeps the unfinished work in
the library and does it at the next start; a second launch hands its paths to the running
instance; failed files keep their rows (and their next step) across restarts; an unexpected
error is reported as one, with its traceback in the log; a locked store is never "damaged".

The running ingest is held deterministically by ``library.queue.ingest_progress_hook``: it
blocks the ingest's worker thread at the parse worker's first page until the ingest is
cancelled (no timing).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pdf_factory
import pytest
from qt_helpers import run_until

from app.main_window_helpers import open_main_window
from haiku.rag.errors import IngestCategory
from haiku_desk.services import create_services
from haiku_desk.services.failures import NextStep
from haiku_desk.services.library import DocumentState, LibraryService, uri_for
from haiku_desk.views.main_window import DEFAULT_SIZE

SLOW = 180


def child_processes() -> list[int]:
    """Live (non-zombie) child processes of this test process, from /proc."""
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            children.append(int(entry))
    return children


def _start(qloop, library: LibraryService) -> None:
    opened = []
    library.opened.connect(lambda: opened.append(True))
    library.start()
    run_until(qloop, lambda: bool(opened), SLOW)


class ParseGate:
    """Holds an ingest at the parse worker's first page report until it is cancelled."""

    def __init__(self) -> None:
        self.entered = threading.Event()

    def __call__(self, progress, token) -> None:  # in the ingest's worker thread
        from haiku.rag.operations import Stage

        if progress.stage is Stage.PARSING:
            self.entered.set()
            token._event.wait()  # until Quit cancels the ingest


@pytest.fixture
def app_window(qtbot, qapp, qloop, db_path, config):
    qapp.setQuitOnLastWindowClosed(False)  # as the app does: the shutdown quits, not the close
    services = create_services(db_path, config)
    _start(qloop, services.library)
    window = open_main_window(qtbot, services, *DEFAULT_SIZE, manage_shutdown=True)
    yield window
    if not window.quit_flow.shutting_down:
        qloop.run_until_complete(services.library.aclose())
        services.pages.close()
    qapp.setQuitOnLastWindowClosed(True)


def test_quit_with_an_ingest_and_a_delete_pending_stops_every_process_and_resumes_the_work(
    qtbot, qloop, app_window, tmp_path, make_pdf, db_path, config
):
    window, library = app_window, app_window.services.library
    a = make_pdf(tmp_path / "a.pdf", "Harbour pilots logged the tide tables.")
    library.add_paths([a])
    run_until(qloop, lambda: library.entry(uri_for(a)).state is DocumentState.HYBRID, SLOW)

    gate = ParseGate()
    library.queue.ingest_progress_hook = gate
    b = tmp_path / "b.pdf"
    pdf_factory.make_report_pdf(b)
    library.add_paths([b])
    run_until(qloop, lambda: gate.entered.is_set(), SLOW)
    from haiku.rag.ingest.isolation import shared_worker

    worker_pid = shared_worker().pid
    assert worker_pid is not None and worker_pid in child_processes()

    # Delete asks first; confirmed, the row shows its pending state while the queue is busy.
    pane = window.library_pane
    pane.confirm_delete([uri_for(a)])
    assert pane.delete_dialog is not None and pane.delete_dialog.text() == "Delete “a” from the library?"
    delete_button = next(b for b in pane.delete_dialog.buttons() if b.text() == "Delete")
    delete_button.click()
    assert library.entry(uri_for(a)).state is DocumentState.DELETING
    assert library.entry(uri_for(a)).state_label == "deleting…"

    window.quit_action.trigger()  # Ctrl+Q; closing the window is the same
    dialog = window.quit_flow.dialog
    assert dialog is not None and window.isVisible()
    assert dialog.text().startswith("2 jobs are not done: Adding b.pdf (running), 1 delete")
    assert dialog.defaultButton() is window.quit_flow.stop_button  # the default: stop and quit
    finished = []
    window.quit_flow.finished.connect(finished.append)
    dialog.defaultButton().click()
    run_until(qloop, lambda: bool(finished), 30)

    assert finished == [True]  # stopped in time: nothing left running
    assert not window.isVisible()
    assert worker_pid not in child_processes() and child_processes() == []
    kept = (db_path / "haiku-desk" / "queue.json").read_text()
    assert uri_for(b) in kept and '"delete"' in kept

    again = LibraryService(db_path, config, window.services.notifications)
    _start(qloop, again)
    try:
        assert again.entry(uri_for(a)) is not None  # listed at once, its delete resumed
        run_until(qloop, lambda: again.entry(uri_for(a)) is None, SLOW)
        run_until(qloop, lambda: again.entry(uri_for(b)) is not None and again.entry(uri_for(b)).searchable, SLOW)
        run_until(qloop, lambda: not again.busy, SLOW)
        stored = {d.uri for d in qloop.run_until_complete(again.client.list_documents())}
        assert stored == {uri_for(b)}
    finally:
        qloop.run_until_complete(again.aclose())
    assert '"jobs": []' in (db_path / "haiku-desk" / "queue.json").read_text()

    from haiku.rag.doctor import run_doctor
    from haiku.rag.store.engine import Store

    store = Store(str(db_path))
    try:
        report = run_doctor(store)
        assert report.ok, [c for c in report.checks if not c.ok]
    finally:
        store.close()


def test_quitting_with_nothing_pending_does_not_ask(qtbot, qloop, app_window):
    finished = []
    app_window.quit_flow.finished.connect(finished.append)
    app_window.close()
    assert app_window.quit_flow.dialog is None
    run_until(qloop, lambda: bool(finished), 30)
    assert not app_window.isVisible() and not app_window.services.library.is_open


def test_a_second_launch_hands_its_paths_to_the_running_instance(qloop, db_path, tmp_path, make_pdf):
    from haiku_desk.single_instance import InstanceServer

    server = InstanceServer()
    assert server.listen(db_path)
    received, raised = [], []
    server.paths_received.connect(received.append)
    server.activate_requested.connect(lambda: raised.append(True))
    a = make_pdf(tmp_path / "a.pdf", "Second launch.")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    process = subprocess.Popen(
        [sys.executable, "-m", "haiku_desk.app", "--db", str(db_path), str(a)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        run_until(qloop, lambda: process.poll() is not None, 120)
    finally:
        if process.poll() is None:
            process.kill()
    out, err = process.communicate()
    server.close()
    assert process.returncode == 0, err
    assert "already open on this library" in out and "handed over 1 path" in out
    assert received == [[str(a.resolve())]] and raised == [True]
    assert not (db_path / "haiku-desk").exists()  # the second launch opened nothing


def test_a_failed_files_row_survives_a_restart_with_its_next_step(qtbot, qloop, db_path, config, tmp_path):
    from haiku_desk.services.notifications import Notifications
    from haiku_desk.views.library_pane import LibraryPane
    from haiku_desk.views.notification_area import NotificationArea

    notifications = Notifications()
    library = LibraryService(db_path, config, notifications)
    _start(qloop, library)
    damaged = tmp_path / "x.pdf"
    damaged.write_bytes(b"this is not a pdf at all" * 50)
    locked = tmp_path / "locked.pdf"
    pdf_factory.make_encrypted_pdf(locked, "walnut")
    library.add_paths([damaged, locked])
    run_until(qloop, lambda: all(library.entry(uri_for(p)).state is DocumentState.FAILED for p in (damaged, locked)), SLOW)
    reason = library.entry(uri_for(damaged)).reason
    assert not reason.startswith("x.pdf")  # the row names the file: the reason does not again
    qloop.run_until_complete(library.aclose())

    notifications = Notifications()
    area = NotificationArea(notifications)
    again = LibraryService(db_path, config, notifications)
    pane = LibraryPane(again)
    qtbot.addWidget(pane)
    assert pane.empty_hint.text() == "Opening the library…"  # not the empty-library hint
    _start(qloop, again)
    try:
        bad, lock = again.entry(uri_for(damaged)), again.entry(uri_for(locked))
        assert bad.state is DocumentState.FAILED and bad.category is IngestCategory.DAMAGED
        assert bad.reason == reason and bad.state_label == "failed: damaged"
        assert lock.category is IngestCategory.PASSWORD_REQUIRED
        assert bad.next_steps == (NextStep.REINGEST, NextStep.REMOVE)
        assert lock.next_steps == (NextStep.PASSWORD, NextStep.REMOVE)

        pane.show()
        pane.select_keys([bad.key])
        buttons = pane.next_step_buttons
        assert pane.next_steps_box.isVisibleTo(pane)
        assert buttons[NextStep.REINGEST].isVisibleTo(pane) and buttons[NextStep.REMOVE].isVisibleTo(pane)
        assert not buttons[NextStep.PASSWORD].isVisibleTo(pane)
        pane.select_keys([lock.key])
        assert buttons[NextStep.PASSWORD].isVisibleTo(pane)

        notifications.error("x.pdf: stale", key=bad.key)  # a banner about the row
        assert [w.notice.key for w in area.visible_notices] == [bad.key]
        pane.select_keys([bad.key])
        buttons[NextStep.REMOVE].click()  # dealt with: the row, its record and its banner go
        assert again.entry(bad.key) is None
        assert area.visible_notices == []
        assert uri_for(damaged) not in (db_path / "haiku-desk" / "failed.json").read_text()
    finally:
        qloop.run_until_complete(again.aclose())

    third = LibraryService(db_path, config, Notifications())
    _start(qloop, third)
    try:
        assert third.entry(uri_for(damaged)) is None and third.entry(uri_for(locked)).needs_password
    finally:
        qloop.run_until_complete(third.aclose())


def test_an_unexpected_ingest_error_says_so_and_logs_its_traceback(qloop, library, tmp_path, make_pdf, monkeypatch, config):
    import logging

    from haiku.rag.logs import configure_logging
    from haiku.rag.store import documents

    log_file = configure_logging("haiku-desk", config.storage.data_dir)
    try:

        def broken(*args, **kwargs):
            raise LookupError("no such shelf 7")

        monkeypatch.setattr(documents, "write_document", broken)
        a = make_pdf(tmp_path / "a.pdf", "A page that will not be stored.")
        library.add_paths([a])
        run_until(qloop, lambda: library.entry(uri_for(a)).state is DocumentState.FAILED, SLOW)
        entry = library.entry(uri_for(a))
        assert entry.category is IngestCategory.UNEXPECTED
        assert entry.reason.startswith("unexpected error: LookupError")
        assert entry.state_label == "failed: unexpected error" and "damaged" not in entry.hint
        for handler in logging.getLogger().handlers:
            handler.flush()
        text = log_file.read_text()
        assert "Traceback (most recent call last)" in text and "LookupError: no such shelf 7" in text
    finally:
        for handler in [h for h in logging.getLogger().handlers if getattr(h, "_haiku_log", False)]:
            logging.getLogger().removeHandler(handler)
            handler.close()


def test_a_locked_store_is_never_reported_as_a_damaged_file(qloop, library, tmp_path, make_pdf, monkeypatch, db_path, config):
    from haiku.rag.errors import StoreLockedError
    from haiku.rag.store import documents
    from haiku_desk.services.notifications import Notifications

    # A second service on a library the first one holds: the open says who holds it.
    notifications = Notifications()
    second = LibraryService(db_path, config, notifications)
    failed = []
    second.open_failed.connect(failed.append)
    second.start()
    run_until(qloop, lambda: bool(failed), SLOW)
    assert isinstance(failed[0], StoreLockedError) and failed[0].holder_pid == os.getpid()
    message = notifications.history[-1].message
    assert f"in use by another program (pid {os.getpid()})" in message and "damaged" not in message
    second.close()

    # An ingest that meets a lock (a writer outside the app) is "library locked", not damaged.
    def locked(*args, **kwargs):
        raise StoreLockedError("the store is being written by pid 4242", holder_pid=4242)

    monkeypatch.setattr(documents, "write_document", locked)
    a = make_pdf(tmp_path / "a.pdf", "Locked out.")
    library.add_paths([a])
    run_until(qloop, lambda: library.entry(uri_for(a)).state is DocumentState.FAILED, SLOW)
    entry = library.entry(uri_for(a))
    assert entry.category is IngestCategory.STORE_LOCKED and entry.state_label == "failed: library locked"
    assert "pid 4242" in entry.reason and "damaged" not in entry.reason + entry.hint
    assert entry.next_steps == (NextStep.REINGEST, NextStep.REMOVE)


HUNG_HOLDER = """
import fcntl, os, sys, time
from PySide6.QtCore import QCoreApplication
from PySide6.QtNetwork import QLocalServer
from haiku_desk.single_instance import server_name

app = QCoreApplication([])
db = sys.argv[1]
os.makedirs(db, exist_ok=True)
lock = open(os.path.join(db, ".haiku-rag-writer.lock"), "a+")
fcntl.flock(lock, fcntl.LOCK_EX)
lock.seek(0); lock.truncate(); lock.write(f"pid {os.getpid()}"); lock.flush()
server = QLocalServer()
assert server.listen(server_name(db))
print("ready", flush=True)
time.sleep(600)  # hung: its event loop never runs, so it never answers
"""


def test_a_hung_holder_is_named_stopped_and_taken_over(qloop, db_path, config, tmp_path):
    from haiku_desk.single_instance import hand_over

    holder = subprocess.Popen([sys.executable, "-c", HUNG_HOLDER, str(db_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        handover = hand_over(db_path, [str(tmp_path / "a.pdf")])
        assert not handover.handed_over and handover.took_over_from == holder.pid
        assert f"(pid {holder.pid}) did not answer; stopped it and took over" in handover.message
        assert holder.wait(timeout=10) is not None
    finally:
        if holder.poll() is None:
            holder.kill()
    from haiku_desk.services.notifications import Notifications

    library = LibraryService(db_path, config, Notifications())
    _start(qloop, library)  # the lock is free again: the library opens for writing
    qloop.run_until_complete(library.aclose())


class _FakeRuntime:
    closed = False

    def close(self) -> None:
        self.closed = True


def test_quitting_stops_a_loaded_built_in_model(monkeypatch) -> None:
    """The app ends with os._exit (skipping atexit), so its shutdown unloads the built-in
    model itself: the provider's loaded runtime is closed and forgotten."""
    from haiku.rag.local_models import provider
    from haiku_desk.app import stop_model_runtime

    runtime = _FakeRuntime()
    monkeypatch.setattr(provider, "_current", runtime)
    embedding = _FakeRuntime()  # an embedding model file (issue 36 item 5)
    monkeypatch.setattr(provider, "_embedding", {Path("/models/nomic-embed.gguf"): embedding})
    stop_model_runtime()
    assert runtime.closed and provider._current is None
    assert embedding.closed and provider._embedding == {}


def test_quitting_without_the_built_in_model_imports_nothing_for_it() -> None:
    code = (
        "import sys; from haiku_desk.app import stop_model_runtime; stop_model_runtime(); "
        "print('haiku.rag.local_models.provider' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, check=True)
    assert result.stdout.strip() == "False", result.stderr
