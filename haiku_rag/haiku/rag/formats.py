"""The file formats the library can ingest: the public face of ``haiku.rag.ingest.formats``.

Hosts (the app's file dialog and hints) derive their lists from here, so a converter added to
the registry shows up everywhere without a copied list. Imports nothing heavy.
"""

from haiku.rag.ingest.formats import document_extensions, extensions_by_kind, supported_extensions

__all__ = ["document_extensions", "extensions_by_kind", "supported_extensions"]
