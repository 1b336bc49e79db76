"""Helpers for tests that start child processes (the model runtime, the embedder's child)."""

from __future__ import annotations

import os


def gone(pid: int) -> bool:
    """Ended (a zombie not yet reaped by whoever adopted it counts: it holds no memory)."""
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (ProcessLookupError, FileNotFoundError):
        return True
