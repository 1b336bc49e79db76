"""How the parse worker and the model runtime's child are started and talked to (issue 33,
item 4): the same code path on every OS. No ``pass_fds``/``fork``/signals: a control pipe (the
child's stdin: its first line says where to connect, later lines are commands, its end means
the parent has gone) and a loopback connection that the child must open with the session's
token."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest

from haiku.rag import child_process
from haiku.rag.child_process import TOKEN_BYTES, send_line, start_child
from haiku.rag.ingest import isolation

ECHO_CHILD = """
import os
from haiku.rag.child_process import connect_to_parent
conn = None
def line(text):
    conn.send(("line", text))
conn = connect_to_parent(line)
conn.send(("hello", os.getpid()))
while True:
    conn.send(("echo", conn.recv()))
"""


def test_a_child_talks_to_its_parent_and_ends_when_the_control_pipe_does():
    process, conn = start_child([sys.executable, "-c", ECHO_CHILD], connect_timeout=120)
    try:
        assert conn.poll(60) and conn.recv() == ("hello", process.pid)
        conn.send({"a": [1, 2.5, "three"]})
        assert conn.poll(60) and conn.recv() == ("echo", {"a": [1, 2.5, "three"]})
        assert send_line(process, "cancel 7")
        assert conn.poll(60) and conn.recv() == ("line", "cancel 7")
        # the parent's end of stdin closes (as when the parent dies): the child exits at once
        assert process.stdin is not None
        process.stdin.close()
        assert process.wait(timeout=60) == 1
    finally:
        child_process.kill(process)


def test_a_connection_without_the_token_is_dropped_and_the_child_still_gets_through():
    token = os.urandom(TOKEN_BYTES)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        with socket.create_server(("127.0.0.1", 0)) as listener:
            address = listener.getsockname()
            got: list[bytes] = []

            def clients() -> None:
                stranger = socket.create_connection(address)
                stranger.sendall(b"\x80" * TOKEN_BYTES)  # wrong bytes (a pickle opcode: never unpickled)
                got.append(stranger.recv(1))  # b"": dropped without a word
                stranger.close()
                child = socket.create_connection(address)
                child.sendall(token)
                child.sendall(b"\x00\x00\x00\x02ok")  # one multiprocessing frame
                got.append(child.recv(1))
                child.close()

            thread = threading.Thread(target=clients)
            thread.start()
            conn = child_process._accept(listener, token, sleeper, timeout=60)
            assert conn.recv_bytes() == b"ok"
            conn.close()
            thread.join(30)
        assert got == [b"", b""]
    finally:
        child_process.kill(sleeper)


def test_a_child_that_ends_before_connecting_is_reported_at_once():
    with pytest.raises(child_process.ChildStartError, match="ended before connecting"):
        start_child([sys.executable, "-c", "raise SystemExit(3)"], connect_timeout=600)


def test_the_parse_worker_is_started_without_posix_only_arguments(monkeypatch, config):
    """What the parse worker's Popen gets is what Windows and macOS accept too."""
    seen: list[dict] = []
    real = subprocess.Popen

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", spy)
    worker = isolation.ParseWorker()
    try:
        new = worker.prepare(b"# Portable\n\nSame path everywhere.", timeout=120, filename="p.md", uri="p.md", config=config)
    finally:
        worker.stop()
    assert "Same path everywhere." in new.content
    (kwargs,) = seen
    assert not {"pass_fds", "preexec_fn"} & set(kwargs)
    assert kwargs["stdin"] is subprocess.PIPE
    expected = {"creationflags"} if sys.platform == "win32" else {"start_new_session"}
    assert expected <= set(kwargs)


def test_the_bundles_entry_point_serves_as_the_parse_worker(config):
    """In the bundle the worker is ``<app> --haiku-rag-parse-worker`` (no descriptor to pass):
    the entry script (packaging/haiku_desk_main.py) becomes the worker and parses."""
    from pathlib import Path

    entry = Path(__file__).resolve().parents[2] / "packaging" / "haiku_desk_main.py"

    class BundleWorker(isolation.ParseWorker):
        def _command(self) -> list[str]:
            return [sys.executable, str(entry), isolation.WORKER_FLAG]

    worker = BundleWorker()
    try:
        new = worker.prepare(b"# Bundled\n\nParsed by the entry point.", timeout=120, filename="b.md", uri="b.md", config=config)
    finally:
        worker.stop()
    assert "Parsed by the entry point." in new.content


def test_the_parse_worker_ends_with_a_parent_that_dies_without_cleaning_up(tmp_path):
    """The app ends with os._exit (no atexit): the worker sees its stdin end and exits."""

    import psutil

    script = (
        "import os\n"
        "from haiku.rag.config import AppConfig\n"
        "from haiku.rag.ingest.isolation import shared_worker\n"
        "worker = shared_worker()\n"
        "worker.prepare(b'# A\\n\\nB.', timeout=120, filename='a.md', uri='a.md', config=AppConfig())\n"
        "print(worker.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    pid = int(done.stdout.split()[0])
    try:
        psutil.Process(pid).wait(timeout=60)  # not a fixed delay: returns as soon as it is gone
    except psutil.NoSuchProcess:
        pass
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
