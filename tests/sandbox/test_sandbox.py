"""The sandbox on its own: the section tree, output truncation, time budgets, lazy open and
close, and the read-only handler — over a small in-memory corpus."""

from __future__ import annotations

import pytest

from haiku.rag.ingest.records import ItemRecord
from haiku.rag.sandbox.corpus import CorpusFiles, CorpusReader, item_rows, toc_tree
from haiku.rag.sandbox.runtime import RESTARTED, Sandbox, SandboxLimits
from haiku.rag.store.models import Chunk, Document


def row(text: str, level: int = 0, chunk: str = "c") -> dict:
    return {
        "self_ref": f"#/texts/{text}", "label": "section_header" if level else "text",
        "text": text, "page_numbers": [1], "heading_level": level, "chunk_ids": [chunk],
    }


def test_sections_end_at_the_next_header_of_the_same_or_higher_level_and_nest():
    rows = [row("A", 1, "c1"), row("a", 0, "c1"), row("A.1", 2, "c2"), row("x", 0, "c3"),
            row("B", 1, "c4"), row("y", 0, "c4")]
    (a, b) = toc_tree(rows)
    assert a["title"] == "A" and a["item_range"] == [0, 4] and a["chunk_ids"] == ["c1", "c2", "c3"]
    (a1,) = a["children"]
    assert a1["item_range"] == [2, 4] and a1["chunk_ids"] == ["c2", "c3"]
    assert b["item_range"] == [4, 6] and b["children"] == []


def test_headers_of_one_level_make_a_flat_list_and_no_headers_an_empty_tree():
    assert [n["title"] for n in toc_tree([row("A", 2), row("B", 2)])] == ["A", "B"]
    assert toc_tree([row("x"), row("y")]) == []


def test_items_name_the_chunks_that_contain_them():
    items = [ItemRecord(0, "#/texts/0", "text", "t", [1], 0, []),
             ItemRecord(1, "#/texts/1", "text", "u", [1], 0, [])]
    chunks = [Chunk(id="k2", document_id="d", order=1, content="", doc_item_refs=["#/texts/1"]),
              Chunk(id="k1", document_id="d", order=0, content="", doc_item_refs=["#/texts/0", "#/texts/1"])]
    assert [r["chunk_ids"] for r in item_rows(items, chunks)] == [["k1"], ["k1", "k2"]]


DOCUMENT = Document(id="doc1", uri="notes://one", title="One", created_at="2026-01-01T00:00:00+00:00")


def make_sandbox(**limits) -> Sandbox:
    async def list_documents():
        return [DOCUMENT]

    async def content(document):
        return "# One\n\nHello."

    async def items(document):
        return [ItemRecord(0, "#/texts/0", "section_header", "One", [], 1, [])]

    async def chunks(document):
        return [Chunk(id="k1", document_id="doc1", order=0, content="One", doc_item_refs=["#/texts/0"])]

    async def search(query: str, limit: int):
        return [{"chunk_id": "k1", "content": query * limit}]

    settings = {"call_seconds": 2.0, "total_seconds": 60.0, "max_output_chars": 200,
                "max_memory_bytes": 64 << 20, **limits}
    reader = CorpusReader(list_documents, content, items, chunks)
    return Sandbox(CorpusFiles(reader), search, SandboxLimits(**settings))


@pytest.fixture
async def sandbox():
    box = make_sandbox()
    yield box
    box.close()


async def test_it_opens_on_the_first_call_and_closes(sandbox):
    assert not sandbox.is_open
    assert (await sandbox.execute("print(1)")).stdout == "1\n"
    assert sandbox.is_open
    sandbox.close()
    assert sandbox.closed and not sandbox.is_open
    with pytest.raises(RuntimeError, match="closed"):
        await sandbox.execute("print(1)")


async def test_long_output_is_truncated_with_a_marker(sandbox):
    result = await sandbox.execute("print('a' * 500)")
    assert result.success and result.output_truncated
    assert result.stdout.startswith("a" * 200)
    assert "\n... (output truncated: 301 more characters" in result.stdout


async def test_the_files_and_functions(sandbox):
    code = (
        "import json\n"
        "print(open('/documents/doc1/content.txt').read())\n"
        "print(json.loads(open('/documents/doc1/toc.json').read())['tree'][0]['chunk_ids'])\n"
        "print(await list_documents())\n"
        "print(await search('ab', 2))"
    )
    result = await sandbox.execute(code)
    assert result.stdout.splitlines() == [
        "# One", "", "Hello.", "['k1']",
        "[{'id': 'doc1', 'title': 'One', 'uri': 'notes://one', 'created_at': '2026-01-01T00:00:00+00:00'}]",
        "[{'chunk_id': 'k1', 'content': 'abab'}]",
    ]


async def test_a_missing_file_and_a_directory_read_fail_like_python(sandbox):
    missing = await sandbox.execute("open('/documents/doc1/nope.txt').read()")
    assert "FileNotFoundError" in missing.stderr
    folder = await sandbox.execute("open('/documents/doc1').read()")
    assert "IsADirectoryError" in folder.stderr


async def test_the_total_time_of_a_question_is_a_budget():
    box = make_sandbox(call_seconds=1.0, total_seconds=1.5)
    try:
        first = await box.execute("while True:\n    pass")
        assert first.stopped_by == "time limit" and RESTARTED in first.stderr
        second = await box.execute("while True:\n    pass")  # runs for what is left
        assert second.stopped_by == "time limit"
        third = await box.execute("print(1)")
        assert third.stopped_by == "total time limit"
        assert "used its total time of 1.5 seconds" in third.stderr
    finally:
        box.close()


async def test_variables_persist_until_a_limit_discards_the_session(sandbox):
    await sandbox.execute("x = 5")
    assert (await sandbox.execute("x")).stdout == "5"
    stopped = await sandbox.execute("a = [0] * (10 ** 9)")
    assert stopped.stopped_by == "memory limit" and stopped.restarted
    assert "NameError" in (await sandbox.execute("x")).stderr
