"""Exact answers from real code over the real corpus: counting, aggregation and structure,
citing chunk ids read from ``items.jsonl`` and ``toc.json``; and the high-level entry points
(``haiku.rag.answering`` with the analysis capability alone, ``haiku-rag analyze``)."""

from __future__ import annotations

import json

import pdf_factory
import pytest
from pydantic_ai import Agent

from capabilities.conftest import Deps
from capabilities.scripting import ScriptedModel, answer, call, calls, cite
from haiku.rag import answering
from haiku.rag.answering import AnswerOptions
from haiku.rag.capabilities.analysis import ANALYSIS_CAPABILITY_ID, create_capability
from haiku.rag.store import documents as docs

LARGEST_SHIPMENTS = """\
import json
best = None
for d in await list_documents():
    for line in open('/documents/' + d['id'] + '/items.jsonl').readlines():
        item = json.loads(line)
        if item['label'] != 'table':
            continue
        rows = [r.split('|')[1:-1] for r in item['text'].splitlines()[2:]]
        for region, shipments, delay in rows:
            if best is None or int(shipments) > best[1]:
                best = (region.strip(), int(shipments), item['chunk_ids'])
print(best[0], best[1], best[2][0])
"""

HEADINGS_OF_THE_REPORT = """\
import json
for d in await list_documents():
    if d['title'] == 'Quarterly Report on Zephyrine Logistics':
        toc = json.loads(open('/documents/' + d['id'] + '/toc.json').read())
def walk(nodes, depth):
    for n in nodes:
        print('  ' * depth + n['title'] + ' | ' + ','.join(n['chunk_ids']))
        walk(n['children'], depth + 1)
walk(toc['tree'], 0)
"""


ANALYZE = AnswerOptions(rag=False, analysis=True)


def run_agent(script: ScriptedModel, capability) -> Agent:
    return Agent(script.model, deps_type=Deps, capabilities=[capability])


def output_of(request) -> str:
    return str(request.last_return("analysis_execute_code").content)


async def test_counts_the_documents(corpus, lent_client, deps):
    script = ScriptedModel().play(
        calls(call("load_capability", id=ANALYSIS_CAPABILITY_ID)),
        calls(call("analysis_execute_code", code="print(len(await list_documents()))")),
        calls(call("analysis_cite", chunk_ids=[])),  # a corpus-level count cites nothing
        lambda request: answer(f"There are {output_of(script.seen[2]).strip()} documents."),
    )
    result = await run_agent(script, create_capability(rag=lent_client, config=corpus.config)).run(
        "How many documents are there?", deps=deps
    )
    assert result.output == f"There are {len(await lent_client.list_documents())} documents."
    assert result.output == "There are 6 documents."


async def test_finds_the_largest_value_in_a_table_and_cites_its_chunk(corpus, lent_client, deps):
    def cite_printed(request):
        region, shipments, chunk_id = output_of(request).split()
        return cite(chunk_id, tool="analysis_cite")

    script = ScriptedModel().play(
        calls(call("load_capability", id=ANALYSIS_CAPABILITY_ID)),
        calls(call("analysis_execute_code", code=LARGEST_SHIPMENTS)),
        cite_printed,
        lambda request: answer(" ".join(output_of(script.seen[2]).split()[:2])),
    )
    result = await run_agent(script, create_capability(rag=lent_client, config=corpus.config)).run(
        "Which region shipped the most?", deps=deps
    )
    expected = max(pdf_factory.REPORT_TABLE[1:], key=lambda row: int(row[1]))
    assert result.output == f"{expected[0]} {expected[1]}" == "Nordvik 1204"
    (chunk_id,) = deps.state["analysis"]["citations"]
    citation = deps.state["analysis"]["citation_index"][chunk_id]
    assert "Nordvik" in citation["content"] and "1204" in citation["content"]
    assert citation["page_numbers"] == [2]
    chunk = await lent_client.get_chunk(chunk_id)
    assert "#/tables/0" in chunk.doc_item_refs


async def test_lists_the_headings_of_a_document_and_cites_a_section_from_the_toc(
    corpus, lent_client, deps
):
    def cite_results_section(request):
        line = next(x for x in output_of(request).splitlines() if x.strip().startswith("2 Results"))
        return cite(line.split("|")[1].split(",")[0].strip(), tool="analysis_cite")

    script = ScriptedModel().play(
        calls(call("load_capability", id=ANALYSIS_CAPABILITY_ID)),
        calls(call("analysis_execute_code", code=HEADINGS_OF_THE_REPORT)),
        cite_results_section,
        lambda request: answer(
            "; ".join(x.split("|")[0].strip() for x in output_of(script.seen[2]).splitlines())
        ),
    )
    result = await run_agent(script, create_capability(rag=lent_client, config=corpus.config)).run(
        "What are the headings of the quarterly report?", deps=deps
    )
    assert result.output == "1 Introduction; 1.1 Background; 2 Results; 2.1 Discussion; 3 Appendix"
    lines = output_of(script.seen[2]).splitlines()
    assert lines[1].startswith("  1.1 Background") and lines[3].startswith("  2.1 Discussion")
    (chunk_id,) = deps.state["analysis"]["citations"]
    assert "Across the quarter the fleet delivered" in (await lent_client.get_chunk(chunk_id)).content


