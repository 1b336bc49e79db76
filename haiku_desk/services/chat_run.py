"""The running question: one at a time, answered by haiku.rag's answering module.

:class:`QuestionRunner` maps a conversation's toggles and the chat's scope to
``AnswerOptions``, runs ``answer_stream`` in a :class:`Question` (an
:class:`~haiku_desk.bridge.Operation` with a partial-result channel: text deltas, text resets,
steps) and turns its events into the question's partial results and ``Answered`` into the
turn. A question runs on a copy of its conversation; only a complete answer replaces it. A
stopped question keeps its partial answer in the transcript, marked stopped, but not in the
model's history. Stop cancels the run through Pydantic AI's ``CancellationToken`` (the run
tears itself down), reported as a cancellation. The token meter shows the input tokens of the
last answer's last request and what compaction saved on it.

The runner gets what it uses as narrow interfaces: the models
(:class:`~haiku_desk.services.ports.AnswerModels`), the client to open, the scope to search
(and to list again before asking), the answer to a question with nothing to search, and a
callable that keeps a conversation (saves it, announces the list changed).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from haiku_desk.bridge import Operation, OperationBody
from haiku_desk.services.conversations import (
    UNTITLED,
    Basis,
    ConversationRecord,
    Failure,
    Toggles,
    ToolStep,
    Turn,
    now,
)
from haiku_desk.services.notifications import Notifications

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG
    from haiku_desk.services.ports import AnswerModels, ChatLibrary

__all__ = ["BASIS", "HOW_TO_ADD_FILES", "HOW_TO_CONNECT_A_MODEL", "Question", "QuestionRunner"]
__all__ += ["FailedAnswer", "describe_failure", "no_documents_answer"]

log = logging.getLogger("haiku_desk")

# a conversation is named by its first question, whole (the list elides it to its width; an
# ellipsis baked into the title showed in the rename box and the export): cut only past this
TITLE_LENGTH = 200
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
PASSAGES_INSTEAD = (
    "The chat model isn't reachable, so this answer shows the best passages from your library. "
    # the link's words end the sentence without the menu item's "…" (it read "Models…." )
    f"Ask again once it is running, or check it in [Settings → Models]({MODELS_LINK})."
)
# The notices of a failed answer, one per problem (the notification area shows one banner per
# key); the next answer a model writes withdraws the model's.
MODEL_UNREACHABLE_KEY = "chat-model-unreachable"
MODEL_FAILED_KEY = "chat-model-failed"
ANSWER_FAILED_KEY = "answer-failed"
HOW_TO_ADD_FILES = (
    f"Add files with [File → Add files…]({ADD_FILES_LINK}) (Ctrl+O), or drop PDFs and other "
    "documents anywhere on the window, then ask again."
)

# What an answer rests on: haiku.rag's ``Answered.basis`` as the app's badges name it.
BASIS: dict[str, Basis] = {
    "cited": "grounded",
    "declared-none": "ungrounded",
    "missing": "missing",
    "search-results": "search-results",
    "computed": "computed",
    "no-documents": "no-documents",
}


@dataclass(frozen=True)
class FailedAnswer:
    """How the transcript words a question that could not be answered, and whether the
    library's passages can be shown instead (they need no model)."""

    message: str  # the turn's line
    detail: str  # the error, one line
    offer_passages: bool
    key: str  # the notice's key: one banner per problem


def describe_failure(exc: BaseException) -> FailedAnswer:
    """``exc`` (a question's failure) as the transcript says it."""
    from haiku.rag.errors import ChatAnswerCutOff, ChatModelError, ChatModelUnreachable

    detail = _one_line(exc)
    if isinstance(exc, ChatAnswerCutOff):  # it was reached: it stopped mid-answer
        return FailedAnswer(
            "The model stopped in the middle of its answer — show the matching passages instead?",
            detail,
            True,
            MODEL_UNREACHABLE_KEY,
        )
    if isinstance(exc, ChatModelUnreachable):
        return FailedAnswer(
            "The model isn't reachable — show the matching passages instead?",
            detail,
            True,
            MODEL_UNREACHABLE_KEY,
        )
    if isinstance(exc, ChatModelError):
        return FailedAnswer(
            "The model could not answer — show the matching passages instead?",
            detail,
            True,
            MODEL_FAILED_KEY,
        )
    return FailedAnswer(f"Not answered: {detail}", detail, False, ANSWER_FAILED_KEY)


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


