"""Chat: conversations and their questions, answered by haiku.rag's answering module.

The app maps its toggles and the conversation's scope to ``AnswerOptions`` and the module's
events to a :class:`Question`: an :class:`~haiku_desk.bridge.Operation` with a partial-result
channel (text deltas, text resets, steps). The pane listens to the question it shows, not to
service-wide signals filtered by conversation id. Which capabilities run, their state, the
citation numbering (one per conversation, search-only answers included) and the grounding are
the library's; the saved conversation holds its ``Conversation`` whole and never looks inside.

A question runs on a copy of its conversation; only a complete answer replaces it. A stopped
question keeps its partial answer in the transcript, marked stopped, but not in the model's
history: the conversation goes on as if it had not been asked. Stop cancels the run through
Pydantic AI's ``CancellationToken`` (the run tears itself down), reported as a cancellation.

Three ways to answer: **tools** (the agent searches and cites), **fallback** (no tools, for
models that cannot call them: chosen from the model's ``supports_tools`` or by hand per
conversation) and **search-only** (no model connected: the best passages, and how to connect
one). With nothing to search (an empty library, or no document ticked) no model is asked: the
answer says why and what to do.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any

from PySide6.QtCore import QObject, QSettings, Signal

from haiku_desk.bridge import Operation, OperationBody
from haiku_desk.services.conversations import (
    UNTITLED,
    Basis,
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
from haiku_desk.services.ports import ChatLibrary

log = logging.getLogger("haiku_desk")

TITLE_LENGTH = 60
SNIPPET_CHARS = 400
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


# What an answer rests on: haiku.rag's ``Answered.basis`` as the app's badges name it.
BASIS: dict[str, Basis] = {
    "cited": "grounded",
    "declared-none": "ungrounded",
    "missing": "missing",
    "search-results": "search-results",
    "computed": "computed",
    "no-documents": "no-documents",
}


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
        library: ChatLibrary,
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
        self.last_capability_ids: tuple[str, ...] = ()  # of the latest answer's agent
        self.token_meter: tuple[int, int] | None = None
        self.default_toggles = _load_default_toggles()
        self._scope: list[str] | None = None  # of the next new conversation
        self._scope_collection: str | None = None  # the collection it was chosen as, if any
        self.collections: Any = None  # the CollectionsService, once attached
        # The library service reopens on another library: its conversations come with it.
        library.library_changed.connect(self._library_changed)
        # its documents are listed: earlier conversations can move in
        library.opened.connect(self.adopt_data_dir_conversations)

    def attach_collections(self, collections: Any) -> None:
        """Follow the library's collections: a conversation scoped to one searches its
        documents as they are now, and follows its rename; a deleted one leaves the scope as
        the documents it held (shown as such)."""
        self.collections = collections
        collections.collections_changed.connect(lambda _found: self._follow_collections())
        collections.collection_renamed.connect(self._collection_renamed)
        collections.collection_deleted.connect(self._collection_deleted)

    # --- conversations ------------------------------------------------------------------

    def switch_library(self, library: ChatLibrary | None = None) -> None:
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

    def adopt_data_dir_conversations(self) -> int:
        """Move conversations saved before they belonged to a library (the data dir's
        ``conversations/``) into the open library, when every document they cite is in it (one
        citing nothing moves into the first library opened). Others stay where they are, for the
        library they belong to. Returns how many moved."""
        legacy = ConversationStore.in_data_dir(self.models.config.storage.data_dir)
        if legacy.directory == self.store.directory or not legacy.directory.is_dir():
            return 0
        here = {e.document_id for e in self.library.entries if e.document_id}
        moved = 0
        for item in list(legacy.records()):
            if isinstance(item, ConversationFileError):
                continue
            cited = {c.document_id for t in item.turns for c in t.citations}
            if not cited <= here or self.store.path_of(item.id).exists():
                continue
            try:
                self.store.save(item)  # written whole in the library first, then removed
                legacy.delete(item.id)
            except OSError as exc:
                self.notifications.report_failure(
                    f"Moving the conversation {item.title!r} into the library failed", exc
                )
                continue
            moved += 1
        if moved:
            self.conversations_changed.emit()
        return moved

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
        listed = {r.id for r in found}
        for record in self._records.values():  # not saved yet: nothing asked in it
            if record.id not in listed and record.matches(search):
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
            scope_collection=self.scope_collection(),
        )
        self._records[record.id] = record
        self._save(record)  # nothing is written until its first question: see _save
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

    def set_toggles(self, **changes: bool | None) -> None:
        """Turn capability toggles on or off (``Toggles`` fields): for the current conversation
        (saved at once) and as the user's choice for new conversations. Never creates a
        conversation."""
        unknown = set(changes) - set(Toggles.model_fields)
        if unknown:
            raise ValueError(f"unknown toggle {', '.join(sorted(unknown))}")
        self.default_toggles = self.default_toggles.model_copy(update=changes)
        _save_default_toggles(self.default_toggles)
        record = self._current
        if record is not None:
            record.toggles = record.toggles.model_copy(update=changes)
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
        self._sync_collection_scope(record)
        self.current_changed.emit(record)
        self.toggles_changed.emit(self.toggles)
        self.scope_changed.emit(self.scope())
        latest = None
        if record is not None:
            latest = next((t for t in reversed(record.turns) if t.input_tokens), None)
        self._set_token_meter(latest)

    def _save(self, record: ConversationRecord) -> None:
        """Write the conversation, once it holds a question or the user's own title: an empty
        "New chat" (Ctrl+N, then nothing) is listed while the app runs, then leaves nothing."""
        if not record.turns and record.title == UNTITLED:
            return
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

    def scope_collection(self) -> str | None:
        """The collection the scope was chosen as (its name), or None for documents ticked
        one by one (or the whole library)."""
        return self._current.scope_collection if self._current is not None else self._scope_collection

    def set_scope(self, document_ids: Iterable[str] | None) -> None:
        """Search only ``document_ids`` (None: the whole library; empty: nothing) in the current
        conversation, and in new ones until changed. Never creates a conversation."""
        ids = None if document_ids is None else list(dict.fromkeys(document_ids))
        self._set_scope(ids, None)

    def set_collection_scope(self, name: str | None) -> None:
        """Search the documents of the collection ``name`` (None: back to the whole library),
        in the current conversation and in new ones until changed. The scope then follows the
        collection: documents added to it or removed from it are searched or not."""
        if name is None:
            self._set_scope(None, None)
            return
        collection = self.collections.find(name) if self.collections is not None else None
        if collection is None:
            self.notifications.error(f"There is no collection named {name!r} in this library")
            return
        self._set_scope(list(collection.document_ids), collection.name)

    def _set_scope(self, ids: list[str] | None, collection: str | None) -> None:
        self._scope, self._scope_collection = ids, collection
        record = self._current
        if record is not None and (record.scope, record.scope_collection) != (ids, collection):
            record.scope, record.scope_collection = ids, collection
            self._save(record)
        self.scope_changed.emit(self.scope())

    def _follow_collections(self) -> None:
        """A collection's membership changed (or the list was read): scopes chosen as that
        collection search its documents as they are now."""
        if self.collections is None:
            return
        if self._scope_collection is not None:
            found = self.collections.find(self._scope_collection)
            if found is not None:
                self._scope = list(found.document_ids)
        self._sync_collection_scope(self._current)
        self.scope_changed.emit(self.scope())

    def _sync_collection_scope(self, record: ConversationRecord | None) -> None:
        if record is None or record.scope_collection is None or self.collections is None:
            return
        found = self.collections.find(record.scope_collection)
        if found is not None and record.scope != found.document_ids:
            record.scope = list(found.document_ids)
            self._save(record)

    def _saved_records(self) -> Iterator[ConversationRecord]:
        """Every conversation of the library, the loaded ones as they are in memory."""
        seen = set()
        for item in self.store.records():
            if isinstance(item, ConversationFileError):
                continue
            seen.add(item.id)
            yield self._records.get(item.id, item)
        for record in list(self._records.values()):
            if record.id not in seen:
                yield record

    def _collection_renamed(self, old: str, new: str) -> None:
        self._retarget_collection(old, new)

    def _collection_deleted(self, name: str) -> None:
        """The collection is gone: its conversations keep searching the documents it held,
        now shown as documents (the header says so), never silently the whole library."""
        self._retarget_collection(name, None)

    def _retarget_collection(self, old: str, new: str | None) -> None:
        """Conversations scoped to collection ``old`` follow it to ``new`` (None: gone)."""
        if self._scope_collection == old:
            self._scope_collection = new
        for record in self._saved_records():
            if record.scope_collection == old:
                record.scope_collection = new
                self._save(record)
        self.scope_changed.emit(self.scope())

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
        """``tools``, ``fallback`` or ``search-only`` for the next question."""
        if not self.models.is_configured():
            return "search-only"
        toggles = toggles or self.toggles
        if toggles.no_tools is True:
            return "fallback"
        if toggles.no_tools is None and not self.models.supports_tools():
            return "fallback"
        return "tools"

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
        if self.scope_collection() is not None and self.collections is not None:
            await self.collections.refresh()  # its documents as they are now (the CLI may add)
        options = AnswerOptions(
            mode=turn.mode if turn.mode in ("tools", "fallback", "search-only") else "auto",
            analysis=toggles.analysis,
            evidence_compaction=toggles.evidence_compaction,
            citation_policy=toggles.citation_policy,
            document_ids=self.scope(),  # a collection's: its documents as last listed
        )
        model = settings = None
        if turn.mode != "search-only":
            model = self.models.create_model()
            settings = {} if self.models.uses_model_instance else self._model_settings()
        work = record.answering_conversation()  # answered on a copy; replaced when complete
        token = CancellationToken()
        self._run_token = token
        steps: dict[str, ToolStep] = {}
        answered: Answered | None = None
        try:
            client = await self.library.ensure_open()
            async for event in answer_stream(
                client,
                turn.question,
                work,
                options,
                model=model,
                model_settings=settings,
                # the app's model setting, not the library config's: it picks the small-model
                # profile for a model that cannot call tools
                supports_tools=self.models.supports_tools() if model is not None else None,
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
                        self.notifications.info(f"Answering without it: {notice}")
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
            turn.answer = no_documents_answer(self.library, self.scope(), self.scope_collection())
        elif answered.mode == "search-only":
            turn.answer += f"\n\n_{HOW_TO_CONNECT_A_MODEL}_"  # after the checked text: offsets hold
        # Complete: the conversation (history, state, numbering) is replaced, then saved.
        record.set_answering_conversation(work)
        record.turns.append(turn)
        if record.title == UNTITLED:
            record.title = _title_from(turn.question)
        record.updated = now()
        self._save(record)
        self.conversations_changed.emit()
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

        return dict(model_settings(self.models.model_config()) or {})


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


def _store_for(library: ChatLibrary, models: ModelsService) -> ConversationStore:
    """The conversations of ``library``, in its app folder (``LibraryService.app_folder``:
    ``<db>/haiku-desk/`` for a local library)."""
    return ConversationStore.in_app_folder(library.app_folder)


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
    """The part of ``content`` that matched ``query`` (haiku.rag's one definition)."""
    from haiku.rag.citations import excerpt as matched_part

    return matched_part(content, query, limit)


def citing_text(answer: str, index: int) -> str:
    """The sentences of ``answer`` that carry the marker ``[index]``: what the citation is
    meant to support, to centre its snippet on (haiku.rag's one marker definition)."""
    from haiku.rag.citations import citing_text as sentences_citing

    return sentences_citing(answer, index)


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _title_from(question: str) -> str:
    return _short(question, TITLE_LENGTH)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
