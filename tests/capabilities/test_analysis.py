"""``AnalysisCapability``: the analysis page (``shared/spec/change-analysis-capability.txt``)
sentence by sentence, with real code over the session corpus. The list of sentences and the
tests beside them is in ``docs/capabilities.md`` (section *Analysis*)."""

from __future__ import annotations

import os
import signal

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
from haiku.rag.capabilities.analysis import (
    ANALYSIS_CAPABILITY_ID,
    AnalysisCapability,
    create_capability,
)
from haiku.rag.capabilities.compaction import create_capability as compaction
from haiku.rag.capabilities.policy import create_capability as citation_policy
from haiku.rag.client import HaikuRAG
from haiku.rag.sandbox.runtime import RESTARTED, Sandbox

ANALYSIS_TOOLS = {"analysis_search", "analysis_execute_code", "analysis_cite"}
COUNT_DOCUMENTS = "print(len(await list_documents()))"


@pytest.fixture
def make_analysis(corpus, lent_client):
    def make(**kwargs) -> AnalysisCapability:
        kwargs.setdefault("rag", lent_client)
        kwargs.setdefault("config", corpus.config)
        return create_capability(corpus.db_path, **kwargs)

    return make


def load_analysis():
    return load(ANALYSIS_CAPABILITY_ID)


def execute(code: str):
    return calls(call("analysis_execute_code", code=code))


def asearch(query: str, limit: int | None = None):
    return search(query, limit, tool="analysis_search")


def host_tool() -> str:
    """A tool of the host, outside any capability."""
    return "done"


def agent_for(script: ScriptedModel, *capabilities) -> Agent[Deps, str]:
    agent = Agent(script.model, deps_type=Deps, capabilities=list(capabilities))
    agent.tool_plain(host_tool)
    return agent


def analysis_tools(names: list[str]) -> set[str]:
    return {n for n in names if n.startswith("analysis_")}


# --- deferred loading ---------------------------------------------------------------------


async def test_it_is_deferred_and_its_instructions_and_tools_arrive_on_load(make_analysis, deps):
    capability = make_analysis()
    assert capability.defer_loading is True
    assert capability.id == "haiku-rag-analysis"
    script = ScriptedModel().play(load_analysis(), execute(COUNT_DOCUMENTS), answer())
    await agent_for(script, capability).run("How many documents?", deps=deps)
    first, after_load = script.seen[0], script.seen[1]
    assert analysis_tools(first.tool_names) == set()
    assert "load_capability" in first.tool_names
    assert "sandboxed Python" in first.text()  # the description in the catalog
    assert "# Analysis" not in first.text()
    assert analysis_tools(after_load.tool_names) == ANALYSIS_TOOLS
    assert "# Analysis" in after_load.text()
    assert "/documents/{document_id}/" in after_load.text()


# --- request limit and budgets ------------------------------------------------------------


async def test_the_default_request_limit_is_30_and_can_be_changed_or_disabled(make_analysis):
    assert make_analysis().request_limit == 30
    assert make_analysis(request_limit=3).request_limit == 3
    assert make_analysis(request_limit=None).request_limit is None


async def test_without_a_request_limit_tools_are_never_withdrawn(make_analysis, deps):
    script = ScriptedModel().play(load_analysis(), *[execute("1")] * 35, answer())
    await agent_for(script, make_analysis(request_limit=None)).run(
        "Loop", deps=deps, usage_limits=None
    )
    assert all(analysis_tools(s.tool_names) == ANALYSIS_TOOLS for s in script.seen[1:])


async def test_at_the_limit_search_and_execute_go_and_cite_stays_for_two_requests(
    make_analysis, deps
):
    script = ScriptedModel().play(
        load_analysis(),
        asearch("otters"),  # request 1 of 2
        execute(COUNT_DOCUMENTS),  # request 2 of 2
        cite_top(1, search_tool="analysis_search", tool="analysis_cite"),  # grace 1
        calls(call("analysis_cite", chunk_ids=[])),  # grace 2
        answer(),
    )
    await agent_for(script, make_analysis(request_limit=2)).run("Otters?", deps=deps)
    tools = [analysis_tools(s.tool_names) for s in script.seen]
    assert tools[1] == tools[2] == ANALYSIS_TOOLS
    assert tools[3] == tools[4] == {"analysis_cite"}
    assert tools[5] == set()
    assert "host_tool" in script.seen[5].tool_names  # other tools remain
    notice = "The analysis capability has reached its request limit. Only analysis_cite remains"
    assert notice in script.seen[3].instructions
    assert "analysis_execute_code" not in script.seen[3].instructions.split(notice)[1]


