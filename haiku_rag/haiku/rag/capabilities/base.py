"""What every evidence capability shares: state, question lifecycle, budgets, search and cite.

A subclass names its namespace and instructions and may add tools (the analysis capability adds
code execution); search, citation, the evidence ledger, budgets, state syncing and the client's
lifecycle come from here.

Per-run data lives on the copy ``for_run`` returns, never on the instance given to the agent,
which is shared by every run and every concurrent request.
"""

from __future__ import annotations

import asyncio
import copy
import difflib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Generic, TypeVar

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    ToolReturn,
    ToolReturnPart,
    UserContent,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import DeferredToolRequests, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from haiku.rag.capabilities.budget import RequestBudget, budget_notice
from haiku.rag.capabilities.formatting import bounded_result, shown_results
from haiku.rag.capabilities.ledger import CapabilityEvidenceRecord, EvidenceRef
from haiku.rag.capabilities.pictures import png_image, render_picture, search_image_label
from haiku.rag.capabilities.state import EvidenceState
from haiku.rag.citations import Citation, matched_picture_refs
from haiku.rag.client import HaikuRAG
from haiku.rag.config import AppConfig
from haiku.rag.errors import DocumentNotFoundError, StoreError
from haiku.rag.store.models import SearchResult

StateT = TypeVar("StateT", bound=EvidenceState)

# difflib ratio above which a malformed chunk id is taken for a retrieved one; unrelated
# 32-hex ids score about 0.5, a dropped or swapped character about 0.97.
CHUNK_ID_MATCH_CUTOFF = 0.75
TOOL_MAX_RETRIES = 3
SEARCH_LIMIT_MESSAGE = (
    "Search limit reached. Answer the question using the results you already have."
)
UNGROUNDED_REPLY = "Recorded: this answer cites no knowledge-base evidence."
REFUSED_NOT_SHOWN = "not in any result shown in this conversation"
REFUSED_OUT_OF_SCOPE = "from a document outside the current scope"
REFUSED_GONE = "no longer in the knowledge base"
MAX_REFUSED_LISTED = 20  # ids a refusal names, so a flood of made-up ids stays a short reply


def search_tool_name(namespace: str) -> str:
    """The search tool of the capability with state namespace ``namespace``."""
    return f"{namespace}_search"


def cite_tool_name(namespace: str) -> str:
    """The cite tool of the capability with state namespace ``namespace``."""
    return f"{namespace}_cite"


@dataclass
class _RunScope(Generic[StateT]):
    """Everything one run of a capability owns."""

    state: StateT
    state_carried: bool  # the host handed back state from an earlier run
    budget: RequestBudget
    tool_uses: Counter[str] = field(default_factory=Counter)
    epoch: int | None = None  # message count at the current request
    client: HaikuRAG | None = None  # owned: opened lazily, closed at run end
    client_lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass(kw_only=True)
