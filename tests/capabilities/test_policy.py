"""CitationPolicyCapability: which answers must declare their grounding, and what happens if not."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.usage import UsageLimits

from capabilities.conftest import Deps
from capabilities.scripting import (
    ScriptedModel,
    SeenRequest,
    answer,
    calls,
    cite,
    cite_top,
    load,
    search,
)
from haiku.rag.capabilities.base import EvidenceCapability
from haiku.rag.capabilities.ledger import citation_status
from haiku.rag.capabilities.policy import REDIRECT_TAG, create_capability, redirect_message
from haiku.rag.capabilities.rag import RAGState
from haiku.rag.capabilities.state import EvidenceState


@dataclass(kw_only=True)
class NotesCapability(EvidenceCapability[EvidenceState]):
    """A second evidence capability, written the way the analysis capability will subclass the base."""

    namespace = "notes"
    capability_id = "notes"
    capability_description = "Search the field notes."
    state_type = EvidenceState
    instructions = "# Notes\n\nSearch with `notes_search`; cite with `notes_cite` before answering."


def agent_for(
    script: ScriptedModel, *capabilities, policy: bool = True, **kwargs
) -> Agent[Deps, str]:
    extra = [create_capability()] if policy else []
    return Agent(script.model, deps_type=Deps, capabilities=[*capabilities, *extra], **kwargs)


def redirects(script: ScriptedModel) -> list[str]:
    """Redirect messages the model was sent, each once, in order."""
    found: list[str] = []
    for request in script.seen:
        for text in request.user_texts():
            if REDIRECT_TAG in text and text not in found:
                found.append(text)
    return found


def violations(deps: Deps) -> list[int]:
    return deps.state["citation_policy"]["violations"]


def status(deps: Deps, question: int = 0) -> str:
    return citation_status([RAGState.model_validate(deps.state["rag"]).evidence], question=question)


async def test_without_the_policy_an_undeclared_answer_is_accepted(make_rag, deps):
    script = ScriptedModel().play(load(), search("lantern otters"), answer())
    await agent_for(script, make_rag(), policy=False).run("What do otters eat?", deps=deps)
    assert len(script.seen) == 3 and redirects(script) == []
    assert status(deps) == "missing" and "citation_policy" not in deps.state


async def test_an_undeclared_answer_is_redirected_once_to_declare_its_grounding(make_rag, deps):
    script = ScriptedModel().play(
        load(), search("lantern otters"), answer("Eels."), cite_top(1), answer("Eels.")
    )
    result = await agent_for(script, make_rag()).run("What do otters eat?", deps=deps)
    assert redirects(script) == [redirect_message(["rag_cite"])]
    assert result.output == "Eels."
    assert status(deps) == "grounded" and violations(deps) == []


def test_the_redirect_asks_to_record_the_grounding_of_the_answer_already_given():
    text = redirect_message(["rag_cite"])
    assert "This is not a request to change your answer" in text
    assert "does not mean the answer was wrong" in text
    assert "supports the answer you already gave" in text
    assert "or with an empty list if nothing supports it" in text
    assert "repeat your answer exactly" in text
    assert text.endswith(REDIRECT_TAG)


async def test_an_explicitly_ungrounded_answer_is_left_alone(make_rag, deps):
    script = ScriptedModel().play(
        load(), search("dragon eggs"), cite(), answer("I cannot find it.")
    )
    await agent_for(script, make_rag()).run("Where are dragon eggs kept?", deps=deps)
    assert redirects(script) == [] and violations(deps) == []
    assert status(deps) == "ungrounded"


async def test_a_grounded_answer_is_left_alone(make_rag, deps):
    script = ScriptedModel().play(load(), search("lantern otters"), cite_top(1), answer("Eels."))
    await agent_for(script, make_rag()).run("What do otters eat?", deps=deps)
    assert redirects(script) == [] and violations(deps) == []


async def test_a_citation_in_the_same_response_as_its_search_is_redirected(
    make_rag, deps, lent_client
):
    chunk = (await lent_client.search("lantern otters", limit=1))[0].chunk_id
    both = calls(
        ToolCallPart("rag_search", {"query": "lantern otters"}),
        ToolCallPart("rag_cite", {"chunk_ids": [chunk]}),
    )
    script = ScriptedModel().play(load(), both, answer("Eels."), cite(chunk), answer("Eels."))
    await agent_for(script, make_rag()).run("What do otters eat?", deps=deps)
    assert len(redirects(script)) == 1 and status(deps) == "grounded"


async def test_an_answer_still_undeclared_after_the_redirect_is_a_violation(make_rag, deps):
    script = ScriptedModel().play(
        load(), search("lantern otters"), answer("Eels."), answer("Eels, really.")
    )
    result = await agent_for(script, make_rag()).run("What do otters eat?", deps=deps)
    assert len(redirects(script)) == 1
    assert violations(deps) == [0] and result.output == "Eels, really."


async def test_a_withdrawn_cite_tool_makes_it_a_violation_instead_of_a_redirect(make_rag, deps):
    script = ScriptedModel().play(
        load(),
        search("lantern otters"),  # the only request within the limit
        cite("no-such-chunk"),  # grace request 1
        cite("still-no-such-chunk"),  # grace request 2
        answer("Eels."),  # every rag tool is gone now
    )
    result = await agent_for(script, make_rag(request_limit=1)).run(
        "What do otters eat?", deps=deps
    )
    assert "rag_cite" not in script.seen[-1].tool_names
    assert redirects(script) == [] and violations(deps) == [0]
    assert result.output == "Eels."


async def test_no_room_for_another_request_makes_it_a_violation_and_keeps_the_answer(
    make_rag, deps
):
    script = ScriptedModel().play(load(), search("lantern otters"), answer("Eels."))
    agent = agent_for(script, make_rag())
    result = await agent.run(
        "What do otters eat?", deps=deps, usage_limits=UsageLimits(request_limit=3)
    )
    assert result.output == "Eels."
    assert redirects(script) == [] and violations(deps) == [0]


async def test_a_question_whose_search_found_nothing_is_enforced(make_rag, deps):
    deps.state["rag"] = RAGState(document_filter="uri = 'notes://nowhere'").model_dump(mode="json")
    script = ScriptedModel().play(
        load(), search("lantern otters"), answer("Not found."), cite(), answer("Not found.")
    )
    await agent_for(script, make_rag()).run("What do otters eat?", deps=deps)
    assert script.seen[2].last_return("rag_search").content == "No results found."
    assert len(redirects(script)) == 1 and status(deps) == "ungrounded"


async def cited_first_question(make_rag, deps) -> tuple[Agent[Deps, str], ScriptedModel, list]:
    script = ScriptedModel().play(
        load(), search("lantern otter diet"), cite_top(1), answer("Eels.")
    )
    agent = agent_for(script, make_rag())
    first = await agent.run("What do otters eat?", deps=deps)
    return agent, script, first.all_messages()


async def test_a_follow_up_about_earlier_evidence_is_enforced_without_searching(make_rag, deps):
    agent, script, history = await cited_first_question(make_rag, deps)
    otter = next(iter(RAGState.model_validate(deps.state["rag"]).citation_index))
    before = len(script.seen)
    script.play(answer("Crabs too."), cite(otter), answer("Crabs too."))
    await agent.run("Do they eat anything else?", deps=deps, message_history=history)
    assert len(redirects(script)) == 1 and len(script.seen) - before == 3
    assert status(deps, question=len(history)) == "grounded"


async def test_a_greeting_after_a_citation_is_enforced_and_an_empty_citation_satisfies_it(
    make_rag, deps
):
    agent, script, history = await cited_first_question(make_rag, deps)
    before = len(script.seen)
    script.play(answer("You're welcome!"), cite(), answer("You're welcome!"))
    result = await agent.run("Thanks!", deps=deps, message_history=history)
    assert result.output == "You're welcome!"
    # one redirect round: the declaration, then the answer repeated
    assert len(redirects(script)) == 1 and len(script.seen) - before == 3
    assert status(deps, question=len(history)) == "ungrounded" and violations(deps) == []


async def test_a_greeting_with_nothing_to_declare_is_left_alone(make_rag, deps):
    script = ScriptedModel().play(answer("Hello!"))
    await agent_for(script, make_rag()).run("Hi", deps=deps)
    assert len(script.seen) == 1 and violations(deps) == []


async def test_earlier_ungrounded_declarations_do_not_make_a_greeting_enforced(make_rag, deps):
    script = ScriptedModel().play(
        load(), search("dragon eggs"), cite(), answer("I cannot find it."), answer("Hello!")
    )
    agent = agent_for(script, make_rag())
    first = await agent.run("Where are dragon eggs kept?", deps=deps)
    await agent.run("Hi", deps=deps, message_history=first.all_messages())
    assert len(script.seen) == 5 and redirects(script) == []


async def test_one_policy_decides_for_every_evidence_capability(
    make_rag, corpus, lent_client, deps
):
    notes = NotesCapability(db_path=str(corpus.db_path), config=corpus.config, rag=lent_client)
    script = ScriptedModel().play(
        load("haiku-rag"),
        load("notes"),
        search("lantern otters"),
        search("copperline bridge", tool="notes_search"),
        answer("Both."),
        cite_top(1, search_tool="notes_search", tool="notes_cite"),
        answer("Both."),
    )
    await agent_for(script, make_rag(), notes).run("Otters and bridges?", deps=deps)
    assert redirects(script) == [redirect_message(["notes_cite", "rag_cite"])]
    assert violations(deps) == [] and set(deps.state) == {"rag", "notes", "citation_policy"}


def test_a_second_policy_is_rejected():
    with pytest.raises(UserError, match="haiku-rag-citation-policy"):
        Agent("test", capabilities=[create_capability(), create_capability()])


async def test_the_policy_state_is_published_before_the_run(make_rag, deps):
    seen_state: list[dict] = []

    def look(request: SeenRequest) -> ModelResponse:
        seen_state.append(dict(deps.state))
        return answer("Hello!")

    await agent_for(ScriptedModel().play(look), make_rag()).run("Hi", deps=deps)
    assert seen_state[0]["citation_policy"] == {"violations": []}


class Reply(BaseModel):
    text: str


async def test_a_structured_answer_counts_as_ending_the_question(make_rag, deps):
    def final(request: SeenRequest) -> ModelResponse:
        return calls(ToolCallPart("final_result", {"text": "Eels."}))

    script = ScriptedModel().play(load(), search("lantern otters"), final, cite_top(1), final)
    result = await agent_for(script, make_rag(), output_type=Reply).run(
        "What do otters eat?", deps=deps
    )
    assert result.output == Reply(text="Eels.")
    assert len(redirects(script)) == 1 and status(deps) == "grounded"


async def test_an_early_ending_beside_tool_calls_is_caught_after_the_run(make_rag, deps):
    both = calls(
        ToolCallPart("final_result", {"text": "Eels."}),
        ToolCallPart("rag_search", {"query": "more otters"}),
    )
    script = ScriptedModel().play(load(), search("lantern otters"), both)
    agent = agent_for(script, make_rag(), output_type=Reply, end_strategy="early")
    await agent.run("What do otters eat?", deps=deps)
    assert redirects(script) == [] and violations(deps) == [0]


async def test_without_a_state_dict_nothing_is_recorded_and_the_run_completes(make_rag):
    script = ScriptedModel().play(
        load(), search("lantern otters"), answer("Eels."), answer("Eels.")
    )
    result = await agent_for(script, make_rag()).run("What do otters eat?", deps=None)
    assert result.output == "Eels." and len(redirects(script)) == 1
