"""A scripted extracting model (a Pydantic AI FunctionModel) for the evidence-table tests.

It reads what the library showed it, as a model would: with tools, it searches its document
with the grounded-search tool, finds the passage holding the fact the question asks for, cites
that passage and answers with the fact; without tools, it finds the fact among the numbered
passages and answers with it and the passage's ``[n]``. Nothing is hard-coded per document:
the facts are read from the text by pattern. ``cite_also`` makes it also cite a chunk id it was
never shown (another document's), ``answer_override`` makes it answer something else than what
it read (a value its cited text does not hold).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

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

from haiku.rag.capabilities.base import cite_tool_name, search_tool_name
from haiku.rag.capabilities.rag import RAGCapability

SEARCH = search_tool_name(RAGCapability.namespace)
CITE = cite_tool_name(RAGCapability.namespace)
NOT_FOUND = "I did not find this in the documents."

# question keyword -> (pattern over the document's text, the answer made from the match)
FACTS: list[tuple[str, re.Pattern[str], Callable[[re.Match[str]], str]]] = [
    ("participants", re.compile(r"enrolled (\d+) participants"), lambda m: f"{m.group(1)} participants"),
    ("design", re.compile(r"used an? ([\w -]+?) design"), lambda m: f"A {m.group(1)} design"),
    (
        "blinded",
        re.compile(r"(were blinded|no blinding was used)"),
        lambda m: "Yes, assessors were blinded" if m.group(1) == "were blinded" else "No, no blinding was used",
    ),
    ("dataset", re.compile(r"the (\w+) dataset"), lambda m: f"The {m.group(1)} dataset"),
    ("finding", re.compile(r"main finding is that ([^,]+),"), lambda m: m.group(1).capitalize()),
    ("funding", re.compile(r"funded by the ([\w ]+?) (?:fund|trust)"), lambda m: m.group(1)),
]
_PASSAGE = re.compile(r"Passage \[([0-9a-f]{32})\][^\n]*:\n((?:>.*\n?)+)")
_HEADER = re.compile(r"^\[([0-9a-f]{32})\] \[rank", re.MULTILINE)
_NUMBERED = re.compile(r"^\[(\d+)\] Source:[^\n]*\n((?:>.*\n?)+)", re.MULTILINE)


def _unquote(block: str) -> str:
    return " ".join(line[1:].strip() for line in block.splitlines())


def read_fact(question: str, text: str) -> str | None:
    """The answer to ``question`` that ``text`` holds, or None."""
    folded = question.casefold()
    for keyword, pattern, answer in FACTS:
        if keyword in folded:
            found = pattern.search(" ".join(text.split()))
            return answer(found) if found else None
    return None


def _question(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def _returns(messages: list[ModelMessage], tool: str) -> list[ToolReturnPart]:
    return [
        p
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart) and p.tool_name == tool
    ]


def search_passages(text: str) -> list[tuple[str, str]]:
    """(chunk id, text) of every passage a search return shows."""
    passages = [(m.group(1), _unquote(m.group(2))) for m in _PASSAGE.finditer(text)]
    if passages:
        return passages
    blocks = text.split("\n\n---\n\n")
    out = []
    for block in blocks:
        header = _HEADER.search(block)
        if header:
            body = block.split("Content:", 1)[-1]
            out.append((header.group(1), _unquote("\n".join(line for line in body.splitlines() if line.startswith(">")))))
    return out


@dataclass
class Extractor:
    cite_also: str | None = None
    answer_override: str | None = None
    requests: int = 0
    questions: list[str] = field(default_factory=list)
    refused_replies: list[str] = field(default_factory=list)

    # --- with tools -------------------------------------------------------------------------

    def _tools(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests += 1
        tools = {t.name for t in info.function_tools}
        assert SEARCH in tools and CITE in tools, f"no evidence tools offered: {sorted(tools)}"
        question = _question(messages)
        searches = _returns(messages, SEARCH)
        if not searches:
            self.questions.append(question)
            return ModelResponse(parts=[ToolCallPart(SEARCH, {"query": question.splitlines()[0]})])
        cites = _returns(messages, CITE)
        found = [
            (chunk_id, answer)
            for chunk_id, text in search_passages(str(searches[-1].content))
            if (answer := read_fact(question, text)) is not None
        ]
        if not cites:
            ids = [found[0][0]] if found else []
            if self.cite_also:
                ids.append(self.cite_also)
            return ModelResponse(parts=[ToolCallPart(CITE, {"chunk_ids": ids})])
        self.refused_replies.extend(str(c.content) for c in cites)
        if not found:
            return ModelResponse(parts=[TextPart(NOT_FOUND)])
        return ModelResponse(parts=[TextPart(self.answer_override or found[0][1])])

    # --- without tools ----------------------------------------------------------------------

    def _fallback(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests += 1
        assert not info.function_tools, "a no-tools model was offered tools"
        prompt = _question(messages)
        question = prompt.rsplit("Question:", 1)[-1].strip()
        self.questions.append(question)
        for m in _NUMBERED.finditer(prompt):
            answer = read_fact(question, _unquote(m.group(2)))
            if answer is not None:
                return ModelResponse(parts=[TextPart(f"{self.answer_override or answer} [{m.group(1)}].")])
        return ModelResponse(parts=[TextPart(NOT_FOUND)])

    @property
    def tools_model(self) -> FunctionModel:
        return FunctionModel(self._tools, model_name="extractor-tools")

    @property
    def fallback_model(self) -> FunctionModel:
        return FunctionModel(self._fallback, model_name="extractor-no-tools")
