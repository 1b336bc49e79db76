"""Resuming a question: with the carried state it continues; without it the run fails."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, capture_run_messages

from capabilities.conftest import Deps
from capabilities.scripting import ScriptedModel, answer, call, calls, cite_top, load, search
from haiku.rag.capabilities.rag import RAGState


def approval_agent(script: ScriptedModel, rag) -> Agent[Deps, str | DeferredToolRequests]:
    agent = Agent(
        script.model, deps_type=Deps, capabilities=[rag], output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def publish(summary: str) -> str:
        """Publish a summary (needs the user's approval)."""
        return "published"

    return agent


def rag_state(deps: Deps) -> RAGState:
    return RAGState.model_validate(deps.state["rag"])


async def paused_run(make_rag, deps: Deps) -> tuple[Agent, ScriptedModel, list]:
    script = ScriptedModel().play(
        load(), search("lantern otter diet"), calls(call("publish", summary="otters"))
    )
    agent = approval_agent(script, make_rag())
    paused = await agent.run("Summarise the otters and publish it.", deps=deps)
    assert isinstance(paused.output, DeferredToolRequests)
    return agent, script, paused.all_messages()


def approve_all(history) -> DeferredToolResults:
    pending = history[-1].tool_calls
    return DeferredToolResults(approvals={c.tool_call_id: True for c in pending})


async def test_a_paused_question_stays_in_progress(make_rag, deps):
    await paused_run(make_rag, deps)
    state = rag_state(deps)
    assert state.evidence.in_progress and state.evidence.question == 0
    assert list(state.searches) == ["lantern otter diet"]


async def test_a_resumed_question_keeps_its_identity_searches_and_citations(make_rag, deps):
    agent, script, history = await paused_run(make_rag, deps)
    script.play(cite_top(1), answer("Published."))
    resumed = await agent.run(
        message_history=history, deferred_tool_results=approve_all(history), deps=deps
    )
    assert resumed.output == "Published."
    state = rag_state(deps)
    assert state.evidence.question == 0 and not state.evidence.in_progress
    assert list(state.searches) == ["lantern otter diet"]
    cited = state.citations[0]
    # resolved from the carried search results: recorded as retrieved in this same question
    assert state.evidence.occurrences[cited].retrieved_in_questions == [0]


async def test_resuming_without_the_carried_state_fails(make_rag, deps):
    agent, script, history = await paused_run(make_rag, deps)
    with pytest.raises(RuntimeError, match="resuming a question with no stored question identity"):
        await agent.run(
            message_history=history, deferred_tool_results=approve_all(history), deps=Deps()
        )


async def test_a_question_paused_before_the_capability_was_loaded_still_resumes(make_rag, deps):
    script = ScriptedModel().play(calls(call("publish", summary="hello")))
    agent = approval_agent(script, make_rag())
    paused = await agent.run("Publish a greeting.", deps=deps)
    history = paused.all_messages()
    script.play(answer("Published."))
    resumed = await agent.run(
        message_history=history, deferred_tool_results=approve_all(history), deps=deps
    )
    assert resumed.output == "Published."
    assert rag_state(deps).evidence.question == 0


async def test_an_interrupted_question_resumes_from_its_history(make_rag, deps):
    def interrupt(_request):
        raise ConnectionError("the connection dropped")

    script = ScriptedModel().play(load(), search("copperline cables"), interrupt)
    agent = Agent(script.model, deps_type=Deps, capabilities=[make_rag()])
    with capture_run_messages() as history, pytest.raises(ConnectionError):
        await agent.run("How often are the cables painted?", deps=deps)
    assert rag_state(deps).evidence.in_progress
    script.play(cite_top(1), answer("Every seven years."))
    await agent.run(message_history=history, deps=deps)
    state = rag_state(deps)
    assert state.evidence.question == 0 and len(state.citations) == 1


async def test_a_promptless_run_on_a_settled_history_is_a_new_question(make_rag, deps):
    script = ScriptedModel().play(load(), search("otters"), answer("Eels."), answer("More?"))
    agent = Agent(script.model, deps_type=Deps, capabilities=[make_rag()])
    first = await agent.run("What do otters eat?", deps=deps)
    await agent.run(message_history=first.all_messages(), deps=deps)
    state = rag_state(deps)
    assert state.evidence.question == len(first.all_messages())
    assert state.searches == {}


async def test_a_new_user_message_sent_inside_the_history_is_a_new_question(make_rag, deps):
    # UI adapters (AG-UI, Vercel AI) send the newest user message as the tail of the history.
    from pydantic_ai.messages import ModelRequest

    script = ScriptedModel().play(load(), search("otters"), answer("Eels."), search("bridges"), answer("Cables."))
    agent = Agent(script.model, deps_type=Deps, capabilities=[make_rag()])
    first = await agent.run("What do otters eat?", deps=deps)
    history = [*first.all_messages(), ModelRequest.user_text_prompt("And the bridges?")]
    await agent.run(message_history=history, deps=deps)
    state = rag_state(deps)
    assert state.evidence.question == len(history)
    assert list(state.searches) == ["bridges"]


async def test_a_history_ending_in_tool_results_without_the_state_fails(make_rag, deps):
    def interrupt(_request):
        raise ConnectionError("the connection dropped")

    script = ScriptedModel().play(load(), search("copperline cables"), interrupt)
    agent = Agent(script.model, deps_type=Deps, capabilities=[make_rag()])
    with capture_run_messages() as history, pytest.raises(ConnectionError):
        await agent.run("How often are the cables painted?", deps=deps)
    with pytest.raises(RuntimeError, match="resuming a question with no stored question identity"):
        await agent.run(message_history=history, deps=Deps())
