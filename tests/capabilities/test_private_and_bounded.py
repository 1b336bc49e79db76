"""What reaches the model about a document is bounded and private (issues 32 and 34).

A document's title and headings ride along with every result of that document, so they are
bounded like passage text; and the compaction capsule names a cited document by its title and
id, never by its URI, which for a local file is a path on this machine.
"""

from __future__ import annotations

from pydantic_ai.messages import ToolReturnPart

from capabilities.scripting import ScriptedModel, answer, cite_top, load, search
from capabilities.test_compaction import Conversation, agent_for, capsule_of, rag_state
from haiku.rag.answering.fallback import passages_prompt
from haiku.rag.bounds import MAX_TITLE_CHARS
from haiku.rag.capabilities.compaction import CAPSULE_HEADER
from haiku.rag.capabilities.formatting import MAX_RETURN_CHARS, format_results
from haiku.rag.store.models import SearchResult

HUGE = 5_400_000
PRIVATE_URI = "file:///home/alice/private/salaries-2026.pdf"


def hostile_result(chunk: str, *, title: str, headings: list[str]) -> SearchResult:
    return SearchResult(
        chunk_id=chunk,
        content="The depot closed in 1962.",
        score=1.0,
        document_id="d" * 32,
        document_uri=PRIVATE_URI,
        document_title=title,
        headings=headings,
    )


def test_a_huge_title_and_many_huge_headings_do_not_blow_the_search_return():
    results = [
        hostile_result(f"{i:032x}", title="T" * HUGE, headings=["H" * 100_000] * 500)
        for i in range(5)
    ]
    text = format_results(results)
    assert len(text) <= MAX_RETURN_CHARS
    assert text.count("[0000") == 5, "every result is still shown, each with its bounded source"
    assert "more characters not shown" in text
    assert "The depot closed in 1962." in text


def test_the_no_tool_prompt_bounds_titles_too():
    passages = [hostile_result("a" * 32, title="T" * HUGE, headings=["H" * HUGE])]
    prompt = passages_prompt("When did the depot close?", passages)
    assert len(prompt) < 5 * MAX_TITLE_CHARS
    assert "The depot closed in 1962." in prompt


async def test_the_capsule_never_sends_a_local_path(make_rag, deps, corpus):
    """The report PDF is a local file (``file:///…/report.pdf``): once compaction replaces its
    search return by the capsule, the capsule names it by title and id only."""
    script = ScriptedModel()
    talk = Conversation(agent_for(script, make_rag()), script, deps)
    await talk.ask(
        "Where did the albatross consignment arrive?",
        load(), search("albatross consignment harbour Nordvik"), cite_top(1), answer("Nordvik."),
    )
    cited = next(iter(rag_state(deps).citation_index.values()))
    assert cited.document_uri.startswith("file://"), "the test needs a local file to be cited"
    await talk.ask("And the canal barges?", search("quartermasters canal barges"), cite_top(1), answer("Narrow."))
    capsule = capsule_of(talk.first_request(1))
    assert f"(document {cited.document_id})" in capsule
    folder = str(corpus.report.path.parent)
    for seen in talk.script.seen[talk.first_request_of[1]:]:
        for message in seen.messages:
            for part in getattr(message, "parts", []):
                if isinstance(part, ToolReturnPart) and part.tool_name == "rag_search":
                    if str(part.content).startswith(CAPSULE_HEADER):
                        assert "file://" not in str(part.content)
                        assert folder not in str(part.content)


async def test_a_huge_title_and_metadata_are_bounded_when_stored(db_path, config):
    from haiku.rag.bounds import MAX_STORED_METADATA_CHARS, MAX_STORED_TITLE_CHARS
    from haiku.rag.client import HaikuRAG

    async with HaikuRAG(db_path, config, create=True) as client:
        created = await client.create_document(
            "The depot closed in 1962.", title="T" * HUGE, metadata={"note": "N" * HUGE, "tags": ["a", "b"]}, embed=False
        )
        stored = await client.get_document(created.id)
    assert stored.title is not None and stored.title.startswith("T" * MAX_STORED_TITLE_CHARS)
    assert len(stored.title) < MAX_STORED_TITLE_CHARS + 100 and "more characters not shown" in stored.title
    assert len(stored.metadata["note"]) < MAX_STORED_METADATA_CHARS + 100
    assert stored.metadata["tags"] == ["a", "b"]
