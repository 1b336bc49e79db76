"""Conversations on disk: one JSON file each, haiku.rag's conversation kept whole.

A conversation belongs to its library and is stored with it, in the library's app folder
(``<db>/haiku-desk/conversations/``): a library moved or synced carries its conversations, and
a conversation made in one library is never listed in another.

The answering module's ``Conversation`` (the model history, the capabilities' state that
describes it, and the citation numbering) is stored whole, as its own ``to_dict()``: the app
never looks inside. It is written in one file with what the chat pane shows, atomically
(temporary file, then ``os.replace``): a crash leaves either the previous file or the new one,
never half of each. Files of format 1 (history and state as two fields) are read and carried
over.

The file also keeps what the chat pane shows (each turn's answer, citations and grounding), the
title and the per-conversation toggles. It never holds an API key: nothing a model provider needs
is stored here.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from haiku.rag.files import write_text_atomic

if TYPE_CHECKING:
    from haiku.rag.answering import Conversation
    from haiku.rag.citations import Citation

CONVERSATION_FORMAT_VERSION = 2  # 2: the answering module's conversation, whole
CONVERSATIONS_DIR_NAME = "conversations"
LIBRARY_APP_DIR_NAME = "haiku-desk"  # the app's folder inside a library
UNTITLED = "New chat"

Grounding = Literal["grounded", "ungrounded", "missing"]
AnswerMode = Literal["tools", "fallback", "search-only", "no-documents"]
# What an answer rests on, as its badge says: the grounding the answer declared, or, for
# answers whose grounding says little, what they are instead.
Basis = Literal[
    "grounded", "ungrounded", "missing", "search-results", "computed", "stopped", "no-documents",
    "not-answered",
]


def now() -> datetime:
    return datetime.now(UTC)


class Toggles(BaseModel):
    """Per-conversation choices that shape the agent of the next run."""

    evidence_compaction: bool = False
    citation_policy: bool = False
    analysis: bool = False
    # None: follow the model's ``supports_tools``; True: answer from passages without tools.
    no_tools: bool | None = None


class ToolStep(BaseModel):
    """One compact line of what the agent did: searching "…", running analysis…"""

    kind: str  # haiku.rag.answering.StepKind: search, cite, a program run, policy redirect, …
    label: str
    detail: str = ""  # the program an analysis step ran, for the analysis panel
    output: str = ""  # the program's output

    @property
    def ran_program(self) -> bool:
        """An analysis step: the library gives only those a program (``Step.detail``)."""
        return bool(self.detail)


def _import_citation() -> None:
    """Put ``Citation`` in this module's namespace, where Pydantic resolves the annotations.

    Not at import: ``haiku.rag.citations`` loads the store's models (pyarrow, numpy), and the
    main window imports this module before it is first shown.
    """
    if "Citation" not in globals():
        from haiku.rag.citations import Citation

        globals()["Citation"] = Citation


class _CitingModel(BaseModel):
    """A model whose schema mentions ``Citation``: completed on first use (validation,
    construction, schema), when Pydantic rebuilds it, not when the module is imported."""

    @classmethod
    def model_rebuild(cls, **kwargs: Any) -> bool | None:
        _import_citation()
        # One frame deeper than Pydantic expects: keep its parent namespace the caller's.
        kwargs["_parent_namespace_depth"] = kwargs.get("_parent_namespace_depth", 2) + 1
        return super().model_rebuild(**kwargs)


class Failure(BaseModel):
    """Why a question could not be answered, as its turn said it, and whether the library's
    passages were offered instead (the model was the problem)."""

    message: str  # the turn's line: "The model isn't reachable — show the matching passages instead?"
    detail: str = ""  # the error, one line
    offer_passages: bool = False

    @property
    def reason(self) -> str:
        """The why in a few words, as an export says it ("Not answered: <reason>")."""
        head = self.message.split(" — ", 1)[0].removeprefix("Not answered: ")
        extra = self.detail if self.detail and self.detail not in head else ""
        return f"{head} ({extra})" if extra else head


class Turn(_CitingModel):
    """One question and its answer as the chat pane shows it."""

    question: str
    answer: str = ""
    citations: list[Citation] = Field(default_factory=list)
    grounding: Grounding = "missing"
    mode: AnswerMode = "tools"
    steps: list[ToolStep] = Field(default_factory=list)
    # What the answer rests on, as haiku.rag said (None in files older than that field).
    rests_on: Basis | None = None
    capability_ids: list[str] = Field(default_factory=list)  # of the agent that answered
    # Whether the cited text holds the answer's claims: haiku.rag's SupportCheck as JSON
    # (None in files older than that field, and for answers no model wrote).
    support: dict[str, Any] | None = None
    input_tokens: int | None = None  # of the answer's last model request
    saved_tokens: int | None = None  # input tokens compaction saved on that request (estimate)
    # Stopped before it was complete: the partial answer is shown, but it is not part of the
    # model's history (the conversation goes on as if it had not been asked).
    stopped: bool = False
    # Not answered (the model unreachable, an error): kept in the transcript with why and its
    # offer, after a restart too, and exported so; like a stopped one, not in the history.
    failure: Failure | None = None
    asked_at: datetime = Field(default_factory=now)

    @property
    def support_check(self) -> Any:
        """``support`` as haiku.rag's ``SupportCheck`` (None when absent or unreadable)."""
        if not self.support:
            return None
        from pydantic import ValidationError

        from haiku.rag.answering.support import SupportCheck

        try:
            return SupportCheck.model_validate(self.support)
        except ValidationError:
            return None

    @property
    def basis(self) -> Basis:
        """What the answer rests on, for its badge and its export."""
        if self.failure is not None:
            return "not-answered"
        if self.stopped:
            return "stopped"
        if self.rests_on is not None:
            return self.rests_on
        if self.mode == "no-documents":
            return "no-documents"
        if self.mode == "search-only":
            return "search-results"
        if not self.citations and any(s.ran_program and s.output for s in self.steps):
            return "computed"
        return self.grounding


