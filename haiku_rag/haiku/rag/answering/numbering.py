"""One citation numbering per conversation, across capabilities, and what an answer rests on.

Each evidence capability numbers its own citations (RAG and analysis could both show a 1), so
the conversation keeps its own numbers (``Conversation.numbers``): a chunk keeps the number it
was first shown with; a new one takes the next after the highest so far, in the order the
answer cited it; a chunk cited through two capabilities is one source.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from haiku.rag.answering.events import Basis
from haiku.rag.capabilities.base import EvidenceCapability
from haiku.rag.capabilities.ledger import CitationStatus, citation_status
from haiku.rag.capabilities.state import EvidenceState
from haiku.rag.citations import Citation


def display_number(numbers: dict[str, int], chunk_id: str) -> int:
    """The number ``chunk_id`` is shown with, assigning the next one to a new chunk."""
    number = numbers.get(chunk_id)
    if number is None:
        number = numbers[chunk_id] = max(numbers.values(), default=0) + 1
    return number


def shown(numbers: dict[str, int], citation: Citation) -> Citation:
    return citation.model_copy(update={"index": display_number(numbers, citation.chunk_id)})


def evidence_states(
    state: dict[str, Any], capabilities: Sequence[type[EvidenceCapability[Any]]]
) -> list[tuple[str, EvidenceState]]:
    """``(namespace, state)`` of each capability that has state in the conversation."""
    found = []
    for capability in capabilities:
        raw = state.get(capability.namespace)
        if raw:
            found.append((capability.namespace, capability.state_type.model_validate(raw)))
    return found


def cited_in_order(
    states: Iterable[tuple[str, EvidenceState]], order: Iterable[tuple[str, str]] = ()
) -> list[tuple[str, Citation]]:
    """This question's citations as ``(namespace, Citation with the capability's own index)``,
    in ``order`` (how they were cited across capabilities), then any others."""
    found: dict[tuple[str, str], Citation] = {}
    for namespace, state in states:
        for chunk_id in state.citations:
            found[(namespace, chunk_id)] = state.citation_index[chunk_id]
    keys = [k for k in order if k in found]
    keys += [k for k in found if k not in keys]
    return [(k[0], found[k]) for k in keys]


def grounding_of(states: Sequence[tuple[str, EvidenceState]]) -> CitationStatus:
    questions = [s.evidence.question for _, s in states if s.evidence.question is not None]
    if not questions:
        return "missing"
    return citation_status([s.evidence for _, s in states], question=max(questions))


def basis_of(grounding: CitationStatus, computed: bool) -> Basis:
    if grounding == "grounded":
        return "cited"
    if computed:
        return "computed"
    return "declared-none" if grounding == "ungrounded" else "missing"