async def test_requests_spent_on_other_capabilities_do_not_shrink_the_window(
    make_analysis, make_rag, deps
):
    script = ScriptedModel().play(
        load_analysis(),
        execute(COUNT_DOCUMENTS),  # request 1 of 1
        load(),  # at the limit; the previous response used analysis: grace 1
        search("otters"),  # RAG's turn, not counted
        search("tea"),  # RAG's turn, not counted
        calls(call("analysis_cite", chunk_ids=[])),  # not counted: cite is still there
        calls(call("host_tool")),  # the previous response cited: grace 2
        answer(),
    )
    await agent_for(script, make_rag(), make_analysis(request_limit=1)).run("Q", deps=deps)
    assert [analysis_tools(s.tool_names) for s in script.seen[2:7]] == [{"analysis_cite"}] * 5
    assert analysis_tools(script.seen[7].tool_names) == set()
    assert "rag_search" in script.seen[7].tool_names


async def test_the_budget_resets_for_every_run(make_analysis, deps):
    script = ScriptedModel().play(
        load_analysis(), execute("1"), answer(), execute("2"), answer()
    )
    agent = agent_for(script, make_analysis(request_limit=1))
    first = await agent.run("One", deps=deps)
    await agent.run("Two", deps=deps, message_history=first.all_messages())
    assert "analysis_execute_code" in script.seen[3].tool_names
    assert str(script.seen[4].last_return("analysis_execute_code").content).strip() == "2"


async def test_a_spent_search_budget_keeps_failing_and_is_named_on_every_later_request(
    make_analysis, corpus, deps
):
    config = corpus.config.model_copy(deep=True)
    config.qa.max_searches = 1
    script = ScriptedModel().play(
        load_analysis(),
        asearch("otters"),
        asearch("tea"),  # over the budget: fails, the tool stays
        execute(COUNT_DOCUMENTS),  # execute outlives a spent search budget
        answer(),
    )
    await agent_for(script, make_analysis(config=config)).run("Q", deps=deps)
    failed = script.seen[3].last_return("analysis_search")
    assert failed.outcome == "failed" and "Search limit reached" in str(failed.content)
    notice = "spent its budget for analysis_search; further calls fail"
    for seen in script.seen[3:]:
        assert notice in seen.instructions
        assert "analysis_search" in seen.tool_names
    assert "Gather more evidence with analysis_execute_code" in script.seen[3].instructions
    assert str(script.seen[4].last_return("analysis_execute_code").content).strip() == "6"


async def test_a_spent_execution_budget_keeps_failing_and_is_named_on_every_later_request(
    make_analysis, corpus, deps
):
    config = corpus.config.model_copy(deep=True)
    config.analysis.max_executions = 1
    script = ScriptedModel().play(
        load_analysis(), execute("1"), execute("2"), execute("3"), answer()
    )
    await agent_for(script, make_analysis(config=config)).run("Q", deps=deps)
    for seen in script.seen[3:]:
        failed = seen.last_return("analysis_execute_code")
        assert failed.outcome == "failed" and "execution limit reached" in str(failed.content)
        assert "spent its budget for analysis_execute_code; further calls fail" in seen.instructions
        assert "analysis_execute_code" in seen.tool_names


async def test_searching_from_code_does_not_count_against_max_searches(
    make_analysis, corpus, deps
):
    config = corpus.config.model_copy(deep=True)
    config.qa.max_searches = 1
    code = "\n".join(f"r{i} = await search('otters', 2)" for i in range(4)) + "\nprint(len(r3))"
    script = ScriptedModel().play(load_analysis(), execute(code), asearch("tea"), answer())
    await agent_for(script, make_analysis(config=config)).run("Q", deps=deps)
    assert script.seen[2].last_return("analysis_execute_code").outcome == "success"
    assert script.seen[3].last_return("analysis_search").outcome == "success"


async def test_vision_defaults_to_the_analysis_model_then_the_qa_model(make_analysis, corpus):
    config = corpus.config.model_copy(deep=True)
    config.qa.model.vision = True
    assert make_analysis(config=config).vision is True
    config.analysis.model = config.qa.model.model_copy(update={"vision": False})
    assert make_analysis(config=config).vision is False
    assert make_analysis(config=config, vision=True).vision is True


