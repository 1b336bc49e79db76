"""RAGCapability over a real store: deferred loading, search, citations, state and resources."""

from __future__ import annotations

import re

import pytest
from pydantic_ai import Agent

from capabilities.conftest import Deps
from capabilities.scripting import (
    ScriptedModel,
    answer,
    call,
    calls,
    chunk_ids_in,
    cite,
    cite_top,
    load,
    search,
)
from haiku.rag.capabilities import base
from haiku.rag.capabilities.ledger import citation_status
from haiku.rag.capabilities.rag import RAG_DESCRIPTION, RAGState, create_capability
from haiku.rag.client import HaikuRAG
from haiku.rag.config import DB_FILE_NAME


def rag_state(deps: Deps) -> RAGState:
    return RAGState.model_validate(deps.state["rag"])


def agent_for(script: ScriptedModel, *capabilities) -> Agent[Deps, str]:
    return Agent(script.model, deps_type=Deps, capabilities=list(capabilities))


def other_tool() -> str:
    """A tool of the host, outside any capability."""
    return "done"


def call_other():
    return calls(call("other_tool"))


# --- deferred loading ---------------------------------------------------------------------


def test_the_capability_is_deferred_by_default(make_rag):
    rag = make_rag()
    assert rag.defer_loading is True
    assert rag.id == "haiku-rag"
    assert rag.description == RAG_DESCRIPTION


async def test_the_first_request_sees_only_the_description_and_load_capability(make_rag, deps):
    script = ScriptedModel().play(answer("Hello."))
    await agent_for(script, make_rag()).run("Hi", deps=deps)
    first = script.seen[0]
    assert first.tool_names == ["load_capability"]
    assert RAG_DESCRIPTION in first.instructions
    assert "# RAG" not in first.text()


async def test_instructions_and_tools_arrive_when_the_model_loads_the_capability(make_rag, deps):
    script = ScriptedModel().play(load(), answer())
    await agent_for(script, make_rag()).run("What do lantern otters eat?", deps=deps)
    loaded = script.seen[1]
    assert {"rag_search", "rag_cite"} <= set(loaded.tool_names)
    assert "# RAG" in loaded.text() and "rag_search" in loaded.text()


async def test_an_eager_capability_shows_its_tools_and_instructions_at_once(make_rag, deps):
    script = ScriptedModel().play(answer())
    await agent_for(script, make_rag(defer_loading=False)).run("Hi", deps=deps)
    assert set(script.seen[0].tool_names) == {"rag_search", "rag_cite"}
    assert "# RAG" in script.seen[0].instructions


async def test_the_domain_preamble_leads_the_instructions(corpus, lent_client, deps):
    config = corpus.config.model_copy(deep=True)
    config.prompts.domain_preamble = "You answer questions about a fictional valley."
    rag = create_capability(corpus.db_path, config, rag=lent_client, defer_loading=False)
    script = ScriptedModel().play(answer())
    await agent_for(script, rag).run("Hi", deps=deps)
    assert "You answer questions about a fictional valley.\n\n# RAG" in script.seen[0].instructions


# --- search -------------------------------------------------------------------------------


async def test_search_results_are_shown_with_id_rank_source_type_and_content(make_rag, deps):
    script = ScriptedModel().play(
        load(), search("lantern otter glass eels metres", limit=5), answer()
    )
    await agent_for(script, make_rag()).run("What do lantern otters eat?", deps=deps)
    text = str(script.seen[2].last_return("rag_search").content)
    blocks = text.split("\n\n---\n\n")
    total = len(blocks)
    assert total >= 2
    for rank, block in enumerate(blocks, start=1):
        lines = block.split("\n")
        assert re.fullmatch(rf"\[[0-9a-f]{{32}}\] \[rank {rank} of {total}\]", lines[0])
        assert lines[1].startswith('Source: "')
        assert lines[2].startswith("Type: ")
        assert lines[3] == "Content:"
    assert blocks[0].split("\n")[1].startswith('Source: "Field Guide to Lantern Otters" > ')
    assert "two kilograms of glass eels" in blocks[0]
    assert "score" not in text.lower()


async def test_the_type_is_the_kind_of_the_matched_passage_not_of_its_context(make_rag, deps):
    script = ScriptedModel().play(
        load(), search("albatross consignment harbour Nordvik", limit=1), answer()
    )
    await agent_for(script, make_rag()).run("Where did the consignment arrive?", deps=deps)
    (result,) = rag_state(deps).searches["albatross consignment harbour Nordvik"]
    assert "table" in result.labels  # expansion swept the report's table into the context
    assert "Type: text\n" in str(script.seen[2].last_return("rag_search").content)


