"""Chat: conversations, one agent per question built from the chosen model and the toggles,
streamed to the chat pane as Qt signals.

A question runs on a *copy* of its conversation (history and capability state). Only when the
answer is complete are both written back and saved together, so a stopped or failed question
leaves the conversation exactly as it was before it was asked. Stop ends an agent run through
Pydantic AI's own cancellation (a ``CancellationToken``): the run closes its model stream and
tool tasks itself and ends with ``RunCancelled``, which is reported as a cancellation.

Citations are numbered for display once per conversation, across capabilities: haiku.rag's RAG
and analysis capabilities each count their own indexes, so the service gives every cited passage
one number, the same in every answer of the conversation (new ones continue from the highest
number shown so far, in the order this answer first cited them), and renumbers the answer's
``[n]`` markers to match.

Three ways to answer:

- **tools**: an agent with the RAG capability (searching and citing), plus evidence compaction,
  the citation policy and the analysis capability when their toggles are on;
- **fallback** (no tools): for models that cannot call tools, chosen automatically from the
  model's ``supports_tools: false`` or by hand per conversation: haiku.rag searches, the model
  reads numbered passages, and its ``[n]`` markers become citations;
- **search-only**: with no model connected, the best passages with their citations, and how to
  connect a model.
"""

from __future__ import annotations

import copy
import inspect
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from haiku_desk.bridge import Operation
from haiku_desk.services.conversations import (
    UNTITLED,
    ConversationFileError,
    ConversationRecord,
    ConversationStore,
    ConversationSummary,
    Toggles,
    ToolStep,
    Turn,
    now,
)
from haiku_desk.services.models import HOW_TO_CONNECT_A_MODEL, ModelsService
from haiku_desk.services.notifications import Notifications

if TYPE_CHECKING:
    from pydantic_ai import Agent

    from haiku.rag.capabilities.state import Citation
    from haiku.rag.client import HaikuRAG
    from haiku.rag.store.models import SearchResult

log = logging.getLogger("haiku_desk")

TITLE_LENGTH = 60
SEARCH_ONLY_PASSAGES = 5
SNIPPET_CHARS = 400
ANALYSIS_MODULE = "haiku.rag.capabilities.analysis"
TOGGLE_NAMES = ("evidence_compaction", "citation_policy", "analysis", "no_tools")


@dataclass(frozen=True)
class BuiltAgent:
    """The agent of a run and the capability ids it was given, in order."""

    agent: Agent[Any, str]
    capability_ids: tuple[str, ...]