class EvidenceCapability(AbstractCapability[Any], Generic[StateT]):
    """Base class of capabilities that retrieve evidence and record what answers cite."""

    namespace: ClassVar[str]  # state key and tool-name prefix
    capability_id: ClassVar[str]
    capability_description: ClassVar[str]
    state_type: ClassVar[type[EvidenceState]]
    instructions: ClassVar[str]

    db_path: str | None = None
    config: AppConfig
    rag: HaikuRAG | None = None  # a lent client: reused, never closed
    request_limit: int | None = 20
    vision: bool = False
    _run: _RunScope[StateT] | None = field(default=None, init=False, repr=False, compare=False)
    _toolset: FunctionToolset[Any] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        # Set here rather than as class defaults: pydantic-ai merges duplicates of a capability
        # whose id is a class default, and two of these in one agent must be an error instead.
        if self.id is None:
            self.id = self.capability_id
        if self.description is None:
            self.description = self.capability_description

    # --- tool names ---------------------------------------------------------------------

    @property
    def search_tool_name(self) -> str:
        return search_tool_name(self.namespace)

    @property
    def cite_tool_name(self) -> str:
        return cite_tool_name(self.namespace)

    def evidence_tool_names(self) -> tuple[str, ...]:
        """Tools whose returns are evidence (what compaction rewrites), in the order notices name them."""
        return (self.search_tool_name,)

    def tool_names(self) -> frozenset[str]:
        return frozenset((*self.evidence_tool_names(), self.cite_tool_name))

    def tool_budgets(self) -> dict[str, tuple[int, str]]:
        """Per-tool call budgets for one run: tool name -> (calls allowed, message once spent)."""
        return {self.search_tool_name: (self.config.qa.max_searches, SEARCH_LIMIT_MESSAGE)}

    # --- run scope ----------------------------------------------------------------------

    @property
    def run(self) -> _RunScope[StateT]:
        if self._run is None:
            raise RuntimeError(f"{type(self).__name__} is used outside an agent run")
        return self._run

    @property
    def state(self) -> StateT:
        return self.run.state

    @property
    def state_carried(self) -> bool:
        return self.run.state_carried

    def evidence_record(self) -> CapabilityEvidenceRecord:
        return self.run.state.evidence

    def citation_index(self) -> dict[str, Citation]:
        return self.run.state.citation_index

    def cite_available(self, ctx: RunContext[Any]) -> bool:
        """Whether the model can call the cite tool now (loaded, and not withdrawn by a budget)."""
        return ctx.is_tool_available(self.cite_tool_name)

    async def for_run(self, ctx: RunContext[Any]) -> EvidenceCapability[StateT]:
        state = self._stored_state(ctx)
        carried = state.evidence.question is not None
        if ctx.prompt is None and history_awaits_model(ctx.messages):
            if not state.evidence.in_progress:
                raise RuntimeError(
                    f"{self.id}: resuming a question with no stored question identity. Pass the "
                    f"state dict of the run being resumed (deps.state[{self.namespace!r}]) together "
                    "with its message history."
                )
        else:
            state.begin_question(len(ctx.messages))
        per_run = copy.copy(self)
        per_run._run = _RunScope(
            state=state, state_carried=carried, budget=RequestBudget(self.request_limit)
        )
        # Written now, not only after tool calls: a run that pauses before this capability acts
        # must still leave the question identity for the run that resumes it.
        per_run.sync_state(ctx)
        return per_run

    def _stored_state(self, ctx: RunContext[Any]) -> StateT:
        bag = state_dict(ctx.deps)
        raw = bag.get(self.namespace) if bag is not None else None
        return self.state_type.model_validate(raw) if raw is not None else self.state_type()  # type: ignore[return-value]

    def sync_state(self, ctx: RunContext[Any]) -> None:
        bag = state_dict(ctx.deps)
        if bag is not None:
            bag[self.namespace] = self.run.state.model_dump(mode="json")

    async def client(self) -> HaikuRAG:
        if self.rag is not None:
            return self.rag
        run = self.run
        async with run.client_lock:
            if run.client is None:
                run.client = await asyncio.to_thread(
                    HaikuRAG, self.db_path, self.config, read_only=True
                )
            return run.client

    def close_resources(self) -> None:
        run = self.run
        if run.client is not None:
            run.client.close()
            run.client = None

    # --- contributions and hooks --------------------------------------------------------

    def get_instructions(self) -> str:
        preamble = self.config.prompts.domain_preamble.strip()
        return f"{preamble}\n\n{self.instructions}" if preamble else self.instructions

    def get_toolset(self) -> FunctionToolset[Any]:
        # Built once and shared by every run (building tool schemas is not free): the tools act
        # on the run's own copy of the capability, found in the run's registry.
        if self._toolset is None:
            self._toolset = FunctionToolset(
                id=self.id, max_retries=TOOL_MAX_RETRIES, sequential=True
            )
            self.add_tools(self._toolset)
        return self._toolset

    def in_run(self, ctx: RunContext[Any]) -> EvidenceCapability[StateT]:
        """This capability's copy for the run of ``ctx``."""
        capability = ctx.capabilities[self.id or self.capability_id]
        assert isinstance(capability, type(self))
        return capability

    def add_tools(self, toolset: FunctionToolset[Any]) -> None:
        """Register this capability's tools; subclasses call this and add their own."""

        async def search(
            ctx: RunContext[Any], query: str, limit: int | None = None
        ) -> str | ToolReturn:
            """Search the knowledge base for passages relevant to a query.

            Args:
                query: A few specific keywords, not a whole question.
                limit: How many results to return; leave unset for the default.
            """
            return await self.in_run(ctx).search(ctx, query, limit)

        async def cite(ctx: RunContext[Any], chunk_ids: list[str]) -> str:
            """Register the chunk ids of the results that support your answer, before answering.

            Args:
                chunk_ids: Chunk ids copied verbatim from the results; an empty list when no
                    result supports the answer.
            """
            return await self.in_run(ctx).cite(ctx, chunk_ids)

        toolset.add_function(search, name=self.search_tool_name)
        toolset.add_function(cite, name=self.cite_tool_name)

    async def prepare_tools(
        self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        phase = self.run.budget.phase
        if phase == "open":
            return tool_defs
        kept = {self.cite_tool_name} if phase == "cite_only" else set()
        owned = self.tool_names()
        return [t for t in tool_defs if t.name not in owned or t.name in kept]

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        run = self.run
        run.epoch = len(ctx.messages)
        # The budget as prepare_tools saw it for this request, before this request is counted.
        notice = budget_notice(
            namespace=self.namespace,
            phase=run.budget.phase,
            spent_tools=self.spent_tools(),
            evidence_tools=list(self.evidence_tool_names()),
            cite_tool=self.cite_tool_name,
        )
        if notice is not None:
            params = request_context.model_request_parameters
            parts = [*(params.instruction_parts or []), InstructionPart(notice, dynamic=True)]
            request_context.model_request_parameters = replace(params, instruction_parts=parts)
        run.budget.count_request(previous_response_called(ctx.messages, self.tool_names()))
        return request_context

    async def after_run(
        self, ctx: RunContext[Any], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        try:
            if not isinstance(result.output, DeferredToolRequests):  # a pause is not an ending
                self.run.state.evidence.end_question()
            self.sync_state(ctx)
        finally:
            self.close_resources()
        return result

    async def on_run_error(
        self, ctx: RunContext[Any], *, error: BaseException
    ) -> AgentRunResult[Any]:
        # The question stays in progress so the host can resume it.
        try:
            self.sync_state(ctx)
        finally:
            self.close_resources()
        raise error

    # --- budgets --------------------------------------------------------------------------

    def spent_tools(self) -> list[str]:
        uses = self.run.tool_uses
        return [name for name, (allowed, _) in self.tool_budgets().items() if uses[name] >= allowed]

    def charge(self, tool_name: str) -> None:
        """Count a call against the tool's budget; a spent budget fails the call but keeps the tool."""
        allowed, message = self.tool_budgets()[tool_name]
        if self.run.tool_uses[tool_name] >= allowed:
            raise ToolFailed(message)
        self.run.tool_uses[tool_name] += 1

    def epoch(self, ctx: RunContext[Any]) -> int:
        # A deferred call approved on resume runs before this run's first request.
        return self.run.epoch if self.run.epoch is not None else len(ctx.messages)

    # --- search ---------------------------------------------------------------------------

    async def search(self, ctx: RunContext[Any], query: str, limit: int | None) -> str | ToolReturn:
        try:
            self.charge(self.search_tool_name)
            results = await self.search_corpus(query, limit)
            # only what the model is shown becomes evidence, cut as it was shown
            text, results = shown_results(results)
            self.state.add_search(query, results)
            self.state.evidence.note_evidence(self.epoch(ctx))
            images = await self.result_images(results) if self.vision else []
            return ToolReturn(return_value=text, content=images) if images else text
        finally:
            self.sync_state(ctx)

    async def search_corpus(self, query: str, limit: int | None) -> list[SearchResult]:
        client = await self.client()
        state = self.state
        results = await client.search(
            query, limit=limit, filter=state.document_filter, document_ids=state.document_ids
        )
        expanded = await client.expand_context(results)
        return [bounded_result(r, self.config.search.max_context_chars) for r in expanded]

    async def result_images(self, results: Sequence[SearchResult]) -> list[UserContent]:
        """Each picture hit as a labelled image, once per (document, picture)."""
        found: list[tuple[str, str, UserContent]] = []
        seen: set[tuple[str, str]] = set()
        for result in results:
            for ref in matched_picture_refs(result):
                if (result.document_id, ref) in seen:
                    continue
                seen.add((result.document_id, ref))
                image = await self.picture(result.document_id, ref)
                if image is not None:
                    found.append((result.chunk_id, ref, image))
        content: list[UserContent] = []
        for position, (chunk_id, ref, image) in enumerate(found, start=1):
            content += [search_image_label(position, len(found), chunk_id, ref), image]
        return content

    async def picture(self, document_id: str, self_ref: str) -> UserContent | None:
        data = await self.get_picture_bytes(document_id, self_ref)
        return png_image(data) if data is not None else None

    async def get_picture_bytes(self, document_id: str, self_ref: str) -> bytes | None:
        return await render_picture(await self.client(), document_id, self_ref)

    # --- cite -----------------------------------------------------------------------------

    async def cite(self, ctx: RunContext[Any], chunk_ids: list[str]) -> str:
        try:
            state = self.state
            epoch = self.epoch(ctx)
            retrieved = state.retrieved_chunk_ids()
            wanted = [cleaned for raw in chunk_ids if (cleaned := clean_chunk_id(raw))]
            if not wanted:
                state.evidence.declare([], epoch, retrieved)
                return UNGROUNDED_REPLY
            candidates = sorted(retrieved | state.retrieved.keys() | state.citation_index.keys())
            wanted = list(dict.fromkeys(repair_chunk_id(c, candidates) for c in wanted))
            cited, refused = await self.register_citations(ctx, wanted)
            if not cited:
                raise ModelRetry(
                    f"Nothing was registered: {refusal_text(refused)}. Copy chunk_ids verbatim "
                    "from the results you were shown (the [chunk_id] of a result or of one of "
                    f"its passages), or call {self.cite_tool_name} with an empty list if no "
                    "result supports the answer."
                )
            refs = [EvidenceRef(capability=self.namespace, chunk_id=c) for c in cited]
            state.evidence.declare(refs, epoch, retrieved)
            reply = f"Registered {len(cited)} citation(s)"
            if refused:
                reply += f"; not registered: {refusal_text(refused)}"
            return reply + "."
        finally:
            self.sync_state(ctx)

    async def register_citations(
        self, ctx: RunContext[Any], chunk_ids: list[str]
    ) -> tuple[list[str], dict[str, str]]:
        """Register the ids the conversation was shown within the current scope.

        An id resolves against this question's results, then any other evidence capability's
        results in this run, then earlier citations, then what earlier questions retrieved or the
        sandbox exposed (read back from the store). Anything else, and anything whose document is
        outside the scope, is refused (id -> reason) and grounds nothing: a stored chunk
        id the model never saw, or saw before the chat was scoped, is not evidence for this answer.
        """
        state = self.state
        scope = await self.scope_documents()

        def in_scope(document_id: str) -> bool:
            return scope is None or document_id in scope

        cited: list[str] = []
        refused: dict[str, str] = {}
        for chunk_id in chunk_ids:
            result = state.find_result(chunk_id) or self.peer_result(ctx, chunk_id)
            known = state.citation_index.get(chunk_id)
            document_id = (
                result.document_id
                if result is not None
                else known.document_id
                if known is not None
                else state.retrieved.get(chunk_id)
            )
            stored: SearchResult | None = None
            if document_id is None and (state.opened_documents or self.peer_opened(ctx)):
                stored = await self.lookup_chunk(chunk_id)
                opened = {*state.opened_documents, *self.peer_opened(ctx)}
                if stored is not None and stored.document_id in opened:
                    document_id = stored.document_id
            if document_id is None:
                refused[chunk_id] = REFUSED_NOT_SHOWN
                continue
            if not in_scope(document_id):
                refused[chunk_id] = REFUSED_OUT_OF_SCOPE
                continue
            if result is not None:
                state.cite_result(chunk_id, result)
            elif known is not None:
                state.cite_again(chunk_id)
            else:
                stored = stored or await self.lookup_chunk(chunk_id)
                if stored is None:
                    refused[chunk_id] = REFUSED_GONE
                    continue
                state.cite_result(chunk_id, stored)
            cited.append(chunk_id)
        return cited, refused

    async def scope_documents(self) -> set[str] | None:
        """The ids of the documents the conversation is scoped to; None when it is not scoped.
        The scope's ids as they are; a host's SQL ``document_filter`` is resolved by the store."""
        document_ids, document_filter = self.state.document_ids, self.state.document_filter
        if document_filter is None:
            return None if document_ids is None else set(document_ids)
        client = await self.client()
        try:
            documents = await client.list_documents(filter=document_filter, document_ids=document_ids)
        except StoreError as exc:
            raise ToolFailed(str(exc)) from None
        return {d.id for d in documents}

    def peers(self, ctx: RunContext[Any]) -> list[EvidenceCapability[Any]]:
        """The run's other evidence capabilities (what their tools showed is citable here too)."""
        return [
            c
            for c in ctx.capabilities.values()
            if isinstance(c, EvidenceCapability) and c is not self and c._run is not None
        ]

    def peer_result(self, ctx: RunContext[Any], chunk_id: str) -> SearchResult | None:
        for peer in self.peers(ctx):
            if (found := peer.state.find_result(chunk_id)) is not None:
                return found
        return None

    def peer_opened(self, ctx: RunContext[Any]) -> list[str]:
        return [d for peer in self.peers(ctx) for d in peer.state.opened_documents]

    async def lookup_chunk(self, chunk_id: str) -> SearchResult | None:
        client = await self.client()
        try:
            chunk = await client.get_chunk(chunk_id)
            document = await client.get_document(chunk.document_id)
        except DocumentNotFoundError:
            return None
        return SearchResult(
            chunk_id=chunk.id,
            chunk_ids=[chunk.id],
            score=1.0,
            content=chunk.content,
            document_id=document.id,
            document_uri=document.uri,
            document_title=document.title,
            document_meta=document.metadata,
            order=chunk.order,
            headings=chunk.headings,
            labels=chunk.labels,
            doc_item_refs=chunk.doc_item_refs,
            page_numbers=chunk.page_numbers,
            boxes=chunk.boxes,
            matched_refs=chunk.doc_item_refs,
        )


def state_dict(deps: Any) -> dict[str, Any] | None:
    """The host's ``deps.state`` when it is a plain dict; capabilities keep run-local state otherwise."""
    state = getattr(deps, "state", None)
    return state if isinstance(state, dict) else None


def history_awaits_model(messages: Sequence[ModelMessage]) -> bool:
    """Whether the history stops mid-question: a request the model has not answered, or tool
    calls still waiting for their results."""
    if not messages:
        return False
    last = messages[-1]
    if isinstance(last, ModelResponse):
        return bool(last.tool_calls)
    # A request ending the history is unfinished work only when it carries tool results or a
    # retry prompt. A bare user prompt there is a new question: UI adapters (AG-UI, Vercel AI)
    # send the newest user message inside the history rather than as the run's prompt.
    return any(isinstance(part, ToolReturnPart | RetryPromptPart) for part in last.parts)


def previous_response_called(messages: Sequence[ModelMessage], tool_names: frozenset[str]) -> bool:
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            return any(call.tool_name in tool_names for call in message.tool_calls)
    return False


def refusal_text(refused: dict[str, str]) -> str:
    """``[id] (reason)`` for each refused id, grouped by reason."""
    by_reason: dict[str, list[str]] = {}
    for chunk_id, reason in refused.items():
        by_reason.setdefault(reason, []).append(chunk_id)

    def listed(ids: list[str]) -> str:
        shown = ", ".join(f"[{c[:64]}]" for c in ids[:MAX_REFUSED_LISTED])
        more = len(ids) - MAX_REFUSED_LISTED
        return shown + (f" and {more} more" if more > 0 else "")

    return "; ".join(f"{listed(ids)} ({reason})" for reason, ids in by_reason.items())


def clean_chunk_id(raw: str) -> str:
    return raw.strip().strip("[]").strip()


def repair_chunk_id(chunk_id: str, candidates: Sequence[str]) -> str:
    if chunk_id in candidates:
        return chunk_id
    close = difflib.get_close_matches(chunk_id, candidates, n=1, cutoff=CHUNK_ID_MATCH_CUTOFF)
    return close[0] if close else chunk_id
