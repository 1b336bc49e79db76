"""The ``haiku-rag`` command.

A user mistake (a missing file, a bad filter, an unknown setting) prints one clear line on
stderr and exits non-zero; tracebacks are for bugs only (``--debug`` shows them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from haiku.rag import __version__
from haiku.rag.errors import HaikuRAGError, OperationCancelled

EXIT_ERROR = 1
EXIT_CANCELLED = 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="haiku-rag",
        description="Ingest documents into a local store and search them with page-exact citations.",
    )
    parser.add_argument("--version", action="version", version=f"haiku-rag {__version__}")
    parser.add_argument("--db", help="store location (default: $HAIKU_RAG_DB, then the data dir)")
    parser.add_argument("--config", help="YAML config file (default: $HAIKU_RAG_CONFIG_PATH, ./haiku.rag.yaml)")
    parser.add_argument("--read-only", action="store_true", help="open the store read-only")
    parser.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
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
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("ask", help="answer a question from the library, with citations")
    p.add_argument("question")
    p.add_argument("--filter", "-f", help="SQL filter over document fields")
    p.add_argument(
        "--fallback", action="store_true", help="answer without tools (for models that cannot call them)"
    )
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("analyze", help="answer a question by computing over the library in sandboxed Python")
    p.add_argument("question")
    p.add_argument("--filter", "-f", help="SQL filter over document fields")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("visualize", help="write PNGs of a chunk's pages with its text highlighted")
    p.add_argument("chunk_id")
    p.add_argument("--out", default=".", help="folder for the PNG files (default: .)")
    p.add_argument("--dpi", type=float, default=150)

    sub.add_parser("embed", help="compute vectors still missing (after --no-embed or an interruption)")
    sub.add_parser("rebuild", help="re-embed the whole library with the configured embedder")
    sub.add_parser("info", help="store statistics")
    sub.add_parser("doctor", help="check the store's integrity (read-only)")
    sub.add_parser("settings", help="print the effective configuration (secrets masked)")
    return parser


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
    from haiku.rag.config import load_config, redacted

    config = load_config(args.config)
    if args.command == "settings":
        import yaml

        print(yaml.safe_dump(redacted(config), sort_keys=False), end="")
        return 0

    writes = args.command in {"init", "add", "add-src", "delete", "embed", "rebuild"}
    if args.read_only and writes:
        raise HaikuRAGError(f"`{args.command}` writes to the store; drop --read-only")
    skip_validation = args.command in {"list", "get", "delete", "info", "visualize", "doctor"}
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
                print(f"{o.status:<10} {o.source}  ({detail})")
            else:
                print(f"{o.status:<10} {o.source}: {o.reason}")
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
        print(f"{d.id}  {d.index_state:<6} {d.page_count:>4}p  {d.title or '-'}  {d.uri}")
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
    results = await client.search(args.query, limit=args.limit, search_type=args.search_type, filter=args.filter)
    if args.expand:
        results = await client.expand_context(results)
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
        pages = ", ".join(str(p) for p in r.page_numbers) or "-"
        print(f"{rank}. {r.source_label}  p. {pages}  [score {r.score:.4f}]  chunk {r.chunk_id}")
        if r.headings:
            print(f"   section: {' > '.join(r.headings)}")
        snippet = " ".join(r.content.split())
        print(f"   {snippet[:400]}{'…' if len(snippet) > 400 else ''}")
        if r.boxes:
            shown = ", ".join(_format_box(b) for b in r.boxes[:4])
            more = f" (+{len(r.boxes) - 4} more)" if len(r.boxes) > 4 else ""
            print(f"   boxes: {shown}{more}")
    return 0


CITATION_SNIPPET_CHARS = 200


async def _cmd_ask(client: Any, args: argparse.Namespace) -> int:

    result = await client.ask(args.question, filter=args.filter, mode="fallback" if args.fallback else "auto")
    if args.json:
        _print_json(
            {
                "answer": result.answer,
                "citations": [
                    {
                        "index": c.index,
                        "chunk_id": c.chunk_id,
                        "document_id": c.document_id,
                        "document_uri": c.document_uri,
                        "document_title": c.document_title,
                        "pages": c.page_numbers,
                        "boxes": [b.to_dict() for b in c.boxes],
                        "text": c.content,
                    }
                    for c in result.citations
                ],
                "grounding": result.grounding,
                "mode": result.mode_used,
            }
        )
        return 0
    _print_cited_answer(result)
    return 0


async def _cmd_analyze(client: Any, args: argparse.Namespace) -> int:

    result = await client.analyze(args.question, filter=args.filter)
    if args.json:
        _print_json(
            {
                "answer": result.answer,
                "citations": [
                    {
                        "index": c.index,
                        "chunk_id": c.chunk_id,
                        "document_id": c.document_id,
                        "document_uri": c.document_uri,
                        "document_title": c.document_title,
                        "pages": c.page_numbers,
                        "text": c.content,
                    }
                    for c in result.citations
                ],
                "grounding": result.grounding,
            }
        )
        return 0
    _print_cited_answer(result)
    return 0


def _print_cited_answer(result: Any) -> None:
    """An answer, its numbered sources and its grounding, as ``ask`` and ``analyze`` print them."""
    from haiku.rag.qa import pages_label

    print(result.answer)
    if result.citations:
        print()
    for c in result.citations:
        snippet = " ".join(c.content.split())[:CITATION_SNIPPET_CHARS]
        parts = [f"[{c.index}] {c.document_title or c.document_uri}", pages_label(c.page_numbers), snippet]
        print(" — ".join(part for part in parts if part))
    print()
    print(f"grounding: {result.grounding}")


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
    return 0 if report.ok else EXIT_ERROR


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
    "visualize": _cmd_visualize,
    "embed": _cmd_embed,
    "rebuild": _cmd_rebuild,
    "info": _cmd_info,
    "doctor": _cmd_doctor,
}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        print("cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    except OperationCancelled:
        print("cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    except HaikuRAGError as exc:
        if args.debug:
            raise
        print(f"haiku-rag: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except (OSError, RuntimeError, ValueError) as exc:
        # A store file that turned unreadable after opening (lance reports it as a plain
        # error): one line, not a traceback. Anything else is a bug and keeps its traceback.
        if args.debug or not _is_storage_error(exc):
            raise
        first = str(exc).strip().splitlines()[0].split(", /")[0]
        print(f"haiku-rag: the store could not be read ({first}); run `haiku-rag doctor`", file=sys.stderr)
        return EXIT_ERROR


def _is_storage_error(exc: BaseException) -> bool:
    text = str(exc)
    return "lance error" in text.lower() or "Lance file" in text or type(exc).__module__.startswith("lance")


if __name__ == "__main__":
    sys.exit(main())
