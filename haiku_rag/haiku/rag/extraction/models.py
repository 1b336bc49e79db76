"""What an evidence table is made of: its columns (questions), its rows (documents), its cells.

A table's rows are documents and its columns are questions; each cell is that question answered
from that row's document alone, with a short quote and its citations (page and boxes). These
are plain Pydantic models: they round-trip through JSON (the store keeps them so) and a host
shows them as they are.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field, ValidationError

from haiku.rag.citations import Citation, matched_pages
from haiku.rag.extraction.errors import ExtractionError

ColumnType = Literal["text", "number", "yes-no", "category"]
CellStatus = Literal["grounded", "not_found", "low_confidence", "edited"]
CellMode = Literal["tools", "fallback", "search-only", "record"]  # record: the bibliographic record

COLUMN_TYPES: tuple[str, ...] = get_args(ColumnType)
MAX_NAME_CHARS = 200
MAX_QUESTION_CHARS = 2_000
MAX_CATEGORIES = 50
# a column name of at most this many words, without a question mark, is a label, not a question
LABEL_WORDS = 6

STATUS_LABELS: dict[str, str] = {
    "grounded": "Grounded",
    "not_found": "Not found in this document",
    "low_confidence": "Low confidence",
    "edited": "Edited by hand",
}

_TYPE_INSTRUCTIONS = {
    "text": "Answer in a few words or one short sentence.",
    "number": "Answer with the number as the document writes it, followed by its unit.",
    "yes-no": "Answer with yes, no or unclear, then a few words of reason.",
}


def check_text(what: str, value: object, limit: int) -> str:
    """``value`` stripped, or an ``ExtractionError`` naming what is wrong with it."""
    if not isinstance(value, str):
        raise ExtractionError(f"{what} must be text, got {type(value).__name__}")
    cleaned = " ".join(value.split())
    if not cleaned:
        raise ExtractionError(f"{what} cannot be empty")
    if len(cleaned) > limit:
        raise ExtractionError(f"{what} has at most {limit} characters ({len(cleaned)} given)")
    if any(unicodedata.category(ch) == "Cc" for ch in cleaned):
        raise ExtractionError(f"{what} cannot contain control characters: {cleaned!r}")
    return cleaned


class Column(BaseModel):
    """One question asked of every row's document."""

    id: str = ""  # stable within the table ("c1", "c2", ...), given by the library
    name: str
    question: str = ""  # "" -> the name is the question
    type: ColumnType = "text"
    unit: str | None = None  # number columns: the expected unit
    categories: list[str] = Field(default_factory=list)  # category columns: the allowed values

    @classmethod
    def of(cls, value: Column | str | dict[str, Any]) -> Column:
        """A checked column from a column, a name (a text column asking it) or a dict."""
        if isinstance(value, Column):
            column = value
        elif isinstance(value, str):
            column = cls(name=value)
        elif isinstance(value, dict):
            kind = value.get("type", "text")
            if kind not in COLUMN_TYPES:
                raise ExtractionError(f"column type must be one of {', '.join(COLUMN_TYPES)}, not {kind!r}")
            try:
                column = cls.model_validate(value)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "column"
                raise ExtractionError(f"not a column definition: {where}: {first['msg']}") from None
        else:
            raise ExtractionError(f"a column is a name or a definition, not {type(value).__name__}")
        return column.checked()

    def checked(self) -> Column:
        name = check_text("a column name", self.name, MAX_NAME_CHARS)
        question = " ".join(self.question.split()) if isinstance(self.question, str) else ""
        if len(question) > MAX_QUESTION_CHARS:
            raise ExtractionError(
                f"a column's question has at most {MAX_QUESTION_CHARS} characters ({len(question)} given)"
            )
        if self.type not in COLUMN_TYPES:
            raise ExtractionError(
                f"column type must be one of {', '.join(COLUMN_TYPES)}, not {self.type!r}"
            )
        categories = list(dict.fromkeys(" ".join(c.split()) for c in self.categories if c and c.strip()))
        if self.type == "category":
            if len(categories) < 2:
                raise ExtractionError(
                    f"the category column {name!r} needs at least two categories ({len(categories)} given)"
                )
            if len(categories) > MAX_CATEGORIES:
                raise ExtractionError(f"a category column has at most {MAX_CATEGORIES} categories")
        elif categories:
            raise ExtractionError(f"only a category column has categories ({name!r} is {self.type})")
        unit = " ".join(self.unit.split()) if self.unit else None
        if unit and self.type != "number":
            raise ExtractionError(f"only a number column has a unit ({name!r} is {self.type})")
        return self.model_copy(
            update={"name": name, "question": question, "categories": categories, "unit": unit or None}
        )

    @property
    def asked(self) -> str:
        """The question itself: the column's question, else its name."""
        return self.question or self.name

    @property
    def prompt(self) -> str:
        """The question as it is put for each document: the question and its type's instruction."""
        question = self.asked
        if "?" not in question and len(question.split()) <= LABEL_WORDS:  # a label: "Sample size"
            question = f"{question.rstrip('.:')}: what does this document say?"
        if self.type == "category":
            instruction = "Answer with exactly one of: " + "; ".join(self.categories) + "."
        else:
            instruction = _TYPE_INSTRUCTIONS[self.type]
            if self.type == "number" and self.unit:
                instruction += f" The expected unit is {self.unit}."
        return f"{question}\n{instruction}"


