"""The ``haiku-rag`` command.

A user mistake (a missing file, a bad filter, an unknown setting) prints one clear line on
stderr and exits non-zero; tracebacks are for bugs only (``--debug`` shows them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from haiku.rag import __version__
from haiku.rag.errors import HaikuRAGError, OperationCancelled

log = logging.getLogger("haiku.rag")

EXIT_ERROR = 1
EXIT_CANCELLED = 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="haiku-rag",
        description="Ingest documents into a local store and search them with page-exact citations.",
    )
    parser.add_argument("--version", action="version", version=f"haiku-rag {__version__}")
    parser.add_argument("--db", help="store location (default: $HAIKU_RAG_DB, then the data dir)")
    parser.add_argument(
        "--config",
        help="YAML config file (default: $HAIKU_RAG_CONFIG_PATH, then ./haiku.rag.yaml unless it sets an "
        "endpoint, then <data dir>/haiku.rag.yaml)",
    )
    parser.add_argument("--read-only", action="store_true", help="open the store read-only")
    parser.add_argument(
        "--debug", action="store_true", help="log everything (to stderr and the log file) and show tracebacks"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    sub.add_parser("init", help="create an empty store")

    p = sub.add_parser("add", help="add a document from text")
    p.add_argument("text")
    p.add_argument("--title")
    p.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE")

    p = sub.add_parser("add-src", help="add a file, or every file below a folder")
    p.add_argument("source")
    p.add_argument("--title")
    p.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--password", help="password of an encrypted PDF")
    p.add_argument("--no-embed", action="store_true", help="full-text only for now (embed later)")
    p.add_argument("--json", action="store_true", help="one JSON record per file")
    p.add_argument(
        "--progress-json",
        action="store_true",
        help="report progress on stderr as JSON lines (stage, source, done, total, message)",
    )

    p = sub.add_parser("add-zotero", help="import a Zotero library's PDFs with their metadata and collections")
    p.add_argument(
        "source", nargs="?", metavar="PROFILE_OR_SQLITE",
        help="Zotero data directory, its zotero.sqlite, or a Zotero profile folder (default: ~/Zotero)",
    )
    p.add_argument("--base-dir", help="base directory of files linked relative to it (Zotero's Linked Attachment Base Directory)")
    p.add_argument("--no-embed", action="store_true", help="full-text only for now (embed later)")
    p.add_argument("--json", action="store_true", help="the import report as JSON")

    p = sub.add_parser("list", help="list documents")
    p.add_argument("--filter", "-f", help="SQL filter over document fields, e.g. \"title LIKE '%%report%%'\"")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("get", help="show a document")
    p.add_argument("document", help="document id, title or URI")
    p.add_argument("--content", action="store_true", help="print the full text")

    p = sub.add_parser("delete", help="delete a document")
    p.add_argument("document", help="document id, title or URI")

    p = sub.add_parser("search", help="search the library")
    p.add_argument("query")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--filter", "-f")
    p.add_argument("--search-type", choices=["hybrid", "vector", "fts"], default="hybrid")
    p.add_argument("--expand", action="store_true", help="show section-expanded context")
    p.add_argument("--collection", "-c", metavar="NAME", help="search only the documents of this collection")
    p.add_argument("--json", action="store_true")

    from haiku.rag.answering.cli import add_commands as add_answering_commands

    add_answering_commands(sub)  # ask, analyze, chat

    p = sub.add_parser("visualize", help="write PNGs of a chunk's pages with its text highlighted")
    p.add_argument("chunk_id")
    p.add_argument("--out", default=".", help="folder for the PNG files (default: .)")
    p.add_argument("--dpi", type=float, default=150)

    _collections_parser(sub)
    _extract_parser(sub)

    p = sub.add_parser("cite", help="author-year citations, or a BibTeX / CSL-JSON bibliography, of documents")
    p.add_argument("documents", nargs="+", metavar="DOCUMENT", help="document id, title or URI")
    p.add_argument("--pages", help="cited pages, e.g. 6 or 6-8 (text format)")
    p.add_argument("--format", choices=["text", "bibtex", "csl-json"], default="text")

    p = sub.add_parser("mcp", help="serve the library to MCP clients (stdio, or streamable HTTP on loopback)")
    p.add_argument("--http", action="store_true", help="streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument(
        "--token",
        help="the bearer token HTTP clients must send (default: $HAIKU_RAG_MCP_TOKEN, else one "
        "generated once and kept in <data dir>/mcp-token, mode 0600)",
    )
    p.add_argument(
        "--no-auth", action="store_true",
        help="serve HTTP without a token: any local account can then search the library",
    )
    p.add_argument("--allow-writes", action="store_true", help="open the store writable and add an ingest tool")
    p.add_argument("--print-config", action="store_true", help="print the mcpServers entry for an MCP client and exit")

    sub.add_parser("embed", help="compute vectors still missing (after --no-embed or an interruption)")
    sub.add_parser("rebuild", help="re-embed the whole library with the configured embedder")
    sub.add_parser("info", help="store statistics")
    p = sub.add_parser("doctor", help="check the store's integrity (read-only unless --repair)")
    p.add_argument("--repair", action="store_true", help="rebuild damaged indexes from the stored rows")
    p = sub.add_parser("backup", help="copy the store, consistently, even while it is being written")
    p.add_argument("destination", help="a new folder for the copy")
    sub.add_parser(
        "restore-version", help="roll a damaged store (e.g. a copy taken mid-write) back to its last complete version"
    )
    sub.add_parser("settings", help="print the effective configuration (secrets masked)")
    return parser


def _collections_parser(sub: Any) -> None:
    p = sub.add_parser("collections", help="named sets of documents: list, show, create, add, remove, rename, delete")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    a = actions.add_parser("list", help="collections with their document counts")
    a.add_argument("--json", action="store_true")
    a = actions.add_parser("show", help="the documents of a collection")
    a.add_argument("name")
    a.add_argument("--json", action="store_true")
    for action, text in (("create", "create a collection"), ("add", "add documents to a collection")):
        a = actions.add_parser(action, help=text)
        a.add_argument("name")
        a.add_argument("documents", nargs="*", metavar="DOCUMENT", help="document id, title or URI")
        a.add_argument("--folder", help="also every document whose file is below this folder")
        a.add_argument("--filter", "-f", help="also every document matching this SQL filter")
        if action == "add":
            a.add_argument("--create", action="store_true", help="create the collection if it does not exist")
    a = actions.add_parser("remove", help="remove documents from a collection (they stay in the library)")
    a.add_argument("name")
    a.add_argument("documents", nargs="+", metavar="DOCUMENT")
    a = actions.add_parser("rename", help="rename a collection")
    a.add_argument("name")
    a.add_argument("new_name")
    a = actions.add_parser("delete", help="delete a collection (its documents stay in the library)")
    a.add_argument("name")


class _InOrder(argparse.Action):
    """Appends like ``action="append"`` and also records ``(option, value)`` in the order given
    (``args.column_specs``), so a bare ``--type``/``--question`` belongs to the ``--column``
    before it."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: Any = None) -> None:
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), values])
        specs = getattr(namespace, "column_specs", None) or []
        namespace.column_specs = [*specs, (self.dest, values)]


