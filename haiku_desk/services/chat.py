"""Chat: conversations, one agent per question built from the chosen model and the toggles,
streamed to the chat pane through the question's own operation.

A question is a :class:`Question`: an :class:`~haiku_desk.bridge.Operation` with a partial-result
channel (text deltas, text resets, steps). The pane listens to the question it shows, not to
service-wide signals filtered by conversation id.

A question runs on a *copy* of its conversation (history and capability state). Only when the
answer is complete are both written back and saved together. A stopped question keeps its
partial answer in the transcript, marked stopped, but not in the model's history: the
conversation goes on exactly as if it had not been asked. Stop ends an agent run through
Pydantic AI's own cancellation (a ``CancellationToken``): the run closes its model stream and
tool tasks itself and ends with ``RunCancelled``, which is reported as a cancellation.

Citations are numbered for display once per conversation, across capabilities and answer
modes: every cited passage gets one number, the same in every answer of the conversation (new
ones continue from the highest number shown so far, in the order this answer first cited them),
and the answer's ``[n]`` markers are renumbered to match.

Three ways to answer:

- **tools**: an agent with the RAG capability (searching and citing), plus evidence compaction,
  the citation policy and the analysis capability when their toggles are on;
- **fallback** (no tools): for models that cannot call tools, chosen automatically from the
  model's ``supports_tools: false`` or by hand per conversation: haiku.rag searches, the model
  reads numbered passages, and its ``[n]`` markers become citations;
- **search-only**: with no model connected, the best passages with their citations, and how to
  connect a model.

With nothing to search (an empty library, or no document ticked in the scope) no model is
asked: the answer says why and what to do.
"""

from __future__ import annotations

import copy
import inspect
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QSettings, Signal

from haiku_desk.bridge import Operation, OperationBody
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
from haiku_desk.services.models import ModelsService
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
DEFAULT_TOGGLES_KEY = "chat/default_toggles"  # QSettings: the user's last choice, as JSON
# Links in answers that ask the window to do something (the pane turns them into signals).
COMMAND_SCHEME = "haiku"
ADD_FILES_LINK = f"{COMMAND_SCHEME}:add-files"
MODELS_LINK = f"{COMMAND_SCHEME}:models"
HOW_TO_CONNECT_A_MODEL = (
    "No chat model is connected, so this answer shows the best passages from your library. "
    f"To get written answers, open [Settings → Models…]({MODELS_LINK}) and connect Ollama, an "
    "OpenAI-compatible server (LM Studio, llama.cpp, vLLM), or OpenAI, Anthropic or Google "
    "with a key kept in your OS keychain."
)
HOW_TO_ADD_FILES = (
    f"Add files with [File → Add files…]({ADD_FILES_LINK}) (Ctrl+O), or drop PDFs and other "
    "documents anywhere on the window, then ask again."
)


@dataclass(frozen=True)
class BuiltAgent:
    """The agent of a run and the capability ids it was given, in order."""

    agent: Agent[Any, str]
    capability_ids: tuple[str, ...]