class ConversationRecord(_CitingModel):
    """Everything saved for one conversation."""

    version: int = CONVERSATION_FORMAT_VERSION
    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    title: str = UNTITLED
    created: datetime = Field(default_factory=now)
    updated: datetime = Field(default_factory=now)
    toggles: Toggles = Field(default_factory=Toggles)
    # What the chat searches: document ids, None for the whole library ([]: nothing ticked).
    scope: list[str] | None = None
    # The collection the scope was chosen as (its name), else None: ``scope`` then holds that
    # collection's document ids as last seen, kept in step by the chat (membership, renames).
    scope_collection: str | None = None
    # haiku.rag's Conversation.to_dict(): history, capability state and numbering, opaque.
    conversation: dict[str, Any] | None = None
    # Format 1: the history and its state as two fields (read, then carried into the above).
    messages: list[dict[str, Any]] = Field(default_factory=list)
    state: dict[str, Any] = Field(default_factory=dict)
    turns: list[Turn] = Field(default_factory=list)

    def answering_conversation(self) -> Conversation:
        """The conversation to answer the next question on (a fresh object each call)."""
        from haiku.rag.answering import Conversation

        if self.conversation is not None:
            return Conversation.from_dict(self.conversation)
        numbers: dict[str, int] = {}  # format 1: the numbers its answers showed
        for turn in self.turns:
            for citation in turn.citations:
                numbers.setdefault(citation.chunk_id, citation.index)
        return Conversation.from_dict(
            {"version": 1, "messages": self.messages, "state": self.state, "numbers": numbers}
        )

    def set_answering_conversation(self, conversation: Conversation) -> None:
        self.conversation = conversation.to_dict()
        self.messages, self.state = [], {}
        self.version = CONVERSATION_FORMAT_VERSION

    def model_messages(self) -> list[Any]:
        """The model history (what a question is answered after)."""
        return list(self.answering_conversation().messages)

    @property
    def blank(self) -> bool:
        """Nothing asked in it and no title of the user's: a "New chat" a new one can reuse."""
        return not self.turns and self.title == UNTITLED

    def matches(self, text: str) -> bool:
        """Whether ``text`` occurs in the title, a question or an answer (case and accents
        folded: "kereon" finds "Kéréon")."""
        from haiku_desk.services.entries import fold

        needle = fold(text.strip())
        if not needle:
            return True
        haystacks = [self.title, *(t.question for t in self.turns), *(t.answer for t in self.turns)]
        return any(needle in fold(h) for h in haystacks)


