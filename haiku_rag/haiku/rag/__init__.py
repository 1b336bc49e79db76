"""haiku.rag: grounded search and citations over a local LanceDB store.

The library never imports Qt; the desktop app (haiku_desk) builds on it.
"""

import os

# onnxruntime (the default embedder, the PDF layout model) writes a device id and a telemetry
# queue to ~/.cache/Microsoft/DeveloperTools/.onnxruntime/ when it is imported, which
# ``disable_telemetry_events()`` does not prevent; this variable does. Set here so every
# process (the app, the CLI, the parse worker) has it before any import of onnxruntime.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
# PyMuPDF prints MuPDF's errors about damaged files ("invalid ICC colorspace", "cmsOpenProfile
# FromMem failed") on stdout, where `haiku-rag ... --json` writes its JSON: one such PDF made
# add-src's output unreadable. They go to the log (logger haiku.rag.mupdf, warning) instead.
os.environ.setdefault("PYMUPDF_MESSAGE", "logging:name=haiku.rag.mupdf,level=30")

__version__ = "0.1.0"