class Question(Operation):
    """One question being answered: an operation with a partial-result channel.

    ``turn`` is the answer as it grows (its ``answer`` holds the text streamed so far). The
    outcome is the operation's: ``succeeded(Turn)``, ``failed(exc)``, or ``cancelled`` after
    which ``turn`` is the partial answer, marked stopped.
    """

    text_delta = Signal(str)
    text_reset = Signal()  # an earlier streamed text was not the answer (the model went on)
    step_added = Signal(object)  # ToolStep, begun
    step_finished = Signal(object)  # ToolStep with its output (analysis runs)

    def __init__(
        self,
        conversation_id: str,
        turn: Turn,
        body: OperationBody,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(f"Answering {turn.question[:40]!r}", body, parent)
        self.conversation_id = conversation_id
        self.turn = turn

    def add_text(self, text: str) -> None:
        if text:
            self.turn.answer += text
            self.text_delta.emit(text)

    def reset_text(self) -> None:
        self.turn.answer = ""
        self.text_reset.emit()

    def add_step(self, step: ToolStep) -> None:
        self.turn.steps.append(step)
        self.step_added.emit(step)

    def finish_step(self, step: ToolStep) -> None:
        self.step_finished.emit(step)


class ChatService(QObject):
    """Conversations and their questions. Views call methods and listen to signals."""

    conversations_changed = Signal()  # the list (titles, order) changed
    current_changed = Signal(object)  # ConversationRecord | None
    toggles_changed = Signal(object)  # Toggles of the current conversation (or of the next one)
    scope_changed = Signal(object)  # document ids the chat searches, None: the whole library
    busy_changed = Signal(bool)
    question_started = Signal(object)  # Question
    answer_ready = Signal(str, object)  # conversation id, Turn (complete, saved)
    token_meter_changed = Signal(int, int)  # input tokens of the last request, saved by compaction

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
        self.store = store or _store_for(library, models)
        self._records: dict[str, ConversationRecord] = {}
        self._current: ConversationRecord | None = None
        self._operation: Question | None = None
        self._run_token: Any = None  # pydantic_ai.CancellationToken of the running agent run
        self.last_built: BuiltAgent | None = None  # the agent of the latest tools-mode question
        self.analysis_unavailable: str | None = None  # why analysis mode could not be added
        self.token_meter: tuple[int, int] | None = None
        self.default_toggles = _load_default_toggles()
        self._scope: list[str] | None = None  # of the next new conversation
        # The library service reopens on another library: its conversations come with it.
        library_changed = getattr(library, "library_changed", None)
        if library_changed is not None:
            library_changed.connect(self._library_changed)

    # --- conversations ------------------------------------------------------------------

    def switch_library(self, library: Any = None) -> None:
        """Conversations belong to their library: after the app switched to ``library`` (or
        reopened ``self.library`` at another path), list that library's conversations. A
        question still running in the previous library is stopped; its partial answer is kept
        there."""
        if self.busy:
            self.stop()
        if library is not None:
            self.library = library
        self.store = _store_for(self.library, self.models)
        self._records.clear()
        self._set_current(None)
        self.conversations_changed.emit()

    def _library_changed(self, _db_path: str) -> None:
        self.switch_library()

    @property
    def current(self) -> ConversationRecord | None:
        return self._current

    @property
    def toggles(self) -> Toggles:
        """The toggles the next question is asked with."""
        return self._current.toggles if self._current is not None else self.default_toggles

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
        """A new conversation, with the toggles the user chose last and the current scope."""
        scope = self.scope()
        record = ConversationRecord(
            title=title,
            toggles=self.toggles.model_copy(),
            scope=None if scope is None else list(scope),
        )
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
        """Turn a capability toggle on or off: for the current conversation (saved at once) and
        as the user's choice for new conversations. Never creates a conversation."""
        if name not in TOGGLE_NAMES:
            raise ValueError(f"unknown toggle {name!r}")
        self.default_toggles = self.default_toggles.model_copy(update={name: value})
        _save_default_toggles(self.default_toggles)
        record = self._current
        if record is not None:
            record.toggles = record.toggles.model_copy(update={name: value})
            self._save(record)
        self.toggles_changed.emit(self.toggles)

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
        self.toggles_changed.emit(self.toggles)
        self.scope_changed.emit(self.scope())
        latest = None
        if record is not None:
            latest = next((t for t in reversed(record.turns) if t.input_tokens), None)
        self._set_token_meter(latest)

    def _save(self, record: ConversationRecord) -> None:
        try:
            self.store.save(record)
        except OSError as exc:
            self.notifications.report_failure(
                f"Saving the conversation {record.title!r} failed", exc
            )

    # --- scope --------------------------------------------------------------------------

    def scope(self) -> tuple[str, ...] | None:
        """The documents the chat searches, kept per conversation: None for the whole library,
        ``()`` when the user ticked none."""
        scope = self._current.scope if self._current is not None else self._scope
        return None if scope is None else tuple(scope)

    def scope_document_ids(self) -> list[str]:
        """The scope as a list (empty: the whole library, or nothing ticked)."""
        return list(self.scope() or ())

    def set_scope(self, document_ids: Iterable[str] | None) -> None:
        """Search only ``document_ids`` (None: the whole library; empty: nothing) in the current
        conversation, and in new ones until changed. Never creates a conversation."""
        ids = None if document_ids is None else list(dict.fromkeys(document_ids))
        self._scope = ids
        record = self._current
        if record is not None and record.scope != ids:
            record.scope = ids
            self._save(record)
        self.scope_changed.emit(self.scope())

    def scope_filter(self) -> str | None:
        """SQL over document columns restricting searches to the scoped documents."""
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
    def running(self) -> Question | None:
        """The question being answered, if any."""
        return self._operation if self.busy else None

    @property
    def _running_id(self) -> str | None:
        return self._operation.conversation_id if self._operation is not None else None

    def answer_mode(self, toggles: Toggles | None = None) -> str:
        """``tools``, ``fallback``, ``search-only`` or ``no-documents`` for the next question."""
        if self._library_is_empty():
            return "no-documents"
        if not self.models.is_configured():
            return "search-only"
        toggles = toggles or self.toggles
        if toggles.no_tools is True:
            return "fallback"
        if toggles.no_tools is None and not self.models.supports_tools():
            return "fallback"
        return "tools"

    def _library_is_empty(self) -> bool:
        """Whether there is nothing to search: no document ticked, or an open library with
        nothing searchable (unknown while it opens: not empty)."""
        if self.scope() == ():
            return True
        if not getattr(self.library, "is_open", False):
            return False
        entries = getattr(self.library, "entries", None)
        return entries is not None and not any(e.searchable for e in entries)

    def ask(self, question: str) -> Question | None:
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
            return await self._answer(record, operation)

        operation = Question(record.id, turn, body, self)
        # Connected before anyone else: the record is up to date when the views hear of it.
        operation.succeeded.connect(lambda done: self._finish(record, done))
        operation.failed.connect(lambda exc: self._fail(record, exc))
        operation.cancelled.connect(lambda: self._keep_stopped(record, operation.turn))
        operation.ended.connect(lambda: self.busy_changed.emit(False))
        self._operation = operation
        self.question_started.emit(operation)
        operation.start()
        self.busy_changed.emit(True)
        return operation

    def stop(self) -> None:
        """Stop the running question; its partial answer is kept, marked stopped.

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
            self._set_token_meter(turn)

    def _fail(self, record: ConversationRecord, exc: BaseException) -> None:
        message = _one_line(exc)
        self.notifications.error(
            f"The question could not be answered: {message}", type(exc).__name__
        )

    def _keep_stopped(self, record: ConversationRecord, turn: Turn) -> None:
        """Keep a stopped question's partial answer in the transcript (not in the history)."""
        turn.stopped = True
        turn.citations = []
        record.turns.append(turn)
        if record.title == UNTITLED:
            record.title = _title_from(turn.question)
        record.updated = now()
        self._save(record)
        self.conversations_changed.emit()

    def _set_token_meter(self, turn: Turn | None) -> None:
        if turn is None or turn.input_tokens is None:
            self.token_meter = None
            self.token_meter_changed.emit(0, 0)
            return
        self.token_meter = (turn.input_tokens, turn.saved_tokens or 0)
        self.token_meter_changed.emit(*self.token_meter)

    async def _answer(self, record: ConversationRecord, question: Question) -> Turn:
        from haiku.rag.qa import Conversation

        turn = question.turn
        work = Conversation(state=copy.deepcopy(record.state), messages=record.model_messages())
        if turn.mode == "no-documents":
            question.add_text(no_documents_answer(self.library, self.scope()))
        elif turn.mode == "search-only":
            await self._answer_search_only(record, question)
        elif turn.mode == "fallback":
            await self._answer_fallback(record, question, work)
        else:
            await self._answer_with_tools(record, question, work)
        # Complete: history and state are written back together, then saved together.
        if turn.mode in ("tools", "fallback"):
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

    async def _answer_with_tools(
        self, record: ConversationRecord, question: Question, work: Any
    ) -> None:
        from pydantic_ai.exceptions import AgentRunError, RunCancelled
        from pydantic_ai.messages import ModelResponse

        from haiku.rag.errors import OperationCancelled
        from haiku.rag.qa import _chat_model_error

        turn = question.turn
        model = self.models.create_model()
        built = self.build_agent(record.toggles, model)
        _seed_filter(work, self.scope_filter())
        cited: dict[tuple[str, str], None] = {}
        try:
            result = await self._stream(question, work, built, cited)
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
        question: Question,
        work: Any,
        built: BuiltAgent,
        cited: dict[tuple[str, str], None] | None = None,
    ) -> Any:
        """Run the agent, turning its events into the question's partial results; returns the
        run result.

        ``cited`` collects ``(namespace, chunk_id)`` in the order the answer cited them, across
        capabilities (each capability's state keeps only its own order). Stop cancels the run
        through its ``CancellationToken``; the run then raises ``RunCancelled``.
        """
        from pydantic_ai import CancellationToken

        token = CancellationToken()
        self._run_token = token
        try:
            result = await self._stream_events(
                question, work, built, token, {} if cited is None else cited
            )
        finally:
            if self._run_token is token:
                self._run_token = None
        assert result is not None
        return result

    async def _stream_events(
        self,
        question: Question,
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
            question.turn.question,
            deps=work,
            message_history=work.messages,
            cancellation_token=token,
        ) as events:
            async for event in events:
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    if event.index == 0 and streamed:
                        question.reset_text()
                    if event.part.content:
                        streamed = True
                        question.add_text(event.part.content)
                elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    if event.delta.content_delta:
                        streamed = True
                        question.add_text(event.delta.content_delta)
                elif isinstance(event, FunctionToolCallEvent):
                    step = _step_for(event.part.tool_name, event.part.args_as_dict())
                    pending[event.part.tool_call_id] = step
                    question.add_step(step)
                elif isinstance(event, FunctionToolResultEvent):
                    step = pending.pop(event.part.tool_call_id, None)
                    if step is not None and step.kind == "analysis":
                        step.output = _text_of(event.part.content)
                        question.finish_step(step)
                    if event.part.tool_name.endswith("_cite"):
                        _note_cited(work.state, cited)
                elif isinstance(event, AgentRunResultEvent):
                    result = event.result
        return result

    # --- fallback mode ------------------------------------------------------------------

    async def _answer_fallback(
        self, record: ConversationRecord, question: Question, work: Any
    ) -> None:
        from pydantic_ai.messages import ModelResponse

        from haiku.rag.qa import ask

        turn = question.turn
        client = self.library.client
        model = self.models.create_model()
        question.add_step(ToolStep(kind="search", label=f"Searching “{_short(turn.question)}”"))
        before = len(work.messages)
        result = await ask(
            client,
            turn.question,
            self.scope_filter(),
            model=model,
            mode="fallback",
            conversation=work,
        )
        citations, answer = display_numbering(
            record.turns, [(_RAG, c) for c in result.citations], result.answer
        )
        turn.grounding = result.grounding
        responses = [m for m in work.messages[before:] if isinstance(m, ModelResponse)]
        if responses:
            turn.input_tokens = responses[-1].usage.input_tokens
        question.add_text(answer)
        turn.citations, turn.answer = citations, answer

    # --- search-only mode ---------------------------------------------------------------

    async def _answer_search_only(self, record: ConversationRecord, question: Question) -> None:
        from haiku.rag.capabilities.state import Citation

        turn = question.turn
        question.add_step(ToolStep(kind="search", label=f"Searching “{_short(turn.question)}”"))
        passages = await self._search_passages(turn.question, SEARCH_ONLY_PASSAGES)
        found = [Citation.from_result(i, p.chunk_id, p) for i, p in enumerate(passages, start=1)]
        # numbered like model answers: a passage keeps its number, new ones continue
        citations, _ = display_numbering(record.turns, [(_RAG, c) for c in found], "")
        turn.grounding = "grounded" if passages else "ungrounded"
        answer = search_only_answer(citations, turn.question)
        question.add_text(answer)
        turn.citations, turn.answer = citations, answer

    async def _search_passages(self, query: str, limit: int) -> list[SearchResult]:
        search_passages = getattr(self.library, "search_passages", None)
        if search_passages is not None:
            return list(await search_passages(query, limit, self.scope_document_ids()))
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


