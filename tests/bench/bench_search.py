"""Hybrid search latency at 20k and 100k chunks, query embedding included.

    .venv/bin/python tests/bench/bench_search.py [--data ../shared/data] [--sizes 20000 100000]

Chunk texts are real sentences from the SciFact corpus (repeated with a varying prefix to
reach the size); their vectors are random unit vectors, because embedding 100k chunks takes
hours here and latency does not depend on what the vectors mean. Queries are real SciFact
queries, each embedded by the real default embedder (never cached: every query is new).
Reports p50/p95 per search type, median of 3 runs of the query set.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def sentences(data: Path, needed: int) -> list[str]:
    corpus = data / "retrieval_beir_scifact" / "corpus.jsonl"
    found: list[str] = []
    with corpus.open() as handle:
        for line in handle:
            text = json.loads(line)["text"]
            found.extend(s.strip() + "." for s in text.split(". ") if len(s) > 40)
            if len(found) >= needed:
                break
    variants = []
    i = 0
    while len(variants) < needed:
        base = found[i % len(found)]
        variants.append(base if i < len(found) else f"(variant {i // len(found)}) {base}")
        i += 1
    return variants


def queries(data: Path, n: int) -> list[str]:
    path = data / "retrieval_beir_scifact" / "queries.train.jsonl"
    return [json.loads(line)["text"] for line in path.open()][:n]


def build_store(location: Path, texts: list[str], per_document: int = 100) -> None:
    from haiku.rag.ingest.records import Box, ChunkRecord, ItemRecord
    from haiku.rag.store import documents as D
    from haiku.rag.store.engine import Store

    store = Store(str(location), create=True)
    rng = np.random.default_rng(7)
    batch: list[D.NewDocument] = []
    for start in range(0, len(texts), per_document):
        group = texts[start : start + per_document]
        items = [ItemRecord(i, f"#/texts/{i}", "text", t, [1 + i // 20], 0, [Box(1 + i // 20, 72, 72, 500, 90)]) for i, t in enumerate(group)]
        chunks = [ChunkRecord(i, t, t, [], ["text"], [f"#/texts/{i}"], [1 + i // 20], list(items[i].boxes)) for i, t in enumerate(group)]
        batch.append(
            D.NewDocument(
                uri=f"bench://doc/{start // per_document}", title=f"Doc {start // per_document}", metadata={},
                content_hash=str(start), mime_type="text/plain", page_count=5, source_bytes=b"",
                content="", docling_json="{}", items=items, chunks=chunks,
            )
        )
        if len(batch) == 50:
            _flush(store, batch, rng)
    if batch:
        _flush(store, batch, rng)
    # What a real library of this size gets from its ingest passes: indexes caught up and, from
    # 50k vectors, the ANN index (Store.maintain_indexes).
    store.maintain_indexes(force=True)
    store.close()


def _flush(store, batch, rng) -> None:
    from haiku.rag.store import documents as D

    written = D.write_documents(store, batch)
    store.ensure_vector_table("local", "all-MiniLM-L6-v2", 384)
    for document, chunk_ids in written:
        vectors = rng.standard_normal((len(chunk_ids), 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        D.add_vectors(store, [document] * len(chunk_ids), chunk_ids, vectors)
    D.mark_hybrid(store, [document for document, _ in written])
    batch.clear()


def _index_names(location: Path) -> list[str]:
    from haiku.rag.store import schema as S
    from haiku.rag.store.engine import Store

    store = Store(str(location), read_only=True)
    try:
        return [i.name for i in store.table(S.CHUNK_VECTORS).list_indices()]
    finally:
        store.close()


def measure(location: Path, query_set: list[str], search_type: str) -> list[float]:
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    config = load_config()
    config.embeddings.threads = 2
    client = HaikuRAG(location, config, read_only=True)
    client.search_sync("warm up the embedder and the indexes", 10, search_type)  # type: ignore[arg-type]
    timings = []
    for q in query_set:
        started = time.perf_counter()
        client.search_sync(q, 10, search_type)  # type: ignore[arg-type]
        timings.append((time.perf_counter() - started) * 1000)
    client.close()
    return timings


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not (args.data / "retrieval_beir_scifact").is_dir():
        print(f"skipped: no SciFact data under {args.data}")
        return 0
    print("| chunks | search | p50 ms | p95 ms |\n|---|---|---|---|")
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            location = Path(tmp) / "bench.lancedb"
            started = time.perf_counter()
            build_store(location, sentences(args.data, size))
            print(f"<!-- built {size} chunks in {time.perf_counter() - started:.0f} s, indexes: "
                  f"{_index_names(location)} -->", file=sys.stderr)
            for search_type in ("fts", "vector", "hybrid"):
                p50s, p95s = [], []
                for run in range(args.runs):
                    # new queries every run so the query-embedding cache never helps
                    qs = [f"{q} ({run})" for q in queries(args.data, args.queries)]
                    t = measure(location, qs, search_type)
                    p50s.append(statistics.median(t))
                    p95s.append(float(np.percentile(t, 95)))
                print(f"| {size} | {search_type} | {statistics.median(p50s):.1f} | {statistics.median(p95s):.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
