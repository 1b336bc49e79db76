"""What reads return: documents, chunks and search results (JSON-serialisable)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from haiku.rag.ingest.records import Box


class Document(BaseModel):
    id: str
    uri: str
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    content_hash: str = ""
    mime_type: str = ""
    page_count: int = 0
    size_bytes: int = 0
    chunk_count: int = 0
    index_state: Literal["text", "hybrid"] = "text"
    generation: str = ""
    created_at: str = ""
    updated_at: str = ""

    @property
    def display_name(self) -> str:
        return self.title or self.uri.rsplit("/", 1)[-1] or self.id


class Chunk(BaseModel):
    id: str
    document_id: str
    order: int
    content: str
    headings: list[str] = Field(default_factory=list)
    labels: list[str] = Field(default_factory=list)
    doc_item_refs: list[str] = Field(default_factory=list)
    page_numbers: list[int] = Field(default_factory=list)
    boxes: list[Box] = Field(default_factory=list)


class SearchResult(BaseModel):
    """A ranked passage with everything needed to cite and highlight it.

    ``chunk_ids`` lists every chunk merged into this result by context expansion; ``chunk_id``
    is the best-scoring one. ``boxes`` are in PDF points, top-left origin, 1-based pages.
    """

    chunk_id: str
    chunk_ids: list[str] = Field(default_factory=list)
    score: float
    content: str
    document_id: str
    document_uri: str
    document_title: str | None = None
    document_meta: dict[str, Any] = Field(default_factory=dict)
    order: int = 0
    headings: list[str] = Field(default_factory=list)
    labels: list[str] = Field(default_factory=list)
    doc_item_refs: list[str] = Field(default_factory=list)
    page_numbers: list[int] = Field(default_factory=list)
    boxes: list[Box] = Field(default_factory=list)
    # refs of this result's own chunks (as opposed to context swept in by expansion)
    matched_refs: list[str] = Field(default_factory=list)
    # boxes of context items swept in by expansion (highlighted faintly)
    context_boxes: list[Box] = Field(default_factory=list)
    # each merged chunk's own boxes, by chunk id (set when expansion merged several chunks), so
    # a citation of one constituent highlights that chunk and not its neighbours
    chunk_boxes: dict[str, list[Box]] = Field(default_factory=dict)
    # each chunk's own text when expansion widened or merged the content, for a snippet of
    # exactly what was cited
    chunk_texts: dict[str, str] = Field(default_factory=dict)
    # each chunk's own pages and heading path when expansion widened or merged the content:
    # ``page_numbers`` and ``headings`` then describe the passage (what the model read), while
    # a citation of one chunk names that chunk's pages and the path above it
    chunk_pages: dict[str, list[int]] = Field(default_factory=dict)
    chunk_headings: dict[str, list[str]] = Field(default_factory=dict)

    @property
    def source_label(self) -> str:
        return self.document_title or self.document_uri
