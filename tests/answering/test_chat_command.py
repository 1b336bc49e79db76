"""``haiku-rag chat``: one conversation over stdin lines, kept in ``--conversation FILE``."""

from __future__ import annotations

import io
import json

from capabilities.scripting import ScriptedModel, answer, cite, cite_top, search

from haiku.rag import cli
from haiku.rag.answering import Conversation


def run_chat(monkeypatch, capsys, corpus, script, lines, *flags):
    monkeypatch.setattr("haiku.rag.models.get_model", lambda *a, **k: script.model)
    monkeypatch.setenv("HAIKU_RAG_STORAGE__DATA_DIR", str(corpus.config.storage.data_dir))
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{line}\n" for line in lines)))
    capsys.readouterr()
    code = cli.main(["--db", str(corpus.db_path), "chat", "--json", *flags])
    out = capsys.readouterr().out
    assert code == 0, out
    return [json.loads(line) for line in out.splitlines()]


def test_chat_keeps_one_conversation_and_saves_it(corpus, monkeypatch, capsys, tmp_path):
    saved = tmp_path / "talk.json"
    first = ScriptedModel().play(
        search("lantern otters diet"), cite_top(1), answer("Glass eels [1]."),
        search("copperline bridges"), cite_top(1), answer("Copper cables [2]."),
    )
    answers = run_chat(
        monkeypatch, capsys, corpus, first, ["What do otters eat?", "", "And the bridges?"],
        "--conversation", str(saved),
    )
    assert [a["answer"] for a in answers] == ["Glass eels [1].", "Copper cables [2]."]
    assert [[c["index"] for c in a["citations"]] for a in answers] == [[1], [2]]
    assert "Glass eels [1]." in first.seen[3].text()  # the second question saw the first

    # A later run goes on from the file: the history and the numbering carry over.
    conversation = Conversation.from_json(saved.read_text())
    otter = answers[0]["citations"][0]["chunk_id"]
    assert conversation.numbers[otter] == 1
    later = ScriptedModel().play(cite(otter), answer("As said: eels [1]."))
    (again,) = run_chat(
        monkeypatch, capsys, corpus, later, ["Remind me?"], "--conversation", str(saved)
    )
    assert [(c["chunk_id"], c["index"]) for c in again["citations"]] == [(otter, 1)]
    assert again["grounding"] == "grounded"
    assert "Copper cables [2]." in later.seen[0].text()
    assert len(Conversation.from_json(saved.read_text()).messages) > len(conversation.messages)


def test_a_damaged_conversation_file_is_one_clear_line(corpus, monkeypatch, capsys, tmp_path):
    saved = tmp_path / "talk.json"
    saved.write_text("{not json")
    monkeypatch.setattr("sys.stdin", io.StringIO("Hello?\n"))
    code = cli.main(["--db", str(corpus.db_path), "chat", "--conversation", str(saved)])
    assert code == 1
    assert capsys.readouterr().err.startswith("haiku-rag: the conversation is not valid JSON")
    assert saved.read_text() == "{not json"  # left as it was


def test_ask_answers_from_a_collection(tmp_path, monkeypatch, capsys):
    import asyncio

    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    config = load_config()
    config.storage.data_dir = tmp_path / "data"
    db = tmp_path / "lib.lancedb"

    async def build() -> str:
        async with HaikuRAG(db, config, create=True) as client:
            eels = await client.create_document("# Eels\n\nGlass eels swim upriver at dusk.", uri="notes://eels")
            await client.create_document("# Crabs\n\nRiver crabs hide in cold pools.", uri="notes://crabs")
            await client.create_collection("reading", [eels.id])
            return eels.id

    eels_id = asyncio.run(build())
    script = ScriptedModel().play(search("river animals"), cite_top(5), answer("Eels [1]."))
    monkeypatch.setattr("haiku.rag.models.get_model", lambda *a, **k: script.model)
    monkeypatch.setenv("HAIKU_RAG_STORAGE__DATA_DIR", str(config.storage.data_dir))
    capsys.readouterr()
    code = cli.main(["--db", str(db), "ask", "Which animals?", "--collection", "reading", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    data = json.loads(out)
    assert {c["document_id"] for c in data["citations"]} == {eels_id}
    assert "River crabs" not in script.seen[1].text()
