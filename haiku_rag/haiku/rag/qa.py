"""Answering a question from the library with citations: ``HaikuRAG.ask`` and ``haiku-rag ask``.

Two ways to the same result:

- **tools** (the default): the model searches and cites through ``RAGCapability``;
- **fallback** (retrieve-then-read), for models that cannot call tools: the question is searched
  in code, the passages are shown numbered ``[1] … [n]``, and the ``[n]`` markers of the answer
  become citations.

Both record into the same ``RAGState`` and evidence ledger, under ``state["rag"]`` of the same
``Conversation``. So a conversation can switch modes, citation indexes run on across them, and the
compaction and citation-policy capabilities see fallback citations in the ledger like any others.
(Compaction rewrites tool returns only: the passages of an earlier fallback question stay in the
history as the user message that carried them.)
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic_ai import Agent
from pydantic_ai.exceptions import AgentRunError, ModelAPIError, ModelConnectionError
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model

from haiku.rag.capabilities.formatting import RESULT_SEPARATOR, source_line
from haiku.rag.capabilities.ledger import CitationStatus, EvidenceRef, citation_status
from haiku.rag.capabilities.rag import RAGCapability, RAGState, create_capability
from haiku.rag.capabilities.state import Citation
from haiku.rag.errors import ChatModelError
from haiku.rag.models import get_model, model_settings
from haiku.rag.store.models import SearchResult

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG

AskMode = Literal["auto", "tools", "fallback"]
ModeUsed = Literal["tools", "fallback"]

AGENT_PREAMBLE = """\
You are a helpful research assistant for the user's document library. Reply to greetings and \
small talk directly. Never make things up: answer from the knowledge base and cite the evidence \
you use."""

REFUSAL = "I cannot find enough information in the knowledge base to answer this question."

FALLBACK_INSTRUCTIONS = f"""\
# Answering from passages

The user's message holds numbered passages from the knowledge base, then the question.
- Answer only from the passages. Never invent facts.
- After each claim, write the number of the passage that supports it in square brackets, for \
example: "The depot was obsolete [2]."
- Answer concisely.
- When the passages do not hold the answer, say: "{REFUSAL}" and write no passage numbers."""

NO_PASSAGES = "No passages were found in the knowledge base for this question."

# "[2]" or "[1, 3]", with the whitespace before it (dropped along with a marker that names
# no passage, so "a claim [9]." reads "a claim.").
MARKER = re.compile(r"(\s*)\[(\d+(?:\s*,\s*\d+)*)\]")
# The standard refusal's opening words; models vary the rest of the sentence.
REFUSAL_START = re.compile(r"\bI cannot find enough information\b", re.IGNORECASE)


@dataclass
class Conversation:
    """Agent dependencies that carry a conversation from one ``ask`` to the next.

    The RAG capability and the fallback keep their state in ``state["rag"]``; ``messages`` is the
    history that state describes. Pass the same object to every ``ask`` of a conversation. A
    failed ``ask`` leaves it as it was.
    """

    state: dict[str, Any] = field(default_factory=dict)
    messages: list[ModelMessage] = field(default_factory=list)


@dataclass(frozen=True)
class AskResult:
    answer: str
    citations: list[Citation]  # this question's, in the order they were cited
    grounding: CitationStatus
    mode_used: ModeUsed


async def ask(
    client: HaikuRAG,
    question: str,
    filter: str | None = None,
    *,
    model: Model | None = None,
    mode: AskMode = "auto",
    conversation: Conversation | None = None,
) -> AskResult:
    """Answer ``question`` from the library behind ``client``, with citations.

    ``model`` defaults to the configured ``qa.model`` (``ModelNotConfiguredError`` when there is
    none). ``mode="auto"`` uses the fallback only for a model configured with
    ``supports_tools: false``. ``filter`` (SQL over document fields) restricts the search.
    """
    config = client.config
    model = model or get_model(config.qa.model, config)
    mode_used = _mode_for(mode, config.qa.model.supports_tools)
    conversation = conversation if conversation is not None else Conversation()
    before = copy.deepcopy(conversation.state)
    _seed_filter(conversation, filter)
    try:
        if mode_used == "tools":
            answer = await _answer_with_tools(client, question, model, conversation)
        else:
            answer = await _answer_from_passages(client, question, model, conversation)
    except BaseException as exc:
        # The capability leaves an unfinished question in the state for a host that resumes
        # runs; ask keeps no partial history to resume with, so the conversation stays as it was.
        conversation.state.clear()
        conversation.state.update(before)
        if isinstance(exc, AgentRunError):
            raise _chat_model_error(exc, model, mode_used) from exc
        raise
    state = rag_state(conversation)
    assert state.evidence.question is not None  # both modes begin a question
    return AskResult(
        answer=answer,
        citations=[state.citation_index[chunk_id] for chunk_id in state.citations],
        grounding=citation_status([state.evidence], question=state.evidence.question),
        mode_used=mode_used,
    )


def rag_state(conversation: Conversation) -> RAGState:
    return RAGState.model_validate(conversation.state.get(RAGCapability.namespace) or {})


def _store_state(conversation: Conversation, state: RAGState) -> None:
    conversation.state[RAGCapability.namespace] = state.model_dump(mode="json")


def _mode_for(mode: AskMode, supports_tools: bool | None) -> ModeUsed:
    if mode == "auto":
        return "fallback" if supports_tools is False else "tools"
    if mode == "tools" or mode == "fallback":
        return mode
    raise ValueError(f"mode must be 'auto', 'tools' or 'fallback', not {mode!r}")


def _seed_filter(conversation: Conversation, filter: str | None) -> None:
    state = rag_state(conversation)
    state.document_filter = filter
    _store_state(conversation, state)


