"""The child processes the library starts (the parse worker, the built-in model runtime): how
one is started and how it talks to its parent, the same way on Linux, macOS and Windows.

The child is a fresh interpreter (never a fork: the parent runs LanceDB and ONNX threads),
started with ``subprocess.Popen`` from a source install (``python -c``) and from a frozen
application (``sys.executable`` is the application itself, whose entry point hands the process
over by a flag: ``serve_if_requested``). No POSIX-only call is involved (no ``pass_fds``, no
``fork``, no signals): the parent and the child talk over two channels that every OS has:

- **control: the child's stdin**, a pipe only the parent holds the other end of. Its first line
  tells the child where to connect and the session's token; each later line is a command
  (``on_line``: the parse worker's "cancel N"); end of file means the parent has gone (it died,
  or closed the pipe), and the child exits at once. This replaces ``getppid`` polling and
  ``PR_SET_PDEATHSIG`` (Linux only, and it fires when the parent *thread* ends).
- **data: a loopback TCP connection** (127.0.0.1, a port the system picks) carrying
  ``multiprocessing.connection`` messages (length-prefixed pickles; ``Connection`` over a socket
  works on Windows too, as multiprocessing's own ``Listener`` uses it). Every local account can
  reach a loopback port, so the first frame the child sends is the 32-byte token, read raw
  (never unpickled) and compared in constant time; a connection without it is dropped and the
  parent keeps waiting for its child.

Why not stdout for data: the child's libraries and C code write to fd 1 (the parse worker moves
it to stderr), which would corrupt frames. Why not ``multiprocessing`` spawn: it needs the
caller's ``__main__`` to be importable and guarded, which scripts using the library are not
asked to do.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

# The frozen application's first argument that makes it the ``haiku-rag`` command (what the
# MCP configuration of a bundle launches: ``<app> --haiku-rag --db LIBRARY mcp``).
CLI_FLAG = "--haiku-rag"

TOKEN_BYTES = 32
LOOPBACK = "127.0.0.1"
ACCEPT_POLL_SECONDS = 0.1


class ChildStartError(OSError):
    """The child ended, or did not connect, before the connection was made."""


def child_command(flag: str, module: str) -> list[str]:
    """The command line of a child whose ``module._worker_main()`` serves it."""
    if getattr(sys, "frozen", False):
        return [sys.executable, flag]
    return [sys.executable, "-c", f"from {module} import _worker_main; _worker_main()"]


def serve_if_requested(flag: str, worker_main: Callable[[], None], argv: list[str] | None = None) -> None:
    """In a frozen application's entry point: when started as ``APP FLAG``, be that child
    (``worker_main()``) and exit; otherwise return at once."""
    argv = sys.argv if argv is None else argv
    if len(argv) >= 2 and argv[1] == flag:
        worker_main()
        sys.exit(0)


def child_environment() -> dict[str, str]:
    """The parent's environment, with its import path (a source checkout, a test's
    ``sys.path``) as ``PYTHONPATH``, as multiprocessing does."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def own_group() -> dict[str, Any]:
    """``Popen`` arguments that keep a terminal's Ctrl-C for the parent only: a new session on
    POSIX, a new process group on Windows. There, a console program (``python.exe``) started
    by a parent without a console (``pythonw``, a windowed app) would open a console window:
    ``CREATE_NO_WINDOW`` then (not otherwise: the child's stderr is the parent's console)."""
    if sys.platform == "win32":
        flags = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
        if sys.stderr is None and not getattr(sys, "frozen", False):
            flags |= subprocess.CREATE_NO_WINDOW  # type: ignore[attr-defined]
        return {"creationflags": flags}
    return {"start_new_session": True}


def start_child(
    command: list[str],
    *,
    connect_timeout: float,
    stdout: Any = None,
    stderr: Any = None,
) -> tuple[subprocess.Popen[bytes], Connection]:
    """Start ``command`` and return it with the data connection it made back.

    Raises ``ChildStartError`` (the child is killed) if it ends or does not connect within
    ``connect_timeout`` seconds."""
    token = secrets.token_bytes(TOKEN_BYTES)
    with socket.create_server((LOOPBACK, 0)) as listener:
        port = listener.getsockname()[1]
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=stderr,
            env=child_environment(),
            **own_group(),
        )
        try:
            assert process.stdin is not None
            try:
                process.stdin.write(f"{LOOPBACK} {port} {token.hex()}\n".encode())
                process.stdin.flush()
            except OSError as exc:  # it ended at once (a broken pipe)
                process.wait(timeout=10)
                raise ChildStartError(f"the child process ended before connecting (exit code {process.returncode})") from exc
            conn = _accept(listener, token, process, connect_timeout)
        except BaseException:
            kill(process)
            raise
    return process, conn


def _accept(
    listener: socket.socket, token: bytes, process: subprocess.Popen[bytes], timeout: float
) -> Connection:
    listener.settimeout(ACCEPT_POLL_SECONDS)
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise ChildStartError(f"the child process ended before connecting (exit code {process.returncode})")
        if time.monotonic() >= deadline:
            raise ChildStartError(f"the child process did not connect within {timeout:g} s")
        try:
            sock, _ = listener.accept()
        except TimeoutError:
            continue
        sock.settimeout(max(1.0, min(10.0, deadline - time.monotonic())))
        try:
            offered = _recv_exact(sock, TOKEN_BYTES)
        except OSError:
            offered = b""
        if not hmac.compare_digest(offered, token):
            sock.close()  # someone else on this machine: keep waiting for the child
            continue
        sock.settimeout(None)
        return Connection(sock.detach())


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def kill(process: subprocess.Popen[bytes], wait: float = 10.0) -> None:
    """Kill the child (if still running), close its stdin and reap it."""
    if process.poll() is None:
        with contextlib.suppress(OSError):
            process.kill()
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=wait)


def send_line(process: subprocess.Popen[bytes] | None, line: str) -> bool:
    """Write one control line to the child's stdin; False if it is gone."""
    if process is None or process.stdin is None:
        return False
    try:
        process.stdin.write(line.encode() + b"\n")
        process.stdin.flush()
        return True
    except (OSError, ValueError):
        return False


def connect_to_parent(on_line: Callable[[str], None] | None = None) -> Connection:
    """In the child: read the first line of stdin, connect, prove the token, and watch stdin
    for the rest of the process's life (``on_line`` for each command; exit on end of file,
    even in the middle of work: the parent has gone)."""
    stdin = _stdin_fd()
    first = _read_line(stdin)
    if first is None:
        os._exit(1)  # the parent went away before telling us anything
    host, port, token = first.split()
    sock = socket.create_connection((host, int(port)))
    sock.sendall(bytes.fromhex(token))
    conn = Connection(sock.detach())

    def watch() -> None:
        while True:
            line = _read_line(stdin)
            if line is None:
                os._exit(1)
            if on_line is not None and line:
                on_line(line)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    return conn


def _stdin_fd() -> int:
    """The child's stdin, as the file descriptor the parent's pipe arrived on."""
    try:
        return sys.stdin.fileno() if sys.stdin is not None else 0
    except (OSError, ValueError, AttributeError):
        return 0  # a windowed frozen app has no sys.stdin object, but the handle is there


_pending = bytearray()


def _read_line(fd: int) -> str | None:
    """One line from ``fd``, unbuffered beyond it (``None`` at end of file)."""
    while b"\n" not in _pending:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            chunk = b""
        if not chunk:
            return None
        _pending.extend(chunk)
    line, _, rest = bytes(_pending).partition(b"\n")
    _pending[:] = rest
    return line.decode("ascii", "replace").strip()
