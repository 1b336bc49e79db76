"""The file formats the library can ingest: the public face of ``haiku.rag.ingest.formats``.

Hosts (the app's file dialog and hints) derive their lists from here, so a converter added to
the registry shows up everywhere without a copied list. Imports nothing heavy.
"""

from __future__ import annotations

from pathlib import Path

from haiku.rag.ingest.formats import document_extensions, extensions_by_kind, supported_extensions

__all__ = [
    "content_hash",
    "dialog_filters",
    "document_extensions",
    "extensions_by_kind",
    "source_files",
    "supported_extensions",
]


def dialog_filters() -> list[tuple[str, list[str]]]:
    """What a file dialog offers, as (label, extensions) pairs: the documents a person adds by
    hand first, then every other type that ingests (plain text variants, source code, data).
    Together they are exactly the supported extensions: nothing offered is refused, and a
    type that is refused is not offered."""
    documents = document_extensions()
    rest = sorted(set(supported_extensions()) - set(documents))
    return [("Documents", documents), ("Text and source code", rest)]


def source_files(folder: str | Path) -> list[Path]:
    """The files below ``folder`` that adding it would consider, sorted (hidden entries and
    links leaving it skipped; unsupported types listed too, so a report accounts for all)."""
    from haiku.rag.ingest.pipeline import iter_source_files

    return iter_source_files(Path(folder))


def content_hash(data: bytes) -> str:
    """The hash the library keeps of a file's bytes (``Document.content_hash``): equal means
    the file is the one that was ingested."""
    from haiku.rag.ingest.pipeline import content_hash as digest

    return digest(data)