# --- tools --------------------------------------------------------------------------------


async def _answer_with_tools(
    client: HaikuRAG, question: str, model: Model, conversation: Conversation
) -> str:
    agent = Agent(
        model,
        deps_type=Conversation,
        instructions=AGENT_PREAMBLE,
        capabilities=[create_capability(rag=client, defer_loading=False)],
        model_settings=model_settings(client.config.qa.model) or None,
    )
    result = await agent.run(question, deps=conversation, message_history=conversation.messages)
    conversation.messages = result.all_messages()
    return result.output


# --- fallback: retrieve, then read --------------------------------------------------------


async def _answer_from_passages(
    client: HaikuRAG, question: str, model: Model, conversation: Conversation
) -> str:
    """Search in code, let the model read numbered passages, and cite what its markers name.

    Ledger epochs follow the capability's convention (message counts): the question is the
    history's length, the passages are evidence seen in the request after it, and the answer's
    declaration comes with the response after that, so it is current.
    """
    state = rag_state(conversation)
    question_id = len(conversation.messages)
    state.begin_question(question_id)
    results = await client.search(question, filter=state.document_filter)
    passages = await client.expand_context(results)
    state.add_search(question, passages)
    state.evidence.note_evidence(question_id + 1)

    agent = Agent(
        model,
        instructions=[AGENT_PREAMBLE, fallback_instructions(client.config.prompts.domain_preamble)],
        model_settings=model_settings(client.config.qa.model) or None,
    )
    result = await agent.run(
        passages_prompt(question, passages), message_history=conversation.messages
    )
    conversation.messages = result.all_messages()
    answer = cite_markers(state, result.output, passages, epoch=len(conversation.messages))
    state.evidence.end_question()
    _store_state(conversation, state)
    return answer


def fallback_instructions(domain_preamble: str) -> str:
    preamble = domain_preamble.strip()
    return f"{preamble}\n\n{FALLBACK_INSTRUCTIONS}" if preamble else FALLBACK_INSTRUCTIONS


def passages_prompt(question: str, passages: Sequence[SearchResult]) -> str:
    if not passages:
        return f"{NO_PASSAGES}\n\nQuestion: {question}"
    numbered = RESULT_SEPARATOR.join(
        f"[{number}] {passage_heading(passage)}\n{passage.content.strip()}"
        for number, passage in enumerate(passages, start=1)
    )
    return f"Passages from the knowledge base:\n\n{numbered}\n\nQuestion: {question}"


def passage_heading(passage: SearchResult) -> str:
    pages = pages_label(passage.page_numbers)
    return f"Source: {source_line(passage)}" + (f" — {pages}" if pages else "")


def pages_label(pages: Sequence[int]) -> str:
    """``p. 3`` or ``pp. 2, 3``; empty for a passage without pages (Markdown, plain text)."""
    if not pages:
        return ""
    prefix = "p." if len(pages) == 1 else "pp."
    return f"{prefix} {', '.join(str(page) for page in pages)}"


def cite_markers(
    state: RAGState, answer: str, passages: Sequence[SearchResult], *, epoch: int
) -> str:
    """Register the passages the answer's ``[n]`` markers name and declare its grounding.

    Returns the answer with each marker renumbered to its citation's conversation-wide index (the
    number the citation is shown with). A marker that names no passage is dropped: it would
    point at nothing, or at another citation.

    No marker: nothing is declared, so the answer's grounding is *missing*, unless the answer is
    the standard refusal, which declares it *ungrounded* as an empty ``rag_cite`` would.
    """
    named = [number for match in MARKER.finditer(answer) for number in _numbers(match)]
    cited = list(dict.fromkeys(n for n in named if 1 <= n <= len(passages)))
    index_of = {
        n: state.cite_result(passages[n - 1].chunk_id, passages[n - 1]).index for n in cited
    }
    if cited:
        refs = [
            EvidenceRef(capability=RAGCapability.namespace, chunk_id=passages[n - 1].chunk_id)
            for n in cited
        ]
        state.evidence.declare(refs, epoch, state.retrieved_chunk_ids())
    elif REFUSAL_START.search(answer):
        state.evidence.declare([], epoch, state.retrieved_chunk_ids())

    def renumber(match: re.Match[str]) -> str:
        indexes = dict.fromkeys(index_of[n] for n in _numbers(match) if n in index_of)
        if not indexes:
            return ""
        return f"{match.group(1)}[{', '.join(str(i) for i in indexes)}]"

    return MARKER.sub(renumber, answer)


def _numbers(match: re.Match[str]) -> list[int]:
    return [int(n) for n in match.group(2).split(",")]


# --- errors -------------------------------------------------------------------------------


def _chat_model_error(exc: AgentRunError, model: Model, mode_used: ModeUsed) -> ChatModelError:
    detail = " ".join(str(exc).split())  # the CLI prints one line
    name = model.model_name
    if isinstance(exc, ModelConnectionError):
        where = f" at {model.base_url}" if model.base_url else ""
        return ChatModelError(
            f"cannot reach the chat model {name}{where} ({detail}); is the server running?"
        )
    # Small local models often reject tool definitions or keep calling tools wrongly.
    hint = (
        "; a model that cannot call tools reliably can answer without them "
        "(qa.model.supports_tools: false, or haiku-rag ask --fallback)"
        if mode_used == "tools" and "tool" in detail.lower()
        else ""
    )
    if isinstance(exc, ModelAPIError):
        return ChatModelError(f"the chat model {name} failed: {detail}{hint}")
    return ChatModelError(f"the chat model {name} gave no usable answer: {detail}{hint}")
