"""The child processes the library starts (the parse worker, the built-in model runtime): how
one is started, from a source install and from a frozen application, where ``sys.executable``
is the application itself and its entry point hands the process over by a flag."""

from __future__ import annotations

import sys
from collections.abc import Callable


def child_command(flag: str, module: str, fd: int) -> list[str]:
    """The command line of a child whose ``module._worker_main(fd)`` talks over socket ``fd``."""
    if getattr(sys, "frozen", False):
        return [sys.executable, flag, str(fd)]
    return [sys.executable, "-c", f"from {module} import _worker_main; _worker_main({fd})"]


def serve_if_requested(flag: str, worker_main: Callable[[int], None], argv: list[str] | None = None) -> None:
    """In a frozen application's entry point: when started as ``APP FLAG FD``, be that child
    (``worker_main(FD)``) and exit; otherwise return at once."""
    argv = sys.argv if argv is None else argv
    if len(argv) >= 3 and argv[1] == flag:
        worker_main(int(argv[2]))
        sys.exit(0)
