"""Giving freed memory back to the operating system.

After ingestion the process's heap holds pages that Python, onnxruntime and Arrow have freed
but the allocators keep for reuse: glibc's malloc arenas (worker threads get their own) and
Arrow's memory pool. ``return_freed_memory`` asks both to hand them back, so resident memory
falls to what is still in use. It frees nothing that is referenced and is safe from any thread.

``limit_heap_fragmentation`` keeps large buffers out of the arenas in the first place (see there).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
import sys
from typing import Any

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


# glibc's mallopt parameter and the size from which allocations get their own mapping: its
# default, which glibc otherwise raises to the largest block freed so far (up to 32 MB).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
MMAP_THRESHOLD_BYTES = 128 * 1024
# glibc gives threads up to 8 arenas per core; LanceDB's runtime, Python's worker threads and
# onnxruntime's pool each take one, and small blocks freed in one arena are not reused by the
# others: a create_document loop grew ~34 KB a call of free-but-held memory in them (session 8,
# mallinfo2). Two arenas halved that growth there.
ARENA_MAX = 2


def _mallopt() -> Any:
    """glibc's ``mallopt``, or None (not Linux, or no glibc: musl has none)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.mallopt
    except (OSError, AttributeError):
        return None


def limit_malloc_arenas() -> None:
    """At most ``ARENA_MAX`` glibc malloc arenas in this process, unless ``MALLOC_ARENA_MAX``
    is set. Call it before the threads that would make more: each thread that allocates gets
    an arena of its own (64 MB of address space each), which matters where the address space
    is bounded (the parse worker's RLIMIT_AS, with OpenVINO's threads: ``ingest.ocr``)."""
    mallopt = _mallopt()
    if mallopt is not None and "MALLOC_ARENA_MAX" not in os.environ:
        mallopt(M_ARENA_MAX, ARENA_MAX)


@functools.cache
def limit_heap_fragmentation() -> bool:
    """Keep allocations from 128 KiB up in their own mappings, returned to the system when freed.

    glibc raises its mmap threshold to the size of each large block freed, so the buffers LanceDB
    allocates and frees for every write and lookup (manifests, data pages) soon come from the
    malloc arenas instead, where they fragment the heap for good: written one document at a
    time, the store's process grew by ~70 KB per document of freed-but-held heap (mallinfo2:
    138 MB free in the arenas after 1,250 store writes; 11 MB with the threshold fixed, RSS
    372 vs 304 MB). Setting the threshold turns the adjustment off. Process-wide and once;
    a ``MALLOC_MMAP_THRESHOLD_`` set in the environment wins (it turns the adjustment off too). Returns whether it was set."""
    mallopt = _mallopt()
    if mallopt is None or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    limit_malloc_arenas()
    # the trim threshold too (glibc raises it with the other): free heap above it goes back
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD_BYTES)
    )
