"""One haiku-desk per library.

The running instance listens on a local socket named after its library (QLocalServer). A
second ``haiku-desk`` on the same library connects, hands over the paths it was given and
exits; the first adds them and comes to the front. If the socket is left by an instance that
is gone, the new one says so and takes over; if the holder is hung (it accepts nothing within
``ANSWER_TIMEOUT_MS``), the new one says so, stops it (SIGTERM, then SIGKILL) and takes over.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger("haiku_desk")

CONNECT_TIMEOUT_MS = 1000
ANSWER_TIMEOUT_MS = 5000
STOP_GRACE_S = 5.0
LOCK_FILE = ".haiku-rag-writer.lock"  # haiku.rag.store.engine.LOCK_FILE (not imported: heavy)


def server_name(db_path: str | os.PathLike[str]) -> str:
    """The socket name for a library: per user, per library location."""
    text = str(db_path) if "://" in str(db_path) else str(Path(db_path).expanduser().resolve())
    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
    return f"haiku-desk-{os.getuid()}-{digest}"


@dataclass(frozen=True)
class Handover:
    """What happened when this launch looked for a running instance."""

    handed_over: bool  # the running instance took the paths: this launch should exit
    message: str = ""  # what to tell the person (empty: nothing to say)
    took_over_from: int | None = None  # the pid of a hung holder that was stopped


def lock_holder_pid(db_path: str | os.PathLike[str]) -> int | None:
    """The pid written in the library's writer lock file (the last writer, maybe gone)."""
    if "://" in str(db_path):
        return None
    try:
        text = (Path(db_path) / LOCK_FILE).read_text().strip()
    except OSError:
        return None
    last = text.split()[-1] if text else ""
    return int(last) if last.isdigit() else None


def _is_haiku_desk(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return "haiku-desk" in cmdline or "haiku_desk" in cmdline


def _stop_process(pid: int) -> bool:
    """SIGTERM, then SIGKILL after a grace period; whether it is gone."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            if _is_zombie(pid):
                return True
            time.sleep(0.05)
    return False


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def hand_over(db_path: str | os.PathLike[str], paths: list[str]) -> Handover:
    """Give ``paths`` to the instance running on ``db_path``, if there is one that answers.

    Needs a QCoreApplication. Blocks for at most ``CONNECT_TIMEOUT_MS + ANSWER_TIMEOUT_MS``
    (plus the grace periods when a hung holder has to be stopped)."""
    name = server_name(db_path)
    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(CONNECT_TIMEOUT_MS):
        error = socket.error()
        socket.abort()
        if error == QLocalSocket.LocalSocketError.ConnectionRefusedError:
            return Handover(False, "The haiku-desk that had this library open is gone (it did not quit cleanly); taking over.")
        return Handover(False)
    request = {"paths": [str(Path(p).expanduser().resolve()) for p in paths], "pid": os.getpid()}
    socket.write((json.dumps(request) + "\n").encode())
    socket.flush()
    answer = b""
    deadline = time.monotonic() + ANSWER_TIMEOUT_MS / 1000
    while b"\n" not in answer and time.monotonic() < deadline:
        if socket.waitForReadyRead(100):
            answer += bytes(socket.readAll().data())
        elif socket.state() != QLocalSocket.LocalSocketState.ConnectedState:
            break
    socket.abort()
    try:
        reply = json.loads(answer.decode().splitlines()[0]) if b"\n" in answer else None
    except (ValueError, IndexError):
        reply = None
    if reply and reply.get("ok"):
        pid = reply.get("pid")
        count = len(request["paths"])
        handed = f"; handed over {count} path{'s' if count != 1 else ''}" if count else ""
        return Handover(True, f"haiku-desk is already open on this library (pid {pid}): brought it to the front{handed}.")
    pid = lock_holder_pid(db_path)
    if pid is None or pid == os.getpid() or not _is_haiku_desk(pid):
        return Handover(False, "The haiku-desk that has this library open does not answer; taking over.")
    log.warning("the haiku-desk holding %s (pid %d) does not answer; stopping it", db_path, pid)
    gone = _stop_process(pid)
    how = "stopped it" if gone else "could not stop it"
    return Handover(False, f"The haiku-desk holding this library (pid {pid}) did not answer; {how} and took over.", pid)


class InstanceServer(QObject):
    """The running instance's end: paths handed over by later launches arrive as ``paths_received``
    and ``activate_requested`` asks the window to come to the front."""

    paths_received = Signal(list)
    activate_requested = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.newConnection.connect(self._accept)
        self.name = ""
        self._buffers: dict[QLocalSocket, bytes] = {}
        self.on_paths: Callable[[list[str]], None] | None = None

    def listen(self, db_path: str | os.PathLike[str]) -> bool:
        """Listen for the library at ``db_path`` (a previous library's name is released)."""
        if self._server.isListening():
            self._server.close()
        self.name = server_name(db_path)
        if self._server.listen(self.name):
            return True
        QLocalServer.removeServer(self.name)  # a socket file left by an instance that is gone
        ok = self._server.listen(self.name)
        if not ok:
            log.warning("cannot listen on %s: %s", self.name, self._server.errorString())
        return ok

    def close(self) -> None:
        self._server.close()

    def _accept(self) -> None:
        while self._server.hasPendingConnections():
            connection = self._server.nextPendingConnection()
            self._buffers[connection] = b""
            connection.readyRead.connect(lambda c=connection: self._read(c))
            connection.disconnected.connect(lambda c=connection: self._forget(c))

    def _forget(self, connection: QLocalSocket) -> None:
        self._buffers.pop(connection, None)
        connection.deleteLater()

    def _read(self, connection: QLocalSocket) -> None:
        data = self._buffers.get(connection, b"") + bytes(connection.readAll().data())
        self._buffers[connection] = data
        if b"\n" not in data:
            return
        try:
            request = json.loads(data.decode().splitlines()[0])
            paths = [str(p) for p in request.get("paths", [])]
        except (ValueError, AttributeError):
            paths = []
        connection.write((json.dumps({"ok": True, "pid": os.getpid()}) + "\n").encode())
        connection.flush()
        log.info("a second launch handed over %d path(s)", len(paths))
        self.activate_requested.emit()
        if paths:
            self.paths_received.emit(paths)
