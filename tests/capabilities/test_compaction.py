"""EvidenceCompactionCapability: what later requests carry of earlier questions' evidence."""

from __future__ import annotations

import inspect

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    BinaryContent,
    LoadCapabilityReturnPart,
    ModelRequest,
    ModelResponse,
    ToolReturnPart,
    UserPromptPart,
)

from capabilities.conftest import PICTURE_REF, Deps, user_image
from capabilities.scripting import (
    ScriptedModel,
    SeenRequest,
    answer,
    chunk_ids_in,
    cite,
    cite_top,
    load,
    search,
)
from haiku.rag.capabilities.compaction import (
    CAPSULE_HEADER,
    RECEIPT,
    build_capsule,
    create_capability,
)
from haiku.rag.capabilities.evidence import DiscoveredEvidence
from haiku.rag.capabilities.formatting import quoted
from haiku.rag.capabilities.ledger import CapabilityEvidenceRecord, EvidenceOccurrence
from haiku.rag.capabilities.pictures import RETRIEVED_IMAGE_TAG
from haiku.rag.capabilities.rag import RAGState


def rag_state(deps: Deps) -> RAGState:
    return RAGState.model_validate(deps.state["rag"])


def agent_for(script: ScriptedModel, rag, *, compact: bool = True) -> Agent[Deps, str]:
    capabilities = [rag, create_capability()] if compact else [rag]
    return Agent(script.model, deps_type=Deps, capabilities=capabilities)


class Conversation:
    """Runs questions one after the other, carrying history and state like a host does."""

    def __init__(self, agent: Agent[Deps, str], script: ScriptedModel, deps: Deps):
        self.agent, self.script, self.deps = agent, script, deps
        self.history: list = []
        self.first_request_of: list[int] = []  # index into script.seen per question

    async def ask(self, prompt, *steps) -> None:
        self.script.play(*steps)
        self.first_request_of.append(len(self.script.seen))
        result = await self.agent.run(prompt, deps=self.deps, message_history=self.history)
        self.history = result.all_messages()

    def first_request(self, question: int) -> SeenRequest:
        return self.script.seen[self.first_request_of[question]]


def capsule_of(request: SeenRequest) -> str:
    capsules = [
        str(p.content)
        for p in request.returns("rag_search")
        if str(p.content).startswith(CAPSULE_HEADER)
    ]
    assert len(capsules) == 1, "exactly one earlier return carries the capsule"
    return capsules[0]


async def otter_then_bridge(make_rag, deps, *, compact: bool = True) -> Conversation:
    script = ScriptedModel()
    talk = Conversation(agent_for(script, make_rag(), compact=compact), script, deps)
    await talk.ask(
        "What do lantern otters eat?",
        load(),
        search("lantern otter diet"),
        cite_top(1),
        answer("Eels."),
    )
    await talk.ask(
        "How often are the cables painted?",
        search("copperline cables repaint"),
        cite_top(1),
        answer("Seven years."),
    )
    return talk


async def test_earlier_evidence_is_replaced_by_what_was_cited(make_rag, deps):
    talk = await otter_then_bridge(make_rag, deps)
    state = rag_state(deps)
    otter = next(c for c in state.citation_index.values() if c.document_uri == "notes://otters")
    capsule = capsule_of(talk.first_request(1))
    assert capsule.startswith(CAPSULE_HEADER + "\n\n[Cited evidence group 1]\n\n")
    assert (
        f'[{otter.chunk_id}] Source: "Field Guide to Lantern Otters" (document {otter.document_id})\n'
        f"{quoted(otter.content)}"
        in capsule
    )


async def test_cited_text_is_kept_in_full(make_rag, deps):
    talk = await otter_then_bridge(make_rag, deps)
    otter = next(
        c for c in rag_state(deps).citation_index.values() if c.document_uri == "notes://otters"
    )
    assert len(otter.content) > 300  # the whole expanded passage, not a snippet
    assert quoted(otter.content) in capsule_of(talk.first_request(1))


