"""The child processes the library starts (the parse worker, the built-in model runtime): how
one is started, from a source install and from a frozen application, where ``sys.executable``
is the application itself and its entry point hands the process over by a flag."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable

# The frozen application's first argument that makes it the ``haiku-rag`` command (what the
# MCP configuration of a bundle launches: ``<app> --haiku-rag --db LIBRARY mcp``).
CLI_FLAG = "--haiku-rag"


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


def exit_with_parent() -> None:
    """In a child: exit soon after the parent dies, even in the middle of its work.

    (Not ``PR_SET_PDEATHSIG``: it fires when the parent *thread* that started the child exits,
    and children are started from pool threads that come and go.) Work stuck in C code that
    holds the GIL delays this until it returns; the parent kills its children itself on any
    orderly exit."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the watch was armed
        os._exit(1)
