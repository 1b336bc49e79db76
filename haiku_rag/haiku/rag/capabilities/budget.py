"""Per-run budgets of an evidence capability and the notices that explain them to the model.

Two budgets, withdrawn differently on purpose:

- the *request limit* removes the capability's evidence tools once it is reached, keeps its
  cite tool for ``CITATION_GRACE_REQUESTS`` more requests so gathered evidence can still be
  registered, then removes every tool of the capability;
- a spent *tool budget* (``qa.max_searches`` …) leaves the tool declared and failing, because
  a model calling a tool that vanished burns Pydantic AI's unknown-tool retries.

Either way the instructions say what happened on every following request, and never name a
tool the model can no longer see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CITATION_GRACE_REQUESTS = 2

ToolPhase = Literal["open", "cite_only", "closed"]


@dataclass
class RequestBudget:
    """Counts one capability's requests in one run (requests while it is not loaded never count)."""

    limit: int | None
    requests: int = 0
    grace_requests_used: int = 0

    @property
    def phase(self) -> ToolPhase:
        if self.limit is None or self.requests < self.limit:
            return "open"
        return "cite_only" if self.grace_requests_used < CITATION_GRACE_REQUESTS else "closed"

    def count_request(self, previous_response_used_capability: bool) -> None:
        """Count a request; past the limit, only a request answering a call to one of this
        capability's tools uses the grace window, so turns spent elsewhere do not shrink it."""
        if (
            self.limit is not None
            and self.requests >= self.limit
            and previous_response_used_capability
        ):
            self.grace_requests_used += 1
        self.requests += 1


def budget_notice(
    *,
    namespace: str,
    phase: ToolPhase,
    spent_tools: list[str],
    evidence_tools: list[str],
    cite_tool: str,
) -> str | None:
    """The instruction to add to a request, or None when every budget still has room.

    ``evidence_tools`` are the capability's evidence-gathering tools in order; ``spent_tools``
    the ones whose own budget ran out.
    """
    if phase == "closed":
        return (
            f"The {namespace} capability's tools are no longer available in this run. "
            "Give the best answer you can from the evidence already gathered."
        )
    if phase == "cite_only":
        return (
            f"The {namespace} capability has reached its request limit. Only {cite_tool} remains: "
            "register the chunk ids that support your answer, then answer."
        )
    if not spent_tools:
        return None
    spent = " and ".join(spent_tools)
    remaining = [t for t in evidence_tools if t not in spent_tools]
    if remaining:
        return (
            f"The {namespace} capability has spent its budget for {spent}; further calls fail. "
            f"Gather more evidence with {' or '.join(remaining)}, or call {cite_tool} and answer."
        )
    return (
        f"The {namespace} capability has spent its budget for {spent}; further calls fail. "
        f"Answer from the evidence already gathered and call {cite_tool}."
    )
