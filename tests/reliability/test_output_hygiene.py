"""Output and error hygiene (issue 19, item 8): control characters never reach the terminal
raw, hostile input gets one clean line, a provider echoing a key never shows it, and
onnxruntime writes no telemetry files."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from openai_stub_server import StubOpenAI

from haiku.rag.answering import answer
from haiku.rag.cli import main
from haiku.rag.client import HaikuRAG
from haiku.rag.errors import HaikuRAGError

HOSTILE = "\x1b]0;pwned\x07\x1b[2J"  # sets the window title, clears the screen


@pytest.fixture
def hostile_library(tmp_path, db_path):
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / f"notes{HOSTILE}.txt").write_text(f"Harbour ledger {HOSTILE} the keeper logged every whaler.\n")
    assert main(["--db", str(db_path), "add-src", "--no-embed", str(folder)]) == 0
    return db_path


def test_list_and_search_escape_control_characters(hostile_library, capsys):
    capsys.readouterr()
    assert main(["--db", str(hostile_library), "list"]) == 0
    assert main(["--db", str(hostile_library), "search", "harbour ledger", "--search-type", "fts"]) == 0
    out = capsys.readouterr().out
    assert "harbour" in out.lower() and "\\x1b]0;pwned\\x07" in out
    assert "\x1b" not in out and "\x07" not in out


def test_hostile_queries_and_filters_get_one_clean_line(hostile_library, capsys):
    undecodable = b"\xffharbour".decode("utf-8", "surrogateescape")  # what argv holds for $'\xffharbour'
    assert main(["--db", str(hostile_library), "search", undecodable, "--search-type", "fts"]) == 0
    assert main(["--db", str(hostile_library), "embed"]) == 0  # the query embedder's tokenizer too
    assert main(["--db", str(hostile_library), "search", undecodable]) == 0
    capsys.readouterr()
    assert main(["--db", str(hostile_library), "list", "--filter", "' OR 1=1 --"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("haiku-rag: invalid filter") and len(err.strip().splitlines()) == 1


class EchoingStub(StubOpenAI):
    """A provider that refuses every key and echoes it back, as some servers' 401 bodies do."""

    def _handler(self) -> type:
        base = super()._handler()

        class Echo(base):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:
                key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                self._json({"error": {"message": f"Incorrect API key provided: {key}", "type": "auth"}}, status=401)

        return Echo


async def test_a_provider_echoing_the_key_never_shows_it(tmp_path, chat_library, keychain, secret, config, allow_requests):
    import traceback

    with EchoingStub() as stub:
        config.qa.model.provider, config.qa.model.name = "openai-compatible", "stub-model"
        config.qa.model.base_url = stub.base_url
        async with HaikuRAG(chat_library, config) as client:
            with pytest.raises(HaikuRAGError) as raised:
                await answer(client, "What did the customs brokers record?")
    message = str(raised.value)
    assert "Incorrect API key provided: ***" + secret[-4:] in message
    assert secret not in message and secret not in "".join(traceback.format_exception_only(raised.value))


def test_onnxruntime_writes_no_telemetry_files(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("ORT_DISABLE_TELEMETRY", "XDG_CACHE_HOME")}
    env["HOME"] = str(home)
    code = textwrap.dedent(
        """
        from haiku.rag.embeddings.local import LocalEmbedder
        LocalEmbedder(threads=1).embed_query("harbour ledger")
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)
    assert not (home / ".cache" / "Microsoft").exists(), sorted(p.name for p in home.rglob("*"))


async def test_a_store_folder_deleted_under_an_api_caller_gives_a_typed_error(hostile_library, config):
    import shutil

    from haiku.rag.errors import StoreNotFoundError

    async with HaikuRAG(hostile_library, config, read_only=True, skip_validation=True) as client:
        assert await client.list_documents()
        shutil.rmtree(hostile_library)
        for call in (client.list_documents(), client.search("harbour", search_type="fts"), client.info()):
            with pytest.raises(StoreNotFoundError, match="was deleted or moved while it was open"):
                await call


def test_a_heading_only_markdown_file_says_what_was_dropped(tmp_path, db_path, capsys):
    path = tmp_path / "heading.md"
    path.write_text("# Harbour ledger of 1893\n")
    assert main(["--db", str(db_path), "add-src", "--no-embed", str(path)]) == 1
    out = capsys.readouterr().out
    assert "only headings ('Harbour ledger of 1893')" in out and "a heading alone is not indexed" in out