def no_documents_answer(library: Any = None, scope: tuple[str, ...] | None = None) -> str:
    """What a question with nothing to search gets: why, and what to do."""
    if scope == ():
        return (
            "No documents are ticked in the library, so there is nothing to search. Tick the "
            "documents to ask about (or “All documents”) in the library, then ask again."
        )
    entries = list(getattr(library, "entries", None) or [])
    waiting = sum(1 for e in entries if getattr(e, "busy", False))
    failed = len(entries) - waiting
    if not entries:
        why = "Your library is empty, so there is nothing to answer from yet."
    elif waiting:
        why = (
            f"Nothing in your library is searchable yet: {waiting} file"
            f"{'s are' if waiting != 1 else ' is'} still being read."
        )
        return f"{why} Ask again when the library shows it as searchable."
    else:
        why = (
            f"Nothing in your library is searchable: {failed} file"
            f"{'s' if failed != 1 else ''} could not be read (see the library for why)."
        )
    return f"{why} {HOW_TO_ADD_FILES}"


def _store_for(library: Any, models: ModelsService) -> ConversationStore:
    """The conversations of ``library``, in its app folder (``LibraryService.app_folder``:
    ``<db>/haiku-desk/`` for a local library); a library service without either, as some
    tests build, uses the data dir."""
    folder = getattr(library, "app_folder", None)
    if folder is not None:
        return ConversationStore.in_app_folder(folder)
    db_path = getattr(library, "db_path", None)
    if db_path is not None:
        return ConversationStore.for_library(db_path)
    return ConversationStore.in_data_dir(models.config.storage.data_dir)


def _load_default_toggles() -> Toggles:
    """The toggles the user chose last (QSettings), for new conversations."""
    raw = QSettings().value(DEFAULT_TOGGLES_KEY)
    if isinstance(raw, str) and raw:
        try:
            return Toggles.model_validate_json(raw)
        except ValueError:
            log.warning("Ignoring unreadable default chat toggles %r", raw)
    return Toggles()


def _save_default_toggles(toggles: Toggles) -> None:
    settings = QSettings()
    settings.setValue(DEFAULT_TOGGLES_KEY, toggles.model_dump_json())
    settings.sync()


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
