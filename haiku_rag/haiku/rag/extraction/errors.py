"""The errors of evidence tables: each says what is wrong and changes nothing."""

from __future__ import annotations

from haiku.rag.errors import HaikuRAGError


class ExtractionError(HaikuRAGError):
    """A table name, a column or a row does not fit (bad type, unknown id, no documents)."""


class TableNotFoundError(ExtractionError):
    """No evidence table with that id or name in this library."""


class TableExistsError(ExtractionError):
    """An evidence table with that name already exists in this library."""