class Cell(BaseModel):
    """One question answered from one document."""

    document_id: str
    column_id: str
    value: str = ""  # "" when not found; search-only: the best passage's excerpt
    answer: str = ""  # the model's whole answer (markers removed); search-only: the passage
    number: float | None = None  # number columns: the figure read from the value
    unit: str | None = None  # number columns: the unit written after it
    quote: str = ""  # a short supporting quote, taken from the cited text itself
    citations: list[Citation] = Field(default_factory=list)  # all of this row's document
    status: CellStatus = "grounded"
    mode: CellMode = "search-only"
    reasons: list[str] = Field(default_factory=list)  # why low confidence or not found
    edited_from: str | None = None  # an edited cell: the value before the edit
    question: str = ""  # the prompt it was answered with
    updated_at: str = ""

    @property
    def pages(self) -> list[int]:
        """The pages its citations name, in citing order."""
        seen: dict[int, None] = {}
        for citation in self.citations:
            for page in matched_pages(citation):
                seen.setdefault(page, None)
        return list(seen)

    @property
    def page_labels(self) -> dict[int, str]:
        """The printed labels of its citations' pages, where they differ from the PDF's."""
        labels: dict[int, str] = {}
        for citation in self.citations:
            labels.update(citation.page_labels)
        return labels

    @property
    def first_page(self) -> str:
        """The page it names first, as a reader cites it ("p. 22"); "" without pages."""
        from haiku.rag.citations import pages_label

        return pages_label(self.pages[:1], self.page_labels)

    @property
    def status_label(self) -> str:
        if self.mode == "search-only" and self.status == "grounded":
            return "Best passage (no model)"
        if self.mode == "record" and self.status == "grounded":
            return "From the bibliographic record"
        return STATUS_LABELS[self.status]


def cell_key(document_id: str, column_id: str) -> str:
    """The key of a cell within its table (row, then column)."""
    return f"{document_id}:{column_id}"


class ExtractionTable(BaseModel):
    """A table: its rows (documents), its columns (questions) and, once loaded, its cells."""

    id: str
    name: str
    columns: list[Column] = Field(default_factory=list)
    document_ids: list[str] = Field(default_factory=list)
    # Rows whose document was removed from the library since: kept, with their filled cells
    # and quotes, marked removed; never filled again, and not counted in ``total``/``filled``
    # (a citation of theirs opens its kept quote, as a chat's does).
    removed_document_ids: list[str] = Field(default_factory=list)
    collection: str | None = None  # where the rows came from
    created_at: str = ""
    updated_at: str = ""
    cells: dict[str, Cell] = Field(default_factory=dict)  # cell_key -> cell

    def cell(self, document_id: str, column_id: str) -> Cell | None:
        return self.cells.get(cell_key(document_id, column_id))

    def removed_title(self, document_id: str) -> str:
        """What a removed row's document was called: its cells' citations remember it."""
        for column in self.columns:
            cell = self.cell(document_id, column.id)
            for citation in cell.citations if cell is not None else ():
                if citation.document_title and citation.document_title.strip():
                    return " ".join(citation.document_title.split())
                if citation.document_uri:
                    from urllib.parse import unquote

                    return unquote(citation.document_uri.rstrip("/").rsplit("/", 1)[-1])
        return document_id

    def column(self, column_id: str) -> Column:
        for column in self.columns:
            if column.id == column_id:
                return column
        known = ", ".join(f"{c.id} ({c.name})" for c in self.columns) or "none"
        raise ExtractionError(f"the table {self.name!r} has no column {column_id!r} (columns: {known})")

    def column_named(self, name_or_id: str) -> Column:
        """A column by id, else by name (case-insensitive)."""
        for column in self.columns:
            if column.id == name_or_id:
                return column
        wanted = name_or_id.strip().casefold()
        for column in self.columns:
            if column.name.casefold() == wanted:
                return column
        return self.column(name_or_id)

    def selection(
        self, rows: list[str] | tuple[str, ...] | None = None, columns: list[str] | tuple[str, ...] | None = None
    ) -> list[tuple[str, str]]:
        """(document id, column id) of the selected cells, row by row; unknown ids refused."""
        chosen_rows = self.document_ids if rows is None else list(dict.fromkeys(rows))
        unknown = [r for r in chosen_rows if r not in self.document_ids]
        if unknown:
            raise ExtractionError(f"the table {self.name!r} has no row for document {', '.join(unknown[:5])}")
        chosen_columns = (
            [c.id for c in self.columns] if columns is None else [self.column(c).id for c in dict.fromkeys(columns)]
        )
        return [(r, c) for r in chosen_rows for c in chosen_columns]

    def missing(
        self, rows: list[str] | tuple[str, ...] | None = None, columns: list[str] | tuple[str, ...] | None = None
    ) -> list[tuple[str, str]]:
        """The selected cells not filled yet."""
        return [(r, c) for r, c in self.selection(rows, columns) if cell_key(r, c) not in self.cells]

    @property
    def total(self) -> int:
        return len(self.document_ids) * len(self.columns)

    @property
    def filled(self) -> int:
        return sum(1 for r, c in self.selection() if cell_key(r, c) in self.cells)

    def without_cells(self) -> ExtractionTable:
        return self.model_copy(update={"cells": {}})
