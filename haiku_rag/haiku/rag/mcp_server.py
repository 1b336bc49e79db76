"""``haiku-rag mcp``: the library served over the Model Context Protocol.

Other tools (Claude Desktop, IDEs, agents) search the library and get page-cited passages with
their boxes, read a document or a chunk, list documents and collections, and render a cited
page to PNG with the passage highlighted. The store is opened read-only unless
``--allow-writes`` is given, which adds one tool to ingest a local file or folder.

Transports: stdio (what desktop MCP clients launch), or streamable HTTP bound to loopback only.
Every local account can reach a loopback port, so HTTP requires a bearer token by default:
``--token`` / ``HAIKU_RAG_MCP_TOKEN``, else one generated once and kept in
``<data dir>/mcp-token`` (mode 0600, refused if another account could read or replace it).
``--no-auth`` turns the check off, with a warning.

The module uses the ``mcp`` SDK (2.x, ``MCPServer``), a default dependency (issue 33: the
default install and the release bundle serve MCP; in the bundle the command is the bundle's own
executable, see ``client_config``). It does not use ``from __future__ import annotations``: the SDK builds each
tool's JSON schema from the evaluated signature.
"""

import hmac
import os
import secrets
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from haiku.rag.bounds import bounded_field, bounded_metadata, bounded_source
from haiku.rag.errors import HaikuRAGError

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
TOKEN_ENV = "HAIKU_RAG_MCP_TOKEN"
TOKEN_FILE = "mcp-token"
MAX_TEXT_CHARS = 20_000
SNIPPET_CHARS = 2_000

INSTRUCTIONS = (
    "A haiku.rag document library. Use `search` to find passages; every result names its "
    "document, its 1-based pages and the boxes (PDF points, top-left origin) of the passage, and "
    "an author-year citation. Cite results by document title and page. `render_page` shows a "
    "page with a chunk highlighted; `get_document` / `get_chunk` read text; `list_documents` and "
    "`list_collections` show what the library holds (a collection name scopes `search`)."
)


def client_config(db_path: str, *, executable: str | None = None, name: str = "haiku-rag") -> dict[str, Any]:
    """The ``mcpServers`` entry to paste into an MCP client (Claude Desktop, IDEs) so it
    launches this library's server over stdio.

    In a frozen application (the release bundle, ``sys.frozen``) the command is the bundle's
    own executable, whose entry point turns into the ``haiku-rag`` command when its first
    argument is ``CLI_FLAG`` (``packaging/haiku_desk_main.py``): the same on every OS (no
    script or symlink needed). In an AppImage ``sys.executable`` lies in a mount made for this
    run only, so the command is the AppImage file itself (``$APPIMAGE``). Otherwise it is the ``haiku-rag`` script of this very
    installation (``sysconfig``'s scripts folder: ``bin/`` or ``Scripts\\haiku-rag.exe``),
    else the one on ``PATH``."""
    import shutil
    import sys
    import sysconfig
    from pathlib import Path

    from haiku.rag.child_process import CLI_FLAG

    args = ["--db", str(db_path), "mcp"]
    if executable is None and getattr(sys, "frozen", False):
        bundle = os.environ.get("APPIMAGE") or sys.executable
        return {"mcpServers": {name: {"command": bundle, "args": [CLI_FLAG, *args]}}}
    script = "haiku-rag.exe" if sys.platform == "win32" else "haiku-rag"
    beside = Path(sysconfig.get_path("scripts")) / script
    command = executable or (str(beside) if beside.is_file() else None) or shutil.which("haiku-rag") or str(beside)
    return {"mcpServers": {name: {"command": command, "args": args}}}


def _require_sdk() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError as exc:  # a default dependency: missing only from a broken install
        raise HaikuRAGError(
            "`haiku-rag mcp` needs the MCP SDK, which this installation lacks: reinstall haiku-desk "
            "(or pip install 'mcp>=2.3,<3')"
        ) from exc
    return MCPServer