# --- tools --------------------------------------------------------------------------------


async def test_search_returns_formatted_results(make_analysis, deps):
    script = ScriptedModel().play(load_analysis(), asearch("lantern otters glass eels"), answer())
    await agent_for(script, make_analysis()).run("Otters?", deps=deps)
    text = str(script.seen[2].last_return("analysis_search").content)
    assert chunk_ids_in(text)
    assert 'Source: "Field Guide to Lantern Otters"' in text


async def test_execute_code_runs_python_against_the_virtual_document_filesystem(
    make_analysis, lent_client, deps
):
    code = (
        "from pathlib import Path\n"
        "for d in Path('/documents').iterdir():\n"
        "    print(sorted(p.name for p in d.iterdir()))"
    )
    script = ScriptedModel().play(load_analysis(), execute(code), answer())
    await agent_for(script, make_analysis()).run("Files?", deps=deps)
    lines = str(script.seen[2].last_return("analysis_execute_code").content).splitlines()
    assert len(lines) == len(await lent_client.list_documents())
    assert set(lines) == {"['content.txt', 'items.jsonl', 'metadata.json', 'toc.json']"}


async def test_cite_registers_retrieved_and_filesystem_derived_chunk_ids(
    make_analysis, lent_client, deps
):
    code = (
        "import json\n"
        "for d in await list_documents():\n"
        "    for line in open('/documents/' + d['id'] + '/items.jsonl').readlines():\n"
        "        item = json.loads(line)\n"
        "        if 'two kilograms' in item['text']:\n"
        "            print(item['chunk_ids'][0])"
    )

    def cite_printed(request):
        (chunk_id,) = str(request.last_return("analysis_execute_code").content).split()
        return cite(chunk_id, tool="analysis_cite")

    script = ScriptedModel().play(
        load_analysis(),
        execute(code),
        cite_printed,
        asearch("kestrel ridge telescope"),
        cite_top(1, search_tool="analysis_search", tool="analysis_cite"),
        answer(),
    )
    await agent_for(script, make_analysis()).run("Otters and telescopes?", deps=deps)
    assert script.seen[3].last_return("analysis_cite").content == "Registered 1 citation(s)."
    assert script.seen[5].last_return("analysis_cite").content == "Registered 1 citation(s)."
    state = deps.state["analysis"]
    first, second = (state["citation_index"][c] for c in state["citations"])
    assert "two kilograms" in first["content"]
    assert (await lent_client.get_chunk(first["chunk_id"])).content == first["content"]
    assert "reflector" in second["content"]


async def test_a_failed_program_fails_the_tool_with_the_error_and_its_output(make_analysis, deps):
    script = ScriptedModel().play(
        load_analysis(), execute("print('partial')\n1 / 0"), answer()
    )
    await agent_for(script, make_analysis()).run("Q", deps=deps)
    failed = script.seen[2].last_return("analysis_execute_code")
    assert failed.outcome == "failed"
    assert "ZeroDivisionError" in str(failed.content)
    assert "Output: partial" in str(failed.content)
    assert deps.state["analysis"]["executions"][0]["success"] is False


async def test_a_program_without_output_says_so(make_analysis, deps):
    script = ScriptedModel().play(load_analysis(), execute("x = 1"), execute("x + 1"), answer())
    await agent_for(script, make_analysis()).run("Q", deps=deps)
    assert script.seen[2].last_return("analysis_execute_code").content == "No output."
    assert script.seen[3].last_return("analysis_execute_code").content == "2"  # variables persist


# --- compose with RAG, the policy and compaction --------------------------------------------


