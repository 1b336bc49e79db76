"""``CitationPolicyCapability``: every answer that has something to declare must declare it.

Citing is always available and recorded; this capability makes it required. It decides in one
place, ``after_model_request``, on a response that would end the question:

- nothing to declare (no evidence outcome in this question and nothing ever cited): left alone;
- declared, grounded or explicitly ungrounded (``rag_cite([])``): left alone;
- undeclared: the model is asked once, through ``ctx.enqueue``, to record what grounded the
  answer it already gave, when a cite tool is still available and the request limit has room;
  otherwise, or when the redirected answer is still undeclared, the question is recorded in
  ``CitationPolicyState.violations``.

One policy instance decides for every evidence capability of the run, so two of them cannot
each demand a citation for one answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, UserPromptPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import DeferredToolRequests

from haiku.rag.capabilities.base import state_dict
from haiku.rag.capabilities.evidence import (
    DiscoveredEvidence,
    cite_available,
    discover_evidence,
    question_in_progress,
)
from haiku.rag.capabilities.ledger import citation_status

POLICY_CAPABILITY_ID = "haiku-rag-citation-policy"
POLICY_STATE_KEY = "citation_policy"
REDIRECT_TAG = "[haiku.rag/citation-redirect]"


class CitationPolicyState(BaseModel):
    """Questions (by identity) that ended without declaring their grounding."""

    violations: list[int] = Field(default_factory=list)


def redirect_message(cite_tools: Sequence[str]) -> str:
    tools = " or ".join(f"`{t}`" for t in cite_tools)
    return (
        "You answered without registering citations. This is not a request to change your answer, "
        "and it does not mean the answer was wrong. Call "
        f"{tools} with the chunk ids of the evidence that supports the answer you already gave, "
        "or with an empty list if nothing supports it (for example, if you said you could not find "
        "the information). Then repeat your answer exactly as you gave it.\n\n"
        f"{REDIRECT_TAG}"
    )


@dataclass
class CitationPolicyCapability(AbstractCapability[Any]):
    """Redirects an undeclared answer once; records violations it cannot redirect."""

    def __post_init__(self) -> None:
        # Not a class default: pydantic-ai would merge two policies; a second one must be rejected.
        if self.id is None:
            self.id = POLICY_CAPABILITY_ID

    async def before_run(self, ctx: RunContext[Any]) -> None:
        # Published up front, so a host can tell "no violations" from "no policy running".
        bag = state_dict(ctx.deps)
        if bag is not None and POLICY_STATE_KEY not in bag:
            bag[POLICY_STATE_KEY] = CitationPolicyState().model_dump(mode="json")

    async def after_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        response: ModelResponse,
    ) -> ModelResponse:
        output_tools = {t.name for t in request_context.model_request_parameters.output_tools}
        if any(call.tool_name not in output_tools for call in response.tool_calls):
            return response  # the question goes on: function tools were called
        found = discover_evidence(ctx)
        question = undeclared_question(found)
        if question is None or redirect_sent(ctx.messages, question):
            return response  # a second undeclared ending is left to the after_run backstop
        if cite_available(found) and has_room_for_another_request(ctx):
            ctx.enqueue(
                redirect_message([f.cite_tool for f in found if f.cite_available]),
                priority="when_idle",
            )
        else:  # pointing the model at a tool that is gone would only cost it retries
            record_violation(ctx, question)
        return response

    async def after_run(
        self, ctx: RunContext[Any], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        # Backstop for endings after_model_request cannot redirect: an ignored redirect, or a run
        # ended early by an output tool called alongside function tools.
        if not isinstance(result.output, DeferredToolRequests):
            question = undeclared_question(discover_evidence(ctx))
            if question is not None:
                record_violation(ctx, question)
        return result


def create_capability() -> CitationPolicyCapability:
    """The citation policy; registering it is the only switch, there is nothing to configure."""
    return CitationPolicyCapability()


def undeclared_question(found: Sequence[DiscoveredEvidence]) -> int | None:
    """The current question if it has something to declare and has not declared it."""
    question = question_in_progress(found)
    if question is None:
        return None
    evidence_now = any(f.record.latest_evidence_epoch > question for f in found)
    cited_before = any(f.record.has_citations() for f in found)
    if not (evidence_now or cited_before):
        return None
    status = citation_status((f.record for f in found), question=question)
    return question if status == "missing" else None


def redirect_sent(messages: Sequence[ModelMessage], question: int) -> bool:
    """Whether this question was already redirected: the tag, not the wording, identifies it."""
    for message in messages[question + 1 :]:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and REDIRECT_TAG in _text_of(part):
                    return True
    return False


def has_room_for_another_request(ctx: RunContext[Any]) -> bool:
    # ctx.usage does not count the response being handled yet: +1 for it, and the redirect
    # needs one more request within the limit, or the run fails and the answer is lost.
    limit = ctx.usage_limits.request_limit if ctx.usage_limits is not None else None
    return limit is None or ctx.usage.requests + 1 < limit


def record_violation(ctx: RunContext[Any], question: int) -> None:
    bag = state_dict(ctx.deps)
    if bag is None:
        return
    state = CitationPolicyState.model_validate(bag.get(POLICY_STATE_KEY) or {})
    if question not in state.violations:
        state.violations.append(question)
    bag[POLICY_STATE_KEY] = state.model_dump(mode="json")


def _text_of(part: UserPromptPart) -> str:
    if isinstance(part.content, str):
        return part.content
    return "\n".join(item for item in part.content if isinstance(item, str))
