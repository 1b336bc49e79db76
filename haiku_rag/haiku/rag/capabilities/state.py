"""What an evidence capability keeps between tool calls and between runs.

The state is JSON in the host's ``deps.state[<namespace>]`` so a host can persist it next to the
message history; the two only make sense together.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from haiku.rag.capabilities.ledger import CapabilityEvidenceRecord
from haiku.rag.ingest.records import Box
from haiku.rag.store.models import SearchResult

PICTURE_REF_PREFIX = "#/pictures/"


class Citation(BaseModel):
    """A registered citation: the passage the model saw, with what the app needs to show it.

    ``index`` is 1-based and stable for the conversation. ``boxes`` (PDF points, top-left
    origin, 1-based pages) outline the matched text and ``context_boxes`` the context around it.
    """

    index: int
    chunk_id: str
    chunk_ids: list[str] = Field(default_factory=list)
    document_id: str
    document_uri: str
    document_title: str | None = None
    content: str
    # the cited chunk's own text when ``content`` is a passage widened by context expansion
    # (a snippet for the host); None when ``content`` is that chunk's text alone
    matched_text: str | None = None
    headings: list[str] = Field(default_factory=list)
    page_numbers: list[int] = Field(default_factory=list)
    boxes: list[Box] = Field(default_factory=list)
    context_boxes: list[Box] = Field(default_factory=list)
    doc_item_refs: list[str] = Field(default_factory=list)
    picture_refs: list[str] = Field(default_factory=list)

    @classmethod
    def from_result(cls, index: int, chunk_id: str, result: SearchResult) -> Citation:
        """The citation of ``chunk_id`` within ``result``.

        When expansion merged several chunks into ``result``, the cited chunk's own lines are
        the match and its merged neighbours become context, so the citation opens on the page
        of the text actually cited.
        """
        boxes, context_boxes = result.boxes, result.context_boxes
        own = result.chunk_boxes.get(chunk_id)
        if own:
            # the cited passage (a hit, or a neighbour expansion showed) is the strong highlight;
            # everything else the result showed is context
            boxes = own
            context_boxes = [b for b in [*result.boxes, *result.context_boxes] if b not in own]
        return cls(
            index=index,
            chunk_id=chunk_id,
            chunk_ids=result.chunk_ids or [result.chunk_id],
            document_id=result.document_id,
            document_uri=result.document_uri,
            document_title=result.document_title,
            content=result.content,
            matched_text=result.chunk_texts.get(chunk_id),
            # the cited chunk's own path and pages, not those of the passage widened around it
            headings=result.chunk_headings.get(chunk_id, result.headings),
            page_numbers=result.chunk_pages.get(chunk_id, result.page_numbers),
            boxes=boxes,
            context_boxes=context_boxes,
            doc_item_refs=result.doc_item_refs,
            picture_refs=matched_picture_refs(result),
        )


def matched_picture_refs(result: SearchResult) -> list[str]:
    """Pictures that are part of the hit itself; pictures swept in as context are not its evidence."""
    refs = result.matched_refs or result.doc_item_refs
    return [ref for ref in refs if ref.startswith(PICTURE_REF_PREFIX)]


def result_chunk_ids(result: SearchResult) -> list[str]:
    """Every chunk id a result showed: its hits and the passages context expansion added."""
    return list(dict.fromkeys([result.chunk_id, *result.chunk_ids, *result.chunk_texts]))


class EvidenceState(BaseModel):
    """State shared by every evidence capability.

    ``document_filter``, ``citation_index``, ``evidence``, ``retrieved`` and
    ``opened_documents`` last for the conversation; ``citations`` (this question's, in citing
    order) and ``searches`` are cleared when a new question begins and kept when a question is
    resumed.

    Only what the conversation was shown can be cited: ``retrieved`` maps every chunk id a search
    returned (context passages included) to its document, and ``opened_documents`` are the
    documents whose files the analysis sandbox exposed (their chunk ids are listed there).
    """

    citation_index: dict[str, Citation] = Field(default_factory=dict)
    citations: list[str] = Field(default_factory=list)
    evidence: CapabilityEvidenceRecord = Field(default_factory=CapabilityEvidenceRecord)
    document_filter: str | None = None
    searches: dict[str, list[SearchResult]] = Field(default_factory=dict)
    retrieved: dict[str, str] = Field(default_factory=dict)
    opened_documents: list[str] = Field(default_factory=list)

    def begin_question(self, question: int) -> None:
        self.citations = []
        self.searches = {}
        self.evidence.begin_question(question)

    def add_search(self, query: str, results: list[SearchResult]) -> None:
        """Merge by chunk id, so repeating a query with a smaller limit never loses results."""
        known = self.searches.setdefault(query, [])
        seen = {r.chunk_id for r in known}
        known.extend(r for r in results if r.chunk_id not in seen)
        for result in results:
            for chunk_id in result_chunk_ids(result):
                self.retrieved[chunk_id] = result.document_id

    def open_document(self, document_id: str) -> None:
        """The sandbox exposed this document's files (and so its chunk ids) to the model."""
        if document_id not in self.opened_documents:
            self.opened_documents.append(document_id)

    def retrieved_chunk_ids(self) -> set[str]:
        """Every chunk id this question's searches returned, merged constituents included."""
        return {cid for results in self.searches.values() for r in results for cid in result_chunk_ids(r)}

    def find_result(self, chunk_id: str) -> SearchResult | None:
        for results in self.searches.values():
            for result in results:
                if chunk_id in result_chunk_ids(result):
                    return result
        return None

    def cite_result(self, chunk_id: str, result: SearchResult) -> Citation:
        """Cite a retrieved passage: a new chunk gets the next conversation-wide index, a chunk
        cited before keeps its index and takes the passage as this question saw it."""
        known = self.citation_index.get(chunk_id)
        index = known.index if known else len(self.citation_index) + 1
        self.citation_index[chunk_id] = Citation.from_result(index, chunk_id, result)
        return self._add_to_question(chunk_id)

    def cite_again(self, chunk_id: str) -> Citation:
        """Cite a chunk an earlier question cited, as it was registered then."""
        return self._add_to_question(chunk_id)

    def _add_to_question(self, chunk_id: str) -> Citation:
        if chunk_id not in self.citations:
            self.citations.append(chunk_id)
        return self.citation_index[chunk_id]
