"""Scripted models: a FunctionModel that plays a list of steps and records every request.

Each step is a ``ModelResponse`` or a function of the request the model just received, so a
script can cite the chunk ids a search actually returned.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

CHUNK_LINE = re.compile(r"^\[([0-9a-f]{32})\] \[rank \d+ of \d+\]", re.MULTILINE)


@dataclass
class SeenRequest:
    """What the model received in one request."""

    instructions: str
    tool_names: list[str]
    messages: list[ModelMessage]

    def request_parts(self) -> list[Any]:
        return [p for m in self.messages if isinstance(m, ModelRequest) for p in m.parts]

    def returns(self, tool_name: str) -> list[ToolReturnPart]:
        return [
            p
            for p in self.request_parts()
            if isinstance(p, ToolReturnPart) and p.tool_name == tool_name
        ]

    def last_return(self, tool_name: str) -> ToolReturnPart:
        returns = self.returns(tool_name)
        assert returns, f"no {tool_name} return in the request"
        return returns[-1]

    def user_texts(self) -> list[str]:
        return [
            text
            for part in self.request_parts()
            if isinstance(part, UserPromptPart)
            for text in prompt_texts(part)
        ]

    def text(self) -> str:
        """Everything textual the model was sent, instructions included."""
        chunks = [self.instructions]
        for message in self.messages:
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    chunks.append(f"{part.tool_name} {part.args_as_json_str()}")
                elif isinstance(part, TextPart | ToolReturnPart):
                    chunks.append(str(part.content))
                elif isinstance(part, UserPromptPart):
                    chunks += prompt_texts(part)
        return "\n".join(chunks)


def prompt_texts(part: UserPromptPart) -> list[str]:
    items = [part.content] if isinstance(part.content, str) else part.content
    return [item for item in items if isinstance(item, str)]


Step = ModelResponse | Callable[[SeenRequest], ModelResponse]


@dataclass
class ScriptedModel:
    steps: list[Step] = field(default_factory=list)
    seen: list[SeenRequest] = field(default_factory=list)

    def play(self, *steps: Step) -> ScriptedModel:
        self.steps.extend(steps)
        return self

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self._respond)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = SeenRequest(
            info.instructions or "", [t.name for t in info.function_tools], list(messages)
        )
        self.seen.append(request)
        assert self.steps, (
            f"the model was asked for more than the script holds (request {len(self.seen)})"
        )
        step = self.steps.pop(0)
        return step(request) if callable(step) else step


def calls(*parts: ToolCallPart) -> ModelResponse:
    return ModelResponse(parts=list(parts))


def call(tool: str, **args: Any) -> ToolCallPart:
    return ToolCallPart(tool, args)


def load(capability_id: str = "haiku-rag") -> ModelResponse:
    return calls(call("load_capability", id=capability_id))


def search(query: str, limit: int | None = None, tool: str = "rag_search") -> ModelResponse:
    args: dict[str, Any] = {"query": query}
    if limit is not None:
        args["limit"] = limit
    return calls(ToolCallPart(tool, args))


def cite(*chunk_ids: str, tool: str = "rag_cite") -> ModelResponse:
    return calls(call(tool, chunk_ids=list(chunk_ids)))


def answer(text: str = "The answer.") -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])


def chunk_ids_in(text: str) -> list[str]:
    return CHUNK_LINE.findall(text)


def cite_top(count: int = 1, *, search_tool: str = "rag_search", tool: str = "rag_cite") -> Step:
    """Cite the first ``count`` results of the newest search the model saw."""

    def step(request: SeenRequest) -> ModelResponse:
        ids = chunk_ids_in(str(request.last_return(search_tool).content))
        assert ids, "the newest search returned nothing to cite"
        return cite(*ids[:count], tool=tool)

    return step
