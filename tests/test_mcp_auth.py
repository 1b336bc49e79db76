"""`haiku-rag mcp --http` needs a bearer token by default (issue 32: any local account could
open a session on the loopback port and search the library)."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import time

import pytest
from test_mcp import HAIKU_RAG, READ_TOOLS, _env, _free_port
from test_mcp import library as library  # noqa: F401 (the fixture)

from haiku.rag.errors import HaikuRAGError
from haiku.rag.mcp_server import stored_token, token_path


def start(db, data_dir, *extra: str) -> tuple[subprocess.Popen[str], int]:
    port = _free_port()
    server = subprocess.Popen(
        [HAIKU_RAG, "--db", str(db), "mcp", "--http", "--port", str(port), *extra],
        env={**os.environ, **_env(), "HAIKU_RAG_STORAGE__DATA_DIR": str(data_dir)},
        stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 120
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, port
        except OSError:
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            assert time.monotonic() < deadline, "the MCP server did not start"
            time.sleep(0.2)


def stop(server: subprocess.Popen[str]) -> str:
    server.terminate()
    server.wait(timeout=30)
    return server.stderr.read() if server.stderr else ""


async def test_http_requires_a_generated_token_by_default(library, tmp_path):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    db, _, _ = library
    data_dir = tmp_path / "data"
    server, port = start(db, data_dir)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx2.AsyncClient() as anonymous:
            refused = await anonymous.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert refused.status_code == 401
        path = token_path(data_dir)
        info = os.stat(path)
        assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.getuid()
        token = path.read_text().strip()
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            async with Client(streamable_http_client(url, http_client=http)) as session:
                assert {t.name for t in (await session.list_tools()).tools} == READ_TOOLS
    finally:
        err = stop(server)
    assert token in err and str(path) in err  # said once, where it is kept

    # the next start reuses the stored token and does not print it again
    server, port = start(db, data_dir)
    try:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as session:
                assert {t.name for t in (await session.list_tools()).tools} == READ_TOOLS
    finally:
        err = stop(server)
    assert token not in err


async def test_no_auth_is_explicit_and_warned(library, tmp_path):
    import httpx2

    db, _, _ = library
    server, port = start(db, tmp_path / "data", "--no-auth")
    try:
        async with httpx2.AsyncClient(timeout=60) as anonymous:
            answered = await anonymous.post(
                f"http://127.0.0.1:{port}/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}},
                headers={"Accept": "application/json, text/event-stream"},
            )
            assert answered.status_code == 200
    finally:
        err = stop(server)
    assert "WARNING: --no-auth" in err


def test_a_token_file_other_accounts_can_read_is_refused(tmp_path):
    first = stored_token(tmp_path, announce=lambda message: None)
    assert stored_token(tmp_path) == first
    os.chmod(token_path(tmp_path), 0o644)
    with pytest.raises(HaikuRAGError, match="other accounts"):
        stored_token(tmp_path)
    os.unlink(token_path(tmp_path))
    os.symlink(tmp_path / "elsewhere", token_path(tmp_path))
    with pytest.raises(HaikuRAGError, match="not a plain file"):
        stored_token(tmp_path)
