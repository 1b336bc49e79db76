"""Conversations on disk: one JSON file each, history and capability state always together.

A conversation belongs to its library and is stored with it, in the library's app folder
(``<db>/haiku-desk/conversations/``): a library moved or synced carries its conversations, and
a conversation made in one library is never listed in another.

A conversation is only meaningful with both halves: the Pydantic AI message history and the
capability ``state`` dict that describes it (question identities, citations, the evidence ledger,
the citation policy's record). Compaction refuses to run on a history whose state was lost, so
the two are written in one file, atomically (temporary file, then ``os.replace``): a crash leaves
either the previous file or the new one, never half of each.

The file also keeps what the chat pane shows (each turn's answer, citations and grounding), the
title and the per-conversation toggles. It never holds an API key: nothing a model provider needs
is stored here.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError

if TYPE_CHECKING:
    from haiku.rag.capabilities.state import Citation

CONVERSATION_FORMAT_VERSION = 1
CONVERSATIONS_DIR_NAME = "conversations"
LIBRARY_APP_DIR_NAME = "haiku-desk"  # the app's folder inside a library
UNTITLED = "New chat"

Grounding = Literal["grounded", "ungrounded", "missing"]
AnswerMode = Literal["tools", "fallback", "search-only", "no-documents"]
# What an answer rests on, as its badge says: the grounding the answer declared, or, for
# answers whose grounding says little, what they are instead.
Basis = Literal[
    "grounded", "ungrounded", "missing", "search-results", "computed", "stopped", "no-documents"
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

    kind: str  # search | cite | analysis | load | tool
    label: str
    detail: str = ""  # the analysis code, for the analysis panel
    output: str = ""  # the analysis output


def _import_citation() -> None:
    """Put ``Citation`` in this module's namespace, where Pydantic resolves the annotations.

    Not at import: ``haiku.rag.capabilities.state`` loads the store's models (pyarrow, numpy),
    and the main window imports this module before it is first shown.
    """
    if "Citation" not in globals():
        from haiku.rag.capabilities.state import Citation

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


class Turn(_CitingModel):
    """One question and its answer as the chat pane shows it."""

    question: str
    answer: str = ""
    citations: list[Citation] = Field(default_factory=list)
    grounding: Grounding = "missing"
    mode: AnswerMode = "tools"
    steps: list[ToolStep] = Field(default_factory=list)
    input_tokens: int | None = None  # of the answer's last model request
    saved_tokens: int | None = None  # input tokens compaction saved on that request
    # Stopped before it was complete: the partial answer is shown, but it is not part of the
    # model's history (the conversation goes on as if it had not been asked).
    stopped: bool = False
    asked_at: datetime = Field(default_factory=now)

    @property
    def basis(self) -> Basis:
        """What the answer rests on, for its badge and its export."""
        if self.stopped:
            return "stopped"
        if self.mode == "no-documents":
            return "no-documents"
        if self.mode == "search-only":
            return "search-results"
        if not self.citations and any(s.kind == "analysis" and s.output for s in self.steps):
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
    # Pydantic AI messages as ``ModelMessagesTypeAdapter`` JSON, and the capability state they
    # belong to: always read and written together.
    messages: list[dict[str, Any]] = Field(default_factory=list)
    state: dict[str, Any] = Field(default_factory=dict)
    turns: list[Turn] = Field(default_factory=list)

    def model_messages(self) -> list[Any]:
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        return list(ModelMessagesTypeAdapter.validate_python(self.messages))

    def set_model_messages(self, messages: list[Any]) -> None:
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        self.messages = ModelMessagesTypeAdapter.dump_python(messages, mode="json")

    def matches(self, text: str) -> bool:
        """Whether ``text`` occurs (case-insensitively) in the title, a question or an answer."""
        needle = text.strip().casefold()
        if not needle:
            return True
        haystacks = [self.title, *(t.question for t in self.turns), *(t.answer for t in self.turns)]
        return any(needle in h.casefold() for h in haystacks)


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
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.path_of(record.id)
        data = record.model_dump_json(indent=1)
        fd, temp = tempfile.mkstemp(prefix=f".{record.id}.", suffix=".tmp", dir=self.directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        return target

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
