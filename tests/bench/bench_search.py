"""Hybrid search latency at 20k, 100k and 1M chunks (query embedding included), and the ANN
index's recall@10 against exact search.

    .venv/bin/python tests/bench/bench_search.py [--data ../shared/data] [--sizes 20000 100000 1000000]
    .venv/bin/python tests/bench/bench_search.py --ann 200000 [--vectors-from STORE]
    nice -n 15 .venv/bin/python tests/bench/bench_search.py --sizes 1000000 --tmp DIR --build-only

With ``--tmp DIR`` each size's store is built once (in bulk: ``build_store``) and kept in DIR
for later runs, with the real embeddings: build them niced outside the heavy lock, then time
them under it (a 1M store takes ~45 min to build and index on loaded cores).

Chunk texts are real sentences from the SciFact corpus (repeated with a varying prefix to
reach the size). Their vectors derive from real MiniLM embeddings: ``--vectors-from`` names a
haiku.rag store whose vectors are real (e.g. SciFact built by bench_retrieval.py); without it
the default embedder embeds ``--real 3000`` SciFact sentences here. Embedding 1M chunks takes
days on these cores, so each chunk's vector is a mix of two real vectors plus a little noise
(normalised): it stays in the region of the space real text occupies (random vectors spread
evenly and understate an index's difficulty as much as they overstate it). Queries are real
SciFact queries, each embedded by the real default embedder (never cached: every query is
new). Reports p50/p95 per search type, median of 3 runs of the query set, beside the same
run's limits: the query embedding alone and the vector arm alone.

``--recall --tmp DIR --sizes N`` reports the same table for the kept store of N chunks, at the
vector arm's limit (10) and the hybrid pool's (40), against exact search over its vectors.

``--ann N`` builds only the vectors table (N derived vectors, the store's own ANN index) and
reports recall@10 of the index against exact search, and its latency, for several probe and
refine settings: what ``search.hybrid.AnnParameters`` is chosen from.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
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


def real_vectors(data: Path, source: Path | None, count: int) -> np.ndarray:
    """Real MiniLM embeddings: a store's vectors, or SciFact sentences embedded here."""
    if source is not None:
        import lancedb

        table = lancedb.connect(str(source)).open_table("chunk_vectors")
        flat = table.to_arrow()["vector"].combine_chunks()
        return np.asarray(flat.values.to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(flat), -1)
    from haiku.rag.embeddings.local import LocalEmbedder

    embedder = LocalEmbedder(threads=2)
    texts = sentences(data, count)[:count]
    vectors = embedder.embed_documents(texts)
    embedder.close()
    return vectors


def derived_vectors(real: np.ndarray, count: int, seed: int = 7, noise: float = 0.3) -> np.ndarray:
    """``count`` unit vectors, each 0.6 * one real vector + 0.4 * another + Gaussian noise."""
    rng = np.random.default_rng(seed)
    out = np.empty((count, real.shape[1]), dtype=np.float32)
    for start in range(0, count, 50_000):
        n = min(50_000, count - start)
        a = real[rng.integers(0, len(real), n)]
        b = real[rng.integers(0, len(real), n)]
        block = 0.6 * a + 0.4 * b + rng.standard_normal(a.shape).astype(np.float32) * (noise / np.sqrt(real.shape[1]))
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start : start + n] = block
    return out


# Bump when what build_store writes changes: a kept store of another recipe is built again.
STORE_RECIPE = 2