def _extract_parser(sub: Any) -> None:
    p = sub.add_parser(
        "extract",
        help="an evidence table: each column's question answered from each document alone, cited to its page",
    )
    rows = p.add_mutually_exclusive_group(required=True)
    rows.add_argument("--collection", "-c", metavar="NAME", help="one row per document of this collection")
    rows.add_argument("--documents", nargs="+", metavar="DOCUMENT", help="one row per document (id, title or URI)")
    p.add_argument(
        "--column", action=_InOrder, default=[], metavar="NAME",
        help="a column: its name is the question unless --question says otherwise; repeat for several",
    )  # fmt: skip
    p.add_argument(
        "--type", action=_InOrder, default=[], metavar="[COLUMN=]TYPE",
        help="a column's type: text (default), number, number:UNIT, yes-no, category:A,B,C; without "
        "COLUMN=, the --column just before it",
    )  # fmt: skip
    p.add_argument(
        "--question", action=_InOrder, default=[], metavar="[COLUMN=]QUESTION",
        help="the question a column asks; without COLUMN=, the --column just before it",
    )  # fmt: skip
    p.add_argument(
        "--mode", choices=["auto", "tools", "fallback", "search"], default="auto",
        help="tools: a tool-calling model; fallback: a model without tools; search: no model, the best "
        "passage per cell; auto (default): as the configured model allows",
    )  # fmt: skip
    p.add_argument(
        "--table", metavar="NAME",
        help="keep the table in the library under this name: run again to continue an interrupted fill "
        "(default: a one-off table, removed afterwards)",
    )  # fmt: skip
    p.add_argument("--recompute", action="store_true", help="with --table: answer every cell again (hand edits kept)")
    formats = p.add_mutually_exclusive_group()
    for name in ("json", "csv", "markdown", "xlsx", "bibtex"):
        formats.add_argument(f"--{name}", dest="format", action="store_const", const=name)
    p.set_defaults(format="markdown")
    p.add_argument("--out", "-o", metavar="FILE", help="write the table here (needed for --xlsx) instead of stdout")


