"""Bounds on the short fields that travel with every passage: titles, headings, metadata values.

Passage text is bounded where it is shown (``capabilities.formatting``: a passage at
``search.max_context_chars``, a return at 60,000 characters), but a document's title and its
headings ride along with *every* result of that document, so one 5 MB title would make every
search return and every later request 5 MB. These helpers cut such a field to a size no real
title or heading reaches, with a visible marker, wherever it enters model input (search
returns, the no-tool prompt, the compaction capsule, the MCP server's replies).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# A long real title is ~300 characters, a heading rarely 200; a source line of a result stays
# under MAX_TITLE_CHARS + MAX_HEADINGS * MAX_HEADING_CHARS (about 3,000 characters).
MAX_TITLE_CHARS = 500
MAX_HEADING_CHARS = 200
MAX_HEADINGS = 12
# one metadata value (an author list, a venue, a URL) shown to a model or an MCP client
MAX_METADATA_CHARS = 2_000


def bounded_field(text: str, limit: int = MAX_TITLE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with a note saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters not shown]"


def bounded_source(title: str, headings: Sequence[str]) -> list[str]:
    """A result's title and headings as shown: each cut, and at most ``MAX_HEADINGS`` headings
    (the innermost kept, with a marker for the ones left out)."""
    shown = [bounded_field(h, MAX_HEADING_CHARS) for h in headings[-MAX_HEADINGS:]]
    if len(headings) > MAX_HEADINGS:
        shown.insert(0, f"[{len(headings) - MAX_HEADINGS} outer headings not shown]")
    return [bounded_field(title), *shown]


def bounded_metadata(value: object, limit: int = MAX_METADATA_CHARS) -> object:
    """A metadata value (JSON-like) with every string cut to ``limit`` and every list to
    ``limit // 20`` items, so a 20,000-author record stays small."""
    if isinstance(value, str):
        return bounded_field(value, limit)
    if isinstance(value, dict):
        return {bounded_field(str(k), MAX_HEADING_CHARS): bounded_metadata(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = max(1, limit // 20)
        out = [bounded_metadata(v, limit) for v in value[:items]]
        if len(value) > items:
            out.append(f"[{len(value) - items:,} more not shown]")
        return out
    return value


# What a document's title and metadata strings may hold when stored: far above any real one,
# far below what would make every listing and every result heavy.
MAX_STORED_TITLE_CHARS = 2_000
MAX_STORED_METADATA_CHARS = 20_000


def bound_stored_fields(document: Any) -> None:
    """Cut a new document's title and its metadata strings (at any depth) before they are
    stored, with a note saying how much was left out. Lists keep their items (a record's
    authors are structured; the import that made them bounds their number)."""
    if document.title:
        document.title = bounded_field(document.title, MAX_STORED_TITLE_CHARS)
    document.metadata = _cut_strings(document.metadata, MAX_STORED_METADATA_CHARS)


def _cut_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return bounded_field(value, limit)
    if isinstance(value, dict):
        return {k: _cut_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut_strings(v, limit) for v in value]
    return value
