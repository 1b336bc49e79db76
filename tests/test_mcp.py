"""`haiku-rag mcp` with a real MCP client session: over stdio (the server is a subprocess the
client launches, as Claude Desktop does) and over streamable HTTP on loopback with a token."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pdf_factory
import pytest

from haiku.rag.cli import main
from haiku.rag.client import HaikuRAG

HAIKU_RAG = str(Path(sys.executable).parent / "haiku-rag")
READ_TOOLS = {"search", "get_document", "get_chunk", "list_documents", "list_collections", "render_page"}


@pytest.fixture
async def library(tmp_path, config):
    db = tmp_path / "lib.lancedb"
    layout = pdf_factory.make_report_pdf(tmp_path / "report.pdf")
    async with HaikuRAG(db, config, create=True) as client:
        document = (await client.ingest_file(layout.path, embed=False)).document
        await client.create_collection("Logistics", [document.id])
        await client.create_document("A note on walrus migration routes", title="Walrus note", embed=False)
    return db, layout, document


def _env() -> dict[str, str]:
    return {"XDG_DATA_HOME": os.environ["XDG_DATA_HOME"], "HF_HUB_OFFLINE": "1"}


def _structured(result) -> object:
    assert not result.is_error, result.content
    data = result.structured_content
    return data["result"] if isinstance(data, dict) and set(data) == {"result"} else data


async def test_stdio_session_lists_tools_searches_and_renders_cited_pages(library):
    from mcp import Client, StdioServerParameters

    db, layout, document = library
    params = StdioServerParameters(command=HAIKU_RAG, args=["--db", str(db), "mcp"], env=_env())
    async with Client(params, read_timeout_seconds=120) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == READ_TOOLS  # read-only by default: no ingest tool
        assert all(t.annotations.read_only_hint for t in tools.values())

        hits = _structured(await session.call_tool("search", {"query": "kerosene shortage night convoys", "search_type": "fts", "limit": 3}))
        top = hits[0]
        assert top["document_id"] == document.id and top["document_title"] == pdf_factory.REPORT_TITLE
        assert top["pages"] == [layout.block("p_discussion").page]
        assert top["boxes"] and {"page", "x0", "y0", "x1", "y1"} <= set(top["boxes"][0])
        assert top["citation"].endswith(f"p. {layout.block('p_discussion').page})")
        assert "kerosene" in top["text"].lower()

        scoped = _structured(await session.call_tool("search", {"query": "walrus", "search_type": "fts", "collection": "Logistics"}))
        assert all(h["document_id"] == document.id for h in scoped)
        missing = await session.call_tool("search", {"query": "walrus", "collection": "Nope"})
        assert missing.is_error and "no collection named 'Nope'" in missing.content[0].text

        chunk = _structured(await session.call_tool("get_chunk", {"chunk_id": top["chunk_id"]}))
        assert chunk["pages"] == top["pages"] and chunk["document_title"] == pdf_factory.REPORT_TITLE
        full = _structured(await session.call_tool("get_document", {"document": pdf_factory.REPORT_TITLE, "max_chars": 200}))
        assert full["document_id"] == document.id and len(full["text"]) == 200 and full["next_offset"] == 200

        listed = _structured(await session.call_tool("list_documents", {}))
        assert {d["title"] for d in listed} == {pdf_factory.REPORT_TITLE, "Walrus note"}
        collections = _structured(await session.call_tool("list_collections", {}))
        assert collections == [{"name": "Logistics", "documents": 1, "document_ids": [document.id]}]

        page = top["pages"][0]
        plain = await session.call_tool("render_page", {"document": document.id, "page": page})
        marked = await session.call_tool("render_page", {"document": document.id, "page": page, "chunk_id": top["chunk_id"]})
        images = []
        for result in (plain, marked):
            assert not result.is_error
            (content,) = [c for c in result.content if c.type == "image"]
            assert content.mime_type == "image/png"
            images.append(base64.b64decode(content.data))
        assert all(i.startswith(b"\x89PNG") for i in images)
        assert images[0] != images[1]  # the cited passage is highlighted

        out_of_range = await session.call_tool("render_page", {"document": document.id, "page": 99})
        assert out_of_range.is_error and "page 99 is out of range" in out_of_range.content[0].text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_http_on_loopback_needs_the_token(library):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    db, _, document = library
    port = _free_port()
    server = subprocess.Popen(
        [HAIKU_RAG, "--db", str(db), "mcp", "--http", "--port", str(port), "--token", "s3cret"],
        env={**os.environ, **_env()}, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, server.stderr.read()
                assert time.monotonic() < deadline, "the MCP server did not start"
                time.sleep(0.2)
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx2.AsyncClient() as anonymous:
            refused = await anonymous.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert refused.status_code == 401
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"}, timeout=60) as http:
            async with Client(streamable_http_client(url, http_client=http)) as session:
                assert {t.name for t in (await session.list_tools()).tools} == READ_TOOLS
                listed = _structured(await session.call_tool("list_documents", {"collection": "Logistics"}))
                assert [d["document_id"] for d in listed] == [document.id]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_loopback_only_and_client_config(library, capsys):
    db, _, _ = library
    assert main(["--db", str(db), "mcp", "--http", "--host", "0.0.0.0"]) == 1
    assert "loopback only" in capsys.readouterr().err
    assert main(["--db", str(db), "mcp", "--print-config"]) == 0
    entry = json.loads(capsys.readouterr().out)["mcpServers"]["haiku-rag"]
    assert entry["args"] == ["--db", str(db), "mcp"] and Path(entry["command"]).name == "haiku-rag"


async def test_allow_writes_adds_the_ingest_tool(library, tmp_path):
    from haiku.rag.mcp_server import build_server

    db, _, _ = library
    extra = tmp_path / "more.md"
    extra.write_text("# More\n\nGannets nest on the northern cliffs.\n")
    async with HaikuRAG(db, read_only=True) as reader:
        assert "add_source" not in {t.name for t in await build_server(reader).list_tools()}
    async with HaikuRAG(db) as writer:
        server = build_server(writer, allow_writes=True)
        assert "add_source" in {t.name for t in await server.list_tools()}
        from mcp import Client

        async with Client(server) as session:
            added = _structured(await session.call_tool("add_source", {"path": str(extra)}))
            assert added[0]["status"] == "ingested"


def test_the_mcp_sdk_is_a_default_dependency_and_the_old_extra_still_installs():
    """`haiku-rag mcp` works in the default install (issue 33): the SDK is in the project's own
    dependencies, and `haiku-desk[mcp]` (older install lines) is still a valid, empty extra."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]
    default = {Requirement(line).name: Requirement(line) for line in project["dependencies"]}
    assert "mcp" in default and default["mcp"].marker is None  # every platform
    assert default["mcp"].specifier.contains("2.3.0")
    assert project["optional-dependencies"]["mcp"] == []


