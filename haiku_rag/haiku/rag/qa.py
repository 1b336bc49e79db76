"""Deprecated: the names the desktop app imported from here before ``haiku.rag.answering``.

Everything about answering lives in ``haiku.rag.answering`` (agents, conversations, the
no-tools fallback, events) and ``haiku.rag.citations`` (page labels, ``[n]`` markers). This module
only forwards, so the app keeps working while it moves over; it builds no agent of its own.
Delete it once nothing imports it (issue 15).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from haiku.rag.answering import AGENT_PREAMBLE, AnswerOptions, Conversation, answer
from haiku.rag.answering import chat_model_error as _chat_model_error
from haiku.rag.answering.fallback import FALLBACK_INSTRUCTIONS, REFUSAL
from haiku.rag.capabilities.ledger import CitationStatus
from haiku.rag.capabilities.rag import RAGCapability, RAGState
from haiku.rag.capabilities.state import Citation
from haiku.rag.citations import pages_label

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from haiku.rag.client import HaikuRAG

__all__ = [
    "AGENT_PREAMBLE",
    "FALLBACK_INSTRUCTIONS",
    "REFUSAL",
    "AskResult",
    "Conversation",
    "_chat_model_error",
    "ask",
    "pages_label",
    "rag_state",
]

AskMode = Literal["auto", "tools", "fallback"]


@dataclass(frozen=True)
class AskResult:
    answer: str
    citations: list[Citation]
    grounding: CitationStatus
    mode_used: Literal["tools", "fallback", "search-only"]


async def ask(
    client: HaikuRAG,
    question: str,
    filter: str | None = None,
    *,
    model: Model | None = None,
    mode: AskMode = "auto",
    conversation: Conversation | None = None,
) -> AskResult:
    """``haiku.rag.answering.answer`` with the RAG capability alone; ``filter`` (SQL over
    document fields) is resolved to the document ids it selects."""
    document_ids = None
    if filter is not None:
        document_ids = tuple(d.id for d in await client.list_documents(filter=filter))
    done = await answer(
        client,
        question,
        conversation,
        AnswerOptions(mode=mode, document_ids=document_ids),
        model=model,
    )
    return AskResult(done.text, list(done.citations), done.grounding, done.mode)


def rag_state(conversation: Any) -> RAGState:
    return RAGState.model_validate(conversation.state.get(RAGCapability.namespace) or {})