async def test_the_files_hold_what_the_store_holds(corpus, lent_client, deps):
    report = next(d for d in await lent_client.list_documents() if d.title == pdf_factory.REPORT_TITLE)
    code = (
        f"d = '/documents/{report.id}/'\n"
        "print(open(d + 'metadata.json').read())\n"
        "print(len(open(d + 'content.txt').read()))\n"
        "print(len(open(d + 'items.jsonl').readlines()))"
    )
    script = ScriptedModel().play(
        calls(call("load_capability", id=ANALYSIS_CAPABILITY_ID)),
        calls(call("analysis_execute_code", code=code)),
        answer(),
    )
    await run_agent(script, create_capability(rag=lent_client, config=corpus.config)).run("Q", deps=deps)
    metadata, content_length, item_count = output_of(script.seen[2]).splitlines()
    assert json.loads(metadata) == {
        "id": report.id, "title": report.title, "uri": report.uri, "created_at": report.created_at
    }
    assert int(content_length) == len(await lent_client.get_content(report))
    assert int(item_count) == len(docs.get_items(lent_client.store, report))


async def test_haiku_rag_analyze_answers_with_citations(corpus, lent_client, monkeypatch):
    def cite_printed(request):
        return cite(output_of(request).split()[2], tool="analysis_cite")

    script = ScriptedModel().play(
        calls(call("analysis_execute_code", code=LARGEST_SHIPMENTS)),  # not deferred: no load
        cite_printed,
        answer("Nordvik shipped the most (1204)."),
    )
    result = await answering.answer(lent_client, "Which region shipped the most?", None, ANALYZE, model=script.model)
    assert result.text == "Nordvik shipped the most (1204)."
    assert [c.index for c in result.citations] == [1]
    assert "Nordvik" in result.citations[0].content
    assert result.grounding == "grounded"


async def test_analyze_applies_the_filter_to_the_code(corpus, lent_client):
    script = ScriptedModel().play(
        calls(call("analysis_execute_code", code="print(len(await list_documents()))")),
        calls(call("analysis_cite", chunk_ids=[])),
        answer("Counted."),
    )
    tea = tuple(d.id for d in await lent_client.list_documents(filter="title LIKE '%Tea%'"))
    scoped = AnswerOptions(rag=False, analysis=True, document_ids=tea)
    result = await answering.answer(lent_client, "How many?", None, scoped, model=script.model)
    assert output_of(script.seen[1]).strip() == "1"
    assert result.grounding == "ungrounded"


def test_the_analyze_command_prints_the_answer_and_citations(corpus, monkeypatch, capsys):
    from haiku.rag import cli
    from haiku.rag.capabilities import analysis

    def cite_printed(request):
        return cite(output_of(request).split()[2], tool="analysis_cite")

    script = ScriptedModel().play(
        calls(call("analysis_execute_code", code=LARGEST_SHIPMENTS)),
        cite_printed,
        answer("Nordvik."),
    )
    monkeypatch.setattr("haiku.rag.models.get_model", lambda *a, **k: script.model)
    monkeypatch.setenv("HAIKU_RAG_STORAGE__DATA_DIR", str(corpus.config.storage.data_dir))
    assert analysis.ANALYSIS_CAPABILITY_ID  # the module the command goes through
    code = cli.main(["--db", str(corpus.db_path), "analyze", "Which region shipped the most?", "--json"])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["answer"] == "Nordvik."
    assert printed["grounding"] == "grounded"
    assert printed["citations"][0]["pages"] == [2]


@pytest.mark.parametrize("bad", ["title LIKE", "nonexistent_column = 1"])
async def test_a_bad_filter_fails_the_code_clearly_and_the_run_goes_on(corpus, lent_client, deps, bad):
    script = ScriptedModel().play(
        calls(call("analysis_execute_code", code="print(1)")),
        calls(call("analysis_cite", chunk_ids=[])),
        answer("No."),
    )
    # A host's own filter in the capability's state (answering passes document ids only).
    deps.state["analysis"] = {"document_filter": bad}
    capability = create_capability(rag=lent_client, config=corpus.config, defer_loading=False)
    result = await run_agent(script, capability).run("Q", deps=deps)
    failed = script.seen[1].last_return("analysis_execute_code")
    assert failed.outcome == "failed"
    assert f"The document filter {bad!r} is not a valid SQL condition" in str(failed.content)
    assert result.output == "No."