async def test_a_search_that_finds_nothing_says_so(make_rag, deps):
    deps.state["rag"] = RAGState(document_filter="uri = 'notes://nowhere'").model_dump(mode="json")
    script = ScriptedModel().play(load(), search("lantern otters"), answer())
    await agent_for(script, make_rag()).run("What do lantern otters eat?", deps=deps)
    assert script.seen[2].last_return("rag_search").content == "No results found."
    assert rag_state(deps).evidence.latest_evidence_epoch > 0  # an empty search is still evidence


async def test_the_document_filter_restricts_searches(make_rag, deps):
    deps.state["rag"] = RAGState(document_filter="uri = 'notes://cheese'").model_dump(mode="json")
    script = ScriptedModel().play(load(), search("lantern otters"), answer())
    await agent_for(script, make_rag()).run("What do lantern otters eat?", deps=deps)
    results = rag_state(deps).searches["lantern otters"]
    assert results and {r.document_uri for r in results} == {"notes://cheese"}


async def test_repeated_searches_merge_by_chunk_id(make_rag, deps):
    script = ScriptedModel().play(
        load(), search("frost tea harvest", limit=4), search("frost tea harvest", limit=1), answer()
    )
    await agent_for(script, make_rag()).run("When is frost tea picked?", deps=deps)
    first = chunk_ids_in(str(script.seen[2].last_return("rag_search").content))
    merged = [r.chunk_id for r in rag_state(deps).searches["frost tea harvest"]]
    assert len(first) >= 2 and merged == first


async def test_searches_past_the_limit_fail_but_the_tool_stays_declared(corpus, lent_client, deps):
    config = corpus.config.model_copy(deep=True)
    config.qa.max_searches = 2
    rag = create_capability(corpus.db_path, config, rag=lent_client)
    script = ScriptedModel().play(
        load(), search("otters"), search("bridges"), search("tea"), answer()
    )
    await agent_for(script, rag).run("Tell me everything.", deps=deps)
    failed = script.seen[4].last_return("rag_search")
    assert failed.outcome == "failed"
    assert (
        failed.content
        == "Search limit reached. Answer the question using the results you already have."
    )
    assert "rag_search" in script.seen[4].tool_names
    assert set(rag_state(deps).searches) == {"otters", "bridges"}


async def test_a_spent_search_budget_is_named_on_every_following_request(corpus, lent_client, deps):
    config = corpus.config.model_copy(deep=True)
    config.qa.max_searches = 1
    rag = create_capability(corpus.db_path, config, rag=lent_client)
    script = ScriptedModel().play(load(), search("otters"), call_other(), cite_top(1), answer())
    agent = agent_for(script, rag)
    agent.tool_plain(other_tool)
    await agent.run("What do lantern otters eat?", deps=deps)
    notice = (
        "The rag capability has spent its budget for rag_search; further calls fail. "
        "Answer from the evidence already gathered and call rag_cite."
    )
    assert notice not in script.seen[1].instructions  # before the search that spends it
    assert all(notice in seen.instructions for seen in script.seen[2:])


# --- cite ---------------------------------------------------------------------------------


async def test_a_citation_carries_pages_boxes_and_the_passage(make_rag, deps, corpus):
    script = ScriptedModel().play(
        load(), search("albatross consignment harbour Nordvik"), cite_top(1), answer()
    )
    await agent_for(script, make_rag()).run(
        "Where did the albatross consignment arrive?", deps=deps
    )
    state = rag_state(deps)
    assert len(state.citations) == 1
    citation = state.citation_index[state.citations[0]]
    assert citation.index == 1
    assert citation.document_title == "Quarterly Report on Zephyrine Logistics"
    assert citation.document_uri == corpus.report.path.resolve().as_uri()
    assert 1 in citation.page_numbers
    block = corpus.report.block("p_intro")
    assert any(
        b.page == block.page and abs(b.y0 - block.lines[0].rect[1]) < 2 for b in citation.boxes
    )
    assert "albatross consignment" in citation.content
    assert citation.doc_item_refs
    assert script.seen[3].last_return("rag_cite").content == "Registered 1 citation(s)."


async def test_an_empty_citation_declares_the_answer_ungrounded(make_rag, deps):
    script = ScriptedModel().play(
        load(), search("dragon eggs"), cite(), answer("I cannot find it.")
    )
    await agent_for(script, make_rag()).run("Where are dragon eggs kept?", deps=deps)
    reply = script.seen[3].last_return("rag_cite").content
    assert reply == "Recorded: this answer cites no knowledge-base evidence."
    state = rag_state(deps)
    assert state.citations == []
    assert citation_status([state.evidence], question=0) == "ungrounded"