def build_server(client: "HaikuRAG", *, allow_writes: bool = False) -> Any:
    """An ``MCPServer`` whose tools read (and, with ``allow_writes``, add to) ``client``'s library."""
    MCPServer = _require_sdk()
    from mcp.server.mcpserver import Image
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    from haiku import rag
    from haiku.rag.bibliography import author_year_citation, bibliographic

    server = MCPServer(name="haiku-rag", version=rag.__version__, instructions=INSTRUCTIONS)
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    async def resolve(document: str) -> Any:
        try:
            return await client.resolve_document(document)
        except HaikuRAGError as exc:
            raise ToolError(str(exc)) from exc

    async def scope(collection: str | None) -> list[str] | None:
        if not collection:
            return None
        try:
            return await client.collection_document_ids(collection)
        except HaikuRAGError as exc:
            raise ToolError(str(exc)) from exc

    def summary(document: Any) -> dict[str, Any]:
        record = bibliographic(document.metadata)
        out: dict[str, Any] = {
            "document_id": document.id,
            "title": bounded_field(document.display_name),
            "uri": bounded_field(document.uri),
            "pages": document.page_count,
            "chunks": document.chunk_count,
            "searchable": "hybrid" if document.index_state == "hybrid" else "full text only",
        }
        if record is not None:
            out["authors"] = bounded_metadata([c.display for c in record.authors])
            out["year"] = record.year
            if record.doi:
                out["doi"] = bounded_field(record.doi)
        return out

    @server.tool(annotations=read_only)
    async def search(
        query: str,
        limit: int = 5,
        collection: str | None = None,
        search_type: Literal["hybrid", "vector", "fts"] = "hybrid",
    ) -> list[dict[str, Any]]:
        """Search the library. Each result has the passage text, its document (id, title, URI),
        its 1-based pages, the boxes of the passage on those pages (PDF points, top-left origin),
        a score and an author-year-page citation. ``collection`` searches one collection only."""
        if not 1 <= limit <= 50:
            raise ToolError("limit must be between 1 and 50")
        if not query.strip():
            raise ToolError("the query is empty")
        try:
            results = await client.search(query, limit=limit, search_type=search_type, document_ids=await scope(collection))
        except HaikuRAGError as exc:
            raise ToolError(str(exc)) from exc
        return [
            {
                "rank": rank,
                "chunk_id": r.chunk_id,
                "document_id": r.document_id,
                "document_title": bounded_field(r.document_title or r.document_uri),
                "document_uri": bounded_field(r.document_uri),
                "pages": r.page_numbers,
                "headings": bounded_source("", r.headings)[1:],
                "boxes": [b.to_dict() for b in r.boxes],
                "score": round(r.score, 6),
                "citation": bounded_field(author_year_citation(r.document_meta, r.page_numbers, fallback_title=r.document_title)),
                "text": r.content[:SNIPPET_CHARS],
            }
            for rank, r in enumerate(results, start=1)
        ]

    @server.tool(annotations=read_only)
    async def get_document(document: str, include_text: bool = True, offset: int = 0, max_chars: int = MAX_TEXT_CHARS) -> dict[str, Any]:
        """A document (by id, exact title or URI): its metadata and, with ``include_text``, its
        text as Markdown from character ``offset`` (at most ``max_chars``; ``next_offset`` is
        set when more follows)."""
        found = await resolve(document)
        out = summary(found) | {"metadata": bounded_metadata(found.metadata)}
        if include_text:
            text = await client.get_content(found)
            size = max(1, min(max_chars, MAX_TEXT_CHARS))
            out["text"] = text[offset : offset + size]
            out["total_chars"] = len(text)
            out["next_offset"] = offset + size if offset + size < len(text) else None
        return out

    @server.tool(annotations=read_only)
    async def get_chunk(chunk_id: str) -> dict[str, Any]:
        """One chunk (a search result's ``chunk_id``): text, headings, pages and boxes."""
        try:
            chunk = await client.get_chunk(chunk_id)
            document = await client.get_document(chunk.document_id)
        except HaikuRAGError as exc:
            raise ToolError(str(exc)) from exc
        return {
            "chunk_id": chunk.id,
            "document_id": chunk.document_id,
            "document_title": bounded_field(document.display_name),
            "order": chunk.order,
            "headings": bounded_source("", chunk.headings)[1:],
            "pages": chunk.page_numbers,
            "boxes": [b.to_dict() for b in chunk.boxes],
            "citation": bounded_field(author_year_citation(document.metadata, chunk.page_numbers, fallback_title=document.display_name)),
            "text": chunk.content,
        }

    @server.tool(annotations=read_only)
    async def list_documents(collection: str | None = None, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]:
        """Documents in the library (or in one collection), oldest first."""
        ids = await scope(collection)
        documents = await client.list_documents()
        if ids is not None:
            wanted = set(ids)
            documents = [d for d in documents if d.id in wanted]
        return [summary(d) for d in documents[offset : offset + max(0, min(limit, 1000))]]

    @server.tool(annotations=read_only)
    async def list_collections() -> list[dict[str, Any]]:
        """Named sets of documents, with their document counts."""
        return [{"name": c.name, "documents": c.count, "document_ids": c.document_ids} for c in await client.list_collections()]

    @server.tool(annotations=read_only)
    async def render_page(document: str, page: int, chunk_id: str | None = None, dpi: float = 110) -> Image:
        """A PNG of one page (1-based) of a PDF document; with ``chunk_id``, the chunk's
        passage on that page is highlighted (as the citation panel of haiku-desk shows it)."""
        found = await resolve(document)
        if found.mime_type != "application/pdf":
            raise ToolError(f"{found.display_name} is not a PDF: it has no pages to render")
        if not 1 <= page <= found.page_count:
            raise ToolError(f"page {page} is out of range: {found.display_name} has {found.page_count} pages")
        if not 36 <= dpi <= 300:
            raise ToolError("dpi must be between 36 and 300")
        boxes = []
        if chunk_id:
            try:
                chunk = await client.get_chunk(chunk_id)
            except HaikuRAGError as exc:
                raise ToolError(str(exc)) from exc
            if chunk.document_id != found.id:
                raise ToolError(f"chunk {chunk_id} belongs to another document")
            boxes = [b for b in chunk.boxes if b.page == page]
        images = await client.visualize(found.id, boxes, [], [page], dpi=dpi)
        image = next(i for i in images if i.page == page)
        return Image(data=image.to_png(), format="png")

    if allow_writes:

        @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
        async def add_source(path: str) -> list[dict[str, Any]]:
            """Ingest a local file, or every file below a local folder, into the library."""
            try:
                outcomes = await client.add_source(path)
            except HaikuRAGError as exc:
                raise ToolError(str(exc)) from exc
            return [o.to_dict() for o in outcomes]

    return server