class QuestionRunner(QObject):
    """Runs the chat's questions, one at a time, and keeps the token meter."""

    busy_changed = Signal(bool)
    question_started = Signal(object)  # Question
    answer_ready = Signal(str, object)  # conversation id, Turn (complete, saved)
    token_meter_changed = Signal(int, int)  # input tokens of the last request, saved by compaction

    def __init__(
        self,
        models: AnswerModels,
        notifications: Notifications,
        open_client: Callable[[], Awaitable[HaikuRAG]],
        scope: Callable[[], tuple[str, ...] | None],
        refresh_scope: Callable[[], Awaitable[None]],
        nothing_to_search: Callable[[], str],
        keep: Callable[[ConversationRecord], None],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._models = models
        self._notifications = notifications
        self._open_client = open_client  # the chat's library, whichever it is now
        self._scope = scope  # the documents to search (None: the whole library)
        self._refresh_scope = refresh_scope  # a collection's documents as they are now
        self._nothing_to_search = nothing_to_search  # why, and what to do
        self._keep = keep  # save the conversation, announce the list changed
        self._operation: Question | None = None
        self._run_token: Any = None  # pydantic_ai.CancellationToken of the running agent run
        self.last_capability_ids: tuple[str, ...] = ()  # of the latest answer's agent
        self.token_meter: tuple[int, int] | None = None

    @property
    def busy(self) -> bool:
        return self._operation is not None and self._operation.running

    @property
    def running(self) -> Question | None:
        """The question being answered, if any."""
        return self._operation if self.busy else None

    @property
    def running_id(self) -> str | None:
        """The conversation of the last question asked (running or not)."""
        return self._operation.conversation_id if self._operation is not None else None

    def answer_mode(self, toggles: Toggles) -> str:
        """``tools``, ``fallback`` or ``search-only`` for a question asked with ``toggles``."""
        if not self._models.is_configured():
            return "search-only"
        if toggles.no_tools is True:
            return "fallback"
        if toggles.no_tools is None and not self._models.supports_tools():
            return "fallback"
        return "tools"

    def ask(self, record: ConversationRecord, question: str, *, search_only: bool = False) -> Question:
        """Answer ``question`` (stripped, not empty) in ``record``; nothing else is running.
        ``search_only``: with the best passages, without the model (when it failed)."""
        mode = "search-only" if search_only else self.answer_mode(record.toggles)
        turn = Turn(question=question, mode=mode)  # type: ignore[arg-type]

        async def body(token: Any, report: Any) -> Turn:
            return await self._answer(record, operation)

        operation = Question(record.id, turn, body, self)
        # Connected before anyone else: the record is up to date when the views hear of it.
        operation.succeeded.connect(lambda done: self._finish(record, done))
        operation.failed.connect(lambda exc: self._fail(record, operation.turn, exc))
        operation.cancelled.connect(lambda: self._keep_stopped(record, operation.turn))
        operation.ended.connect(lambda: self.busy_changed.emit(False))
        self._operation = operation
        self.question_started.emit(operation)
        operation.start()
        self.busy_changed.emit(True)
        return operation

    def stop(self) -> None:
        """Stop the running question; its partial answer is kept, marked stopped.

        A model run is cancelled through the Pydantic AI ``CancellationToken`` handed to
        haiku.rag's answering, so the run tears itself down (model stream, tool tasks, sandbox)
        and ends as ``AnswerStopped``. A search-only answer (no model run) and a second Stop
        cancel the operation's task instead.
        """
        operation = self._operation
        if operation is None or not operation.running:
            return
        operation.token.cancel()
        token = self._run_token
        if token is not None and not token.cancelled and operation.turn.mode != "search-only":
            try:
                token.cancel()
                return
            except Exception:  # a run whose loop cannot be reached: cancel the task
                log.warning("Stopping the agent run failed; cancelling its task", exc_info=True)
        operation.cancel()

    def _finish(self, record: ConversationRecord, turn: Turn) -> None:
        if turn.mode != "search-only":  # a model answered: its failures are over
            self._notifications.withdraw(MODEL_UNREACHABLE_KEY)
            self._notifications.withdraw(MODEL_FAILED_KEY)
        self._notifications.withdraw(ANSWER_FAILED_KEY)
        self.answer_ready.emit(record.id, turn)
        if turn.input_tokens is not None:
            self.show_token_meter(turn)

    def _fail(self, record: ConversationRecord, turn: Turn, exc: BaseException) -> None:
        """Say why, once per problem, and keep the question in the transcript with why (not in
        the model's history): it was lost at the next start, and from the export."""
        failure = describe_failure(exc)
        self._notifications.error(
            f"The question could not be answered: {failure.detail}",
            type(exc).__name__,
            key=failure.key,
        )
        turn.failure = Failure(message=failure.message, detail=failure.detail, offer_passages=failure.offer_passages)
        turn.citations = []
        self._add_turn(record, turn)

    def forget(self, record: ConversationRecord, turn: Turn) -> None:
        """Take a question that was not answered out of ``record`` (asked again: the new
        answer takes its place)."""
        if turn.failure is not None and any(t is turn for t in record.turns):
            record.turns = [t for t in record.turns if t is not turn]
            self._keep(record)

    def _keep_stopped(self, record: ConversationRecord, turn: Turn) -> None:
        """Keep a stopped question's partial answer in the transcript (not in the history)."""
        turn.stopped = True
        turn.citations = []
        self._add_turn(record, turn)

    def _add_turn(self, record: ConversationRecord, turn: Turn) -> None:
        record.turns.append(turn)
        if record.title == UNTITLED:
            record.title = _title_from(turn.question)
        record.updated = now()
        self._keep(record)

    def show_token_meter(self, turn: Turn | None) -> None:
        """The meter shows ``turn``'s last request (nothing for None or a turn without one)."""
        if turn is None or turn.input_tokens is None:
            self.token_meter = None
            self.token_meter_changed.emit(0, 0)
            return
        self.token_meter = (turn.input_tokens, turn.saved_tokens or 0)
        self.token_meter_changed.emit(*self.token_meter)

    async def _answer(self, record: ConversationRecord, question: Question) -> Turn:
        """Answer through haiku.rag's answering module: the toggles become ``AnswerOptions``,
        its events become the question's partial results, ``Answered`` becomes the turn."""
        from pydantic_ai import CancellationToken

        from haiku.rag.answering import (
            Answered,
            AnswerOptions,
            Started,
            Step,
            TextDelta,
            TextReset,
            answer_stream,
        )

        turn = question.turn
        toggles = record.toggles
        await self._refresh_scope()  # a collection's documents as they are now (the CLI may add)
        options = AnswerOptions(
            mode=turn.mode if turn.mode in ("tools", "fallback", "search-only") else "auto",
            analysis=toggles.analysis,
            evidence_compaction=toggles.evidence_compaction,
            citation_policy=toggles.citation_policy,
            document_ids=self._scope(),  # a collection's: its documents as last listed
        )
        model = settings = None
        if turn.mode != "search-only":
            model = self._models.create_model()
            settings = {} if self._models.uses_model_instance else self._model_settings()
        work = record.answering_conversation()  # answered on a copy; replaced when complete
        token = CancellationToken()
        self._run_token = token
        steps: dict[str, ToolStep] = {}
        answered: Answered | None = None
        try:
            client = await self._open_client()
            async for event in answer_stream(
                client,
                turn.question,
                work,
                options,
                model=model,
                model_settings=settings,
                # the app's model setting, not the library config's: it picks the small-model
                # profile for a model that cannot call tools
                supports_tools=self._models.supports_tools() if model is not None else None,
                cancel=token,
            ):
                if isinstance(event, TextDelta):
                    question.add_text(event.text)
                elif isinstance(event, TextReset):
                    question.reset_text()
                elif isinstance(event, Step):
                    self._step(question, steps, event)
                elif isinstance(event, Started):
                    self.last_capability_ids = event.capability_ids
                    for notice in event.notices:
                        self._notifications.info(f"Answering without it: {notice}")
                elif isinstance(event, Answered):
                    answered = event
        finally:
            if self._run_token is token:
                self._run_token = None
        assert answered is not None  # every stream ends with Answered or raises
        turn.answer = answered.text
        turn.citations = list(answered.citations)
        turn.grounding = answered.grounding
        turn.support = answered.support.model_dump(mode="json") if answered.support else None
        turn.rests_on = BASIS.get(answered.basis, "missing")
        turn.mode = answered.mode
        turn.capability_ids = list(answered.capability_ids)
        turn.input_tokens = answered.tokens.input_tokens
        turn.saved_tokens = answered.tokens.compaction_saved
        if answered.basis == "no-documents":  # say why, and what to do
            turn.answer = self._nothing_to_search()
        elif answered.mode == "search-only":  # after the checked text: offsets hold
            why = PASSAGES_INSTEAD if self._models.is_configured() else HOW_TO_CONNECT_A_MODEL
            turn.answer += f"\n\n*{why}*"  # (Qt reads "_…_" as underlined)
        # Complete: the conversation (history, state, numbering) is replaced, then saved.
        record.set_answering_conversation(work)
        self._add_turn(record, turn)
        return turn

    @staticmethod
    def _step(question: Question, steps: dict[str, ToolStep], event: Any) -> None:
        """A library ``Step`` as the turn's step line: added when it begins, its output kept
        (and the analysis panel told) when it ends."""
        step = steps.get(event.id)
        if step is None:
            step = ToolStep(kind=event.kind, label=event.label, detail=event.detail)
            steps[event.id] = step
            question.add_step(step)
        if event.finished:
            step.label = event.label
            if event.output is not None:
                step.output = event.output
                question.finish_step(step)

    def _model_settings(self) -> dict[str, Any]:
        from haiku.rag.models import model_settings

        return dict(model_settings(self._models.model_config()) or {})


def no_documents_answer(
    library: ChatLibrary | None = None, scope: tuple[str, ...] | None = None, collection: str | None = None
) -> str:
    """What a question with nothing to search gets: why, and what to do."""
    if scope == () and collection is not None:
        return (
            f"The collection “{collection}” holds no documents, so there is nothing to search. "
            "Add documents to it, or choose other documents in the library, then ask again."
        )
    if scope == ():
        return (
            "No documents are ticked in the library, so there is nothing to search. Tick the "
            "documents to ask about (or “All documents”) in the library, then ask again."
        )
    entries = library.entries if library is not None else []
    waiting = sum(1 for e in entries if e.busy)
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


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _title_from(question: str) -> str:
    return _short(question, TITLE_LENGTH)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
