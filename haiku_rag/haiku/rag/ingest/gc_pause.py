"""Pausing Python's cyclic garbage collector around allocation-heavy ingest work."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector during a conversion (``convert_pdf``) or a
    whole parse + chunk (``prepare_document``).

    A conversion allocates hundreds of thousands of containers (PyMuPDF's text dicts, our
    line records, docling-core's pydantic items) that form no reference cycles and are
    freed by reference counting alone; but their number keeps triggering full collections
    that rescan the whole heap and find nothing. Pausing the collector made ``fast`` mode
    15-30 % faster on the real-PDF set, with the same peak memory; pausing it for the item
    records, the chunking and the JSON dump too (the document is alive through them, so
    every collection rescanned it) roughly halved those stages.

    The pause is process-wide: while a conversion runs (seconds), cycles made by other
    threads wait for the next collection instead of being freed at once. The collector is
    re-enabled only if it was enabled before; with conversions in several threads it comes
    back when the one that paused it ends."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
