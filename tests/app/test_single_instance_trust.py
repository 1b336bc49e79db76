"""The single-instance socket talks to this account only (issue 32).

Another local account bound the predictable socket name first and received the paths a
second ``haiku-desk`` launch handed over; the running instance took messages of any size and
ingested folders it was sent without asking. The attacker here is a real process of another
uid (``nobody``, through ``setpriv``); the test needs root and skips cleanly without it.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from haiku_desk.single_instance import (
    MAX_MESSAGE_BYTES,
    InstanceServer,
    hand_over,
    peer_uid,
    server_name,
)

SQUATTER = r"""
import json, os, socket, sys, threading
shared, digest, victim_uid, record = sys.argv[1:5]
paths = [os.path.join(shared, f"haiku-desk-{victim_uid}-{digest}")]  # the name used before the fix
folder = os.path.join(shared, f"haiku-desk-{victim_uid}")  # the private folder, made first
try:
    os.mkdir(folder, 0o777); os.chmod(folder, 0o777)
except FileExistsError:
    pass
paths.append(os.path.join(folder, f"haiku-desk-{digest}"))
listeners = []
for path in paths:
    try:
        s = socket.socket(socket.AF_UNIX); s.bind(path); os.chmod(path, 0o777); s.listen(8)
        listeners.append(s)
    except OSError as exc:
        print("cannot bind", path, exc, file=sys.stderr)

def serve(s):
    while True:
        c, _ = s.accept()
        data = c.recv(65536)
        with open(record, "ab") as f:
            f.write(data)
        c.sendall(json.dumps({"ok": True, "pid": 1}).encode() + b"\n")
        c.close()

for s in listeners:
    threading.Thread(target=serve, args=(s,), daemon=True).start()
