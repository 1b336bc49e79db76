"""The evidence ledger: what each question retrieved and what its answer declared.

Identities come from the conversation itself. A *question* is the number of messages in the
history when it arrived; an *epoch* is the message count when an outcome happened (a search
returned, a citation was registered). Every capability derives both from the same history, so
records kept by different capabilities compare without a shared counter. That only holds while
the history is append-only, which is checked: a count below one already recorded raises
``ValueError``.

Records are pydantic models because they live in the host's ``state`` dict as JSON, next to the
message history they describe.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CitationStatus = Literal["missing", "grounded", "ungrounded"]


class EvidenceRef(BaseModel):
    """One piece of evidence an answer relies on."""

    model_config = ConfigDict(frozen=True)

    capability: str  # the namespace of the capability that holds it ("rag", "analysis")
    chunk_id: str


class EvidenceOccurrence(BaseModel):
    """Where a chunk was used in the conversation: questions that retrieved it and that cited it."""

    capability: str
    chunk_id: str
    retrieved_in_questions: list[int] = Field(default_factory=list)
    cited_in_questions: list[int] = Field(default_factory=list)


class CitationDeclaration(BaseModel):
    """What a question's answer declared as its grounding; ``refs == []`` means *ungrounded*."""

    question: int
    epoch: int
    refs: list[EvidenceRef] = Field(default_factory=list)


class CapabilityEvidenceRecord(BaseModel):
    """One capability's ledger: occurrences persist for the conversation, the rest per question."""

    occurrences: dict[str, EvidenceOccurrence] = Field(default_factory=dict)
    question: int | None = None
    in_progress: bool = False
    latest_evidence_epoch: int = 0
    declaration: CitationDeclaration | None = None

    def begin_question(self, question: int) -> None:
        if self.question is not None and question <= self.question:
            raise ValueError(
                f"question {question} does not follow question {self.question}: "
                "the message history must only grow between runs"
            )
        self._check_append_only(question)
        self.question = question
        self.in_progress = True
        self.latest_evidence_epoch = 0
        self.declaration = None

    def note_evidence(self, epoch: int) -> None:
        """The model saw an evidence outcome (an empty search result counts; a spent budget does not)."""
        self._require_question()
        self._check_append_only(epoch)
        self.latest_evidence_epoch = epoch

    def declare(
        self, refs: Iterable[EvidenceRef], epoch: int, retrieved_now: Collection[str]
    ) -> None:
        """Record the answer's grounding; ``retrieved_now`` are the chunk ids this question retrieved.

        A declaration that no newer evidence has followed absorbs later ones, so a follow-up
        empty citation never downgrades an answer that was already grounded.
        """
        question = self._require_question()
        self._check_append_only(epoch)
        refs = list(dict.fromkeys(refs))
        current = self.declaration
        if (
            current is not None
            and current.question == question
            and self.latest_evidence_epoch <= current.epoch
        ):
            merged = current.refs + [ref for ref in refs if ref not in current.refs]
            self.declaration = CitationDeclaration(question=question, epoch=epoch, refs=merged)
        else:
            self.declaration = CitationDeclaration(question=question, epoch=epoch, refs=refs)
        for ref in refs:
            occurrence = self.occurrences.setdefault(
                ref.chunk_id, EvidenceOccurrence(capability=ref.capability, chunk_id=ref.chunk_id)
            )
            _append_once(occurrence.cited_in_questions, question)
            if ref.chunk_id in retrieved_now:
                _append_once(occurrence.retrieved_in_questions, question)

    def end_question(self) -> None:
        self.in_progress = False

    def has_citations(self) -> bool:
        """Whether anything was ever cited (an empty, ungrounded declaration leaves no occurrence)."""
        return any(o.cited_in_questions for o in self.occurrences.values())

    def _require_question(self) -> int:
        if self.question is None:
            raise RuntimeError(
                "no question has begun: evidence can only be recorded inside a question"
            )
        return self.question

    def _check_append_only(self, count: int) -> None:
        recorded = max(
            self.question or 0,
            self.latest_evidence_epoch,
            self.declaration.epoch if self.declaration else 0,
        )
        if count < recorded:
            raise ValueError(
                f"message count {count} is below {recorded}, already recorded: "
                "the message history must be append-only"
            )


def citation_status(
    records: Iterable[CapabilityEvidenceRecord], *, question: int
) -> CitationStatus:
    """Whether ``question``'s answer is grounded, explicitly ungrounded, or declared nothing.

    A declaration counts only if it is newer than every evidence outcome of every capability:
    a citation registered in the same request as its search, or followed by another search,
    does not describe the answer the model finally gave.
    """
    records = list(records)
    newest_evidence = max((r.latest_evidence_epoch for r in records), default=0)
    current = [
        r.declaration
        for r in records
        if r.declaration is not None
        and r.declaration.question == question
        and r.declaration.epoch > newest_evidence
    ]
    if any(d.refs for d in current):
        return "grounded"
    return "ungrounded" if current else "missing"


def _append_once(values: list[int], value: int) -> None:
    if value not in values:
        values.append(value)