class ChatService(QObject):
    """Conversations and their questions. Views call methods and listen to signals."""

    conversations_changed = Signal()  # the list (titles, order) changed
    current_changed = Signal(object)  # ConversationRecord | None
    toggles_changed = Signal(object)  # Toggles of the current conversation
    scope_changed = Signal(int)  # number of selected documents (0: the whole library)
    busy_changed = Signal(bool)
    question_started = Signal(str, object)  # conversation id, Turn (question only)
    text_reset = Signal(str)  # an earlier streamed text was not the answer (the model went on)
    text_delta = Signal(str, str)  # conversation id, text
    tool_step = Signal(str, object)  # conversation id, ToolStep (begun)
    analysis_step = Signal(str, object)  # conversation id, ToolStep with code and output
    answer_ready = Signal(str, object)  # conversation id, Turn (complete, saved)
    question_failed = Signal(str, str)  # conversation id, one-line reason
    question_cancelled = Signal(str)  # conversation id
    token_meter_changed = Signal(int)  # input tokens of the last model request

    def __init__(
        self,
        library: Any,
        models: ModelsService,
        notifications: Notifications,
        parent: QObject | None = None,
        *,
        store: ConversationStore | None = None,
    ) -> None:
        super().__init__(parent)
        self.library = library
        self.models = models
        self.notifications = notifications
        self.store = store or ConversationStore.in_data_dir(models.config.storage.data_dir)
        self._records: dict[str, ConversationRecord] = {}
        self._current: ConversationRecord | None = None
        self._operation: Operation | None = None
        self._run_token: Any = None  # pydantic_ai.CancellationToken of the running agent run
        self.last_built: BuiltAgent | None = None  # the agent of the latest tools-mode question
        self.analysis_unavailable: str | None = None  # why analysis mode could not be added
        self.token_meter: int | None = None
        selection_changed = getattr(library, "selection_changed", None)
        if selection_changed is not None:
            selection_changed.connect(
                lambda *_: self.scope_changed.emit(len(self.scope_document_ids()))
            )

    # --- conversations ------------------------------------------------------------------

    @property
    def current(self) -> ConversationRecord | None:
        return self._current

    def conversations(self, search: str = "") -> list[ConversationSummary]:
        """Saved conversations, newest first; ``search`` matches titles, questions and answers."""
        found: list[ConversationRecord] = []
        for item in self.store.records():
            if isinstance(item, ConversationFileError):
                log.warning("%s", item)
                continue
            record = self._records.get(item.id, item)
            if record.matches(search):
                found.append(record)
        found.sort(key=lambda r: r.updated, reverse=True)
        return [ConversationSummary(id=r.id, title=r.title, updated=r.updated) for r in found]

    def new_conversation(self, title: str = UNTITLED) -> ConversationRecord:
        record = ConversationRecord(title=title)
        self._records[record.id] = record
        self._save(record)
        self._set_current(record)
        self.conversations_changed.emit()
        return record

    def open_conversation(self, conversation_id: str) -> ConversationRecord | None:
        record = self._record(conversation_id)
        if record is not None:
            self._set_current(record)
        return record

    def rename(self, conversation_id: str, title: str) -> None:
        record = self._record(conversation_id)
        title = " ".join(title.split())
        if record is None or not title:
            return
        record.title = title
        self._save(record)
        self.conversations_changed.emit()
        if record is self._current:
            self.current_changed.emit(record)

    def delete(self, conversation_id: str) -> None:
        if self.busy and self._running_id == conversation_id:
            self.stop()
        self.store.delete(conversation_id)
        self._records.pop(conversation_id, None)
        if self._current is not None and self._current.id == conversation_id:
            self._set_current(None)
        self.conversations_changed.emit()

    def set_toggle(self, name: str, value: bool | None) -> None:
        """Turn a capability toggle of the current conversation on or off (saved at once)."""
        if name not in TOGGLE_NAMES:
            raise ValueError(f"unknown toggle {name!r}")
        record = self._current or self.new_conversation()
        record.toggles = record.toggles.model_copy(update={name: value})
        self._save(record)
        self.toggles_changed.emit(record.toggles)

    def _record(self, conversation_id: str) -> ConversationRecord | None:
        if conversation_id in self._records:
            return self._records[conversation_id]
        try:
            record = self.store.load(conversation_id)
        except FileNotFoundError:
            return None
        except ConversationFileError as exc:
            self.notifications.error(str(exc))
            return None
        self._records[record.id] = record
        return record

    def _set_current(self, record: ConversationRecord | None) -> None:
        self._current = record
        self.current_changed.emit(record)
        if record is not None:
            self.toggles_changed.emit(record.toggles)
            tokens = next((t.input_tokens for t in reversed(record.turns) if t.input_tokens), None)
            self._set_token_meter(tokens)

    def _save(self, record: ConversationRecord) -> None:
        try:
            self.store.save(record)
        except OSError as exc:
            self.notifications.report_failure(
                f"Saving the conversation {record.title!r} failed", exc
            )

    # --- scope --------------------------------------------------------------------------

    def scope_document_ids(self) -> list[str]:
        selected = getattr(self.library, "selected_document_ids", None)
        if callable(selected):
            selected = selected()
        return list(selected or [])

    def scope_filter(self) -> str | None:
        """SQL over document columns restricting searches to the selected documents."""
        ids = self.scope_document_ids()
        if not ids:
            return None
        quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in ids)
        return f"id IN ({quoted})"

    # --- asking -------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self._operation is not None and self._operation.running

    @property
    def _running_id(self) -> str | None:
        return getattr(self._operation, "conversation_id", None)

    def answer_mode(self, toggles: Toggles | None = None) -> str:
        """``tools``, ``fallback`` or ``search-only`` for the next question."""
        if not self.models.is_configured():
            return "search-only"
        toggles = toggles or (self._current.toggles if self._current else Toggles())
        if toggles.no_tools is True:
            return "fallback"
        if toggles.no_tools is None and not self.models.supports_tools():
            return "fallback"
        return "tools"

    def ask(self, question: str) -> Operation | None:
        """Answer ``question`` in the current conversation (a new one when there is none)."""
        question = question.strip()
        if not question:
            return None
        if self.busy:
            self.notifications.info("Wait for the current answer, or stop it, before asking again")
            return None
        record = self._current or self.new_conversation()
        turn = Turn(question=question, mode=self.answer_mode(record.toggles))  # type: ignore[arg-type]

        async def body(token: Any, report: Any) -> Turn:
            return await self._answer(record, turn)

        operation = Operation(f"Answering {question[:40]!r}", body, self)
        operation.conversation_id = record.id  # type: ignore[attr-defined]
        operation.succeeded.connect(lambda done: self._finish(record, done))
        operation.failed.connect(lambda exc: self._fail(record, exc))
        operation.cancelled.connect(lambda: self.question_cancelled.emit(record.id))
        operation.ended.connect(lambda: self.busy_changed.emit(False))
        self._operation = operation
        self.question_started.emit(record.id, turn)
        operation.start()
        self.busy_changed.emit(True)
        return operation

    def stop(self) -> None:
        """Stop the running question; its conversation stays as it was before it was asked.

        An agent run is cancelled through its Pydantic AI ``CancellationToken``, so the run
        tears itself down (model stream, tool tasks, sandbox) and ends as ``RunCancelled``. Before
        the run starts, for fallback and search-only answers, and on a second Stop, the
        operation's task is cancelled instead.
        """
        operation = self._operation
        if operation is None or not operation.running:
            return
        operation.token.cancel()
        token = self._run_token
        if token is not None and not token.cancelled:
            try:
                token.cancel()
                return
            except Exception:  # a run whose loop cannot be reached: cancel the task
                log.warning("Stopping the agent run failed; cancelling its task", exc_info=True)
        operation.cancel()

    def _finish(self, record: ConversationRecord, turn: Turn) -> None:
        self.answer_ready.emit(record.id, turn)
        if turn.input_tokens is not None:
            self._set_token_meter(turn.input_tokens)

    def _fail(self, record: ConversationRecord, exc: BaseException) -> None:
        message = _one_line(exc)
        self.notifications.error(
            f"The question could not be answered: {message}", type(exc).__name__
        )
        self.question_failed.emit(record.id, message)

    def _set_token_meter(self, tokens: int | None) -> None:
        self.token_meter = tokens
        self.token_meter_changed.emit(tokens or 0)

    async def _answer(self, record: ConversationRecord, turn: Turn) -> Turn:
        from haiku.rag.qa import Conversation

        work = Conversation(state=copy.deepcopy(record.state), messages=record.model_messages())
        if turn.mode == "search-only":
            await self._answer_search_only(record, turn)
        elif turn.mode == "fallback":
            await self._answer_fallback(record, turn, work)
        else:
            await self._answer_with_tools(record, turn, work)
        # Complete: history and state are written back together, then saved together.
        if turn.mode != "search-only":
            record.set_model_messages(work.messages)
            record.state = work.state
        record.turns.append(turn)
        if record.title == UNTITLED:
            record.title = _title_from(turn.question)
        record.updated = now()
        self._save(record)
        self.conversations_changed.emit()
        return turn

    # --- tools mode ---------------------------------------------------------------------

    def build_agent(
        self, toggles: Toggles, model: Any, client: HaikuRAG | None = None
    ) -> BuiltAgent:
        """The agent for one question: RAG always, then compaction, the citation policy and
        analysis as the toggles say (analysis last)."""
        from pydantic_ai import Agent

        from haiku.rag.capabilities.compaction import create_capability as compaction
        from haiku.rag.capabilities.policy import create_capability as citation_policy
        from haiku.rag.capabilities.rag import create_capability as rag
        from haiku.rag.models import model_settings
        from haiku.rag.qa import AGENT_PREAMBLE, Conversation

        client = client or self.library.client
        capabilities: list[Any] = [rag(rag=client, defer_loading=False)]
        if toggles.evidence_compaction:
            capabilities.append(compaction())
        if toggles.citation_policy:
            capabilities.append(citation_policy())
        if toggles.analysis:
            analysis = self._analysis_capability(client)
            if analysis is not None:
                capabilities.append(analysis)
        settings = (
            {} if self.models.uses_model_instance else model_settings(self.models.model_config())
        )
        agent = Agent(
            model,
            deps_type=Conversation,
            instructions=AGENT_PREAMBLE,
            capabilities=capabilities,
            model_settings=settings or None,
        )
        built = BuiltAgent(agent, tuple(str(c.id) for c in capabilities))
        self.last_built = built
        return built

    def _analysis_capability(self, client: HaikuRAG) -> Any | None:
        import importlib

        try:
            module = importlib.import_module(ANALYSIS_MODULE)
        except ImportError as exc:
            self.analysis_unavailable = (
                f"analysis mode is not available in this installation ({exc})"
            )
            self.notifications.info(f"Answering without analysis: {self.analysis_unavailable}")
            return None
        create = module.create_capability
        offered: dict[str, Any] = {
            "rag": client,
            "config": client.config,
            "db_path": client.location,
            "defer_loading": False,
        }
        accepted = inspect.signature(create).parameters
        self.analysis_unavailable = None
        return create(**{k: v for k, v in offered.items() if k in accepted})

    async def _answer_with_tools(self, record: ConversationRecord, turn: Turn, work: Any) -> None:
        from pydantic_ai.exceptions import AgentRunError, RunCancelled
        from pydantic_ai.messages import ModelResponse

        from haiku.rag.errors import OperationCancelled
        from haiku.rag.qa import _chat_model_error

        model = self.models.create_model()
        built = self.build_agent(record.toggles, model)
        _seed_filter(work, self.scope_filter())
        cited: dict[tuple[str, str], None] = {}
        try:
            result = await self._stream(record.id, turn, work, built, cited)
        except RunCancelled as exc:  # Stop: a cancellation, never a failure
            raise OperationCancelled("The question was stopped") from exc
        except AgentRunError as exc:
            raise _chat_model_error(exc, built.agent.model, "tools") from exc  # type: ignore[arg-type]
        work.messages = result.all_messages()
        responses = [m for m in result.new_messages() if isinstance(m, ModelResponse)]
        if responses:
            turn.input_tokens = responses[-1].usage.input_tokens
        cited_by, turn.grounding = _citations_and_grounding(work.state, list(cited))
        turn.citations, turn.answer = display_numbering(record.turns, cited_by, str(result.output))

    async def _stream(
        self,
        conversation_id: str,
        turn: Turn,
        work: Any,
        built: BuiltAgent,
        cited: dict[tuple[str, str], None] | None = None,
    ) -> Any:
        """Run the agent, turning its events into signals; returns the run result.

        ``cited`` collects ``(namespace, chunk_id)`` in the order the answer cited them, across
        capabilities (each capability's state keeps only its own order). Stop cancels the run
        through its ``CancellationToken``; the run then raises ``RunCancelled``.
        """
        from pydantic_ai import CancellationToken

        token = CancellationToken()
        self._run_token = token
        try:
            result = await self._stream_events(
                conversation_id, turn, work, built, token, {} if cited is None else cited
            )
        finally:
            if self._run_token is token:
                self._run_token = None
        assert result is not None
        return result

    async def _stream_events(
        self,
        conversation_id: str,
        turn: Turn,
        work: Any,
        built: BuiltAgent,
        token: Any,
        cited: dict[tuple[str, str], None],
    ) -> Any:
        from pydantic_ai import AgentRunResultEvent
        from pydantic_ai.messages import (
            FunctionToolCallEvent,
            FunctionToolResultEvent,
            PartDeltaEvent,
            PartStartEvent,
            TextPart,
            TextPartDelta,
        )

        streamed = False
        pending: dict[str, ToolStep] = {}
        result = None
        async with built.agent.run_stream_events(
            turn.question, deps=work, message_history=work.messages, cancellation_token=token
        ) as events:
            async for event in events:
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    if event.index == 0 and streamed:
                        self.text_reset.emit(conversation_id)
                    if event.part.content:
                        streamed = True
                        self.text_delta.emit(conversation_id, event.part.content)
                elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    if event.delta.content_delta:
                        streamed = True
                        self.text_delta.emit(conversation_id, event.delta.content_delta)
                elif isinstance(event, FunctionToolCallEvent):
                    step = _step_for(event.part.tool_name, event.part.args_as_dict())
                    pending[event.part.tool_call_id] = step
                    turn.steps.append(step)
                    self.tool_step.emit(conversation_id, step)
                elif isinstance(event, FunctionToolResultEvent):
                    step = pending.pop(event.part.tool_call_id, None)
                    if step is not None and step.kind == "analysis":
                        step.output = _text_of(event.part.content)
                        self.analysis_step.emit(conversation_id, step)
                    if event.part.tool_name.endswith("_cite"):
                        _note_cited(work.state, cited)
                elif isinstance(event, AgentRunResultEvent):
                    result = event.result
        return result

    # --- fallback mode ------------------------------------------------------------------

    async def _answer_fallback(self, record: ConversationRecord, turn: Turn, work: Any) -> None:
        from pydantic_ai.messages import ModelResponse

        from haiku.rag.qa import ask

        client = self.library.client
        model = self.models.create_model()
        step = ToolStep(kind="search", label=f"Searching “{_short(turn.question)}”")
        turn.steps.append(step)
        self.tool_step.emit(record.id, step)
        before = len(work.messages)
        result = await ask(
            client,
            turn.question,
            self.scope_filter(),
            model=model,
            mode="fallback",
            conversation=work,
        )
        turn.citations, turn.answer = display_numbering(
            record.turns, [(_RAG, c) for c in result.citations], result.answer
        )
        turn.grounding = result.grounding
        responses = [m for m in work.messages[before:] if isinstance(m, ModelResponse)]
        if responses:
            turn.input_tokens = responses[-1].usage.input_tokens
        self.text_delta.emit(record.id, turn.answer)

    # --- search-only mode ---------------------------------------------------------------

    async def _answer_search_only(self, record: ConversationRecord, turn: Turn) -> None:
        from haiku.rag.capabilities.state import Citation

        step = ToolStep(kind="search", label=f"Searching “{_short(turn.question)}”")
        turn.steps.append(step)
        self.tool_step.emit(record.id, step)
        passages = await self._search_passages(turn.question, SEARCH_ONLY_PASSAGES)
        turn.citations = [
            Citation.from_result(i, p.chunk_id, p) for i, p in enumerate(passages, start=1)
        ]
        turn.grounding = "grounded" if passages else "ungrounded"
        turn.answer = search_only_answer(turn.citations, turn.question)
        self.text_delta.emit(record.id, turn.answer)

    async def _search_passages(self, query: str, limit: int) -> list[SearchResult]:
        search_passages = getattr(self.library, "search_passages", None)
        if search_passages is not None:  # the library scopes to its own selection
            return list(await search_passages(query, limit))
        return await self.library.client.search(query, limit=limit, filter=self.scope_filter())


