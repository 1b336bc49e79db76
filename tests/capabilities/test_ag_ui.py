"""The capabilities served over AG-UI through Pydantic AI's own ``AGUIAdapter``: native model
and tool events, no haiku.rag-specific bridge, and the capability state in the host's deps."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from ag_ui.core import EventType, RunAgentInput, UserMessage
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter

from capabilities.conftest import Deps
from capabilities.scripting import chunk_ids_in
from haiku.rag.capabilities import policy
from haiku.rag.capabilities.ledger import citation_status
from haiku.rag.capabilities.rag import RAGState

QUESTION = "What do lantern otters eat?"


def _returns(messages: list[ModelMessage], tool: str) -> list[str]:
    return [
        str(part.content)
        for message in messages
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == tool
    ]


async def streamed_script(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    """Search, cite the top hit, then answer: streamed the way a real model streams."""
    searches = _returns(messages, "rag_search")
    if not searches:
        yield {0: DeltaToolCall("rag_search", json.dumps({"query": "lantern otter diet"}), tool_call_id="s1")}
    elif not _returns(messages, "rag_cite"):
        top = chunk_ids_in(searches[-1])[0]
        yield {0: DeltaToolCall("rag_cite", json.dumps({"chunk_ids": [top]}), tool_call_id="c1")}
    else:
        for piece in ("Lantern otters eat ", "glass eels and river crabs."):
            yield piece


async def test_an_ag_ui_run_streams_native_tool_and_text_events_and_keeps_the_state(make_rag):
    agent = Agent(
        FunctionModel(stream_function=streamed_script),
        deps_type=Deps,
        capabilities=[make_rag(defer_loading=False), policy.create_capability()],
    )
    run_input = RunAgentInput(
        thread_id="thread-1",
        run_id="run-1",
        state={},
        messages=[UserMessage(id="m1", role="user", content=QUESTION)],
        tools=[],
        context=[],
        forwarded_props=None,
    )
    deps = Deps()
    events = [event async for event in AGUIAdapter(agent, run_input).run_stream(deps=deps)]
    types = [event.type for event in events]
    errors = [getattr(e, "message", "") for e in events if e.type == EventType.RUN_ERROR]
    assert not errors, errors

    assert types[0] == EventType.RUN_STARTED and types[-1] == EventType.RUN_FINISHED
    assert EventType.RUN_ERROR not in types
    started = [e.tool_call_name for e in events if e.type == EventType.TOOL_CALL_START]
    assert started == ["rag_search", "rag_cite"]
    results = [e.content for e in events if e.type == EventType.TOOL_CALL_RESULT]
    assert "Lantern" in results[0] or "lantern" in results[0]
    text = "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT)
    assert text == "Lantern otters eat glass eels and river crabs."

    # The capability state lives where the host put it, and says the answer is grounded.
    rag_state = RAGState.model_validate(deps.state["rag"])
    assert len(rag_state.citations) == 1
    cited = rag_state.citation_index[rag_state.citations[0]]
    assert "glass eels" in cited.content
    assert citation_status([rag_state.evidence], question=rag_state.evidence.question) == "grounded"
    assert deps.state["citation_policy"]["violations"] == []
