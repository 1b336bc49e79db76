"""One lock for every in-process PyMuPDF call.

MuPDF keeps global state that PyMuPDF does not guard: two threads rendering at once, even
different documents, can crash the process (seen in the app: a page render on its render
thread while an export rendered on a worker thread). Parsing runs in its own worker process
(``ingest.isolation``); everything else that opens, renders or encodes with PyMuPDF in this
process — page renders, PNG encoding, picture crops, decryption — holds ``MUPDF_LOCK``.
Renders take tens of milliseconds, so serialising them costs little.
"""

from __future__ import annotations

import threading

MUPDF_LOCK = threading.RLock()
