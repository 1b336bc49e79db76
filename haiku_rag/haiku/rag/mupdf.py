"""One lock for every in-process PyMuPDF call.

MuPDF keeps global state that PyMuPDF does not guard: two threads rendering at once, even
different documents, can crash the process (seen in the app: a page render on its render
thread while an export rendered on a worker thread). Parsing runs in its own worker process
(``ingest.isolation``); everything else that opens, renders or encodes with PyMuPDF in this
process — page renders, PNG encoding, picture crops, decryption — holds ``MUPDF_LOCK``.
Renders take tens of milliseconds, so serialising them costs little.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

MUPDF_LOCK = threading.RLock()

_OPTIONAL_EXTRAS = ("pymupdf.layout", "pymupdf4llm")


def import_pymupdf() -> Any:
    """PyMuPDF for rendering and encoding, without the extras its ``__init__`` loads.

    ``import pymupdf`` also imports ``pymupdf.layout`` (which builds an ONNX layout model) and
    ``pymupdf4llm`` when they are installed: seconds on a busy machine and memory held for the
    process's life, while a render or a PNG encode uses neither. Only pymupdf's own optional
    import of them is skipped; an explicit ``import pymupdf.layout`` later (the ``layout``
    parse mode, in the parse worker) still works. Call it holding ``MUPDF_LOCK``.
    """
    loaded = sys.modules.get("pymupdf")
    if loaded is not None:
        return loaded
    skipped = [name for name in _OPTIONAL_EXTRAS if name not in sys.modules]
    for name in skipped:
        sys.modules[name] = None  # type: ignore[assignment]  # makes pymupdf's `try: import` fail
    try:
        import pymupdf
    finally:
        for name in skipped:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
    return pymupdf
