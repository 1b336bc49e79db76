"""A conversation: the model history, the capability state that describes it, and the numbers
its citations are shown with. Hosts persist it whole (``to_json``) and never look inside.

The history and the state only make sense together (compaction refuses a history whose state was
lost), so they are serialised together, with the display numbering beside them.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from haiku.rag.errors import HaikuRAGError

CONVERSATION_VERSION = 1


class ConversationFormatError(HaikuRAGError):
    """Saved conversation data that cannot be read (damaged, or written by a newer version)."""


@dataclass
class Conversation:
    """Agent dependencies that carry a conversation from one question to the next.

    ``state`` holds each capability's JSON state under its own key (the capabilities read it
    from ``deps.state``); ``messages`` is the history that state describes; ``numbers`` maps a
    cited chunk id to the number the conversation shows it with, across capabilities.
    """

    state: dict[str, Any] = field(default_factory=dict)
    messages: list[ModelMessage] = field(default_factory=list)
    numbers: dict[str, int] = field(default_factory=dict)

    def copy(self) -> Conversation:
        return Conversation(
            state=copy.deepcopy(self.state),
            messages=list(self.messages),  # messages are never mutated in place, only appended
            numbers=dict(self.numbers),
        )

    def replace_with(self, other: Conversation) -> None:
        """Take ``other``'s contents (a finished question's copy) in place."""
        self.state = other.state
        self.messages = other.messages
        self.numbers = other.numbers

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": CONVERSATION_VERSION,
            "messages": ModelMessagesTypeAdapter.dump_python(self.messages, mode="json"),
            "state": copy.deepcopy(self.state),
            "numbers": dict(self.numbers),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Any) -> Conversation:
        if not isinstance(data, dict):
            raise ConversationFormatError("conversation data is not a JSON object")
        version = data.get("version", 0)
        if not isinstance(version, int) or version > CONVERSATION_VERSION:
            raise ConversationFormatError(
                f"the conversation was saved by a newer haiku.rag (format {version!r})"
            )
        state, numbers = data.get("state") or {}, data.get("numbers") or {}
        if not isinstance(state, dict) or not isinstance(numbers, dict):
            raise ConversationFormatError("the conversation's state or numbering is damaged")
        try:
            messages = list(ModelMessagesTypeAdapter.validate_python(data.get("messages") or []))
            numbered = {str(k): int(v) for k, v in numbers.items()}
        except (ValidationError, TypeError, ValueError) as exc:
            detail = " ".join(str(exc).split())[:300]
            raise ConversationFormatError(f"the conversation's history is damaged: {detail}") from exc
        return cls(state=copy.deepcopy(state), messages=messages, numbers=numbered)

    @classmethod
    def from_json(cls, data: str | bytes) -> Conversation:
        try:
            raw = json.loads(data)
        except ValueError as exc:
            raise ConversationFormatError(f"the conversation is not valid JSON: {exc}") from exc
        return cls.from_dict(raw)