def search_only_answer(citations: Iterable[Citation], query: str = "") -> str:
    """The passages as a numbered Markdown list, each an excerpt around the query's words."""
    from haiku.rag.qa import pages_label
    from haiku_desk.citations import citation_title, snippet_source

    citations = list(citations)
    if not citations:
        body = "Nothing in your library matches this question."
    else:
        lines = ["The best passages from your library:", ""]
        for c in citations:
            where = " — ".join(x for x in (citation_title(c), pages_label(c.page_numbers)) if x)
            lines.append(f"{c.index}. **{where}**: {excerpt(snippet_source(c), query)} [{c.index}]")
        body = "\n".join(lines)
    return f"{body}\n\n_{HOW_TO_CONNECT_A_MODEL}_"


def excerpt(content: str, query: str = "", limit: int = SNIPPET_CHARS) -> str:
    """About ``limit`` characters of ``content`` where the most distinct words of ``query``
    (longer than three letters) meet: a passage widened to its section may begin far from what
    matched, and two claims citing one section should each see their own part of it."""
    text = " ".join(content.split())
    if len(text) <= limit:
        return text
    lowered = text.casefold()
    words = {w for w in re.findall(r"\w+", query.casefold()) if len(w) > 3}
    hits = sorted(m.start() for w in words for m in re.finditer(re.escape(w), lowered))
    start, best = 0, 0
    for hit in hits:  # each hit a quarter into the window; the earliest best window wins
        candidate = max(0, hit - limit // 4)
        window = lowered[candidate : candidate + limit]
        score = sum(1 for w in words if w in window)
        if score > best:
            start, best = candidate, score
    if start:
        start = text.rfind(" ", 0, start) + 1
    piece = text[start : start + limit].rsplit(" ", 1)[0]
    return ("…" if start else "") + piece + ("…" if start + len(piece) < len(text) else "")


def citing_text(answer: str, index: int) -> str:
    """The sentences of ``answer`` that carry the marker ``[index]`` (alone or in a list): what
    the citation is meant to support, to centre its snippet on."""
    sentences = re.split(r"(?<=[.!?])\s+|\n+", answer)
    found = [
        sentence
        for sentence in sentences
        for marker in _MARKER.finditer(sentence)
        if str(index) in (n.strip() for n in marker.group(1).split(","))
    ]
    return " ".join(dict.fromkeys(found))


def _seed_filter(work: Any, scope: str | None) -> None:
    from haiku.rag.capabilities.rag import RAGCapability
    from haiku.rag.qa import rag_state

    state = rag_state(work)
    state.document_filter = scope
    work.state[RAGCapability.namespace] = state.model_dump(mode="json")


_RAG = "rag"  # RAGCapability.namespace
_ANALYSIS = "analysis"  # AnalysisCapability.namespace
_EVIDENCE_NAMESPACES = (_RAG, _ANALYSIS)


def _note_cited(state: dict[str, Any], cited: dict[tuple[str, str], None]) -> None:
    """Add the chunks each capability's state lists as cited in this question, not yet in
    ``cited`` (called after every cite tool: the order across capabilities is the call order)."""
    for namespace in _EVIDENCE_NAMESPACES:
        for chunk_id in (state.get(namespace) or {}).get("citations") or []:
            cited.setdefault((namespace, chunk_id), None)


def _citations_and_grounding(
    state: dict[str, Any], order: Iterable[tuple[str, str]] = ()
) -> tuple[list[tuple[str, Citation]], str]:
    """This question's citations as ``(namespace, Citation)`` with the capability's own index,
    in ``order`` (the order they were cited) and then any others (RAG first, then analysis),
    and its grounding status."""
    from haiku.rag.capabilities.ledger import citation_status
    from haiku.rag.capabilities.state import EvidenceState

    rag = EvidenceState.model_validate(state.get(_RAG) or {})
    records = [rag.evidence]
    found = {(_RAG, c): rag.citation_index[c] for c in rag.citations}
    if state.get(_ANALYSIS):
        analysis = EvidenceState.model_validate(state[_ANALYSIS])
        records.append(analysis.evidence)
        found.update({(_ANALYSIS, c): analysis.citation_index[c] for c in analysis.citations})
    keys = [k for k in order if k in found]
    keys += [k for k in found if k not in keys]
    citations = [(namespace, found[(namespace, chunk_id)]) for namespace, chunk_id in keys]
    question = rag.evidence.question
    if question is None:
        return citations, "missing"
    return citations, citation_status(records, question=question)


def display_numbering(
    earlier: Iterable[Turn], cited: Iterable[tuple[str, Citation]], answer: str
) -> tuple[list[Citation], str]:
    """One numbering for the conversation, across capabilities.

    haiku.rag's RAG and analysis capabilities each number their own citations, so one answer
    citing both could show two sources numbered 1. Here a passage (chunk) keeps the number an
    earlier answer of the conversation showed it with; a new one takes the next number after
    the highest shown so far, in the order this answer cited it; a chunk cited through both
    capabilities is one source. ``cited`` is ``(namespace, Citation)`` with the capability's
    own index, in citing order. Returns the citations renumbered and ``answer`` with its
    ``[n]`` markers (which, where a model writes them, are RAG indexes: only the fallback's
    numbered passages show a model numbers) renumbered to match.
    """
    known: dict[str, int] = {}
    for turn in earlier:
        if turn.mode == "search-only":  # a list of passages numbered per answer, not citations
            continue
        for citation in turn.citations:
            known.setdefault(citation.chunk_id, citation.index)
    following = max(known.values(), default=0) + 1
    shown: dict[str, Citation] = {}
    renumber: dict[int, int] = {}
    for namespace, citation in cited:
        number = known.get(citation.chunk_id)
        if number is None:
            number = known[citation.chunk_id] = following
            following += 1
        if namespace == _RAG:
            renumber.setdefault(citation.index, number)
        if citation.chunk_id not in shown:
            shown[citation.chunk_id] = citation.model_copy(update={"index": number})
    return list(shown.values()), renumber_markers(answer, renumber)


def renumber_markers(text: str, numbers: dict[int, int]) -> str:
    """``[n]`` / ``[n, m]`` markers with each number mapped through ``numbers`` (others kept)."""
    if not numbers or all(old == new for old, new in numbers.items()):
        return text

    def replace(match: re.Match[str]) -> str:
        parts = [p.strip() for p in match.group(1).split(",")]
        mapped = dict.fromkeys(str(numbers.get(int(p), p)) for p in parts)
        return f"[{', '.join(mapped)}]"

    return _MARKER.sub(replace, text)


_MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def _step_for(tool_name: str, args: dict[str, Any]) -> ToolStep:
    if tool_name.endswith("_search"):
        return ToolStep(kind="search", label=f"Searching “{_short(str(args.get('query', '')))}”")
    if tool_name.endswith("_cite"):
        count = len(args.get("chunk_ids") or [])
        label = (
            f"Citing {count} source{'s' if count != 1 else ''}" if count else "Declaring no sources"
        )
        return ToolStep(kind="cite", label=label)
    if tool_name.startswith("analysis"):
        code = args.get("code") or args.get("source") or ""
        return ToolStep(kind="analysis", label="Running analysis…", detail=str(code))
    if tool_name == "load_capability":
        return ToolStep(kind="load", label=f"Loading {args.get('id', 'a capability')}")
    return ToolStep(kind="tool", label=f"Running {tool_name}")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    import json

    try:
        return json.dumps(content, indent=1, default=str)
    except TypeError:
        return str(content)


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _title_from(question: str) -> str:
    return _short(question, TITLE_LENGTH)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
