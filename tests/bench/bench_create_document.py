"""Sequential ``HaikuRAG.create_document``, as a script user writes it, over SciFact abstracts.

    .venv/bin/python tests/bench/bench_create_document.py [--data ../shared/data] [--count 5183] [--window 300]

One document per call, each embedded before the next (the seeds' public call in a plain loop).
Reports documents/s of the first and the last ``--window`` calls, RSS every 500 documents, and
after the loop the store's size on disk, the text it holds and each table's version count.

First and last windows run minutes apart, and this machine's speed drifts that much (the same
OCR model call took 21 and 36 us a column half an hour apart). So the loop is followed by
``--rounds`` rounds that put the grown store beside a new one in the same minutes: a copy of
the grown store and a new empty store take ``--window`` more abstracts each (new URIs), in
alternating blocks of ``--block`` calls (each store first in turn; upkeep runs inside the
calls, so each block pays its own). The round's ratio is the grown store's documents/s over the new one's;
the report gives each round's and their median.
Upstream haiku.rag 0.77 is not installable from this machine's package index (it lists
0.1.0–0.6.0 only), so its 3.9–4.2 documents/s (issue 16) cannot be measured side by side here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


async def run(args: argparse.Namespace) -> dict:
    import psutil

    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    corpus = args.data / "retrieval_beir_scifact" / "corpus.jsonl"
    abstracts = [
        json.loads(line) for _, line in zip(range(args.count), corpus.open(), strict=False)
    ]
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
                await client.create_document(
                    item["text"], title=item["title"], uri=f"scifact://{item['_id']}"
                )
                seconds.append(time.perf_counter() - started)
                text_bytes += len(item["text"].encode())
                if n % 500 == 0 or n == len(abstracts):
                    rss.append((n, psutil.Process().memory_info().rss / 2**20))
                    session = client.store._session
                    print(
                        f"<!-- {n} documents, {sum(seconds[-500:]) / len(seconds[-500:]):.3f} s each lately, "
                        f"RSS {rss[-1][1]:.0f} MB, LanceDB caches {session.size_bytes / 2**20:.0f} MB, "
                        f"{disk_mb(location):.0f} MB on disk, load {os.getloadavg()[0]:.1f} -->",
                        file=sys.stderr,
                        flush=True,
                    )
            versions = {
                name: len(table.list_versions()) for name, table in client.store._tables.items()
            }
            # Same-run baseline: the bare embedder over the same documents' chunks, one call per
            # document as create_document makes it, for the first and the last window. What a
            # create_document costs beyond this is parsing, chunking and the store's writes.
            w = min(args.window, len(seconds))
            documents = await client.list_documents()
            by_uri = {d.uri: d for d in documents}
            embed_seconds: dict[str, float] = {}
            for label, window in (
                ("first", abstracts[:w]),
                ("last", abstracts[len(seconds) - w : len(seconds)]),
            ):
                total = 0.0
                for item in window:
                    chunks = await client.get_chunks(by_uri[f"scifact://{item['_id']}"])
                    started = time.perf_counter()
                    client.embedder.embed_documents([c.content for c in chunks])
                    total += time.perf_counter() - started
                embed_seconds[label] = total
        size = disk_mb(location)
        rounds = (
            await side_by_side(args, location, abstracts, config, Path(tmp)) if args.rounds else []
        )
    w = min(args.window, len(seconds))
    ratios = [r["grown_over_new"] for r in rounds]
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
        "side_by_side_rounds": rounds,
        "side_by_side_median": statistics.median(ratios) if ratios else None,
    }


class PhaseTimer:
    """Wall time of each phase of ``create_document`` per store (``name``), from wrappers
    around the functions that do them: the lookup and parse, the embedding, the write, the
    upkeep (``Store.maintain_indexes``, which returns quickly when nothing is due)."""

    def __init__(self) -> None:
        from haiku.rag.client import ingestion
        from haiku.rag.store import documents, engine

        self.labels: dict[int, str] = {}
        self.spent: dict[tuple[str, str], float] = {}
        self._wrap(ingestion, "parse_source", "lookup+parse", lambda args: args[0].store)
        self._wrap(documents, "write_document", "write", lambda args: args[0])
        self._wrap(engine.Store, "maintain_indexes", "upkeep", lambda args: args[0])

    def name(self, client: Any, label: str) -> None:
        self.labels[id(client.store)] = label
        embedder = client.embedder
        original = embedder.embed_documents
        store = client.store

        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self._add(store, "embed", time.perf_counter() - began)

        embedder.embed_documents = timed

    def _add(self, store: Any, phase: str, seconds: float) -> None:
        label = self.labels.get(id(store))
        if label is not None:
            self.spent[(label, phase)] = self.spent.get((label, phase), 0.0) + seconds

    def _wrap(self, owner: Any, attribute: str, phase: str, store_of: Any) -> None:
        original = getattr(owner, attribute)

        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self._add(store_of(args), phase, time.perf_counter() - began)

        setattr(owner, attribute, timed)

    def take(self, calls: int) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for (label, phase), seconds in sorted(self.spent.items()):
            out.setdefault(label, {})[phase] = round(seconds * 1000 / calls, 1)
        self.spent.clear()
        self.labels.clear()
        return out


async def side_by_side(
    args: argparse.Namespace, grown: Path, abstracts: list[dict], config, tmp: Path
) -> list[dict]:  # type: ignore[no-untyped-def]
    """Rounds of the grown store (a fresh copy each round) against a new one, in alternating
    blocks of calls."""
    import shutil

    from haiku.rag.client import HaikuRAG

    phases = PhaseTimer()
    rounds = []
    for r in range(args.rounds):
        items = abstracts[r * args.window : (r + 1) * args.window]
        if not items:
            break  # fewer abstracts than rounds x window
        copy, new = tmp / f"grown-{r}.lancedb", tmp / f"new-{r}.lancedb"
        shutil.copytree(grown, copy)
        spent = {"grown": 0.0, "new": 0.0}
        async with HaikuRAG(copy, config) as old, HaikuRAG(new, config, create=True) as fresh:
            phases.name(old, "grown")
            phases.name(fresh, "new")
            for client in (old, fresh):  # not timed: opening the tables, loading the embedder
                await client.create_document("Warming up.", uri=f"round{r}://warm-up")
            phases.spent.clear()
            for start in range(0, len(items), args.block):
                block = items[start : start + args.block]
                pair = [("grown", old), ("new", fresh)]
                for label, client in (
                    pair if start // args.block % 2 == 0 else pair[::-1]
                ):  # each goes first in turn
                    began = time.perf_counter()
                    for item in block:
                        await client.create_document(
                            item["text"], title=item["title"], uri=f"round{r}://{item['_id']}"
                        )
                    spent[label] += time.perf_counter() - began
        row = {
            "grown_docs_per_s": round(len(items) / spent["grown"], 2),
            "new_docs_per_s": round(len(items) / spent["new"], 2),
            "grown_over_new": round(spent["new"] / spent["grown"], 3),
            "load": round(os.getloadavg()[0], 1),
            # ms per call in each phase (wall, whichever thread ran it): where the difference goes
            "ms_per_call": phases.take(len(items)),
        }
        print(f"<!-- round {r + 1}: {row} -->", file=sys.stderr, flush=True)
        rounds.append(row)
        shutil.rmtree(copy)
        shutil.rmtree(new)
    return rounds


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--count", type=int, default=5183)
    parser.add_argument("--window", type=int, default=300)
    parser.add_argument("--tmp", type=Path, default=None)
    parser.add_argument(
        "--rounds", type=int, default=3, help="side-by-side rounds after the loop (0: none)"
    )
    parser.add_argument(
        "--block", type=int, default=25, help="calls per store in turn, side by side"
    )
    args = parser.parse_args()
    if not (args.data / "retrieval_beir_scifact" / "corpus.jsonl").is_file():
        print(f"skipped: no SciFact data under {args.data}")
        return 0
    print(json.dumps(asyncio.run(run(args)), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
