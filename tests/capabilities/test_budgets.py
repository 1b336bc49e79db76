"""The request limit, its citation grace window, and the notices that explain budgets."""

from __future__ import annotations

from pydantic_ai import Agent

from capabilities.conftest import Deps
from capabilities.scripting import ScriptedModel, answer, call, calls, cite_top, load, search
from haiku.rag.capabilities.budget import RequestBudget, budget_notice

LIMIT_NOTICE = "The rag capability has reached its request limit. Only rag_cite remains"
CLOSED_NOTICE = "The rag capability's tools are no longer available in this run."


def host_tool() -> str:
    """A tool of the host, outside any capability."""
    return "done"


def agent_for(script: ScriptedModel, *capabilities) -> Agent[Deps, str]:
    agent = Agent(script.model, deps_type=Deps, capabilities=list(capabilities))
    agent.tool_plain(host_tool)
    return agent


def rag_tools(names: list[str]) -> set[str]:
    return {n for n in names if n.startswith("rag_")}


async def test_at_the_request_limit_search_goes_and_cite_stays_for_two_requests(make_rag, deps):
    script = ScriptedModel().play(
        load(),  # not counted: the capability is not loaded yet
        search("otters"),  # request 1 of 2
        search("tea"),  # request 2 of 2
        cite_top(1),  # first grace request
        cite_top(1),  # second grace request
        answer(),
    )
    await agent_for(script, make_rag(request_limit=2)).run("Otters and tea?", deps=deps)
    tools = [rag_tools(seen.tool_names) for seen in script.seen]
    assert tools[1] == tools[2] == {"rag_search", "rag_cite"}
    assert tools[3] == tools[4] == {"rag_cite"}
    assert tools[5] == set()
    assert (
        LIMIT_NOTICE in script.seen[3].instructions and LIMIT_NOTICE in script.seen[4].instructions
    )
    assert CLOSED_NOTICE in script.seen[5].instructions
    assert "rag_cite" not in script.seen[5].instructions  # never name a withdrawn tool
    assert "rag_search" not in script.seen[3].instructions.split(LIMIT_NOTICE)[1]


async def test_the_grace_window_counts_only_requests_after_this_capabilitys_tools(make_rag, deps):
    script = ScriptedModel().play(
        load(),
        search("otters"),  # request 1 of 1
        calls(call("host_tool")),  # at the limit; the previous response used rag: grace 1
        calls(call("host_tool")),  # previous response used the host tool: not counted
        calls(call("host_tool")),  # not counted either
        cite_top(1),  # not counted: cite is still there
        calls(call("host_tool")),  # the previous response cited: grace 2
        answer(),
    )
    await agent_for(script, make_rag(request_limit=1)).run("Otters?", deps=deps)
    assert [rag_tools(seen.tool_names) for seen in script.seen[2:7]] == [{"rag_cite"}] * 5
    assert script.seen[6].last_return("rag_cite").content == "Registered 1 citation(s)."
    assert rag_tools(script.seen[7].tool_names) == set()


async def test_requests_before_the_capability_loads_do_not_count(make_rag, deps):
    script = ScriptedModel().play(
        calls(call("host_tool")), calls(call("host_tool")), load(), search("otters"), answer()
    )
    await agent_for(script, make_rag(request_limit=1)).run("Otters?", deps=deps)
    assert "rag_search" in script.seen[3].tool_names
    assert script.seen[4].last_return("rag_search").outcome == "success"


async def test_every_run_starts_with_a_fresh_request_limit(make_rag, deps):
    script = ScriptedModel().play(load(), search("otters"), answer(), search("tea"), answer())
    agent = agent_for(script, make_rag(request_limit=1))
    first = await agent.run("Otters?", deps=deps)
    assert rag_tools(script.seen[2].tool_names) == {"rag_cite"}
    await agent.run("Tea?", deps=deps, message_history=first.all_messages())
    assert "rag_search" in script.seen[3].tool_names
    assert script.seen[4].last_return("rag_search").outcome == "success"


async def test_no_request_limit_keeps_every_tool(make_rag, deps):
    script = ScriptedModel().play(
        load(), *[search(q) for q in ("otters", "tea", "cheese")], answer()
    )
    await agent_for(script, make_rag(request_limit=None)).run("Everything?", deps=deps)
    assert all(rag_tools(seen.tool_names) == {"rag_search", "rag_cite"} for seen in script.seen[1:])


def test_the_budget_phases():
    budget = RequestBudget(limit=1)
    assert budget.phase == "open"
    budget.count_request(previous_response_used_capability=False)
    assert budget.phase == "cite_only"
    budget.count_request(previous_response_used_capability=False)
    assert budget.phase == "cite_only"
    budget.count_request(previous_response_used_capability=True)
    budget.count_request(previous_response_used_capability=True)
    assert budget.phase == "closed"


def test_a_spent_tool_with_another_evidence_tool_left_points_to_it():
    notice = budget_notice(
        namespace="analysis",
        phase="open",
        spent_tools=["analysis_search"],
        evidence_tools=["analysis_search", "analysis_execute_code"],
        cite_tool="analysis_cite",
    )
    assert notice == (
        "The analysis capability has spent its budget for analysis_search; further calls fail. "
        "Gather more evidence with analysis_execute_code, or call analysis_cite and answer."
    )


def test_no_notice_while_every_budget_has_room():
    assert (
        budget_notice(
            namespace="rag",
            phase="open",
            spent_tools=[],
            evidence_tools=["rag_search"],
            cite_tool="rag_cite",
        )
        is None
    )