async def test_a_frozen_bundle_serves_mcp_from_its_own_executable(library, monkeypatch):
    """In the release bundle there is no `haiku-rag` script: the configuration the app shows
    names the bundle's executable with the CLI flag, and the bundle's entry point
    (packaging/haiku_desk_main.py) answers a real MCP client session launched that way."""
    from mcp import Client, StdioServerParameters

    from haiku.rag.child_process import CLI_FLAG
    from haiku.rag.mcp_server import client_config

    db, _, document = library
    python = sys.executable
    bundle = "/opt/haiku-desk/haiku-desk"
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", bundle)
    monkeypatch.delenv("APPIMAGE", raising=False)
    entry = client_config(str(db))["mcpServers"]["haiku-rag"]
    # an AppImage runs from a mount made for this run: the command is the AppImage file
    monkeypatch.setenv("APPIMAGE", "/home/me/Haiku_Desk-x86_64.AppImage")
    appimage = client_config(str(db))["mcpServers"]["haiku-rag"]
    monkeypatch.undo()
    assert entry == {"command": bundle, "args": [CLI_FLAG, "--db", str(db), "mcp"]}
    assert appimage == {"command": "/home/me/Haiku_Desk-x86_64.AppImage", "args": entry["args"]}

    # the bundle's executable is its entry script run by the frozen interpreter
    main_script = Path(__file__).parent.parent / "packaging" / "haiku_desk_main.py"
    env = {**_env(), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    params = StdioServerParameters(command=python, args=[str(main_script), *entry["args"]], env=env)
    async with Client(params, read_timeout_seconds=120) as session:
        assert {t.name for t in (await session.list_tools()).tools} == READ_TOOLS
        listed = _structured(await session.call_tool("list_documents", {"collection": "Logistics"}))
        assert [d["document_id"] for d in listed] == [document.id]
