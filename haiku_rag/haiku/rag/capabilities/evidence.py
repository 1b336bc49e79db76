"""Finding the evidence capabilities of a run, for the capabilities that act across all of them.

Compaction and the citation policy never assume which evidence capabilities are registered (RAG,
analysis, both, or a host's own subclass): they read the run's registry and work from the ledger
each one keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai import RunContext

from haiku.rag.capabilities.base import EvidenceCapability
from haiku.rag.capabilities.ledger import CapabilityEvidenceRecord
from haiku.rag.citations import Citation


@dataclass(frozen=True)
class DiscoveredEvidence:
    """One evidence capability of the run, as compaction and the policy need it."""

    capability: EvidenceCapability[Any]
    namespace: str
    record: CapabilityEvidenceRecord
    citations: dict[str, Citation]
    tool_names: frozenset[str]  # evidence tools, whose returns compaction rewrites
    cite_tool: str
    cite_available: bool
    state_carried: bool


def discover_evidence(ctx: RunContext[Any]) -> list[DiscoveredEvidence]:
    """The run's evidence capabilities, sorted by namespace (deferred ones included, loaded or not)."""
    found = [
        DiscoveredEvidence(
            capability=capability,
            namespace=capability.namespace,
            record=capability.evidence_record(),
            citations=capability.citation_index(),
            tool_names=frozenset(capability.evidence_tool_names()),
            cite_tool=capability.cite_tool_name,
            cite_available=capability.cite_available(ctx),
            state_carried=capability.state_carried,
        )
        for capability in ctx.capabilities.values()
        if isinstance(capability, EvidenceCapability)
    ]
    return sorted(found, key=lambda f: f.namespace)


def question_in_progress(found: Sequence[DiscoveredEvidence]) -> int | None:
    """The identity of the current question: every capability derives the same one from the
    history, so the newest recorded identity is it."""
    questions = [f.record.question for f in found if f.record.question is not None]
    return max(questions, default=None)


def evidence_tool_names(found: Sequence[DiscoveredEvidence]) -> frozenset[str]:
    """Every tool, across capabilities, whose returns are evidence."""
    return frozenset(name for f in found for name in f.tool_names)


def cite_available(found: Sequence[DiscoveredEvidence]) -> bool:
    """Whether the model can still declare grounding through any capability's cite tool."""
    return any(f.cite_available for f in found)