async def test_an_answer_that_declared_nothing_is_missing(make_rag, deps):
    script = ScriptedModel().play(load(), search("lantern otters"), answer())
    await agent_for(script, make_rag()).run("What do lantern otters eat?", deps=deps)
    assert citation_status([rag_state(deps).evidence], question=0) == "missing"


async def test_bracketed_and_mistyped_chunk_ids_are_repaired(make_rag, deps):
    def cite_badly(request):
        first, second = chunk_ids_in(str(request.last_return("rag_search").content))[:2]
        typo = second[:10] + ("0" if second[10] != "0" else "1") + second[11:]
        return cite(f"[{first}]", typo)

    script = ScriptedModel().play(
        load(), search("lantern otters copperline bridge", limit=5), cite_badly, answer()
    )
    await agent_for(script, make_rag()).run("Who built the bridge?", deps=deps)
    ids = chunk_ids_in(str(script.seen[2].last_return("rag_search").content))
    assert rag_state(deps).citations == ids[:2]


def far_from(chunk_id: str) -> str:
    """The id with its last 12 characters replaced: exactly 62.5% alike, below the 75% cutoff."""
    return chunk_id[:20] + "x" * 12


async def test_unresolvable_ids_are_reported_without_failing_the_resolvable_ones(make_rag, deps):
    def cite_one_good_one_distant(request):
        first = chunk_ids_in(str(request.last_return("rag_search").content))[0]
        return cite(first, far_from(first))

    script = ScriptedModel().play(
        load(), search("copperline bridge", limit=1), cite_one_good_one_distant, answer()
    )
    await agent_for(script, make_rag()).run("Who built the bridge?", deps=deps)
    first = chunk_ids_in(str(script.seen[2].last_return("rag_search").content))[0]
    reply = script.seen[3].last_return("rag_cite").content
    assert reply == (
        f"Registered 1 citation(s); not registered: [{far_from(first)}] "
        "(not in any result shown in this conversation)."
    )


async def test_nothing_resolvable_asks_the_model_to_copy_ids_verbatim(make_rag, deps):
    script = ScriptedModel().play(load(), search("copperline"), cite("not-an-id"), cite(), answer())
    await agent_for(script, make_rag()).run("Who built the bridge?", deps=deps)
    retried = script.seen[3].last_return("rag_cite")
    assert retried.outcome == "retried"
    assert "copy chunk_ids verbatim" in str(retried.content).lower()
    assert citation_status([rag_state(deps).evidence], question=0) == "ungrounded"


async def test_chunk_ids_the_model_never_retrieved_are_refused(make_rag, deps, lent_client):
    """A stored chunk the conversation was never shown is no evidence for the answer (issue 19)."""
    elsewhere = (await lent_client.search("moss cheese limestone caves", limit=1))[0]
    script = ScriptedModel().play(
        load(), search("lantern otters", limit=1), cite(elsewhere.chunk_id), answer()
    )
    await agent_for(script, make_rag()).run("How is moss cheese aged?", deps=deps)
    assert elsewhere.chunk_id not in rag_state(deps).citation_index
    retried = script.seen[3].last_return("rag_cite")
    assert retried.outcome == "retried" and elsewhere.chunk_id in str(retried.content)


async def test_the_citation_index_is_conversation_wide(make_rag, deps):
    agent = agent_for(
        script := ScriptedModel().play(
            load(),
            search("lantern otter diet"),
            cite_top(1),
            answer(),
            search("copperline cables repaint"),
            cite_top(1),
            answer(),
        ),
        make_rag(),
    )
    first = await agent.run("What do lantern otters eat?", deps=deps)
    otter_id = rag_state(deps).citations[0]
    second = await agent.run(
        "How often are the cables painted?", deps=deps, message_history=first.all_messages()
    )
    bridge_id = rag_state(deps).citations[0]
    script.play(cite(otter_id, bridge_id), answer())
    await agent.run("Compare them.", deps=deps, message_history=second.all_messages())
    state = rag_state(deps)
    assert state.citation_index[otter_id].index == 1
    assert state.citation_index[bridge_id].index == 2
    assert state.citations == [otter_id, bridge_id]


# --- state --------------------------------------------------------------------------------


async def test_state_lives_under_rag_in_the_host_state_dict(make_rag, deps):
    script = ScriptedModel().play(load(), search("kestrel ridge telescope"), cite_top(1), answer())
    await agent_for(script, make_rag()).run("How large is the telescope?", deps=deps)
    assert set(deps.state) == {"rag"}
    state = rag_state(deps)
    assert list(state.searches) == ["kestrel ridge telescope"]
    assert state.evidence.question == 0 and not state.evidence.in_progress


