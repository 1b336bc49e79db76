"""Advisory file locks for the store's writer lock and reader leases, on every OS.

POSIX (Linux, macOS): ``flock`` on the whole file. Windows has no ``fcntl``: ``LockFileEx`` /
``UnlockFileEx`` (kernel32, through ctypes) on one byte far beyond the end of the file, which
gives the same shared/exclusive, blocking/non-blocking semantics per open handle, and leaves
the file's text (the writer's pid, read by the process that is refused) readable: Windows locks
are mandatory on the range they cover, so the range must not cover the text. The Windows path
is written to the API's documentation and has not run here (no Windows machine).

Each function takes an open file object; ``lock_exclusive_nb`` raises ``BlockingIOError`` when
another handle holds the lock (as ``fcntl.flock`` with ``LOCK_NB`` does)."""

from __future__ import annotations

import sys
from typing import IO, Any

# Windows: the locked byte, past any text the file will ever hold
_WIN_OFFSET_HIGH = 0x7FFFFFFF


def lock_exclusive_nb(handle: IO[Any]) -> None:
    """Take the exclusive lock now, or raise ``BlockingIOError`` if it is held elsewhere."""
    if sys.platform == "win32":
        _win_lock(handle, exclusive=True, blocking=False)
        return
    import fcntl

    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)


def lock_shared(handle: IO[Any]) -> None:
    """Take a shared lock, waiting while an exclusive one is held. Raises OSError."""
    if sys.platform == "win32":
        _win_lock(handle, exclusive=False, blocking=True)
        return
    import fcntl

    fcntl.flock(handle, fcntl.LOCK_SH)


def unlock(handle: IO[Any]) -> None:
    """Release this handle's lock (closing the file releases it too)."""
    if sys.platform == "win32":
        _win_unlock(handle)
        return
    import fcntl

    fcntl.flock(handle, fcntl.LOCK_UN)


# --- Windows ------------------------------------------------------------------------------------

_LOCKFILE_FAIL_IMMEDIATELY = 0x1
_LOCKFILE_EXCLUSIVE_LOCK = 0x2
_ERROR_LOCK_VIOLATION = 33
_ERROR_IO_PENDING = 997


def _overlapped() -> Any:
    import ctypes
    from ctypes import wintypes

    class Overlapped(ctypes.Structure):
        _fields_ = [
            ("Internal", ctypes.c_size_t),
            ("InternalHigh", ctypes.c_size_t),
            ("Offset", wintypes.DWORD),
            ("OffsetHigh", wintypes.DWORD),
            ("hEvent", wintypes.HANDLE),
        ]

    overlapped = Overlapped()
    overlapped.Offset = 0
    overlapped.OffsetHigh = _WIN_OFFSET_HIGH
    return overlapped


def _win_handle(handle: IO[Any]) -> int:
    import msvcrt

    return int(msvcrt.get_osfhandle(handle.fileno()))  # type: ignore[attr-defined]


def _win_lock(handle: IO[Any], *, exclusive: bool, blocking: bool) -> None:
    import ctypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    flags = (_LOCKFILE_EXCLUSIVE_LOCK if exclusive else 0) | (0 if blocking else _LOCKFILE_FAIL_IMMEDIATELY)
    overlapped = _overlapped()
    if kernel32.LockFileEx(_win_handle(handle), flags, 0, 1, 0, ctypes.byref(overlapped)):
        return
    error = ctypes.get_last_error()  # type: ignore[attr-defined]
    if error in (_ERROR_LOCK_VIOLATION, _ERROR_IO_PENDING):
        raise BlockingIOError(error, "the lock is held by another handle")
    raise ctypes.WinError(error)  # type: ignore[attr-defined]


def _win_unlock(handle: IO[Any]) -> None:
    import ctypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    overlapped = _overlapped()
    if not kernel32.UnlockFileEx(_win_handle(handle), 0, 1, 0, ctypes.byref(overlapped)):
        raise ctypes.WinError(ctypes.get_last_error())  # type: ignore[attr-defined]
