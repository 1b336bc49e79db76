"""``WireMeter``: what one question's model requests carried, for the host to show.

It sits innermost in the agent (after compaction), so it sees each request as it goes on the
wire, and compares it with the stored history the request was built from: the difference is what
compaction took off (an estimate: characters / 4, the usual rule of thumb for English text;
images are not counted). It also notices the citation policy's redirect, which arrives as a
tagged user message. What it notices becomes ``Step`` events of the answer's stream.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, WrapModelRequestHandler
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext

from haiku.rag.answering.events import Step

CHARS_PER_TOKEN = 4
METER_CAPABILITY_ID = "haiku-rag-answering-meter"


@dataclass
class WireMeter(AbstractCapability[Any]):
    """Counts what compaction saved on each request and reports policy redirects as steps.

    One instance serves one question (``build_agent`` makes a new one per agent)."""

    compaction: bool = False
    saved: list[int] = field(default_factory=list)  # per request, estimated tokens
    steps: list[Step] = field(default_factory=list)  # not yet handed to the stream
    _redirects_seen: int | None = None  # redirects in the history when the question began
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        if self.id is None:
            self.id = METER_CAPABILITY_ID

    async def wrap_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        handler: WrapModelRequestHandler,
    ) -> ModelResponse:
        from haiku.rag.capabilities.policy import REDIRECT_TAG

        sent = request_context.messages
        redirects = sum(1 for text in _prompt_texts(sent) if REDIRECT_TAG in text)
        if self._redirects_seen is None:  # the question's first request: earlier ones only
            self._redirects_seen = redirects
        elif redirects > self._redirects_seen:
            self._redirects_seen = redirects
            self.steps.append(
                Step(
                    id=f"policy-{next(self._ids)}",
                    kind="policy-redirect",
                    label="Asked the model to declare the sources of its answer",
                    finished=True,
                )
            )
        if self.compaction:
            saved = max(0, text_chars(ctx.messages) - text_chars(sent)) // CHARS_PER_TOKEN
            self.saved.append(saved)
            if saved and len(self.saved) == 1:  # one line per answer: the wire of its first request
                self.steps.append(
                    Step(
                        id=f"compaction-{next(self._ids)}",
                        kind="compaction",
                        label=f"Compacted earlier evidence (about {saved:,} tokens saved)",
                        finished=True,
                    )
                )
        return await handler(request_context)

    def take_steps(self) -> list[Step]:
        steps, self.steps = self.steps, []
        return steps

    @property
    def last_saved(self) -> int | None:
        if not self.compaction:
            return None
        return self.saved[-1] if self.saved else 0


def text_chars(messages: Sequence[ModelMessage]) -> int:
    """Characters of text a history sends: prompts, tool returns and calls, responses."""
    total = 0
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    total += len(part.model_response_str())
                elif isinstance(part, RetryPromptPart):
                    total += len(part.model_response())
                elif isinstance(part, UserPromptPart):
                    total += sum(len(t) for t in _texts(part.content))
        elif isinstance(message, ModelResponse):
            for rpart in message.parts:
                if isinstance(rpart, TextPart):
                    total += len(rpart.content)
                elif isinstance(rpart, ToolCallPart):
                    total += len(rpart.args_as_json_str())
    return total


def _texts(content: Any) -> Iterable[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, Sequence):
        for item in content:
            if isinstance(item, str):
                yield item


def _prompt_texts(messages: Sequence[ModelMessage]) -> Iterable[str]:
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    yield from _texts(part.content)
