"""A scripted stand-in for a chat model, for self-tests, demos and hosts' tests: it searches
the library, cites what it found and answers, through whatever tools the capabilities offer,
so a host never names a tool.

``ScriptedAnswer(ANSWER, query=QUERY)`` answers its first question by searching for ``query``
with the grounded-search tool, citing the first ``cite`` results it was shown with the cite
tool, then replying ``ANSWER``; without ``query`` it replies at once. It records what it was
offered and shown, so a check can say what the run did. Its ``model`` is a Pydantic AI
``FunctionModel``: nothing leaves the machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models.function import AgentInfo, FunctionModel


class ScriptError(RuntimeError):
    """The scripted model could not play its script (no search tool offered, nothing found)."""


def _tool_names() -> tuple[str, str]:
    from haiku.rag.capabilities.base import cite_tool_name, search_tool_name
    from haiku.rag.capabilities.rag import RAGCapability

    return search_tool_name(RAGCapability.namespace), cite_tool_name(RAGCapability.namespace)


@dataclass
class ScriptedAnswer:
    answer: str
    query: str | None = None
    cite: int = 1
    offered: list[list[str]] = field(default_factory=list)  # tool names offered, per request
    shown: list[str] = field(default_factory=list)  # the search returns its latest request held
    cited: list[str] = field(default_factory=list)  # chunk ids it cited

    @property
    def model(self) -> FunctionModel:
        from pydantic_ai.models.function import FunctionModel

        return FunctionModel(self._respond, model_name="scripted")

    @property
    def offered_evidence_tools(self) -> bool:
        """Whether its first request offered the grounded-search and cite tools."""
        return bool(self.offered) and set(_tool_names()) <= set(self.offered[0])

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

        from haiku.rag.capabilities.formatting import result_ids

        search, cite = _tool_names()
        self.offered.append([t.name for t in info.function_tools])
        searches = _returns(messages, search)
        self.shown = [str(p.content) for p in searches]  # earlier questions' too, as compacted
        if self.query is None:
            return ModelResponse(parts=[TextPart(self.answer)])
        if not searches:
            if search not in self.offered[-1]:
                raise ScriptError(f"no search tool was offered (tools: {', '.join(self.offered[-1]) or 'none'})")
            return ModelResponse(parts=[ToolCallPart(search, {"query": self.query})])
        if not _returns(messages, cite):
            ids = result_ids(str(searches[-1].content))[: self.cite]
            if not ids:
                raise ScriptError(f"the search for {self.query!r} found nothing to cite")
            self.cited = ids
            return ModelResponse(parts=[ToolCallPart(cite, {"chunk_ids": ids})])
        return ModelResponse(parts=[TextPart(self.answer)])


def _returns(messages: list[Any], tool: str) -> list[Any]:
    from pydantic_ai.messages import ModelRequest, ToolReturnPart

    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == tool
    ]