async def test_uncited_earlier_evidence_becomes_a_receipt(make_rag, deps):
    script = ScriptedModel()
    talk = Conversation(agent_for(script, make_rag()), script, deps)
    await talk.ask(
        "Tea and cheese?",
        load(),
        search("frost tea harvest"),
        search("moss cheese limestone caves"),
        cite_top(1),
        answer(),
    )
    await talk.ask("Thanks.", answer("You're welcome."))
    returns = talk.first_request(1).returns("rag_search")
    assert returns[0].content == RECEIPT
    assert str(returns[1].content).startswith(CAPSULE_HEADER)
    text = talk.first_request(1).text()
    assert "Pickers harvest frost tea" not in text  # the uncited search is gone
    assert "Wheels age for fourteen months" in text  # the cited one is kept


async def test_an_earlier_question_that_cited_nothing_leaves_only_receipts(make_rag, deps):
    script = ScriptedModel()
    talk = Conversation(agent_for(script, make_rag()), script, deps)
    await talk.ask("Tea?", load(), search("frost tea"), cite(), answer("Not sure."))
    await talk.ask("Thanks.", answer("You're welcome."))
    assert [p.content for p in talk.first_request(1).returns("rag_search")] == [RECEIPT]


async def test_the_capsule_groups_by_the_newest_question_that_cited_each_chunk(make_rag, deps):
    talk = await otter_then_bridge(make_rag, deps)
    state = rag_state(deps)
    otter_id = next(
        c.chunk_id for c in state.citation_index.values() if c.document_uri == "notes://otters"
    )
    bridge_id = next(
        c.chunk_id for c in state.citation_index.values() if c.document_uri == "notes://bridges"
    )
    await talk.ask("Remind me what otters eat.", cite(otter_id), answer("Eels."))
    await talk.ask("And?", answer("That is all."))
    capsule = capsule_of(talk.first_request(3))
    positions = [
        capsule.index("[Cited evidence group 1]"),
        capsule.index(f"[{otter_id}] Source:"),  # cited again by the third question: newest group
        capsule.index("[Cited evidence group 2]"),
        capsule.index(f"[{bridge_id}] Source:"),
    ]
    assert positions == sorted(positions)
    assert capsule.count(f"[{otter_id}] Source:") == 1


async def test_cited_evidence_stays_citable_by_the_same_chunk_ids(make_rag, deps):
    talk = await otter_then_bridge(make_rag, deps)
    otter_id = next(
        c.chunk_id
        for c in rag_state(deps).citation_index.values()
        if c.document_uri == "notes://otters"
    )
    await talk.ask("Remind me what otters eat.", cite(otter_id), answer("Eels."))
    assert otter_id in capsule_of(talk.first_request(2))
    assert talk.script.seen[-1].last_return("rag_cite").content == "Registered 1 citation(s)."
    state = rag_state(deps)
    assert state.citations == [otter_id] and state.citation_index[otter_id].index == 1


async def test_the_current_question_is_sent_as_it_is(make_rag, deps):
    talk = await otter_then_bridge(make_rag, deps)
    after_search = talk.script.seen[talk.first_request_of[1] + 1]
    current = after_search.last_return("rag_search")
    assert chunk_ids_in(str(current.content))  # full results, not a receipt or capsule
    assert "How often are the cables painted?" in after_search.user_texts()


async def test_the_stored_history_is_never_rewritten(make_rag, deps):
    talk = await otter_then_bridge(make_rag, deps)
    stored = [
        p
        for m in talk.history
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart) and p.tool_name == "rag_search"
    ]
    assert len(stored) == 2 and all(chunk_ids_in(str(p.content)) for p in stored)


async def test_without_compaction_the_transcript_reaches_the_model_untouched(make_rag, deps):
    talk = await otter_then_bridge(make_rag, deps, compact=False)
    seen = talk.script.seen[-1]
    stored = [
        p.content
        for m in talk.history[: len(seen.messages)]
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]
    assert [p.content for p in seen.request_parts() if isinstance(p, ToolReturnPart)] == stored
    # and so every question's search results add to every later request
    assert len(talk.first_request(1).text()) > len(
        talk.script.seen[talk.first_request_of[1] - 1].text()
    )


