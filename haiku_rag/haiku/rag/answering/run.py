"""Answering one question: ``answer_stream`` (events) and ``answer`` (the last of them).

A question runs on a copy of its conversation; the conversation given is updated only once the
answer is complete, so a failed or stopped question leaves it exactly as it was.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import ModelMessage, ModelResponse

from haiku.rag.answering.agent import (
    AGENT_PREAMBLE,
    BuiltAgent,
    build_agent,
    chat_model_error,
    model_config_for,
    resolve_model,
)
from haiku.rag.answering.conversation import Conversation
from haiku.rag.answering.events import (
    Answered,
    AnswerEvent,
    Cited,
    Started,
    Step,
    StepKind,
    TextDelta,
    TextReset,
    TokenFigures,
)
from haiku.rag.answering.numbering import (
    basis_of,
    cited_in_order,
    display_number,
    evidence_states,
    grounding_of,
    shown,
)
from haiku.rag.answering.options import AnswerOptions, ModeUsed
from haiku.rag.answering.support import check_answer as check_support
from haiku.rag.answering.support import (
    citation_name,
    covered_text,
    passage_holding,
    sentences_citing,
)
from haiku.rag.capabilities.state import EvidenceState
from haiku.rag.citations import Citation, renumber_markers
from haiku.rag.errors import ChatAnswerCutOff, ChatModelError, OperationCancelled

if TYPE_CHECKING:
    from pydantic_ai import CancellationToken
    from pydantic_ai.models import Model

    from haiku.rag.capabilities.base import EvidenceCapability
    from haiku.rag.capabilities.ledger import CitationStatus
    from haiku.rag.client import HaikuRAG

NO_DOCUMENTS = "There are no documents in scope to answer from."
SEARCH_ONLY_HEADER = "The best passages from your library:"
NOTHING_FOUND = "Nothing in your library matches this question."
SNIPPET_CHARS = 400


class AnswerStopped(OperationCancelled):
    """The question was stopped; ``partial_text`` is what had streamed (the conversation is as
    it was before the question)."""

    def __init__(self, partial_text: str = "") -> None:
        super().__init__("The question was stopped")
        self.partial_text = partial_text


def mode_for(
    options: AnswerOptions, client: HaikuRAG, supports_tools: bool | None
) -> ModeUsed:
    if options.mode != "auto":
        return options.mode
    from haiku.rag.answering.fallback import SMALL_CONTEXT_TOKENS

    configured = model_config_for(options, client.config)
    if supports_tools is None:
        supports_tools = configured.supports_tools
    context = configured.context_tokens
    small_context = context is not None and context < SMALL_CONTEXT_TOKENS
    return "fallback" if supports_tools is False or small_context else "tools"


async def answer(
    client: HaikuRAG,
    question: str,
    conversation: Conversation | None = None,
    options: AnswerOptions | None = None,
    **kwargs: Any,
) -> Answered:
    """Answer ``question``; the ``Answered`` event (what the CLI and the self-test use).

    The model's requests are not streamed unless ``stream=True`` is passed: the answer is the
    same either way (a scripted ``FunctionModel`` needs no ``stream_function``)."""
    answered = None
    kwargs.setdefault("stream", False)
    async for event in answer_stream(client, question, conversation, options, **kwargs):
        if isinstance(event, Answered):
            answered = event
    assert answered is not None  # every stream ends with Answered or raises
    return answered


async def answer_stream(
    client: HaikuRAG,
    question: str,
    conversation: Conversation | None = None,
    options: AnswerOptions | None = None,
    *,
    model: Model | None = None,
    model_settings: dict[str, Any] | None = None,
    supports_tools: bool | None = None,
    cancel: CancellationToken | None = None,
    stream: bool = True,
) -> AsyncIterator[AnswerEvent]:
    """Answer ``question`` from the library behind ``client``, as a stream of events ending
    with ``Answered``. ``conversation`` (default: a new one) is updated when the answer is
    complete. ``model`` defaults to the configured one; ``supports_tools`` (default: the model
    configuration's) decides ``mode="auto"``; ``cancel`` stops the run (``AnswerStopped``).
    ``stream=False`` requests whole model responses (the text then arrives as one delta); the
    events and the answer are otherwise the same."""
    options = options or AnswerOptions()
    question = question.strip()
    if not question:
        raise ValueError("the question is empty")
    conversation = conversation if conversation is not None else Conversation()
    work = conversation.copy()
    if supports_tools is None and options.mode == "auto":
        # a model file run by the built-in llama.cpp: probed once for tool calling
        from haiku.rag.answering.fallback import SMALL_CONTEXT_TOKENS
        from haiku.rag.local_models.provider import tools_support

        configured = model_config_for(options, client.config)
        supports_tools = await tools_support(configured, min_tools_context=SMALL_CONTEXT_TOKENS)
    mode = mode_for(options, client, supports_tools)
    scope = options.document_ids
    if not await _has_documents(client, scope):
        yield Started(mode, ())
        yield TextDelta(NO_DOCUMENTS)
        yield Answered(NO_DOCUMENTS, (), "missing", "no-documents", mode, TokenFigures())
        return
    if mode == "search-only":
        events: AsyncIterator[AnswerEvent] = _search_only(client, question, work, options)
    elif mode == "fallback":
        if not options.rag:
            raise ChatModelError(
                "analysis needs a model that can call tools; this one answers without them"
            )
        resolved = resolve_model(options, client.config, model)
        events = _fallback(
            client, question, work, options, resolved, model_settings, cancel,
            supports_tools=supports_tools,
        )  # fmt: skip
    else:
        resolved = resolve_model(options, client.config, model)
        built = build_agent(client, options, model=resolved, model_settings=model_settings)
        events = _tools(question, work, built, scope, cancel, streamed_requests=stream)
    async for event in events:
        if isinstance(event, Answered):
            conversation.replace_with(work)  # complete: history, state and numbers together
        yield event


async def _has_documents(
    client: HaikuRAG, document_ids: tuple[str, ...] | None
) -> bool:
    if document_ids == ():
        return False
    return bool(await client.list_documents(document_ids=document_ids, limit=1))


def _token_figures(new: Sequence[ModelMessage], saved: int | None) -> TokenFigures:
    responses = [m for m in new if isinstance(m, ModelResponse)]
    outputs = [r.usage.output_tokens for r in responses if r.usage.output_tokens]
    return TokenFigures(
        input_tokens=responses[-1].usage.input_tokens if responses else None,
        output_tokens=sum(outputs) if outputs else None,
        requests=len(responses),
        compaction_saved=saved,
    )


def _seed_scope(
    work: Conversation,
    capabilities: Sequence[type[EvidenceCapability[Any]]],
    document_ids: tuple[str, ...] | None,
) -> None:
    for capability in capabilities:
        state = capability.state_type.model_validate(work.state.get(capability.namespace) or {})
        # the question's scope replaces the conversation's (a host's SQL filter included)
        state.document_ids = None if document_ids is None else list(document_ids)
        state.document_filter = None
        work.state[capability.namespace] = state.model_dump(mode="json")


# --- tools ----------------------------------------------------------------------------------


async def _tools(
    question: str,
    work: Conversation,
    built: BuiltAgent,
    scope: tuple[str, ...] | None,
    cancel: CancellationToken | None,
    *,
    streamed_requests: bool = True,
) -> AsyncIterator[AnswerEvent]:
    from pydantic_ai import AgentRunResultEvent
    from pydantic_ai.exceptions import AgentRunError, RunCancelled
    from pydantic_ai.messages import (
        FunctionToolCallEvent,
        FunctionToolResultEvent,
        PartDeltaEvent,
        PartStartEvent,
        TextPart,
        TextPartDelta,
    )

    kinds = [type(c) for c in built.evidence]
    _seed_scope(work, kinds, scope)
    tool_kinds = _tool_kinds(built.evidence)
    cite_tools = {c.cite_tool_name for c in built.evidence}
    meter = built.meter
    yield Started("tools", built.capability_ids, built.notices)

    streamed: list[str] = []
    pending: dict[str, Step] = {}
    order: dict[tuple[str, str], None] = {}
    numbered: list[Any] = []  # display-numbered citations of this answer, in citing order
    result = None
    try:
        async with _agent_events(built, question, work, cancel, streamed_requests) as events:
            async for event in events:
                if meter is not None:
                    for step in meter.take_steps():
                        yield step
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    if event.index == 0 and streamed:
                        streamed.clear()
                        yield TextReset()
                    if event.part.content:
                        streamed.append(event.part.content)
                        yield TextDelta(event.part.content)
                elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    if event.delta.content_delta:
                        streamed.append(event.delta.content_delta)
                        yield TextDelta(event.delta.content_delta)
                elif isinstance(event, FunctionToolCallEvent):
                    step = _step_for(
                        event.part.tool_call_id,
                        tool_kinds.get(event.part.tool_name, "tool"),
                        event.part.tool_name,
                        event.part.args_as_dict(),
                    )
                    pending[event.part.tool_call_id] = step
                    yield step
                elif isinstance(event, FunctionToolResultEvent):
                    begun = pending.pop(event.part.tool_call_id, None)
                    if begun is not None:
                        output = _text_of(event.part.content) if begun.kind == "analysis" else None
                        yield Step(
                            begun.id, begun.kind, begun.label, begun.detail, output, finished=True
                        )
                    if event.part.tool_name in cite_tools:
                        new = _note_cited(work, kinds, order)
                        if new:
                            fresh = [shown(work.numbers, c) for c in new]
                            numbered.extend(fresh)
                            yield Cited(tuple(fresh))
                elif isinstance(event, AgentRunResultEvent):
                    result = event.result
    except RunCancelled as exc:  # Stop: a cancellation, never a failure
        raise AnswerStopped("".join(streamed)) from exc
    except AgentRunError as exc:
        raise chat_model_error(exc, built.agent.model, "tools") from exc  # type: ignore[arg-type]
    if meter is not None:
        for step in meter.take_steps():
            yield step
    assert result is not None
    _raise_if_cut_off(result.response, built.agent.model)
    work.messages = result.all_messages()
    states = evidence_states(work.state, kinds)
    cited = cited_in_order(states, order)
    numbers = work.numbers
    citations = list({c.chunk_id: c for c in numbered}.values())
    for _, citation in cited:  # cited but not seen after a cite tool (e.g. a resumed run)
        if citation.chunk_id not in {c.chunk_id for c in citations}:
            citations.append(shown(numbers, citation))
    # A model writing [n] in a tools answer means the RAG capability's own index.
    first = kinds[0].namespace if kinds else None
    rag_numbers = {c.index: display_number(numbers, c.chunk_id) for ns, c in cited if ns == first}
    text = renumber_markers(str(result.output), rag_numbers)
    citations = _cited_where_said(text, citations, states)
    grounding = grounding_of(states)
    computed = _computed(work.state, kinds)
    support = check_support(
        text,
        {c.index: covered_text(c) for c in citations},
        names={c.index: citation_name(c) for c in citations},
        grounding=grounding,
        question=question,
    )
    yield Answered(
        text=text,
        citations=tuple(citations),
        grounding=grounding,
        basis=basis_of(grounding, computed),
        mode="tools",
        tokens=_token_figures(result.new_messages(), meter.last_saved if meter else None),
        capability_ids=built.capability_ids,
        support=support,
    )


def _cited_where_said(
    text: str, citations: list[Citation], states: Sequence[tuple[str, EvidenceState]]
) -> list[Citation]:
    """Each citation as the part of its widened passage that holds the sentences citing it.

    A search returns a hit widened by context expansion, each of its parts citable under its
    own chunk id; a model may cite the hit for a sentence that sits in a part expansion added.
    The citation then names and lights where the sentence is, as a no-tools answer's does
    (``fallback.cite_passage``), unless that part is cited in this answer already or the hit is
    a figure (a model with vision read it as an image, not as text); the badge judges the text
    the chip shows."""
    widened = {
        chunk_id: result
        for _, state in states
        for results in state.searches.values()
        for result in results
        for chunk_id in result.chunk_texts
    }
    taken = {c.chunk_id for c in citations}
    placed = []
    for citation in citations:
        result = widened.get(citation.chunk_id)
        if result is not None and not citation.picture_refs:  # a figure is read as an image
            holder = passage_holding(sentences_citing(text, citation.index), result.chunk_texts, citation.chunk_id)
            if holder not in taken:
                taken.add(holder)
                citation = Citation.from_result(citation.index, holder, result)
        placed.append(citation)
    return placed


@contextlib.asynccontextmanager
async def _agent_events(
    built: BuiltAgent,
    question: str,
    work: Conversation,
    cancel: CancellationToken | None,
    streamed_requests: bool,
) -> AsyncIterator[AsyncIterator[Any]]:
    """The run's Pydantic AI events: streamed requests (text as it is written), or whole
    requests with the tool events of each step and the final text in one part."""
    if streamed_requests:
        async with built.agent.run_stream_events(
            question, deps=work, message_history=work.messages, cancellation_token=cancel
        ) as events:
            yield events
        return

    async def whole() -> AsyncIterator[Any]:
        from pydantic_ai import Agent, AgentRunResultEvent
        from pydantic_ai.messages import PartStartEvent, TextPart

        async with built.agent.iter(
            question, deps=work, message_history=work.messages, cancellation_token=cancel
        ) as run:
            async for node in run:
                if Agent.is_call_tools_node(node):
                    async with node.stream(run.ctx) as tool_events:
                        async for event in tool_events:
                            yield event
            result = run.result
        assert result is not None
        yield PartStartEvent(index=0, part=TextPart(str(result.output)))
        yield AgentRunResultEvent(result)

    yield whole()


def _raise_if_cut_off(response: Any, model: Any) -> None:
    """A streamed answer from an OpenAI-compatible server (OpenAI, Ollama, LM Studio,
    llama.cpp, the built-in model file) that ended without the server's finish reason was cut
    off: the server died or the connection broke mid-answer. That is a failure to say, never
    an answer to badge (a tester's half sentence was shown "Supported"). Pydantic AI fills in
    "stop" for a stream without one; the raw reason, when the server sent it, is in
    ``provider_details``."""
    from pydantic_ai.models.openai import OpenAIChatModel

    if not isinstance(model, OpenAIChatModel) or "finish_reason" in (response.provider_details or {}):
        return
    where = f" at {model.base_url}" if model.base_url else ""
    raise ChatAnswerCutOff(
        f"the chat model {model.model_name}{where} stopped in the middle of its answer (the "
        "connection ended before the answer was finished); is the server still running?"
    )


def _tool_kinds(evidence: Sequence[EvidenceCapability[Any]]) -> dict[str, StepKind]:
    kinds: dict[str, StepKind] = {"load_capability": "load"}
    for capability in evidence:
        kinds[capability.search_tool_name] = "search"
        kinds[capability.cite_tool_name] = "cite"
        execute = getattr(capability, "execute_tool_name", None)
        if execute:
            kinds[execute] = "analysis"
    return kinds


def _note_cited(
    work: Conversation,
    kinds: Sequence[type[EvidenceCapability[Any]]],
    order: dict[tuple[str, str], None],
) -> list[Any]:
    """Citations the capabilities' state lists for this question and ``order`` does not yet
    hold (called after every cite tool, so the order across capabilities is the call order)."""
    new = []
    for namespace, state in evidence_states(work.state, kinds):
        for chunk_id in state.citations:
            if (namespace, chunk_id) not in order:
                order[(namespace, chunk_id)] = None
                new.append(state.citation_index[chunk_id])
    return new


def _computed(state: dict[str, Any], kinds: Sequence[type[EvidenceCapability[Any]]]) -> bool:
    """Whether an analysis program of this question produced output."""
    for capability in kinds:
        raw = state.get(capability.namespace) or {}
        if any(e.get("stdout") for e in raw.get("executions") or []):
            return True
    return False


def _step_for(step_id: str, kind: StepKind, tool_name: str, args: dict[str, Any]) -> Step:
    if kind == "search":
        return Step(step_id, kind, f"Searching “{_short(str(args.get('query', '')))}”")
    if kind == "cite":
        count = len(args.get("chunk_ids") or [])
        label = f"Citing {count} source{'s' if count != 1 else ''}" if count else "Declaring no sources"
        return Step(step_id, kind, label)
    if kind == "analysis":
        return Step(step_id, kind, "Running analysis…", detail=str(args.get("code") or ""))
    if kind == "load":
        return Step(step_id, kind, f"Loading {args.get('id', 'a capability')}")
    return Step(step_id, kind, f"Running {tool_name}")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    try:
        return json.dumps(content, indent=1, default=str)
    except TypeError:
        return str(content)


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- fallback: retrieve, then read ----------------------------------------------------------


async def _fallback(
    client: HaikuRAG,
    question: str,
    work: Conversation,
    options: AnswerOptions,
    model: Model,
    model_settings: dict[str, Any] | None,
    cancel: CancellationToken | None,
    *,
    supports_tools: bool | None = None,
) -> AsyncIterator[AnswerEvent]:
    """Search in code, let the model read numbered passages, and cite what its markers name.

    Ledger epochs follow the capability's convention (message counts): the question is the
    history's length, the passages are evidence seen in the request after it, and the answer's
    declaration comes with the response after that, so it is current. An answer without
    markers gets them back where a sentence's claims are found in exactly one passage
    (``support.recover_markers``): those citations are shown, but the ledger keeps what the
    model declared (nothing: *missing*).
    """
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import AgentRunError, RunCancelled

    from haiku.rag.answering.fallback import (
        REFUSAL_START,
        cite_markers,
        fallback_instructions,
        history_within,
        passage_heading,
        passages_prompt,
        profile_for,
        tighten,
    )
    from haiku.rag.answering.support import recover_markers
    from haiku.rag.capabilities.rag import RAGCapability, RAGState
    from haiku.rag.capabilities.sources import document_names
    from haiku.rag.models import model_settings as settings_of

    notices = ("analysis needs tools: answered from passages without it",) if options.analysis else ()
    yield Started("fallback", (), notices)
    step = Step("search-1", "search", f"Searching “{_short(question)}”")
    yield step
    configured = model_config_for(options, client.config)
    if supports_tools is None:
        supports_tools = configured.supports_tools
    context = configured.context_tokens
    if context is None:  # a model file: the context its runtime loads it with
        from haiku.rag.local_models.provider import loaded_context

        context = loaded_context(model)
    profile = profile_for(supports_tools, context, options.profile)
    _seed_scope(work, [RAGCapability], options.document_ids)
    state = RAGState.model_validate(work.state[RAGCapability.namespace])
    question_id = len(work.messages)
    state.begin_question(question_id)
    results = await client.search(question, document_ids=options.document_ids, limit=profile.passages)
    passages = tighten(await client.expand_context(results), question, profile)
    names = await document_names(client, passages)
    state.add_search(question, passages)
    state.evidence.note_evidence(question_id + 1)
    yield Step(step.id, step.kind, step.label, finished=True)

    config = client.config
    settings = settings_of(configured) if model_settings is None else model_settings
    settings = dict(settings or {})
    if profile.max_answer_tokens is not None:
        settings["max_tokens"] = min(settings.get("max_tokens") or profile.max_answer_tokens, profile.max_answer_tokens)
    agent: Agent[None, str] = Agent(
        model,
        instructions=[AGENT_PREAMBLE, fallback_instructions(config.prompts.domain_preamble, profile)],
        model_settings=settings or None,  # type: ignore[arg-type]
    )
    try:
        prompt = passages_prompt(question, passages, names)
        result = await agent.run(
            prompt,
            # a known context: the earlier turns that still fit beside this one's request
            message_history=history_within(work.messages, context, prompt, profile) if context else work.messages,
            cancellation_token=cancel,
        )
    except RunCancelled as exc:
        raise AnswerStopped("") from exc
    except AgentRunError as exc:
        raise chat_model_error(exc, model, "fallback") from exc
    work.messages = [*work.messages, *result.new_messages()]  # the whole history, even if cut
    output = result.output
    cited = cite_markers(state, output, passages, epoch=len(work.messages))
    recovered: list[int] = []
    # what each passage covers (its text) and how it was named (its source line)
    shown_texts = [p.content for p in passages]
    shown_names = [passage_heading(p, names.get(p.document_id)) for p in passages]
    if not cited and not REFUSAL_START.search(output):
        output, recovered = recover_markers(
            output, shown_texts, question=question, names=shown_names
        )
        for n in recovered:  # shown as citations; not declared (the model declared nothing)
            state.cite_result(passages[n - 1].chunk_id, passages[n - 1])
        cited = [(n, passages[n - 1].chunk_id) for n in recovered]
    state.evidence.end_question()
    work.state[RAGCapability.namespace] = state.model_dump(mode="json")
    marker_to_number = {n: display_number(work.numbers, chunk_id) for n, chunk_id in cited}
    citations = tuple(shown(work.numbers, state.citation_index[chunk_id]) for _, chunk_id in cited)
    text = renumber_markers(output, marker_to_number, drop_unknown=True)
    if citations:
        yield Cited(citations)
    yield TextDelta(text)
    grounding = grounding_of([(RAGCapability.namespace, state)])
    covered = {marker_to_number[n]: shown_texts[n - 1] for n, _ in cited}
    support = check_support(
        text,
        covered,
        names={marker_to_number[n]: shown_names[n - 1] for n, _ in cited},
        grounding=grounding,
        question=question,
        recovered=[marker_to_number[n] for n in recovered],
    )
    yield Answered(
        text=text,
        citations=citations,
        grounding=grounding,
        basis=basis_of(grounding, computed=False),
        mode="fallback",
        tokens=_token_figures(result.new_messages(), None),
        support=support,
    )


# --- search only: no model ------------------------------------------------------------------


async def _search_only(
    client: HaikuRAG,
    question: str,
    work: Conversation,
    options: AnswerOptions,
) -> AsyncIterator[AnswerEvent]:
    from haiku.rag.citations import pages_label, snippet

    yield Started("search-only", ())
    step = Step("search-1", "search", f"Searching “{_short(question)}”")
    yield step
    results = await client.search(question, limit=options.search_limit, document_ids=options.document_ids)
    passages = await client.expand_context(results)
    yield Step(step.id, step.kind, step.label, finished=True)
    citations = tuple(
        Citation.from_result(display_number(work.numbers, p.chunk_id), p.chunk_id, p)
        for p in passages
    )
    if citations:
        lines = [SEARCH_ONLY_HEADER, ""]
        for c in citations:
            where_label = " — ".join(
                x for x in (c.document_title or c.document_uri, pages_label(c.page_numbers, c.page_labels)) if x
            )
            lines.append(
                f"{c.index}. **{where_label}**: {snippet(c.matched_text or c.content, question)} [{c.index}]"
            )
        text = "\n".join(lines)
    else:
        text = NOTHING_FOUND
    yield TextDelta(text)
    grounding: CitationStatus = "grounded" if citations else "ungrounded"
    yield Answered(
        text=text,
        citations=citations,
        grounding=grounding,
        basis="search-results",
        mode="search-only",
        tokens=TokenFigures(),
        # the list quotes passages and claims nothing: no support verdict to give
        support=None,
    )


def excerpt(content: str, query: str = "", limit: int = SNIPPET_CHARS) -> str:
    """The part of ``content`` that matched ``query`` (``haiku.rag.citations.excerpt``)."""
    from haiku.rag.citations import excerpt as matched_part

    return matched_part(content, query, limit)
