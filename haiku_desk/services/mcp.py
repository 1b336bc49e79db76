"""The configuration an MCP client needs to launch ``haiku-rag mcp`` on a library (the
library's own ``haiku.rag.mcp_server.client_config``: what ``haiku-rag mcp --print-config``
prints), for Help › Use this library from other apps (MCP)…"""

from __future__ import annotations

from typing import Any

__all__ = ["mcp_config"]


def mcp_config(db_path: str) -> dict[str, Any]:
    """The ``mcpServers`` entry for the library at ``db_path``."""
    from haiku.rag.mcp_server import client_config

    return client_config(str(db_path))