print(len(listeners), flush=True)
threading.Event().wait()
"""


def other_account() -> tuple[int, int]:
    if os.geteuid() != 0 or not shutil.which("setpriv") or not sys.platform.startswith("linux"):
        pytest.skip("needs root and setpriv (Linux) to run a process as another account")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no 'nobody' account to act as another user")
    return nobody.pw_uid, nobody.pw_gid


@pytest.fixture
def shared_tmp(monkeypatch):
    """A /tmp-like folder (sticky, world-writable) both accounts use, and a home for this one
    in it, so the test touches neither the real /tmp nor the real home."""
    folder = Path(tempfile.mkdtemp(prefix="hd-shared-", dir="/tmp"))
    folder.chmod(0o1777)
    home = folder / "home"
    home.mkdir(mode=0o755)
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_another_account_can_neither_receive_a_handover_nor_reach_the_app(qapp, shared_tmp, tmp_path):
    uid, gid = other_account()
    db = tmp_path / "library.lancedb"
    digest = hashlib.sha1(str(db.resolve()).encode()).hexdigest()[:16]
    record = shared_tmp / "received"
    squatter = subprocess.Popen(
        ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", sys.executable, "-c", SQUATTER,
         str(shared_tmp), digest, str(os.getuid()), str(record)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert squatter.stdout is not None
        listening = squatter.stdout.readline().strip()  # blocks until it listens (or dies)
        assert listening == "2", f"the squatter could not bind both names: {squatter.stderr.read() if squatter.stderr else ''}"

        secret = str(tmp_path / "salaries-2026.pdf")
        handover = hand_over(db, [secret])
        assert not handover.handed_over, handover.message
        assert not record.exists() or secret.encode() not in record.read_bytes()

        # this launch's socket lives in a private folder of its own (not the squatter's) ...
        name = Path(server_name(db))
        folder = name.parent
        info = os.lstat(folder)
        assert folder != shared_tmp / f"haiku-desk-{os.getuid()}"
        assert info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o700
        server = InstanceServer()
        received: list[list[str]] = []
        server.paths_received.connect(received.append)
        assert server.listen(db)
        # ... so the other account cannot even connect to it
        probe = subprocess.run(
            ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", sys.executable, "-c",
             "import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
             "try:\n    s.connect(sys.argv[1])\nexcept OSError as e:\n    print(type(e).__name__)\nelse:\n    print('connected')",
             server.name],
            capture_output=True, text=True, timeout=60,
        )
        assert probe.stdout.strip() == "PermissionError", probe.stdout + probe.stderr

        # Where both can meet anyway, each end checks the other's uid (SO_PEERCRED). The running
        # app's socket moved (by root) to a shared place: the other account reaches it, and is
        # dropped unheard.
        exposed = shared_tmp / "exposed-socket"
        os.rename(server.name, exposed)
        os.chmod(exposed, 0o777)  # the socket file itself is 0700 too (UserAccessOption)
        knock = subprocess.Popen(
            ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", sys.executable, "-c",
             "import json, socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
             "s.sendall(json.dumps({'paths': ['/etc/passwd']}).encode() + b'\\n')\n"
             "print(repr(s.recv(100)))",
             str(exposed)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        from PySide6.QtCore import QCoreApplication

        while knock.poll() is None:  # the app's event loop runs until the knock is answered
            QCoreApplication.processEvents()
        assert knock.stdout is not None and knock.stderr is not None
        answer, problem = knock.stdout.read().strip(), knock.stderr.read()
        assert answer == "b''" or "ConnectionResetError" in problem, answer + problem  # dropped unheard
        server.close()
        assert received == []
        # the squatter's socket moved into this account's private folder: the launch sees
        # another uid at the other end and hands nothing over
        squatted = shared_tmp / f"haiku-desk-{os.getuid()}" / f"haiku-desk-{digest}"
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(str(squatted))
            assert peer_uid(client.fileno()) == uid
        os.rename(squatted, server_name(db))
        refused = hand_over(db, [secret])
        assert not refused.handed_over and "Another account" in refused.message
        assert not record.exists() or secret.encode() not in record.read_bytes()
    finally:
        squatter.kill()
        squatter.wait(timeout=30)


def _talk(qtbot, server: InstanceServer, payload: bytes) -> socket.socket:
    client = socket.socket(socket.AF_UNIX)
    client.connect(server.name)
    client.setblocking(False)
    pending = [payload]

    def pushed() -> bool:
        qapp_process()
        while pending[0]:
            try:
                sent = client.send(pending[0][:65536])
            except BlockingIOError:
                return False
            except OSError:  # the server dropped us
                return True
            pending[0] = pending[0][sent:]
        return True

    qtbot.waitUntil(pushed, timeout=20_000)
    return client


def qapp_process() -> None:
    from PySide6.QtCore import QCoreApplication

    QCoreApplication.processEvents()


def test_an_oversized_message_is_refused_and_folders_wait_for_a_yes(qtbot, tmp_path):
    server = InstanceServer()
    assert server.listen(tmp_path / "library.lancedb")
    files: list[list[str]] = []
    folders: list[list[str]] = []
    server.paths_received.connect(files.append)
    server.folders_received.connect(folders.append)

    flood = _talk(qtbot, server, b"x" * (8 * MAX_MESSAGE_BYTES))

    def dropped() -> bool:
        qapp_process()
        try:
            return flood.recv(1) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    qtbot.waitUntil(dropped, timeout=20_000)
    flood.close()
    assert server._buffers == {} and files == [] and folders == []

    paper = tmp_path / "paper.pdf"
    paper.write_bytes(b"%PDF-1.4")
    private = tmp_path / "private-folder"
    private.mkdir()
    message = json.dumps({"paths": [str(paper), str(private), "relative/path", 7], "pid": 1}).encode() + b"\n"
    polite = _talk(qtbot, server, message)
    qtbot.waitUntil(lambda: (qapp_process(), bool(files) or bool(folders))[1], timeout=20_000)
    polite.close()
    server.close()
    assert files == [[str(paper)]]  # files are added at once ...
    assert folders == [[str(private)]]  # ... folders go to the window, which asks first


def test_without_a_private_folder_there_is_no_socket_at_all(qapp, shared_tmp, tmp_path):
    """Every candidate folder is unusable (a file in one's place, a symlink in the other's):
    the app neither listens nor hands over in a shared, guessable place."""
    from haiku_desk.single_instance import private_socket_dir

    (shared_tmp / f"haiku-desk-{os.getuid()}").write_text("not a folder")
    (shared_tmp / "home" / ".haiku-desk-run").symlink_to(shared_tmp)
    assert private_socket_dir() is None
    server = InstanceServer()
    assert not server.listen(tmp_path / "library.lancedb")
    assert not hand_over(tmp_path / "library.lancedb", [str(tmp_path / "a.pdf")]).handed_over
    assert sorted(p.name for p in shared_tmp.iterdir()) == [f"haiku-desk-{os.getuid()}", "home"]