def build_store(location: Path, texts: list[str], vectors: np.ndarray, per_document: int = 100) -> None:
    """A library of ``len(texts)`` chunks, ``per_document`` to a document and 20 to a page, each
    with its vector; written in bulk (one Arrow append per table per 100k chunks, in the
    store's own schemas) and then given the index upkeep a real library of that size gets
    (``Store.maintain_indexes``: full-text and scalar indexes caught up, fragments compacted,
    from 50k vectors the ANN index). Writing the rows 50 documents at a time through
    ``write_documents`` made ~4 table versions per 5k chunks and did not fit a session at 1M.
    Items (context expansion's input) are not written: search never reads them.
    """
    import pyarrow as pa

    from haiku.rag.store import schema as S
    from haiku.rag.store.engine import Store, new_generation

    store = Store(str(location), create=True)
    store.ensure_vector_table("local", "all-MiniLM-L6-v2", 384)
    dim = vectors.shape[1]
    block = 100_000 - 100_000 % per_document
    now = "2026-12-02T00:00:00+00:00"
    for start in range(0, len(texts), block):
        group = texts[start : start + block]
        count = len(group)
        documents = [f"d{(start + i) // per_document:07d}" for i in range(0, count, per_document)]
        generations = [new_generation() for _ in documents]
        positions = [i % per_document for i in range(count)]
        pages = [1 + p // 20 for p in positions]
        ids = [f"c{start + i:08d}" for i in range(count)]
        document_of = [documents[i // per_document] for i in range(count)]
        generation_of = [generations[i // per_document] for i in range(count)]
        store.table(S.CHUNKS).add(pa.table({
            "id": ids, "document_id": document_of, "generation": generation_of,
            "order": pa.array(positions, pa.int32()), "content": group, "content_fts": group,
            "headings": [[] for _ in group], "labels": [["text"] for _ in group],
            "doc_item_refs": [[f"#/texts/{p}"] for p in positions],
            "page_numbers": [[page] for page in pages],
            "boxes": [f'[{{"page":{page},"x0":72,"y0":72,"x1":500,"y1":90}}]' for page in pages],
        }, schema=S.CHUNKS_SCHEMA))
        flat = pa.array(np.ascontiguousarray(vectors[start : start + count], dtype=np.float32).ravel())
        store.table(S.CHUNK_VECTORS).add(pa.table({
            "chunk_id": ids, "document_id": document_of, "generation": generation_of,
            "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
        }, schema=S.chunk_vectors_schema(dim)))
        store.table(S.DOCUMENT_BLOBS).add(pa.table({
            "document_id": documents, "generation": generations, "content": [""] * len(documents),
            "source_bytes": [b""] * len(documents), "docling_json": [b""] * len(documents),
        }, schema=S.DOCUMENT_BLOBS_SCHEMA))
        store.table(S.DOCUMENTS).add(pa.table({  # the commit point, last
            "id": documents, "uri": [f"bench://doc/{d}" for d in documents],
            "title": [f"Doc {d}" for d in documents], "metadata": ["{}"] * len(documents),
            "content_hash": documents, "mime_type": ["text/plain"] * len(documents),
            "page_count": pa.array([5] * len(documents), pa.int32()),
            "size_bytes": pa.array([0] * len(documents), pa.int64()),
            "chunk_count": pa.array([per_document] * len(documents), pa.int32()),
            "index_state": ["hybrid"] * len(documents), "generation": generations,
            "created_at": [now] * len(documents), "updated_at": [now] * len(documents),
        }, schema=S.DOCUMENTS_SCHEMA))
        print(f"<!-- {start + count} chunks written -->", file=sys.stderr, flush=True)
    store.maintain_indexes(force=True)
    store.close()


def kept_store(args: argparse.Namespace, size: int, real: np.ndarray) -> Path:
    """The store of ``size`` chunks under ``--tmp``, built once and reused by later runs (its
    ``built.json`` names the recipe: a store of another recipe, or half built, is built again)."""
    import shutil

    location = args.tmp / f"search-{size}.lancedb"
    marker = location / "built.json"
    recipe = {"recipe": STORE_RECIPE, "size": size, "real": len(real)}
    if marker.is_file() and json.loads(marker.read_text()) == recipe:
        return location
    shutil.rmtree(location, ignore_errors=True)
    started = time.perf_counter()
    build_store(location, sentences(args.data, size), derived_vectors(real, size))
    marker.write_text(json.dumps(recipe))
    print(f"<!-- built {size} chunks in {time.perf_counter() - started:.0f} s, indexes: "
          f"{_index_names(location)} -->", file=sys.stderr, flush=True)
    return location


def _index_names(location: Path) -> list[str]:
    from haiku.rag.store import schema as S
    from haiku.rag.store.engine import Store

    store = Store(str(location), read_only=True)
    try:
        return [i.name for i in store.table(S.CHUNK_VECTORS).list_indices()]
    finally:
        store.close()


def measure(location: Path, query_set: list[str], search_type: str, config_path: Path | None = None) -> list[float]:
    """Milliseconds per search; ``embed`` times the query embedding alone (a limit)."""
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    config = load_config(config_path)
    config.embeddings.threads = 2
    opened = time.perf_counter()
    client = HaikuRAG(location, config, read_only=True)
    client.warm_up_search()  # as the app does once a library is open
    # beyond the exact-search budget the store loads its indexes in the background once told
    # searches are coming (HaikuRAG.warm_up_search, Store.prewarm); a library is open for a while before it is searched, so the
    # timed queries start once that is done, and the time it took is reported
    if not client.store.wait_warm(120):
        print("<!-- index prewarm still running after 120 s -->", file=sys.stderr, flush=True)
    warm = time.perf_counter() - opened
    if warm > 0.5:
        print(f"<!-- opened and indexes prewarmed in {warm:.2f} s -->", file=sys.stderr, flush=True)
    client.search_sync("warm up the embedder and the indexes", 10, "hybrid")
    timings = []
    for q in query_set:
        started = time.perf_counter()
        if search_type == "embed":
            client.embedder.embed_query(q)
        else:
            client.search_sync(q, 10, search_type)  # type: ignore[arg-type]
        timings.append((time.perf_counter() - started) * 1000)
    client.close()
    return timings


def _runs(
    location: Path, data: Path, args: argparse.Namespace, search_type: str, config_path: Path | None = None
) -> tuple[float, float, list[float]]:
    p50s, p95s = [], []
    for run in range(args.runs):
        # new queries every run so the query-embedding cache never helps
        qs = [f"{q} ({run})" for q in queries(data, args.queries)]
        t = measure(location, qs, search_type, config_path)
        p50s.append(statistics.median(t))
        p95s.append(float(np.percentile(t, 95)))
    return statistics.median(p50s), statistics.median(p95s), p95s


def latency(args: argparse.Namespace, real: np.ndarray) -> None:
    if args.build_only:
        for size in args.sizes:
            print(f"built: {kept_store(args, size, real)}")
        return
    print("| chunks | search | p50 ms | p95 ms | p95 of each run |\n|---|---|---|---|---|")
    for size in args.sizes:
        with contextlib.ExitStack() as stack:
            if args.tmp is not None:  # kept between runs: a 1M store takes long to build
                location = kept_store(args, size, real)
            else:
                location = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "bench.lancedb"
                build_store(location, sentences(args.data, size), derived_vectors(real, size))
            print(f"<!-- {size} chunks, indexes: {_index_names(location)}, load {os.getloadavg()[0]:.2f} -->",
                  file=sys.stderr, flush=True)
            for search_type in ("embed", "fts", "vector", "hybrid"):
                p50, p95, each = _runs(location, args.data, args, search_type)
                runs = " / ".join(f"{v:.1f}" for v in each)
                print(f"| {size} | {search_type} | {p50:.1f} | {p95:.1f} | {runs} |", flush=True)
            if args.baseline_config is not None:  # the same store and queries, other settings
                p50, p95, each = _runs(location, args.data, args, "hybrid", args.baseline_config)
                runs = " / ".join(f"{v:.1f}" for v in each)
                print(f"| {size} | hybrid ({args.baseline_config.name}) | {p50:.1f} | {p95:.1f} | {runs} |", flush=True)


def ann(args: argparse.Namespace, real: np.ndarray) -> None:
    """Recall@10 and latency of the store's ANN index against exact search, per setting."""
    import pyarrow as pa

    from haiku.rag.embeddings.local import LocalEmbedder
    from haiku.rag.search.hybrid import AnnParameters, vector_hits
    from haiku.rag.store import schema as S
    from haiku.rag.store.engine import Store

    size = args.ann
    vectors = derived_vectors(real, size)
    embedder = LocalEmbedder(threads=2)
    query_vectors = embedder.embed_documents(queries(args.data, args.queries))
    embedder.close()
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        store = Store(str(Path(tmp) / "ann.lancedb"), create=True, exact_search_budget_bytes=0)
        table = store.ensure_vector_table("local", "all-MiniLM-L6-v2", 384)
        started = time.perf_counter()
        for start in range(0, size, 100_000):
            block = vectors[start : start + 100_000]
            ids = [f"c{start + i}" for i in range(len(block))]
            table.add(pa.table({
                "chunk_id": ids, "document_id": [f"d{(start + i) // 100}" for i in range(len(block))],
                "generation": ["g"] * len(block),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(block.ravel()), 384),
            }, schema=S.chunk_vectors_schema(384)))
        store._create_vector_index()
        print(f"<!-- {size} vectors written and indexed in {time.perf_counter() - started:.0f} s -->", file=sys.stderr, flush=True)
        exact = []
        for q in query_vectors:
            scores = vectors @ q
            exact.append({f"c{i}" for i in np.argpartition(-scores, 10)[:10]})
        print("| vectors | nprobes | refine | ef | recall@10 | p50 ms | p95 ms |\n|---|---|---|---|---|---|---|")
        settings = [(p, r, e) for p in args.nprobes for r in args.refine for e in (64,)]
        for nprobes, refine, ef in settings:
            params = AnnParameters(nprobes=nprobes, refine_factor=refine or None, ef=ef)
            vector_hits(store, query_vectors[0], 10, None, params)  # warm the index cache
            times, found = [], 0
            for _ in range(args.runs):
                for q, truth in zip(query_vectors, exact, strict=True):
                    t0 = time.perf_counter()
                    hits = vector_hits(store, q, 10, None, params)
                    times.append((time.perf_counter() - t0) * 1000)
                    found += len({h["chunk_id"] for h in hits} & truth)
            recall = found / (10 * len(exact) * args.runs)
            print(f"| {size} | {nprobes} | {refine} | {ef} | {recall:.3f} | {statistics.median(times):.1f} | "
                  f"{np.percentile(times, 95):.1f} |", flush=True)
        store.close()


def kept_recall(args: argparse.Namespace, real: np.ndarray) -> None:
    """Recall of the ANN index of each kept ``--tmp`` store against exact search over the same
    store's vectors, at the vector arm's limit (10) and the hybrid pool's (40), per setting;
    latency of ``vector_hits`` alone once the store's prewarm is done (run under the lock)."""
    from haiku.rag.embeddings.local import LocalEmbedder
    from haiku.rag.search.hybrid import AnnParameters, vector_hits
    from haiku.rag.store import schema as S
    from haiku.rag.store.engine import Store

    embedder = LocalEmbedder(threads=2)
    query_vectors = embedder.embed_documents(queries(args.data, args.queries))
    embedder.close()
    print("| chunks | nprobes | refine | ANN limit | recall@limit | recall@10 | p50 ms | p95 ms |\n|---|---|---|---|---|---|---|---|")
    for size in args.sizes:
        store = Store(str(kept_store(args, size, real)), read_only=True, exact_search_budget_bytes=0)
        rows = store.table(S.CHUNK_VECTORS).search().select(["chunk_id", "vector"]).limit(None).to_arrow()
        ids = np.asarray(rows["chunk_id"].to_pylist(), dtype=object)
        flat = rows["vector"].combine_chunks().values.to_numpy(zero_copy_only=False)
        vectors = np.asarray(flat, dtype=np.float32).reshape(len(ids), -1).copy()
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        exact = []
        for q in query_vectors:
            scores = vectors @ (q / np.linalg.norm(q))
            top = np.argpartition(-scores, 40)[:40]
            exact.append(list(ids[top[np.argsort(-scores[top])]]))
        del vectors, rows
        store.prewarm()
        store.wait_warm(120)
        for nprobes in args.nprobes:
            for refine in args.refine:
                params = AnnParameters(nprobes=nprobes, refine_factor=refine or None)
                for limit in (10, 40):
                    times, found, found10 = [], 0, 0
                    for _ in range(args.runs):
                        for q, truth in zip(query_vectors, exact, strict=True):
                            t0 = time.perf_counter()
                            hits = [h["chunk_id"] for h in vector_hits(store, q, limit, None, params)]
                            times.append((time.perf_counter() - t0) * 1000)
                            found += len(set(hits) & set(truth[:limit]))
                            found10 += len(set(hits[:10]) & set(truth[:10]))
                    n = len(query_vectors) * args.runs
                    print(f"| {size} | {nprobes} | {refine} | {limit} | {found / (limit * n):.3f} | "
                          f"{found10 / (10 * n):.3f} | {statistics.median(times):.1f} | {np.percentile(times, 95):.1f} |", flush=True)
        store.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--vectors-from", type=Path, default=None, help="a store with real vectors")
    parser.add_argument("--real", type=int, default=3000, help="SciFact sentences to embed when no store is given")
    parser.add_argument("--ann", type=int, default=0, help="only the ANN recall/latency table, at this size")
    parser.add_argument(
        "--recall", action="store_true",
        help="the ANN recall/latency table of the kept --tmp stores of --sizes (against exact search over their vectors)",
    )
    parser.add_argument("--nprobes", type=int, nargs="+", default=[10, 20, 40])
    parser.add_argument("--refine", type=int, nargs="+", default=[0, 2, 5])
    parser.add_argument(
        "--tmp", type=Path, default=None,
        help="where the stores go; with it, each size's store is kept there and reused by later runs",
    )
    parser.add_argument("--build-only", action="store_true", help="build the --tmp stores (niced, outside the lock), time nothing")
    parser.add_argument(
        "--baseline-config", type=Path, default=None,
        help="a haiku.rag YAML whose hybrid search is also timed on the same store (e.g. search stages off)",
    )
    args = parser.parse_args()
    if not (args.data / "retrieval_beir_scifact").is_dir():
        print(f"skipped: no SciFact data under {args.data}")
        return 0
    if args.vectors_from is not None and not (args.vectors_from / "chunk_vectors.lance").is_dir():
        print(f"skipped: no vectors in {args.vectors_from}")
        return 0
    started = time.perf_counter()
    cached = args.tmp / f"real-{args.real}.npy" if args.tmp is not None and args.vectors_from is None else None
    if cached is not None and cached.is_file():  # embedding them takes minutes on loaded cores
        real = np.load(cached)
    else:
        real = real_vectors(args.data, args.vectors_from, args.real)
        if cached is not None:
            np.save(cached, real)
    print(f"<!-- {len(real)} real vectors in {time.perf_counter() - started:.0f} s -->", file=sys.stderr, flush=True)
    if args.ann:
        ann(args, real)
    elif args.recall:
        if args.tmp is None:
            print("--recall needs --tmp (the kept stores)")
            return 2
        kept_recall(args, real)
    else:
        latency(args, real)
    return 0


if __name__ == "__main__":
    sys.exit(main())
