"""``haiku-rag ask``, ``analyze`` and ``chat``: the command line's way into answering.

All three answer through ``answer_stream`` with the same ``AnswerOptions`` the app builds from its
toggles, so a toggle reaches the command line, the app and the self-test alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from haiku.rag.errors import HaikuRAGError
from haiku.rag.files import write_text_atomic

CITATION_SNIPPET_CHARS = 200


def add_commands(sub: Any) -> None:
    """Register ``ask``, ``analyze`` and ``chat`` on the ``haiku-rag`` subparsers."""
    p = sub.add_parser("ask", help="answer a question from the library, with citations")
    p.add_argument("question")
    _answer_arguments(p, analysis_toggle=True)

    p = sub.add_parser(
        "analyze", help="answer a question by computing over the library in sandboxed Python"
    )
    p.add_argument("question")
    _answer_arguments(p, analysis_toggle=False)

    p = sub.add_parser(
        "chat", help="a conversation: one question per line on stdin, answers with citations"
    )
    p.add_argument(
        "--conversation",
        metavar="FILE",
        help="JSON file holding the conversation: read first when it exists, saved after each answer",
    )
    _answer_arguments(p, analysis_toggle=True)


def _answer_arguments(p: argparse.ArgumentParser, *, analysis_toggle: bool) -> None:
    p.add_argument("--filter", "-f", help="SQL filter over document fields: the documents in scope")
    p.add_argument(
        "--document",
        "-d",
        action="append",
        default=None,
        metavar="ID",
        help="answer from this document (id, title or URI); repeat for several",
    )
    p.add_argument(
        "--collection", "-c", metavar="NAME", help="answer from the documents of this collection"
    )
    p.add_argument(
        "--fallback",
        "--no-tools",
        dest="fallback",
        action="store_true",
        help="answer without tools (for models that cannot call them)",
    )
    p.add_argument(
        "--search-only", action="store_true", help="no model: list the best passages with citations"
    )
    p.add_argument(
        "--compaction",
        action="store_true",
        help="evidence compaction: earlier questions' evidence shrinks to what was cited",
    )
    p.add_argument(
        "--citation-policy",
        action="store_true",
        help="ask the model once to declare its sources when an answer ends undeclared",
    )
    if analysis_toggle:
        p.add_argument(
            "--analysis", action="store_true", help="add sandboxed analysis to the search tools"
        )
    p.add_argument("--json", action="store_true")


async def options_from(client: Any, args: argparse.Namespace, *, analyze: bool = False) -> Any:
    """``AnswerOptions`` from the command's flags; ``--filter``, ``--document`` and
    ``--collection`` resolve to the document ids in scope here, once."""
    from haiku.rag.answering import AnswerMode, AnswerOptions

    if args.fallback and args.search_only:
        raise HaikuRAGError("--fallback and --search-only are two different modes; pick one")
    document_ids: tuple[str, ...] | None = None
    if args.filter is not None:
        try:
            found = await client.list_documents(filter=args.filter)
        except HaikuRAGError:
            raise
        except Exception as exc:  # LanceDB reports bad SQL as a generic error
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise HaikuRAGError(
                f"--filter {args.filter!r} is not a valid SQL condition over document fields: {first}"
            ) from None
        document_ids = tuple(d.id for d in found)
    selections: list[tuple[str, ...]] = []
    if args.document:
        selections.append(tuple([(await client.resolve_document(n)).id for n in args.document]))
    if args.collection is not None:
        selections.append(tuple(await client.collection_document_ids(args.collection)))
    for selected in selections:  # several given: the documents all of them select
        if document_ids is None:
            document_ids = selected
        else:
            document_ids = tuple(i for i in selected if i in set(document_ids))
    mode: AnswerMode = "search-only" if args.search_only else "fallback" if args.fallback else "auto"
    return AnswerOptions(
        mode=mode,
        rag=not analyze,
        analysis=analyze or bool(getattr(args, "analysis", False)),
        evidence_compaction=args.compaction,
        citation_policy=args.citation_policy,
        document_ids=document_ids,
    )


async def cmd_ask(client: Any, args: argparse.Namespace) -> int:
    from haiku.rag.answering import answer

    done = await answer(client, args.question, None, await options_from(client, args))
    _print(done, args.json)
    return 0


async def cmd_analyze(client: Any, args: argparse.Namespace) -> int:
    from haiku.rag.answering import answer

    options = await options_from(client, args, analyze=True)
    done = await answer(client, args.question, None, options)
    _print(done, args.json)
    return 0


async def cmd_chat(client: Any, args: argparse.Namespace) -> int:
    """One question per stdin line, answered in one conversation; saved after every answer."""
    from haiku.rag.answering import Conversation, answer

    path = Path(args.conversation).expanduser() if args.conversation else None
    conversation = Conversation()
    if path is not None and path.exists():
        try:
            conversation = Conversation.from_json(path.read_bytes())
        except OSError as exc:
            raise HaikuRAGError(f"cannot read the conversation {path}: {exc.strerror}") from None
    options = await options_from(client, args)
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            print("> ", end="", flush=True)
        line = await asyncio.to_thread(sys.stdin.readline)
        if not line:
            break
        question = line.strip()
        if not question:
            continue
        done = await answer(client, question, conversation, options)
        if args.json:  # one JSON object per line, one line per answer
            print(json.dumps(answered_record(done), ensure_ascii=False, default=str), flush=True)
        else:
            _print(done, False)
            print(flush=True)
        if path is not None:
            save_conversation(path, conversation.to_json())
    return 0


def save_conversation(path: Path, data: str) -> None:
    """Write atomically: a crash leaves the previous file or the new one, never half of each."""
    write_text_atomic(path, data)


def answered_record(done: Any) -> dict[str, Any]:
    """An answer as ``--json`` prints it."""
    return {
        "answer": done.text,
        "citations": [
            {
                "index": c.index,
                "chunk_id": c.chunk_id,
                "document_id": c.document_id,
                "document_uri": c.document_uri,
                "document_title": c.document_title,
                "pages": c.page_numbers,
                # the pages as printed, where they differ from the PDF's sheets ({36: "22"})
                "page_labels": {str(p): label for p, label in c.page_labels.items()},
                "boxes": [b.to_dict() for b in c.boxes],
                "text": c.content,
            }
            for c in done.citations
        ],
        "grounding": done.grounding,
        # whether the cited text holds the answer's claims (haiku.rag.answering.support)
        "support": done.support.to_record() if done.support is not None else None,
        "basis": done.basis,
        "mode": done.mode,
        "tokens": {
            "input": done.tokens.input_tokens,
            "output": done.tokens.output_tokens,
            "requests": done.tokens.requests,
            "compaction_saved": done.tokens.compaction_saved,
        },
    }


def _print(done: Any, as_json: bool) -> None:
    from haiku.rag.citations import pages_label

    if as_json:
        print(json.dumps(answered_record(done), indent=2, ensure_ascii=False, default=str))
        return
    print(done.text)
    if done.citations:
        print()
    for c in done.citations:
        snippet = " ".join(c.content.split())[:CITATION_SNIPPET_CHARS]
        parts = [f"[{c.index}] {c.document_title or c.document_uri}", pages_label(c.page_numbers, c.page_labels), snippet]
        print(" — ".join(part for part in parts if part))
    print()
    print(f"grounding: {done.grounding}")
    if done.support is not None:
        print(f"support: {done.support.label}")
        for sentence in done.support.flagged:
            why = "no citation" if sentence.status == "uncited" else "not in the cited text"
            print(f"  {why}: {', '.join(sentence.missing)} — “{' '.join(sentence.text.split())}”")
