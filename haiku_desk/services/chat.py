"""Chat: conversations and their questions, answered by haiku.rag's answering module.

:class:`ChatService` is the facade the views use (methods and signals). It keeps the library's
conversations (:mod:`~haiku_desk.services.conversations`, in the library's app folder) and the
current one, and wires two parts: the scope, which documents a conversation searches and the
collections it follows (:mod:`~haiku_desk.services.chat_scope`), and the running question
(:mod:`~haiku_desk.services.chat_run`): the toggles and scope become ``AnswerOptions``, the
module's events a :class:`Question` (an :class:`~haiku_desk.bridge.Operation` with a
partial-result channel) that the pane listens to; Stop; the token meter. Which capabilities
run, their state, the citation numbering and the grounding are the library's; the saved
conversation holds its ``Conversation`` whole and never looks inside.

A question runs on a copy of its conversation; only a complete answer replaces it. A stopped
question keeps its partial answer in the transcript, marked stopped, but not in the model's
history. Three ways to answer: **tools** (the agent searches and cites), **fallback** (no
tools: from the model's ``supports_tools`` or by hand per conversation) and **search-only** (no
model connected: the best passages, and how to connect one). With nothing to search no model is
asked: the answer says why and what to do.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from PySide6.QtCore import QObject, QSettings, Signal

from haiku_desk.services.chat_run import (
    HOW_TO_CONNECT_A_MODEL,
    FailedAnswer,
    Question,
    QuestionRunner,
    describe_failure,
    no_documents_answer,
)
from haiku_desk.services.chat_scope import ChatScope
from haiku_desk.services.conversations import (
    UNTITLED,
    ConversationFileError,
    ConversationRecord,
    ConversationStore,
    ConversationSummary,
    Toggles,
    Turn,
)
from haiku_desk.services.models import ModelsService
from haiku_desk.services.notifications import Notifications
from haiku_desk.services.ports import ChatLibrary, ScopeCollections

# The answer's wording and the question are the running question's (services/chat_run.py).
__all__ = ["HOW_TO_CONNECT_A_MODEL", "ChatService", "Question"]
__all__ += ["citing_text", "excerpt", "no_documents_answer"]

log = logging.getLogger("haiku_desk")

SNIPPET_CHARS = 400
DEFAULT_TOGGLES_KEY = "chat/default_toggles"  # QSettings: the user's last choice, as JSON
# QSettings: the conversation each library showed last (JSON: app folder -> conversation id),
# opened again when that library opens (a relaunch, a switch back to it)
LAST_CONVERSATION_KEY = "chat/last_conversation"


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
        self.store = store or _store_for(library)
        self._records: dict[str, ConversationRecord] = {}
        self._current: ConversationRecord | None = None
        self.default_toggles = _load_default_toggles()
        # The parts: the scope (of the current conversation, or of the next one) and the
        # running question. They know the conversations only through the calls they make.
        current, changed = (lambda: self._current), self.scope_changed.emit
        self._scope = ChatScope(current, self._save, self._saved_records, changed, notifications.error)
        self.questions = QuestionRunner(
            models,
            notifications,
            lambda: self.library.ensure_open(),  # the library of now (switch_library)
            self._scope.ids,
            self._scope.refresh,
            lambda: no_documents_answer(self.library, self.scope(), self.scope_collection()),
            self._keep,
            self,
        )
        self.questions.busy_changed.connect(self.busy_changed)
        self.questions.question_started.connect(self.question_started)
        self.questions.answer_ready.connect(self.answer_ready)
        self.questions.token_meter_changed.connect(self.token_meter_changed)
        # The library service reopens on another library: its conversations come with it.
        library.library_changed.connect(self._library_changed)
        # its documents are listed: earlier conversations can move in, and the one shown last
        # is shown again
        library.opened.connect(self.adopt_data_dir_conversations)
        library.opened.connect(self.restore_last_conversation)

    def attach_collections(self, collections: ScopeCollections) -> None:
        """Follow the library's collections: a conversation scoped to one searches its
        documents as they are now, and follows its rename; a deleted one leaves the scope as
        the documents it held (shown as such)."""
        self._scope.attach(collections)

    @property
    def collections(self) -> ScopeCollections | None:
        """The collections the scope follows, once attached."""
        return self._scope.collections

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
        self.store = _store_for(self.library)
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
        here = {e.document_id for e in self.library.entries if e.document_id}
        moved = self.store.adopt(legacy, here, self.notifications.report_failure)
        if moved:
            self.conversations_changed.emit()
        return moved

    def restore_last_conversation(self) -> ConversationRecord | None:
        """Show again the conversation this library showed last (a relaunch finds the
        transcript as it was left), unless one is already shown or it is gone."""
        if self._current is not None:
            return None
        wanted = _last_conversations().get(str(self.library.app_folder))
        if not wanted:
            return None
        try:
            record = self._record(wanted)  # None when it was deleted since
        except ValueError:  # not an id (a hand-edited setting)
            return None
        if record is not None:
            self._set_current(record)
            self.conversations_changed.emit()  # the list selects it
        return record

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

    def new_conversation(self, title: str = UNTITLED, *, reuse_blank: bool = False) -> ConversationRecord:
        """A new conversation, with the toggles the user chose last and the current scope.
        With ``reuse_blank`` (the user's Ctrl+N) an empty "New chat" already listed is opened
        instead, so pressing it again adds no second one."""
        asking = self.questions.running_id if self.questions.busy else None
        blank = next((r for r in self._records.values() if r.blank and r.id != asking), None)
        if reuse_blank and title == UNTITLED and blank is not None:
            self._set_current(blank)  # shown afresh (the citation panel clears), even if current
            return blank
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
        if self.busy and self.questions.running_id == conversation_id:
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
        if record is not None:  # None (a switch, a delete) leaves the last one named
            _remember_conversation(str(self.library.app_folder), record.id)
        self._scope.sync(record)
        self.current_changed.emit(record)
        self.toggles_changed.emit(self.toggles)
        self.scope_changed.emit(self.scope())
        latest = None
        if record is not None:
            latest = next((t for t in reversed(record.turns) if t.input_tokens), None)
        self.questions.show_token_meter(latest)

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

    def _keep(self, record: ConversationRecord) -> None:
        """Save ``record`` (a question was answered or stopped in it) and list it anew."""
        self._save(record)
        self.conversations_changed.emit()

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

    # --- scope (services/chat_scope.py) -----------------------------------------------

    def scope(self) -> tuple[str, ...] | None:
        """The documents the chat searches, kept per conversation: None for the whole library,
        ``()`` when the user ticked none."""
        return self._scope.ids()

    def scope_collection(self) -> str | None:
        """The collection the scope was chosen as (its name), or None for documents ticked
        one by one (or the whole library)."""
        return self._scope.collection()

    def set_scope(self, document_ids: Iterable[str] | None) -> None:
        """Search only ``document_ids`` (None: the whole library; empty: nothing) in the current
        conversation, and in new ones until changed. Never creates a conversation."""
        self._scope.set_documents(document_ids)

    def set_collection_scope(self, name: str | None) -> None:
        """Search the documents of the collection ``name`` (None: back to the whole library),
        in the current conversation and in new ones until changed. The scope then follows the
        collection: documents added to it or removed from it are searched or not."""
        self._scope.set_collection(name)

    # --- asking (services/chat_run.py) --------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.questions.busy

    @property
    def running(self) -> Question | None:
        """The question being answered, if any."""
        return self.questions.running

    @property
    def last_capability_ids(self) -> tuple[str, ...]:
        """The capabilities of the latest answer's agent."""
        return self.questions.last_capability_ids

    @property
    def token_meter(self) -> tuple[int, int] | None:
        """Input tokens of the last answer's last request, and what compaction saved on it."""
        return self.questions.token_meter

    def answer_mode(self, toggles: Toggles | None = None) -> str:
        """``tools``, ``fallback`` or ``search-only`` for the next question."""
        return self.questions.answer_mode(toggles or self.toggles)

    def ask(self, question: str, *, search_only: bool = False) -> Question | None:
        """Answer ``question`` in the current conversation (a new one when there is none);
        ``search_only``: with the best passages, without the model (when it failed)."""
        question = question.strip()
        if not question:
            return None
        if self.busy:
            self.notifications.info("Wait for the current answer, or stop it, before asking again")
            return None
        record = self._current or self.new_conversation()
        return self.questions.ask(record, question, search_only=search_only)

    def forget(self, turn: Turn) -> None:
        """Take a question that was not answered out of the current conversation (it was
        asked again: the new answer takes its place)."""
        if self._current is not None:
            self.questions.forget(self._current, turn)

    @staticmethod
    def describe_failure(exc: BaseException) -> FailedAnswer:
        """A question's failure as the transcript words it, and whether the passages can be
        shown instead."""
        return describe_failure(exc)

    def stop(self) -> None:
        """Stop the running question; its partial answer is kept, marked stopped (a model run
        is cancelled through its ``CancellationToken``: see :meth:`QuestionRunner.stop`)."""
        self.questions.stop()


def _store_for(library: ChatLibrary) -> ConversationStore:
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


def _last_conversations() -> dict[str, str]:
    import json

    raw = QSettings().value(LAST_CONVERSATION_KEY)
    try:
        found = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        log.warning("Ignoring an unreadable %s setting", LAST_CONVERSATION_KEY)
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def _remember_conversation(app_folder: str, conversation_id: str) -> None:
    import json

    last = _last_conversations()
    if last.get(app_folder) == conversation_id:
        return
    last[app_folder] = conversation_id
    settings = QSettings()
    settings.setValue(LAST_CONVERSATION_KEY, json.dumps(last))
    settings.sync()


def excerpt(content: str, query: str = "", limit: int = SNIPPET_CHARS) -> str:
    """The part of ``content`` that matched ``query`` (haiku.rag's one definition), its
    Markdown tables written as "header: value" words for a person to read."""
    from haiku.rag.citations import snippet

    return snippet(content, query, limit)


def citing_text(answer: str, index: int) -> str:
    """The sentences of ``answer`` that carry the marker ``[index]``: what the citation is
    meant to support, to centre its snippet on (haiku.rag's one marker definition)."""
    from haiku.rag.citations import citing_text as sentences_citing

    return sentences_citing(answer, index)