async def test_without_a_state_dict_the_capability_keeps_run_local_state(make_rag):
    script = ScriptedModel().play(
        load(), search("kestrel ridge telescope"), cite_top(1), answer("2.4 metres.")
    )
    result = await agent_for(script, make_rag()).run("How large is the telescope?", deps=None)
    assert result.output == "2.4 metres."
    assert script.seen[3].last_return("rag_cite").content == "Registered 1 citation(s)."


async def test_a_new_question_clears_searches_and_citations_and_keeps_the_rest(make_rag, deps):
    script = ScriptedModel().play(
        load(), search("moss cheese"), cite_top(1), answer(), answer("Hello.")
    )
    agent = agent_for(script, make_rag())
    deps.state["rag"] = RAGState(document_filter="uri = 'notes://cheese'").model_dump(mode="json")
    first = await agent.run("How is moss cheese made?", deps=deps)
    cited = rag_state(deps).citations[0]
    await agent.run("Thanks!", deps=deps, message_history=first.all_messages())
    state = rag_state(deps)
    assert state.searches == {} and state.citations == []
    assert cited in state.citation_index
    assert state.document_filter == "uri = 'notes://cheese'"
    assert state.evidence.question == len(first.all_messages())


# --- the client -----------------------------------------------------------------------------


class RecordingClient(HaikuRAG):
    opened: list[RecordingClient] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.closed = False
        RecordingClient.opened.append(self)

    def close(self) -> None:
        self.closed = True
        super().close()


@pytest.fixture
def recording_client(monkeypatch):
    RecordingClient.opened = []
    monkeypatch.setattr(base, "HaikuRAG", RecordingClient)
    return RecordingClient.opened


async def test_an_owned_client_opens_on_first_tool_use_and_closes_at_run_end(
    corpus, deps, recording_client
):
    rag = create_capability(corpus.db_path, corpus.config)
    await agent_for(ScriptedModel().play(load(), answer()), rag).run("Hi", deps=deps)
    assert recording_client == []  # loaded, but no tool needed the store
    script = ScriptedModel().play(load(), search("otters"), search("tea"), answer())
    await agent_for(script, rag).run("Otters and tea?", deps=Deps())
    assert len(recording_client) == 1
    assert recording_client[0].is_read_only and recording_client[0].closed


async def test_an_owned_client_closes_when_the_run_fails(corpus, deps, recording_client):
    def fail(_request):
        raise RuntimeError("the model broke")

    script = ScriptedModel().play(load(), search("otters"), fail)
    with pytest.raises(RuntimeError, match="the model broke"):
        await agent_for(script, create_capability(corpus.db_path, corpus.config)).run(
            "Otters?", deps=deps
        )
    assert len(recording_client) == 1 and recording_client[0].closed


async def test_a_lent_client_is_reused_and_never_closed(
    make_rag, deps, lent_client, recording_client
):
    script = ScriptedModel().play(load(), search("otters"), answer())
    await agent_for(script, make_rag()).run("Otters?", deps=deps)
    assert recording_client == []
    assert await lent_client.search("otters", limit=1)  # still open


# --- where the store is -------------------------------------------------------------------


def test_db_path_argument_comes_first(monkeypatch, tmp_path, corpus):
    monkeypatch.setenv("HAIKU_RAG_DB", str(tmp_path / "env.lancedb"))
    rag = create_capability(tmp_path / "arg.lancedb", corpus.config)
    assert rag.db_path == str(tmp_path / "arg.lancedb")


def test_haiku_rag_db_comes_second(monkeypatch, tmp_path, corpus):
    monkeypatch.setenv("HAIKU_RAG_DB", str(tmp_path / "env.lancedb"))
    assert create_capability(config=corpus.config).db_path == str(tmp_path / "env.lancedb")


def test_the_data_dir_comes_last(monkeypatch, corpus):
    monkeypatch.delenv("HAIKU_RAG_DB", raising=False)
    rag = create_capability(config=corpus.config)
    assert rag.db_path == str(corpus.config.storage.data_dir / DB_FILE_NAME)


def test_two_rag_capabilities_in_one_agent_are_rejected(make_rag):
    from pydantic_ai.exceptions import UserError

    with pytest.raises(UserError, match="haiku-rag"):
        Agent("test", capabilities=[make_rag(), make_rag()])


def test_vision_defaults_to_the_configured_model(corpus):
    config = corpus.config.model_copy(deep=True)
    assert create_capability(corpus.db_path, config).vision is False
    config.qa.model.vision = True
    assert create_capability(corpus.db_path, config).vision is True
    assert create_capability(corpus.db_path, config, vision=False).vision is False
