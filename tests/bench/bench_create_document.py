"""Sequential ``HaikuRAG.create_document``, as a script user writes it, over SciFact abstracts.

    .venv/bin/python tests/bench/bench_create_document.py [--data ../shared/data] [--count 5183] [--window 300]

One document per call, each embedded before the next (the seeds' public call in a plain loop).
Reports documents/s of the first and the last ``--window`` calls, RSS every 500 documents, and
after the loop the store's size on disk, the text it holds and each table's version count.
Upstream haiku.rag 0.77 is not installable from this machine's package index (it lists
0.1.0–0.6.0 only), so its 3.9–4.2 documents/s (issue 16) cannot be measured side by side here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


async def run(args: argparse.Namespace) -> dict:
    import psutil

    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    corpus = args.data / "retrieval_beir_scifact" / "corpus.jsonl"
    abstracts = [json.loads(line) for _, line in zip(range(args.count), corpus.open(), strict=False)]
    config = load_config()
    config.embeddings.threads = 2
    seconds: list[float] = []
    rss: list[tuple[int, float]] = []
    text_bytes = 0
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        location = Path(tmp) / "loop.lancedb"
        async with HaikuRAG(location, config, create=True) as client:
            for n, item in enumerate(abstracts, start=1):
                started = time.perf_counter()
                await client.create_document(item["text"], title=item["title"], uri=f"scifact://{item['_id']}")
                seconds.append(time.perf_counter() - started)
                text_bytes += len(item["text"].encode())
                if n % 500 == 0 or n == len(abstracts):
                    rss.append((n, psutil.Process().memory_info().rss / 2**20))
                    session = client.store._session
                    print(f"<!-- {n} documents, {sum(seconds[-500:]) / len(seconds[-500:]):.3f} s each lately, "
                          f"RSS {rss[-1][1]:.0f} MB, LanceDB caches {session.size_bytes / 2**20:.0f} MB, "
                          f"{disk_mb(location):.0f} MB on disk, load {os.getloadavg()[0]:.1f} -->", file=sys.stderr, flush=True)
            versions = {name: len(table.list_versions()) for name, table in client.store._tables.items()}
            # Same-run baseline: the bare embedder over the same documents' chunks, one call per
            # document as create_document makes it, for the first and the last window. What a
            # create_document costs beyond this is parsing, chunking and the store's writes.
            w = min(args.window, len(seconds))
            documents = await client.list_documents()
            by_uri = {d.uri: d for d in documents}
            embed_seconds: dict[str, float] = {}
            for label, window in (("first", abstracts[:w]), ("last", abstracts[len(seconds) - w : len(seconds)])):
                total = 0.0
                for item in window:
                    chunks = await client.get_chunks(by_uri[f"scifact://{item['_id']}"])
                    started = time.perf_counter()
                    client.embedder.embed_documents([c.content for c in chunks])
                    total += time.perf_counter() - started
                embed_seconds[label] = total
        size = disk_mb(location)
    w = min(args.window, len(seconds))
    return {
        "documents": len(seconds),
        "first_docs_per_s": round(w / sum(seconds[:w]), 2),
        "last_docs_per_s": round(w / sum(seconds[-w:]), 2),
        "embedder_only_first_docs_per_s": round(w / embed_seconds["first"], 2),
        "embedder_only_last_docs_per_s": round(w / embed_seconds["last"], 2),
        "rss_mb": [(n, round(v)) for n, v in rss],
        "disk_mb": round(size, 1),
        "text_mb": round(text_bytes / 1e6, 2),
        "disk_per_text": round(size / (text_bytes / 1e6), 1),
        "versions": versions,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--count", type=int, default=5183)
    parser.add_argument("--window", type=int, default=300)
    parser.add_argument("--tmp", type=Path, default=None)
    args = parser.parse_args()
    if not (args.data / "retrieval_beir_scifact" / "corpus.jsonl").is_file():
        print(f"skipped: no SciFact data under {args.data}")
        return 0
    print(json.dumps(asyncio.run(run(args)), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