async def test_composes_with_rag_policy_and_compaction_through_one_ledger(
    make_analysis, make_rag, deps
):
    script = ScriptedModel().play(
        load(),
        load_analysis(),
        search("lantern otters"),
        execute(COUNT_DOCUMENTS),
        answer("Six documents."),  # undeclared: the one policy redirects once
        calls(call("analysis_cite", chunk_ids=[])),
        answer("Six documents."),
        answer("Next."),
    )
    agent = agent_for(script, make_rag(), make_analysis(), citation_policy(), compaction())
    first = await agent.run("How many documents, and otters?", deps=deps)
    redirects = [t for t in script.seen[5].user_texts() if "[haiku.rag/citation-redirect]" in t]
    assert len(redirects) == 1
    assert deps.state["citation_policy"]["violations"] == []
    assert deps.state["analysis"]["evidence"]["declaration"]["refs"] == []
    await agent.run("Thanks", deps=deps, message_history=first.all_messages())
    # Compaction replaced the earlier execution's output on the wire, not in the history.
    earlier = script.seen[-1].returns("analysis_execute_code")[0]
    assert "Evidence retrieved for an earlier question" in str(earlier.content)
    stored = [
        p for m in first.all_messages() for p in m.parts
        if getattr(p, "tool_name", None) == "analysis_execute_code" and hasattr(p, "outcome")
    ]
    assert str(stored[0].content).strip() == "6"


# --- state --------------------------------------------------------------------------------


async def test_state_lives_under_analysis_with_filter_log_searches_citations_and_evidence(
    make_analysis, deps
):
    script = ScriptedModel().play(
        load_analysis(),
        asearch("otters"),
        execute(COUNT_DOCUMENTS),
        cite_top(1, search_tool="analysis_search", tool="analysis_cite"),
        answer(),
    )
    await agent_for(script, make_analysis()).run("Q", deps=deps)
    state = deps.state["analysis"]
    assert set(state) >= {
        "document_filter", "executions", "searches", "citations", "citation_index", "evidence"
    }
    assert state["executions"] == [
        {"code": COUNT_DOCUMENTS, "stdout": "6\n", "stderr": "", "success": True}
    ]
    assert list(state["searches"]) == ["otters"]
    assert len(state["citations"]) == 1
    assert state["evidence"]["declaration"]["refs"][0]["capability"] == "analysis"


async def test_a_new_question_clears_searches_and_executions_and_keeps_the_rest(
    make_analysis, deps
):
    deps.state["analysis"] = {"document_filter": "title LIKE '%Otters%'"}
    script = ScriptedModel().play(
        load_analysis(),
        execute("print(await search('otters', 3))"),
        calls(call("analysis_cite", chunk_ids=[])),
        answer(),
        answer("Hello."),
    )
    agent = agent_for(script, make_analysis())
    first = await agent.run("Q1", deps=deps)
    before = deps.state["analysis"]
    assert before["executions"] and before["searches"]["_sandbox"]
    await agent.run("Q2", deps=deps, message_history=first.all_messages())
    after = deps.state["analysis"]
    assert after["executions"] == [] and after["searches"] == {} and after["citations"] == []
    assert after["document_filter"] == "title LIKE '%Otters%'"
    assert after["evidence"]["question"] > before["evidence"]["question"]


async def test_a_resumed_question_keeps_its_searches_and_executions(make_analysis, deps):
    from pydantic_ai.tools import DeferredToolRequests

    capability = make_analysis()
    script = ScriptedModel().play(
        load_analysis(),
        execute(COUNT_DOCUMENTS),
        calls(call("approve_me")),  # pauses the run
        answer("Six."),
    )
    agent = Agent(
        script.model, deps_type=Deps, capabilities=[capability],
        output_type=[str, DeferredToolRequests],
    )

    @agent.tool_plain(requires_approval=True)
    def approve_me() -> str:
        return "approved"

    paused = await agent.run("How many?", deps=deps)
    assert isinstance(paused.output, DeferredToolRequests)
    kept = deps.state["analysis"]
    assert kept["evidence"]["in_progress"] and kept["executions"]
    from pydantic_ai.tools import DeferredToolResults

    results = DeferredToolResults(approvals={paused.output.approvals[0].tool_call_id: True})
    await agent.run(
        deps=deps, message_history=paused.all_messages(), deferred_tool_results=results
    )
    resumed = deps.state["analysis"]
    assert resumed["executions"] == kept["executions"]
    assert resumed["evidence"]["question"] == kept["evidence"]["question"]


async def test_the_document_filter_scopes_files_search_and_listing(make_analysis, deps):
    deps.state["analysis"] = {"document_filter": "title LIKE '%Otters%' OR title LIKE '%Tea%'"}
    code = (
        "from pathlib import Path\n"
        "print(len(list(Path('/documents').iterdir())), len(await list_documents()))\n"
        "print(sorted({r['document_title'] for r in await search('bridge cables observatory', 10)}))"
    )
    script = ScriptedModel().play(load_analysis(), execute(code), answer())
    await agent_for(script, make_analysis()).run("Q", deps=deps)
    counts, titles = str(script.seen[2].last_return("analysis_execute_code").content).splitlines()
    assert counts == "2 2"
    assert set(eval(titles)) <= {"Field Guide to Lantern Otters", "Highland Frost Tea Cultivation"}


