"""Giving freed memory back to the operating system.

After ingestion the process's heap holds pages that Python, onnxruntime and Arrow have freed
but the allocators keep for reuse: glibc's malloc arenas (worker threads get their own) and
Arrow's memory pool. ``return_freed_memory`` asks both to hand them back, so resident memory
falls to what is still in use. It frees nothing that is referenced and is safe from any thread.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import sys

log = logging.getLogger("haiku.rag")


@functools.cache
def _malloc_trim() -> object | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim  # glibc only; musl has none
    except (OSError, AttributeError):
        return None


def return_freed_memory() -> None:
    """Return freed heap pages (glibc malloc, Arrow's pool) to the operating system."""
    if "pyarrow" in sys.modules:
        try:
            sys.modules["pyarrow"].default_memory_pool().release_unused()
        except Exception as exc:  # an allocator without it: nothing to give back
            log.debug("arrow pool release skipped: %s", exc)
    trim = _malloc_trim()
    if trim is not None:
        trim(0)  # type: ignore[operator]
