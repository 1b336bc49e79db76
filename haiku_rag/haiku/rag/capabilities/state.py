"""What an evidence capability keeps between tool calls and between runs.

The state is JSON in the host's ``deps.state[<namespace>]`` so a host can persist it next to the
message history; the two only make sense together.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from haiku.rag.capabilities.ledger import CapabilityEvidenceRecord
from haiku.rag.citations import Citation
from haiku.rag.store.models import SearchResult


def result_chunk_ids(result: SearchResult) -> list[str]:
    """Every chunk id a result showed: its hits and the passages context expansion added."""
    return list(dict.fromkeys([result.chunk_id, *result.chunk_ids, *result.chunk_texts]))


class EvidenceState(BaseModel):
    """State shared by every evidence capability.

    The scope, ``document_ids`` (the documents in scope, as answering sets it) and
    ``document_filter`` (SQL over document fields, as a host or a command line may give it;
    both when both are set), ``citation_index``, ``evidence``, ``retrieved`` and
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
    document_ids: list[str] | None = None
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