COLLECTION_READS = {"list", "show"}


def _meta(pairs: list[str]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise HaikuRAGError(f"--meta expects KEY=VALUE, got {pair!r}")
        try:
            result[key] = json.loads(value)
        except json.JSONDecodeError:
            result[key] = value
    return result


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def _safe(text: object) -> str:
    """Text from files and documents for a terminal: control characters (an escape sequence
    in a title could retitle the window or clear the screen) shown as escapes, not sent."""
    text = str(text).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


class _ProgressLine:
    """A single updating status line on stderr when it is a terminal."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()

    def __call__(self, progress: Any) -> None:
        if not self.enabled:
            return
        name = Path(progress.source).name if progress.source else ""
        amount = f" {progress.done}/{progress.total}" if progress.total else ""
        sys.stderr.write(f"\r\033[K{progress.stage.value}{amount} {name}"[:160])
        sys.stderr.flush()

    def clear(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


class _JsonProgress:
    """Progress as one JSON object per line on stderr, e.g.
    ``{"stage": "recognising text", "source": "...", "done": 3, "total": 12, "message": ""}``."""

    def __call__(self, progress: Any) -> None:
        record = {
            "stage": progress.stage.value,
            "source": progress.source,
            "done": progress.done,
            "total": progress.total,
            "message": progress.message,
        }
        sys.stderr.write(json.dumps(record, ensure_ascii=False) + "\n")
        sys.stderr.flush()

    def clear(self) -> None:
        pass


def _format_box(box: Any) -> str:
    return f"p{box.page} ({box.x0:.0f},{box.y0:.0f})-({box.x1:.0f},{box.y1:.0f})"


async def _run(args: argparse.Namespace) -> int:
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import is_working_folder_file, load_config, redacted

    config = load_config(args.config)
    from haiku.rag.logs import configure_logging

    configure_logging("haiku-rag", config.storage.data_dir, debug=args.debug)
    source = config.source_file
    if is_working_folder_file(source) and args.command != "settings":
        # not the person's own settings folder, nor a file they named: say so every time
        print(f"haiku-rag: using settings from {source} (the current folder)", file=sys.stderr)
    if args.command == "settings":
        import yaml

        read = f"{source}" if source else "none (built-in defaults and HAIKU_RAG_* environment variables)"
        print(f"# settings file read: {_safe(read)}")
        print(yaml.safe_dump(redacted(config), sort_keys=False), end="")
        return 0

    if args.command in _STORE_FILE_COMMANDS:
        return await _STORE_FILE_COMMANDS[args.command](args, config)
    writes = args.command in {"init", "add", "add-src", "delete", "embed", "rebuild", "add-zotero", "extract"} or (
        args.command == "collections" and args.action not in COLLECTION_READS
    ) or (args.command == "mcp" and args.allow_writes)
    if args.command == "mcp" and args.print_config:
        from haiku.rag.config import resolve_db_path
        from haiku.rag.mcp_server import client_config

        location = config.lancedb.uri or str(resolve_db_path(args.db, config))
        _print_json(client_config(location if "://" in location else str(Path(location).resolve())))
        return 0
    if args.read_only and writes:
        raise HaikuRAGError(f"`{args.command}` writes to the store; drop --read-only")
    # rebuild: the configured embedder is the new one; the store's is what it replaces
    skip_validation = args.command in {"list", "get", "delete", "info", "visualize", "doctor", "collections", "cite", "rebuild"}
    async with HaikuRAG(
        args.db, config, create=writes, read_only=args.read_only or not writes, skip_validation=skip_validation
    ) as client:
        handler = _HANDLERS[args.command]
        return await handler(client, args)


async def _cmd_init(client: Any, args: argparse.Namespace) -> int:
    print(f"store ready at {client.location}")
    return 0


async def _cmd_add(client: Any, args: argparse.Namespace) -> int:
    document = await client.create_document(args.text, title=args.title, metadata=_meta(args.meta))
    print(f"added {document.id} {document.title or ''}".rstrip())
    return 0


async def _cmd_add_src(client: Any, args: argparse.Namespace) -> int:
    progress: Any = _JsonProgress() if args.progress_json else _ProgressLine()
    source = Path(args.source).expanduser()
    if source.is_file():
        outcomes = [
            await client.ingest_file(
                source,
                title=args.title,
                metadata=_meta(args.meta),
                password=args.password,
                progress=progress,
                embed=not args.no_embed,
            )
        ]
    else:
        if args.title or args.password:
            raise HaikuRAGError("--title and --password apply to a single file, not a folder")
        outcomes = await client.add_source(source, progress=progress, embed=not args.no_embed)
    progress.clear()
    if args.json:
        _print_json([o.to_dict() for o in outcomes])
    else:
        for o in outcomes:
            if o.document is not None:
                d = o.document
                detail = f"{d.chunk_count} chunks, {d.page_count} pages, {d.index_state}"
                print(f"{o.status:<10} {_safe(o.source)}  ({detail})")
            else:
                print(f"{o.status:<10} {_safe(o.source)}: {_safe(o.reason)}")
        counts: dict[str, int] = {}
        for o in outcomes:
            counts[o.status] = counts.get(o.status, 0) + 1
        print(", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no files found")
    if len(outcomes) == 1 and outcomes[0].status == "failed" and source.is_file():
        return EXIT_ERROR
    return 0


async def _cmd_list(client: Any, args: argparse.Namespace) -> int:
    documents = await client.list_documents(filter=args.filter)
    if args.json:
        _print_json([d.model_dump(mode="json") for d in documents])
        return 0
    for d in documents:
        print(f"{d.id}  {d.index_state:<6} {d.page_count:>4}p  {_safe(d.title or '-')}  {_safe(d.uri)}")
    if not documents:
        print("no documents")
    return 0


async def _cmd_get(client: Any, args: argparse.Namespace) -> int:
    document = await client.resolve_document(args.document)
    for key, value in document.model_dump(mode="json").items():
        print(f"{key}: {value}")
    if args.content:
        print()
        print(await client.get_content(document))
    return 0


async def _cmd_delete(client: Any, args: argparse.Namespace) -> int:
    document = await client.resolve_document(args.document)
    await client.delete_document(document.id)
    print(f"deleted {document.id} {document.title or document.uri}")
    return 0


async def _cmd_search(client: Any, args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise HaikuRAGError("--limit must be at least 1")
    scope = await client.collection_document_ids(args.collection) if args.collection else None
    notices: list[str] = []
    results = await client.search(
        args.query, limit=args.limit, search_type=args.search_type, filter=args.filter, document_ids=scope,
        notices=notices,
    )
    for notice in notices:
        print(f"haiku-rag: notice: {notice}", file=sys.stderr)
    if args.expand:
        results = await client.expand_context(results)
    from haiku.rag.citations import pages_label, printed_labels

    if args.json:
        _print_json(
            [
                {
                    "chunk_id": r.chunk_id,
                    "chunk_ids": r.chunk_ids,
                    "document_id": r.document_id,
                    "document_uri": r.document_uri,
                    "document_title": r.document_title,
                    "page_numbers": r.page_numbers,
                    # the pages as printed where they differ from the PDF's sheets ({"36": "22"})
                    "page_labels": {str(p): label for p, label in printed_labels(r.document_meta, r.page_numbers).items()},
                    "headings": r.headings,
                    "boxes": [b.to_dict() for b in r.boxes],
                    "score": r.score,
                    "text": r.content,
                }
                for r in results
            ]
        )
        return 0
    if not results:
        print("no results")
    for rank, r in enumerate(results, start=1):
        # the pages as printed ("pp. 22–23" for a book's PDF sheets 36–37)
        pages = pages_label(r.page_numbers, printed_labels(r.document_meta, r.page_numbers)) or "p. -"
        print(f"{rank}. {_safe(r.source_label)}  {pages}  [score {r.score:.4f}]  chunk {r.chunk_id}")
        if r.headings:
            print(f"   section: {_safe(' > '.join(r.headings))}")
        snippet = _safe(" ".join(r.content.split()))
        print(f"   {snippet[:400]}{'…' if len(snippet) > 400 else ''}")
        if r.boxes:
            shown = ", ".join(_format_box(b) for b in r.boxes[:4])
            more = f" (+{len(r.boxes) - 4} more)" if len(r.boxes) > 4 else ""
            print(f"   boxes: {shown}{more}")
    return 0


async def _cmd_ask(client: Any, args: argparse.Namespace) -> int:
    from haiku.rag.answering.cli import cmd_ask

    return await cmd_ask(client, args)


async def _cmd_analyze(client: Any, args: argparse.Namespace) -> int:
    from haiku.rag.answering.cli import cmd_analyze

    return await cmd_analyze(client, args)


async def _cmd_chat(client: Any, args: argparse.Namespace) -> int:
    from haiku.rag.answering.cli import cmd_chat

    return await cmd_chat(client, args)


async def _cmd_visualize(client: Any, args: argparse.Namespace) -> int:
    pages = await client.visualize_chunk(args.chunk_id, dpi=args.dpi)
    if not pages:
        raise HaikuRAGError("this chunk's document has no pages to render (not a PDF)")
    out = Path(args.out).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    for page in pages:
        target = out / f"{args.chunk_id}-p{page.page}.png"
        target.write_bytes(page.to_png())
        print(target)
    return 0


async def _cmd_embed(client: Any, args: argparse.Namespace) -> int:
    progress = _ProgressLine()
    count = await client.embed_pending(progress=progress)
    progress.clear()
    print(f"embedded {count} chunks")
    return 0


async def _cmd_rebuild(client: Any, args: argparse.Namespace) -> int:
    progress = _ProgressLine()
    count = await client.rebuild(progress=progress)
    progress.clear()
    print(f"re-embedded {count} chunks")
    return 0


async def _cmd_info(client: Any, args: argparse.Namespace) -> int:
    for key, value in (await client.info()).items():
        print(f"{key}: {value}")
    return 0


async def _cmd_doctor(client: Any, args: argparse.Namespace) -> int:
    from haiku.rag.doctor import run_doctor

    try:
        expected_dim = client.configured_embedder()[2]
    except HaikuRAGError:  # no usable embedder configured: check the store on its own terms
        expected_dim = None
    report = await asyncio.to_thread(run_doctor, client.store, expected_dim)
    for check in report.checks:
        mark = "ok  " if check.ok else "FAIL"
        print(f"{mark} {check.name}" + (f": {check.detail}" if check.detail and not check.ok else ""))
    if getattr(args, "repair", False) and report.damaged_indexes:
        from haiku.rag.doctor import repair_indexes

        rebuilt = await asyncio.to_thread(repair_indexes, client.store, report.damaged_indexes)
        print(f"repaired: rebuilt {', '.join(rebuilt)} from the stored rows; checking again")
        report = await asyncio.to_thread(run_doctor, client.store, expected_dim)
        for check in report.checks:
            if not check.ok:
                print(f"FAIL {check.name}: {check.detail}")
        print("all checks pass" if report.ok else "some checks still fail")
    return 0 if report.ok else EXIT_ERROR


async def _cmd_add_zotero(client: Any, args: argparse.Namespace) -> int:
    from haiku.rag.zotero import import_zotero

    progress = _ProgressLine()
    result = await import_zotero(client, args.source, base_dir=args.base_dir, progress=progress, embed=not args.no_embed)
    progress.clear()
    if args.json:
        _print_json(result.to_dict())
        return 0
    for o in result.outcomes:
        detail = f": {o.reason}" if o.reason else ""
        print(f"{o.status:<10} {o.key}  {o.title}{detail}")
    for name, count in result.collections.items():
        mark = "updated" if name in result.collections_written else "unchanged"
        print(f"collection {name}: {count} document(s) ({mark})")
    for key, reason in result.skipped:
        if reason.startswith("collection not imported"):
            print(f"skipped    {key}  {reason}")
    counts = ", ".join(f"{n} {status}" for status, n in sorted(result.counts().items()))
    print(f"{counts or 'no PDF attachments found'}; {len(result.skipped)} skipped (not PDFs, links, unusable collections)")
    return 0


async def _cmd_cite(client: Any, args: argparse.Namespace) -> int:
    from haiku.rag.bibliography import (
        author_year_citation,
        bibliographic_of,
        bibliography_of_answer,
    )

    documents = [await client.resolve_document(name) for name in args.documents]
    if args.format != "text":
        print(await bibliography_of_answer(client, [_DocumentRef(d.id) for d in documents], args.format), end="")
        return 0
    pages = _pages_arg(args.pages)
    for document in documents:
        record = await bibliographic_of(client, document)
        print(f"{author_year_citation(record, pages, fallback_title=document.display_name)}  {document.display_name}")
    return 0


class _DocumentRef:
    def __init__(self, document_id: str) -> None:
        self.document_id = document_id


def _pages_arg(text: str | None) -> list[int]:
    if not text:
        return []
    first, _, last = text.partition("-")
    try:
        start, stop = int(first), int(last or first)
    except ValueError:
        raise HaikuRAGError(f"--pages expects N or N-M, got {text!r}") from None
    if start < 1 or stop < start:
        raise HaikuRAGError(f"--pages expects N or N-M with 1 <= N <= M, got {text!r}")
    return list(range(start, stop + 1))


async def _cmd_mcp(client: Any, args: argparse.Namespace) -> int:
    from haiku.rag import mcp_server

    if args.http:
        if args.no_auth:
            print(
                "haiku-rag: WARNING: --no-auth: the MCP server takes requests without a token; "
                "any account on this machine can search (and with --allow-writes, add to) this library",
                file=sys.stderr,
            )
        elif not (args.token or os.environ.get(mcp_server.TOKEN_ENV)):
            print(f"haiku-rag: bearer token in {mcp_server.token_path(client.config.storage.data_dir)}", file=sys.stderr)
        print(f"haiku-rag MCP server at http://{args.host}:{args.port}/mcp", file=sys.stderr)
        await mcp_server.serve_http(
            client, host=args.host, port=args.port, token=args.token, allow_writes=args.allow_writes,
            auth=not args.no_auth, data_dir=client.config.storage.data_dir,
        )
    else:
        await mcp_server.serve_stdio(client, allow_writes=args.allow_writes)
    return 0


async def _cmd_collections(client: Any, args: argparse.Namespace) -> int:
    if args.action == "list":
        found = await client.list_collections()
        if args.json:
            _print_json([c.to_dict() for c in found])
        for c in [] if args.json else found:
            print(f"{c.count:>5}  {c.name}")
        if not found and not args.json:
            print("no collections")
        return 0
    if args.action == "show":
        collection = await client.get_collection(args.name)
        documents = await client.list_documents()
        members = [d for d in documents if d.id in set(collection.document_ids)]
        if args.json:
            _print_json({**collection.to_dict(), "documents": [d.model_dump(mode="json") for d in members]})
            return 0
        print(f"{collection.name}: {collection.count} document(s)")
        for d in members:
            print(f"{d.id}  {d.page_count:>4}p  {d.title or '-'}  {d.uri}")
        return 0
    if args.action in ("create", "add"):
        ids = await _resolve_documents(client, args.documents, folder=args.folder, filter=args.filter)
        if args.action == "create":
            collection = await client.create_collection(args.name, ids)
        else:
            collection = await client.add_to_collection(args.name, ids, create=args.create)
        print(f"{collection.name}: {collection.count} document(s)")
        return 0
    if args.action == "remove":
        ids = await _resolve_documents(client, args.documents)
        collection = await client.remove_from_collection(args.name, ids)
        print(f"{collection.name}: {collection.count} document(s)")
        return 0
    if args.action == "rename":
        collection = await client.rename_collection(args.name, args.new_name)
        print(f"renamed to {collection.name}")
        return 0
    collection = await client.delete_collection(args.name)
    print(f"deleted collection {collection.name} ({collection.count} document(s) stay in the library)")
    return 0


async def _resolve_documents(
    client: Any, names: list[str], *, folder: str | None = None, filter: str | None = None
) -> list[str]:
    """Document ids from ids/titles/URIs, a folder (documents whose file is below it) and a filter."""
    ids = [(await client.resolve_document(name)).id for name in names]
    if folder:
        from haiku.rag.ingest.pipeline import file_uri

        root = Path(folder).expanduser().resolve()
        if not root.is_dir():
            raise HaikuRAGError(f"--folder {folder}: not a folder")
        prefix = file_uri(root).rstrip("/") + "/"
        ids += [d.id for d in await client.list_documents() if d.uri.startswith(prefix)]
    if filter:
        ids += [d.id for d in await client.list_documents(filter=filter)]
    return list(dict.fromkeys(ids))


def _store_location(args: argparse.Namespace, config: Any) -> str:
    from haiku.rag.config import resolve_db_path

    location = config.lancedb.uri or resolve_db_path(args.db, config)
    if config.lancedb.uri or not Path(location).is_dir():
        raise HaikuRAGError(f"no local haiku.rag store at {location}")
    return str(location)


async def _cmd_doctor_damaged(args: argparse.Namespace, config: Any) -> int:
    """``doctor`` on a store that does not open: say why, and which version is complete."""
    from haiku.rag.client import HaikuRAG
    from haiku.rag.errors import StoreDamagedError

    try:
        client = HaikuRAG(args.db, config, read_only=not args.repair, skip_validation=True)
    except StoreDamagedError as exc:
        print(f"FAIL the store opens: {exc}")
        from haiku.rag.store.versions import find_complete_cut

        cut, unreadable = await asyncio.to_thread(find_complete_cut, _store_location(args, config))
        if cut is None:
            print("FAIL a complete earlier version is inside: none found; restore the folder from a backup")
        else:
            print(f"ok   last complete version: {cut.describe()}")
            if unreadable:
                print(f"     behind {len(unreadable)} unreadable newest manifest(s) ({', '.join(unreadable[:3])}), copied half-way")
            print("     `haiku-rag restore-version` rolls the store back to it (later changes are lost)")
        return EXIT_ERROR
    async with client:
        return await _cmd_doctor(client, args)


async def _cmd_restore_version(args: argparse.Namespace, config: Any) -> int:
    from haiku.rag.doctor import run_doctor
    from haiku.rag.store.engine import Store
    from haiku.rag.store.versions import find_complete_cut, restore_cut, set_aside_unreadable

    location = _store_location(args, config)
    cut, unreadable = await asyncio.to_thread(find_complete_cut, location)
    if cut is None:
        raise HaikuRAGError(f"no complete version found in {location}; restore the folder from a backup")
    if unreadable:
        moved = await asyncio.to_thread(set_aside_unreadable, location)
        print(f"set aside {len(moved)} unreadable manifest(s) in <table>.lance/_versions.unreadable/")
    await asyncio.to_thread(restore_cut, location, cut)
    store = Store(location)  # recovery removes what the cut left half-written
    try:
        report = await asyncio.to_thread(run_doctor, store)
    finally:
        store.close()
    print(f"restored the version of {cut.describe()}")
    return 0 if report.ok else EXIT_ERROR


async def _cmd_backup(args: argparse.Namespace, config: Any) -> int:
    from haiku.rag.store.versions import backup

    destination = Path(args.destination).expanduser()
    cut = await asyncio.to_thread(backup, _store_location(args, config), destination)
    print(f"backed up the store as of {cut.describe()} to {destination}")
    return 0


_STORE_FILE_COMMANDS: dict[str, Callable[[argparse.Namespace, Any], Coroutine[Any, Any, int]]] = {
    "doctor": _cmd_doctor_damaged,
    "restore-version": _cmd_restore_version,
    "backup": _cmd_backup,
}


def _extract_columns(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The columns of ``haiku-rag extract`` from ``--column``, ``--type`` and ``--question``."""
    if not args.column:
        raise HaikuRAGError("give at least one --column (its name is the question it asks)")
    columns: dict[str, dict[str, Any]] = {}
    for name in args.column:
        key = " ".join(name.split()).casefold()
        if key in columns:
            raise HaikuRAGError(f"--column {name!r} is given twice")
        columns[key] = {"name": name}
    known = ", ".join(repr(c["name"]) for c in columns.values())

    last: dict[str, Any] | None = None
    for option, value in getattr(args, "column_specs", []):
        if option == "column":
            last = columns[" ".join(value.split()).casefold()]
            continue
        name, sep, rest = value.partition("=")
        named = columns.get(" ".join(name.split()).casefold()) if sep else None
        if named is not None:
            column, given = named, rest.strip()
        elif option == "type" and sep:
            raise HaikuRAGError(f"--type expects [COLUMN=]TYPE naming a --column ({known}), got {value!r}")
        elif last is None:
            raise HaikuRAGError(f"--{option} {value!r} names no column: put it after its --column or write COLUMN=…")
        else:
            column, given = last, value.strip()
        if option == "question":
            column["question"] = given
            continue
        base, _, detail = given.partition(":")
        if base == "number":
            column.update(type="number", unit=detail.strip() or None)
        elif base == "category":
            column.update(type="category", categories=[c.strip() for c in detail.split(",") if c.strip()])
        elif base in ("text", "yes-no") and not detail:
            column["type"] = base
        else:
            raise HaikuRAGError(
                f"--type {value!r}: the type is text, number, number:UNIT, yes-no or category:A,B,C"
            )
    return list(columns.values())


async def _cmd_extract(client: Any, args: argparse.Namespace) -> int:
    from haiku.rag import extraction
    from haiku.rag.extraction.errors import TableNotFoundError
    from haiku.rag.operations import CancelToken

    if args.format == "xlsx" and not args.out:
        raise HaikuRAGError("--xlsx writes a spreadsheet: give the file with --out FILE")
    if args.recompute and not args.table:
        raise HaikuRAGError("--recompute answers a kept table again: name it with --table")
    columns = _extract_columns(args)
    if args.documents:
        document_ids = list(dict.fromkeys([(await client.resolve_document(d)).id for d in args.documents]))
    else:
        document_ids = await client.collection_document_ids(args.collection)
    if args.table:
        try:
            table = await extraction.load_table(client, args.table)
        except TableNotFoundError:
            table = await extraction.create_table(
                client, args.table, columns, document_ids=document_ids, collection=args.collection
            )
        else:
            table = await _matching_table(client, table, columns, document_ids)
    else:
        import uuid

        name = f"haiku-rag extract {uuid.uuid4().hex[:8]}"
        table = await extraction.create_table(client, name, columns, document_ids=document_ids, collection=args.collection)
    mode: Any = "search-only" if args.mode == "search" else args.mode
    progress = _ProgressLine()
    try:
        await extraction.fill_table(
            client, table.id, extraction.FillOptions(mode=mode), progress=progress,
            recompute=args.recompute, cancel=CancelToken(),
        )  # fmt: skip
        progress.clear()
        data = await extraction.export_table(client, table.id, args.format, args.out)
    finally:
        progress.clear()
        if not args.table:
            await extraction.delete_table(client, table.id)
    if args.out:
        print(f"wrote {_safe(args.out)}", file=sys.stderr)
    else:
        text = data if isinstance(data, str) else ""
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


async def _matching_table(client: Any, table: Any, columns: list[dict[str, Any]], document_ids: list[str]) -> Any:
    """A kept table continued by ``extract --table``: the same rows; columns given that it
    lacks are added (a column it has keeps its cells unless its question or type changed)."""
    from haiku.rag import extraction

    if set(document_ids) != set(table.document_ids):
        await extraction.set_rows(client, table.id, document_ids)
    for column in columns:
        wanted = extraction.Column.of(column)
        existing = next((c for c in table.columns if c.name.casefold() == wanted.name.casefold()), None)
        if existing is None:
            await extraction.add_column(client, table.id, wanted)
        elif existing.prompt != wanted.prompt:
            await extraction.update_column(
                client, table.id, existing.id, question=wanted.question, type=wanted.type,
                unit=wanted.unit, categories=wanted.categories,
            )  # fmt: skip
    return await extraction.load_table(client, table.id)


_HANDLERS: dict[str, Callable[[Any, argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "init": _cmd_init,
    "add": _cmd_add,
    "add-src": _cmd_add_src,
    "list": _cmd_list,
    "get": _cmd_get,
    "delete": _cmd_delete,
    "search": _cmd_search,
    "ask": _cmd_ask,
    "analyze": _cmd_analyze,
    "chat": _cmd_chat,
    "visualize": _cmd_visualize,
    "embed": _cmd_embed,
    "rebuild": _cmd_rebuild,
    "info": _cmd_info,
    "doctor": _cmd_doctor,
    "collections": _cmd_collections,
    "add-zotero": _cmd_add_zotero,
    "cite": _cmd_cite,
    "mcp": _cmd_mcp,
    "extract": _cmd_extract,
}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        code = asyncio.run(_run(args))
        sys.stdout.flush()  # inside the handlers: a reader gone away is met here, not at exit
        return code
    except KeyboardInterrupt:
        print("cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    except OperationCancelled:
        print("cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    except BrokenPipeError:
        # the reader went away (`haiku-rag list | head -1`): not an error of ours. Later
        # writes (the interpreter's final flush) go nowhere instead of failing again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0
    except HaikuRAGError as exc:
        log.info("haiku-rag %s failed", args.command, exc_info=True)
        if args.debug:
            return _crash_report(exc)
        print(f"haiku-rag: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except (OSError, RuntimeError, ValueError) as exc:
        # A store file that turned unreadable after opening (lance reports it as a plain
        # error): one line, not a traceback. Anything else is a bug and keeps its traceback.
        if args.debug or not _is_storage_error(exc):
            log.exception("haiku-rag %s: unexpected error", args.command)
            return _crash_report(exc)
        from haiku.rag.logs import redact

        first = redact(str(exc).strip().splitlines()[0].split(", /")[0])
        print(f"haiku-rag: the store could not be read ({first}); run `haiku-rag doctor`", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:
        log.exception("haiku-rag %s: unexpected error", args.command)
        return _crash_report(exc)


def _crash_report(exc: BaseException) -> int:
    """The traceback, as Python would print it, with every credential masked: a provider's
    error body (a 401 echoing the key) or a URL with a password is part of the chain."""
    import traceback

    from haiku.rag.logs import redact

    sys.stderr.write(redact("".join(traceback.format_exception(exc))))
    sys.stderr.flush()
    return EXIT_ERROR


def _is_storage_error(exc: BaseException) -> bool:
    text = str(exc)
    return "lance error" in text.lower() or "Lance file" in text or type(exc).__module__.startswith("lance")


if __name__ == "__main__":
    sys.exit(main())
