"""haiku.rag: grounded search and citations over a local LanceDB store.

The library never imports Qt; the desktop app (haiku_desk) builds on it.
"""

__version__ = "0.1.0"