async def serve_stdio(client: "HaikuRAG", *, allow_writes: bool = False) -> None:
    await build_server(client, allow_writes=allow_writes).run_stdio_async()


def _token_guard(app: Any, token: str) -> Any:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>``."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            supplied = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(supplied, expected):
                body = b'{"error": "a valid bearer token is required"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                    (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


async def serve_http(
    client: "HaikuRAG",
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    allow_writes: bool = False,
    ready: Any = None,
    auth: bool = True,
    data_dir: "str | os.PathLike[str] | None" = None,
) -> None:
    """Streamable HTTP at ``http://host:port/mcp``, loopback only, behind a bearer token
    (``token``, ``HAIKU_RAG_MCP_TOKEN``, else the one stored in ``<data_dir>/mcp-token``)
    unless ``auth`` is False."""
    if host not in LOOPBACK_HOSTS:
        raise HaikuRAGError(f"--host {host}: the MCP server listens on loopback only ({', '.join(LOOPBACK_HOSTS)})")
    if not 0 <= port <= 65535:
        raise HaikuRAGError(f"--port {port} is not a TCP port")
    token = token or os.environ.get(TOKEN_ENV) or None
    if not auth:
        token = None
    elif token is None:
        token = stored_token(Path(data_dir) if data_dir is not None else client.config.storage.data_dir)
    import uvicorn

    server = build_server(client, allow_writes=allow_writes)
    app = server.streamable_http_app(host=host)
    if token:
        app = _token_guard(app, token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)
    if ready is not None:
        ready(web)
    await web.serve()


def token_path(data_dir: "str | os.PathLike[str]") -> Path:
    return Path(data_dir) / TOKEN_FILE


def stored_token(data_dir: "str | os.PathLike[str]", *, announce: Any = None) -> str:
    """The HTTP server's bearer token: read from ``<data_dir>/mcp-token``, or generated and
    written there (mode 0600, created exclusively) and announced once, on stderr."""
    path = token_path(data_dir)
    try:
        return _read_private(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:  # another server made it first
        return _read_private(path)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    (announce or _announce)(
        f"haiku-rag: MCP clients must send 'Authorization: Bearer {token}' (generated once; "
        f"kept in {path}, readable only by you)"
    )
    return token


def _read_private(path: Path) -> str:
    info = os.lstat(path)  # FileNotFoundError: none yet
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise HaikuRAGError(f"{path} is not a plain file; remove it and start the server again")
    if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o077):
        raise HaikuRAGError(
            f"{path} can be read or changed by other accounts (mode {stat.S_IMODE(info.st_mode):o}); "
            "remove it and start the server again for a new token"
        )
    token = path.read_text(encoding="utf-8").strip()
    if len(token) < 16:
        raise HaikuRAGError(f"{path} holds no usable token; remove it and start the server again")
    return token


def _announce(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