class ConversationSummary(BaseModel):
    id: str
    title: str
    updated: datetime


def library_app_folder(db_path: str | os.PathLike[str]) -> Path:
    """The app's folder inside the library at ``db_path``."""
    return Path(db_path) / LIBRARY_APP_DIR_NAME


class ConversationFileError(Exception):
    """A conversation file that cannot be read; the others stay usable."""


class ConversationStore:
    """The conversations folder: ``<data_dir>/conversations/<id>.json``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    @classmethod
    def in_data_dir(cls, data_dir: str | os.PathLike[str]) -> ConversationStore:
        """The folder of the data dir (before conversations belonged to libraries)."""
        return cls(Path(data_dir) / CONVERSATIONS_DIR_NAME)

    @classmethod
    def for_library(cls, db_path: str | os.PathLike[str]) -> ConversationStore:
        """The conversations of the local library at ``db_path``, stored inside it."""
        return cls.in_app_folder(library_app_folder(db_path))

    @classmethod
    def in_app_folder(cls, folder: str | os.PathLike[str]) -> ConversationStore:
        """The conversations in a library's app folder (``<db>/haiku-desk/``)."""
        return cls(Path(folder) / CONVERSATIONS_DIR_NAME)

    def path_of(self, conversation_id: str) -> Path:
        if (
            not conversation_id
            or "/" in conversation_id
            or "\\" in conversation_id
            or conversation_id.startswith(".")
        ):
            raise ValueError(f"not a conversation id: {conversation_id!r}")
        return self.directory / f"{conversation_id}.json"

    def save(self, record: ConversationRecord) -> Path:
        """Write ``record`` atomically: readers see the old file or the new one, never a mix."""
        return write_text_atomic(self.path_of(record.id), record.model_dump_json(indent=1), private=True)

    def load(self, conversation_id: str) -> ConversationRecord:
        path = self.path_of(conversation_id)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise
        except (OSError, ValueError) as exc:
            raise ConversationFileError(f"cannot read conversation {path.name}: {exc}") from exc
        version = raw.get("version", 0) if isinstance(raw, dict) else 0
        if version > CONVERSATION_FORMAT_VERSION:
            raise ConversationFileError(
                f"conversation {path.name} was saved by a newer haiku-desk (format {version})"
            )
        try:
            return ConversationRecord.model_validate(raw)
        except ValidationError as exc:
            raise ConversationFileError(f"conversation {path.name} is damaged: {exc}") from exc

    def delete(self, conversation_id: str) -> None:
        self.path_of(conversation_id).unlink(missing_ok=True)

    def records(self) -> Iterator[ConversationRecord | ConversationFileError]:
        if not self.directory.is_dir():
            return
        for path in sorted(self.directory.glob("*.json")):
            try:
                yield self.load(path.stem)
            except ConversationFileError as exc:
                yield exc
            except FileNotFoundError:  # deleted meanwhile
                continue

    def adopt(
        self,
        legacy: ConversationStore,
        here: set[str],
        report: Callable[[str, BaseException], object],
    ) -> int:
        """Move the conversations of ``legacy`` (saved before they belonged to a library) here
        when every document they cite is among ``here`` (one citing nothing moves into the
        first library opened); others stay for the library they belong to. A move that fails
        is reported and leaves the conversation where it was. Returns how many moved."""
        if legacy.directory == self.directory or not legacy.directory.is_dir():
            return 0
        moved = 0
        for item in list(legacy.records()):
            if isinstance(item, ConversationFileError):
                continue
            cited = {c.document_id for t in item.turns for c in t.citations}
            if not cited <= here or self.path_of(item.id).exists():
                continue
            try:
                self.save(item)  # written whole in the library first, then removed
                legacy.delete(item.id)
            except OSError as exc:
                report(f"Moving the conversation {item.title!r} into the library failed", exc)
                continue
            moved += 1
        return moved
