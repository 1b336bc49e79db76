"""The MCP server's replies are bounded for titles, headings and metadata too (issue 32: a
5.4 MB title made every search return 5.4 million characters)."""

from __future__ import annotations

import json

from haiku.rag.bounds import MAX_TITLE_CHARS
from haiku.rag.client import HaikuRAG
from haiku.rag.mcp_server import build_server

HUGE = 5_400_000


async def test_search_and_get_document_replies_stay_small(db_path, config):
    async with HaikuRAG(db_path, config, create=True) as client:
        await client.create_document(
            "# " + "H" * 300_000 + "\n\nThe depot closed in 1962.",
            title="T" * HUGE,
            metadata={"note": "N" * HUGE, "authors": [f"Author {n}" for n in range(20_000)]},
            embed=False,
        )
        server = build_server(client)
        found = await server.call_tool("search", {"query": "depot", "search_type": "fts"})
        document = await server.call_tool("get_document", {"document": (await client.list_documents())[0].id, "include_text": False})
    assert not found.is_error and not document.is_error
    (hit,) = [json.loads(c.text) for c in found.content]
    assert len(hit["document_title"]) < MAX_TITLE_CHARS + 100
    assert all(len(h) < 300 for h in hit["headings"])
    reply = json.loads(document.content[0].text)
    assert len(reply["title"]) < MAX_TITLE_CHARS + 100
    assert len(json.dumps(reply)) < 10_000  # metadata strings cut, the 20,000 authors listed up to 100
    assert reply["metadata"]["authors"][-1] == "[19,900 more not shown]"
