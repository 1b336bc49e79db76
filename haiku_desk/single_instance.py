"""One haiku-desk per library.

The running instance listens on a local socket named after its library (QLocalServer). A
second ``haiku-desk`` on the same library connects, hands over the paths it was given and
exits; the first adds them and comes to the front. If the socket is left by an instance that
is gone, the new one says so and takes over; if the holder is hung (it accepts nothing within
``ANSWER_TIMEOUT_MS``), the new one says so, stops it (terminate, then kill, through psutil on
every OS) and takes over.

Other accounts on the machine are kept out (issue 32: another user bound the predictable
name first and received the paths): on POSIX (Linux, macOS) the socket lives in a private
folder of this account (``private_socket_dir``: ``$XDG_RUNTIME_DIR/haiku-desk``, else
``<tmp>/haiku-desk-<uid>``, else ``~/.haiku-desk-run``; mode 0700, owned by this uid, not a
symlink, checked before every use; one another account made first is skipped). On Linux both
ends also check the other's uid (``SO_PEERCRED``, Linux only by nature) and refuse anyone
else; on macOS the private folder is the guard (nobody else can reach the socket file in
it). On Windows the socket is a named pipe, created with ``UserAccessOption`` (Qt gives the
pipe an ACL for this user only), so another account cannot connect to ours; and since pipe
names are machine-wide, first come first served, the name mixes in a random key kept in this
account's ``%LOCALAPPDATA%`` (``_account_secret``), so another account cannot guess it to
serve a pipe of that name first. (The client does not ask Windows who serves the pipe:
``GetNamedPipeServerProcessId`` would be the ``SO_PEERCRED`` equivalent; not done, and
nothing of the Windows path runs here.) A message is at most
``MAX_MESSAGE_BYTES``; folders handed over arrive on ``folders_received`` for the window to
confirm, files on ``paths_received``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket as pysocket
import stat
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger("haiku_desk")

CONNECT_TIMEOUT_MS = 1000
ANSWER_TIMEOUT_MS = 5000
STOP_GRACE_S = 5.0
LOCK_FILE = ".haiku-rag-writer.lock"  # haiku.rag.store.engine.LOCK_FILE (not imported: heavy)
# a hand-over is a JSON line of paths: 256 KiB holds a thousand long paths
MAX_MESSAGE_BYTES = 256 * 1024
MAX_PATHS = 1000
_SUN_PATH_MAX = 100  # a Unix socket's path must fit in sockaddr_un (108 bytes on Linux, 104 on macOS)


def _library_digest(db_path: str | os.PathLike[str]) -> str:
    text = str(db_path) if "://" in str(db_path) else str(Path(db_path).expanduser().resolve())
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def server_name(db_path: str | os.PathLike[str]) -> str:
    """The socket for a library: per user, per library location. On POSIX a full path in this
    account's private folder; elsewhere (Windows named pipes) a name, with the pipe limited to
    this user by ``UserAccessOption``."""
    name = f"haiku-desk-{_library_digest(db_path)}"
    if _named_pipes():
        import getpass

        # a name no other account can guess (pipe names are machine-wide, first come first
        # served): mixed with a secret kept in this account's own app-data folder
        secret = hashlib.sha256((_account_secret() + name).encode()).hexdigest()[:24]
        return f"haiku-desk-{getpass.getuser()}-{secret}"
    folder = private_socket_dir()
    if folder is None:  # never a shared, guessable place: no single-instance check at all
        raise OSError("no private folder for the single-instance socket (see the log)")
    return str(folder / name)


def _named_pipes() -> bool:
    """Whether local sockets are Windows named pipes (not socket files in a folder)."""
    return os.name != "posix"


def _account_secret() -> str:
    """A random key of this account, made once, in its local app-data folder (on Windows
    ``%LOCALAPPDATA%``, which only the account can read): what makes the pipe's name
    unguessable to other accounts, the role the private folder plays on POSIX."""
    import secrets

    base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "haiku-desk"
    key = base / "instance-key"
    try:
        return key.read_text().strip()
    except FileNotFoundError:
        pass
    base.mkdir(parents=True, exist_ok=True)
    fresh = secrets.token_hex(16)
    try:
        with open(key, "x") as handle:  # two first launches at once: one writes, both read it
            handle.write(fresh)
    except FileExistsError:
        pass
    for _ in range(50):
        text = key.read_text().strip()
        if text:
            return text
        time.sleep(0.01)  # the other launch is between creating and writing it
    raise OSError(f"{key} stays empty")


def private_socket_dir() -> Path | None:
    """This account's folder for the socket: the first candidate that is (or can be made) a
    real folder owned by this uid with no access for anyone else. A candidate another account
    created first is skipped (and logged), never used."""
    uid = os.getuid()
    candidates = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        candidates.append(Path(runtime) / "haiku-desk")
    candidates.append(Path(tempfile.gettempdir()) / f"haiku-desk-{uid}")
    candidates.append(Path.home() / ".haiku-desk-run")
    for folder in candidates:
        if len(str(folder)) + 30 > _SUN_PATH_MAX:
            continue
        problem = _make_private(folder, uid)
        if problem is None:
            return folder
        log.warning("not using %s for the single-instance socket: %s", folder, problem)
    return None


def _make_private(folder: Path, uid: int) -> str | None:
    """None when ``folder`` is a private folder of ``uid`` (made if missing), else why not."""
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        return f"cannot create it ({exc.strerror or exc})"
    try:
        info = os.lstat(folder)
    except OSError as exc:
        return f"cannot inspect it ({exc.strerror or exc})"
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        return "it is not a folder (a symlink or a file is in its place)"
    if info.st_uid != uid:
        return f"it belongs to another account (uid {info.st_uid})"
    if stat.S_IMODE(info.st_mode) & 0o077:
        try:
            os.chmod(folder, 0o700)
        except OSError as exc:
            return f"others can use it and it cannot be made private ({exc.strerror or exc})"
    return None


def peer_uid(descriptor: int) -> int | None:
    """The uid of the process at the other end of a connected local socket (Linux
    ``SO_PEERCRED``); None where the platform does not say (the private folder guards there)."""
    if not sys.platform.startswith("linux") or descriptor < 0 or not hasattr(pysocket, "SO_PEERCRED"):
        return None
    duplicate = pysocket.socket(fileno=os.dup(descriptor))
    try:
        creds = duplicate.getsockopt(pysocket.SOL_SOCKET, pysocket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    finally:
        duplicate.close()
    return struct.unpack("3i", creds)[1]


def _is_other_account(descriptor: int) -> bool:
    uid = peer_uid(int(descriptor))
    return uid is not None and uid != os.getuid()


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
    """Whether ``pid`` runs haiku-desk (its command line, read portably by psutil: /proc on
    Linux, sysctl on macOS, the PEB on Windows)."""
    import psutil

    try:
        cmdline = " ".join(psutil.Process(pid).cmdline())
    except (psutil.Error, OSError):
        return False
    return "haiku-desk" in cmdline or "haiku_desk" in cmdline


def _stop_process(pid: int) -> bool:
    """Terminate, then kill after a grace period (SIGTERM, SIGKILL on POSIX;
    TerminateProcess on Windows, through psutil); whether it is gone (a zombie counts)."""
    import psutil

    try:
        process = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return True
    for stop in (process.terminate, process.kill):
        try:
            stop()
        except psutil.NoSuchProcess:
            return True
        except psutil.Error:
            return False
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline:
            if _is_gone(process):
                return True
            time.sleep(0.05)
    return False


def _is_gone(process: Any) -> bool:
    import psutil

    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False


def hand_over(db_path: str | os.PathLike[str], paths: list[str]) -> Handover:
    """Give ``paths`` to the instance running on ``db_path``, if there is one that answers.

    Needs a QCoreApplication. Blocks for at most ``CONNECT_TIMEOUT_MS + ANSWER_TIMEOUT_MS``
    (plus the grace periods when a hung holder has to be stopped)."""
    try:
        name = server_name(db_path)
    except OSError as exc:
        log.warning("single-instance check skipped: %s", exc)
        return Handover(False)
    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(CONNECT_TIMEOUT_MS):
        error = socket.error()
        socket.abort()
        if error == QLocalSocket.LocalSocketError.ConnectionRefusedError:
            return Handover(False, "The haiku-desk that had this library open is gone (it did not quit cleanly); taking over.")
        return Handover(False)
    if _is_other_account(socket.socketDescriptor()):
        socket.abort()
        log.warning("the socket %s is held by another account; nothing handed over", name)
        return Handover(False, "Another account is listening where this library's haiku-desk would; nothing was handed over to it.")
    handed_paths = [str(Path(p).expanduser().resolve()) for p in paths]
    request = {"paths": handed_paths, "pid": os.getpid()}
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
        count = len(handed_paths)
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

    paths_received = Signal(list)  # files: added at once
    folders_received = Signal(list)  # folders: the window asks before adding what is below them
    activate_requested = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.newConnection.connect(self._accept)
        self.name = ""
        self._buffers: dict[QLocalSocket, bytes] = {}
        self._connections: set[QLocalSocket] = set()
        self.on_paths: Callable[[list[str]], None] | None = None

    def listen(self, db_path: str | os.PathLike[str]) -> bool:
        """Listen for the library at ``db_path`` (a previous library's name is released)."""
        if self._server.isListening():
            self.close()
        try:
            self.name = server_name(db_path)
        except OSError as exc:
            log.warning("not listening for other launches: %s", exc)
            return False
        if self._server.listen(self.name):
            return True
        QLocalServer.removeServer(self.name)  # a socket file left by an instance that is gone
        ok = self._server.listen(self.name)
        if not ok:
            log.warning("cannot listen on %s: %s", self.name, self._server.errorString())
        return ok

    def close(self) -> None:
        self._server.close()
        # connections still open go now, their signals cut first: one left to the server's
        # destructor would call back into Python while being destroyed
        for connection in list(self._connections):
            self._drop(connection)

    def _accept(self) -> None:
        while self._server.hasPendingConnections():
            connection = self._server.nextPendingConnection()
            if _is_other_account(connection.socketDescriptor()):
                log.warning("refused a hand-over from another account (uid %s)", peer_uid(int(connection.socketDescriptor())))
                connection.abort()
                connection.deleteLater()
                continue
            self._buffers[connection] = b""
            self._connections.add(connection)
            connection.readyRead.connect(lambda c=connection: self._read(c))
            connection.disconnected.connect(lambda c=connection: self._forget(c))

    def _forget(self, connection: QLocalSocket) -> None:
        self._buffers.pop(connection, None)
        self._connections.discard(connection)
        connection.deleteLater()

    def _drop(self, connection: QLocalSocket) -> None:
        self._buffers.pop(connection, None)
        self._connections.discard(connection)
        connection.readyRead.disconnect()
        connection.disconnected.disconnect()
        connection.abort()
        connection.deleteLater()

    def _read(self, connection: QLocalSocket) -> None:
        if connection not in self._buffers:  # already answered or refused
            connection.readAll()
            return
        data = self._buffers[connection] + bytes(connection.read(MAX_MESSAGE_BYTES + 1).data())
        if b"\n" not in data[:MAX_MESSAGE_BYTES]:
            if len(data) >= MAX_MESSAGE_BYTES:
                log.warning("refused a hand-over message over %d bytes", MAX_MESSAGE_BYTES)
                self._drop(connection)
            else:
                self._buffers[connection] = data
            return
        del self._buffers[connection]
        paths = _paths_of(data.split(b"\n", 1)[0])
        connection.write((json.dumps({"ok": True, "pid": os.getpid()}) + "\n").encode())
        connection.flush()
        folders = [p for p in paths if Path(p).is_dir()]
        files = [p for p in paths if p not in folders]
        log.info("a second launch handed over %d file(s) and %d folder(s)", len(files), len(folders))
        self.activate_requested.emit()
        if files:
            self.paths_received.emit(files)
        if folders:
            self.folders_received.emit(folders)


def _paths_of(line: bytes) -> list[str]:
    """The absolute paths a hand-over names (anything else in it is ignored)."""
    try:
        request = json.loads(line.decode())
        paths = request.get("paths", []) if isinstance(request, dict) else []
    except (ValueError, UnicodeDecodeError):
        return []
    if not isinstance(paths, list):
        return []
    return [p for p in paths[:MAX_PATHS] if isinstance(p, str) and os.path.isabs(p) and "\0" not in p]