# --- resources ----------------------------------------------------------------------------


async def test_lancedb_and_the_sandbox_open_only_when_a_tool_needs_them_and_close_at_run_end(
    corpus, deps, monkeypatch
):
    from haiku.rag.capabilities import base

    opened: list[HaikuRAG] = []
    sandboxes: list[Sandbox] = []
    original_open = Sandbox._open

    class RecordingClient(HaikuRAG):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.closed = False
            opened.append(self)

        def close(self) -> None:
            self.closed = True
            super().close()

    async def tracking_open(self):
        sandboxes.append(self)
        await original_open(self)

    monkeypatch.setattr(base, "HaikuRAG", RecordingClient)
    monkeypatch.setattr(Sandbox, "_open", tracking_open)
    capability = create_capability(corpus.db_path, config=corpus.config)
    script = ScriptedModel().play(
        load_analysis(), answer("Hi."),  # loaded, but no tool needed anything
        load_analysis(), asearch("otters"),  # the store opens; the sandbox does not
        execute(COUNT_DOCUMENTS), answer(),  # now the sandbox opens
    )
    agent = agent_for(script, capability)
    await agent.run("Hello", deps=deps)
    assert opened == [] and sandboxes == []
    await agent.run("Otters?", deps=Deps())
    assert len(opened) == 1 and opened[0].is_read_only and opened[0].closed
    assert len(sandboxes) == 1 and sandboxes[0].closed and not sandboxes[0].is_open


async def test_resources_close_when_the_run_fails(make_analysis, deps, monkeypatch):
    sandboxes: list[Sandbox] = []
    original_open = Sandbox._open

    async def tracking_open(self):
        sandboxes.append(self)
        await original_open(self)

    monkeypatch.setattr(Sandbox, "_open", tracking_open)

    def boom(request):
        raise RuntimeError("the model went away")

    script = ScriptedModel().play(load_analysis(), execute("1"), boom)
    with pytest.raises(RuntimeError, match="went away"):
        await agent_for(script, make_analysis()).run("Q", deps=deps)
    assert sandboxes[0].closed and not sandboxes[0].is_open


async def test_a_crashed_interpreter_is_replaced_and_the_model_is_told_its_variables_are_gone(
    make_analysis, deps, monkeypatch
):
    sandboxes: list[Sandbox] = []
    original_open = Sandbox._open

    async def tracking_open(self):
        sandboxes.append(self)
        await original_open(self)

    monkeypatch.setattr(Sandbox, "_open", tracking_open)

    def kill_then_read(request):
        os.kill(sandboxes[0].worker_pid, signal.SIGKILL)
        return execute("print(x)")

    script = ScriptedModel().play(
        load_analysis(), execute("x = 41"), kill_then_read, execute("x = 1\nprint(x + 1)"), answer()
    )
    await agent_for(script, make_analysis()).run("Q", deps=deps)
    crashed = script.seen[3].last_return("analysis_execute_code")
    assert crashed.outcome == "failed"
    assert "The interpreter stopped" in str(crashed.content) and RESTARTED in str(crashed.content)
    assert str(script.seen[4].last_return("analysis_execute_code").content).strip() == "2"


# --- database path ------------------------------------------------------------------------


def test_the_factory_resolves_its_database_like_the_rag_factory(corpus, monkeypatch, tmp_path):
    monkeypatch.delenv("HAIKU_RAG_DB", raising=False)
    assert create_capability(tmp_path / "a.lancedb", config=corpus.config).db_path == str(
        tmp_path / "a.lancedb"
    )
    monkeypatch.setenv("HAIKU_RAG_DB", str(tmp_path / "env.lancedb"))
    assert create_capability(config=corpus.config).db_path == str(tmp_path / "env.lancedb")
    monkeypatch.delenv("HAIKU_RAG_DB")
    assert create_capability(config=corpus.config).db_path == str(
        corpus.config.storage.data_dir / "haiku.rag.lancedb"
    )
