"""Every code snippet of the capabilities page, run as written with a scripted model.

Each test body between the ``# --- snippet`` markers is the page's snippet with only the model
string replaced by ``model``; ``test_the_snippets_are_the_page_s`` checks that against the page.
The page's later snippets build on the ``Agent`` import of its first one, so the tests import it
before their snippet as the page's reader would have.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from pathlib import Path

import pytest
from pydantic_ai import Agent

from capabilities.conftest import Deps
from capabilities.scripting import ScriptedModel, answer, cite, cite_top, load, search
from haiku.rag.capabilities.rag import RAGState

SPEC = Path(__file__).resolve().parents[3] / "shared" / "spec" / "capabilities-index.md"


@pytest.fixture
def my_lancedb(corpus, monkeypatch, tmp_path) -> None:
    """Make ``my.lancedb`` in the working directory the test corpus, as the snippets expect."""
    (tmp_path / "my.lancedb").symlink_to(corpus.db_path, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HAIKU_RAG_STORAGE__DATA_DIR", str(corpus.config.storage.data_dir))


async def test_compose_an_agent(my_lancedb, capsys):
    script = ScriptedModel().play(
        load(), search("lantern otters"), cite_top(1), answer("Otters eat glass eels.")
    )
    model = script.model
    # --- snippet
    from pydantic_ai import Agent  # noqa: I001  (kept in the page's order)
    from haiku.rag.capabilities.rag import create_capability

    rag = create_capability(db_path="my.lancedb")
    agent = Agent(model, capabilities=[rag])

    result = await agent.run("What does the knowledge base say about X?")
    print(result.output)
    # --- end
    assert capsys.readouterr().out == "Otters eat glass eels.\n"
    assert script.seen[3].last_return("rag_cite").content == "Registered 1 citation(s)."


async def test_attach_both_capabilities(my_lancedb):
    model = ScriptedModel().play(answer()).model
    # --- snippet
    from haiku.rag.capabilities.analysis import create_capability as analysis
    from haiku.rag.capabilities.rag import create_capability as rag

    agent = Agent(
        model,
        capabilities=[rag(db_path="my.lancedb"), analysis(db_path="my.lancedb")],
    )
    # --- end
    assert (await agent.run("Hi")).output == "The answer."


async def test_multi_turn_conversations(my_lancedb):
    script = ScriptedModel().play(
        load(),
        search("lantern otter diet"),
        cite_top(1),
        answer("Eels."),
        answer("You're welcome."),
    )
    model = script.model
    # --- snippet
    from haiku.rag.capabilities.compaction import create_capability as compaction
    from haiku.rag.capabilities.rag import create_capability as rag

    agent = Agent(
        model,
        capabilities=[rag(db_path="my.lancedb"), compaction()],
    )
    # --- end
    deps = Deps()
    first = await agent.run("What do lantern otters eat?", deps=deps)
    await agent.run("Thanks!", deps=deps, message_history=first.all_messages())
    assert script.seen[-1].returns("rag_search")[0].content.startswith("[Evidence cited earlier")


async def test_requiring_citations(my_lancedb):
    script = ScriptedModel().play(
        load(), search("lantern otters"), answer("Eels."), cite(), answer("Eels.")
    )
    model = script.model
    # --- snippet
    from haiku.rag.capabilities.policy import create_capability as citation_policy
    from haiku.rag.capabilities.rag import create_capability as rag

    agent = Agent(
        model,
        capabilities=[rag(db_path="my.lancedb"), citation_policy()],
    )
    # --- end
    deps = Deps()
    await agent.run("What do lantern otters eat?", deps=deps)
    assert "[haiku.rag/citation-redirect]" in script.seen[3].user_texts()[-1]
    assert RAGState.model_validate(deps.state["rag"]).evidence.declaration is not None


def snippets_in_this_file() -> list[str]:
    source = inspect.getsource(inspect.getmodule(test_compose_an_agent))
    blocks = re.findall(r"    # --- snippet\n(.*?)    # --- end\n", source, re.DOTALL)
    return [normalise(textwrap.dedent(block)) for block in blocks]


def normalise(code: str) -> str:
    """Without trailing whitespace and lint markers, which are not part of the code."""
    return "\n".join(
        re.sub(r"\s*# noqa.*$", "", line).rstrip() for line in code.splitlines()
    ).strip()


def test_the_snippets_are_the_page_s():
    if not SPEC.is_file():
        pytest.skip(f"the capabilities page is not at {SPEC}")
    page = re.findall(r"```python\n(.*?)```", SPEC.read_text(encoding="utf-8"), re.DOTALL)
    expected = [normalise(block.replace('"openai:gpt-5"', "model")) for block in page]
    assert snippets_in_this_file() == expected