async def test_framework_parts_and_call_return_pairs_are_kept(make_rag, deps):
    talk = await otter_then_bridge(make_rag, deps)
    request = talk.first_request(1)
    calls = [
        p.tool_call_id
        for m in request.messages
        if isinstance(m, ModelResponse)
        for p in m.tool_calls
    ]
    returns = [p.tool_call_id for p in request.request_parts() if isinstance(p, ToolReturnPart)]
    assert calls and sorted(calls) == sorted(returns)
    assert any(isinstance(p, LoadCapabilityReturnPart) for p in request.request_parts())
    assert "# RAG" in request.text()  # the loaded capability's instructions are still there
    assert "Registered 1 citation(s)." in [p.content for p in request.returns("rag_cite")]


async def test_retained_evidence_grows_with_the_conversation(make_rag, deps):
    talk = await otter_then_bridge(make_rag, deps)
    await talk.ask(
        "And the tea?", search("frost tea terraces climate"), cite_top(1), answer("Frost.")
    )
    await talk.ask("Thanks.", answer("Welcome."))
    assert len(capsule_of(talk.first_request(3))) > len(capsule_of(talk.first_request(1)))


async def test_earlier_evidence_without_the_carried_state_is_an_error(make_rag, deps):
    talk = await otter_then_bridge(make_rag, deps)
    talk.script.play(answer())
    with pytest.raises(RuntimeError, match="no state for it"):
        await talk.agent.run("And now?", deps=Deps(), message_history=talk.history)


def test_there_is_nothing_to_configure_and_one_per_agent():
    assert inspect.signature(create_capability).parameters == {}
    assert create_capability().id == "haiku-rag-evidence-compaction"
    with pytest.raises(UserError, match="haiku-rag-evidence-compaction"):
        Agent("test", capabilities=[create_capability(), create_capability()])


async def test_a_cited_chunk_without_its_citation_is_an_error(make_rag):
    record = CapabilityEvidenceRecord(
        occurrences={
            "c" * 32: EvidenceOccurrence(
                capability="rag", chunk_id="c" * 32, cited_in_questions=[0]
            )
        }
    )
    rag = make_rag()
    lost = DiscoveredEvidence(
        capability=rag,
        namespace="rag",
        record=record,
        citations={},
        tool_names=frozenset({"rag_search"}),
        cite_tool="rag_cite",
        cite_available=True,
        state_carried=True,
    )
    with pytest.raises(RuntimeError, match="citation is missing"):
        await build_capsule([lost], boundary=6)


async def test_cited_pictures_are_attached_again_and_earlier_result_images_go(
    make_rag, deps, picture_hits
):
    script = ScriptedModel()
    talk = Conversation(agent_for(script, make_rag(vision=True)), script, deps)
    quote = f"My notes mention {RETRIEVED_IMAGE_TAG} literally."
    await talk.ask(
        [quote, "What does this figure show?", user_image()],
        load(),
        search("narwhal pipeline throughput figure"),
        cite_top(1),
        answer("Throughput."),
    )
    await talk.ask("Thanks.", answer("Welcome."))
    (cited,) = rag_state(deps).citation_index
    first, later = talk.script.seen[2], talk.first_request(1)
    assert tagged_images(first) == 1  # the search result's picture, as the question saw it
    earlier_prompts = [p for p in later.request_parts() if isinstance(p, UserPromptPart)]
    contents = [
        item for p in earlier_prompts if not isinstance(p.content, str) for item in p.content
    ]
    assert quote in contents and user_image() in contents  # the user's words and image stay
    labels = [
        item
        for item in contents
        if isinstance(item, str) and RETRIEVED_IMAGE_TAG in item and item != quote
    ]
    assert labels == [
        f"Page image retrieved from the knowledge base for cited evidence [{cited}] ({PICTURE_REF}). "
        f"Not provided by the user. {RETRIEVED_IMAGE_TAG}"
    ]
    assert isinstance(contents[contents.index(labels[0]) + 1], BinaryContent)


def tagged_images(request: SeenRequest) -> int:
    count = 0
    for part in request.request_parts():
        if isinstance(part, UserPromptPart) and not isinstance(part.content, str):
            items = list(part.content)
            count += sum(
                1
                for a, b in zip(items, items[1:], strict=False)
                if isinstance(a, str) and RETRIEVED_IMAGE_TAG in a and isinstance(b, BinaryContent)
            )
    return count
