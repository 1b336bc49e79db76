"""Search results, byte for byte, over one generated store: run it with two versions of the code
on the same store and compare the digests (a refactor of ``search/hybrid.py`` must not change a
result, a score or an order).

    python tests/bench/check_search_identical.py build /tmp/fp.lancedb
    PYTHONPATH=<old tree>/haiku_rag python tests/bench/check_search_identical.py run /tmp/fp.lancedb old.jsonl
    PYTHONPATH=<new tree>/haiku_rag python tests/bench/check_search_identical.py run /tmp/fp.lancedb new.jsonl
    cmp old.jsonl new.jsonl

The store: ``--documents`` PDF-like documents of three pages with several chunks a page, words
drawn from a small vocabulary (so full-text scores differ and tie rarely), file names that
queries name, seeded unit vectors; a few documents are left without vectors (text-only). The
run goes through ``HaikuRAG.search_sync`` (the public path, the same in both versions) with a
deterministic query embedder, over every search type, fusion method, page grouping, name boost,
pool and weight setting, unscoped and scoped, exact (in memory) and through LanceDB's index path.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

DIM = 32
VOCABULARY = (
    "quokka lighthouse harbour convoy ledger marmalade albatross tariff customs fog route night "
    "crate broker island beacon keeper storm tide pier ferry cargo manifest almanac"
).split()
QUERIES = [
    "quokka lighthouse",
    "convoy fog night route",
    "customs broker ledger",
    "what does report-7 say about tariffs",
    "almanac of the harbour keeper",
    "ferry cargo manifest storm",
    "beacon",
]


class QueryEmbedder:
    """A seeded unit vector per query (no model: the same in every version and run)."""

    def embed_query(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        vector = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        return vector / np.linalg.norm(vector)

    def release(self) -> None:
        pass

    def close(self) -> None:
        pass


def build(location: Path, documents: int) -> None:
    from haiku.rag.ingest.records import Box, ChunkRecord, ItemRecord, NewDocument
    from haiku.rag.store import documents as D
    from haiku.rag.store.engine import Store

    rng = np.random.default_rng(31)
    store = Store(str(location), create=True)
    store.ensure_vector_table("local", "fingerprint", DIM)
    news = []
    for n in range(documents):
        items, chunks = [], []
        for page in (1, 2, 3):
            for k in range(int(rng.integers(2, 5))):
                words = rng.choice(VOCABULARY, size=int(rng.integers(8, 30)))
                text = " ".join(words) + f" paragraph {n}-{page}-{k}"
                box = Box(page, 72.0, 100.0 + 40 * k, 500.0, 130.0 + 40 * k)
                ref = f"#/texts/{len(items)}"
                items.append(ItemRecord(len(items), ref, "text", text, [page], 0, [box]))
                chunks.append(ChunkRecord(len(chunks), text, text, [f"Section {page}"], ["text"], [ref], [page], [box]))
        news.append(
            NewDocument(
                uri=f"file:///library/report-{n}.pdf",
                title=f"Report {n}",
                metadata={"n": n},
                content_hash=f"hash-{n}",
                mime_type="application/pdf",
                page_count=3,
                source_bytes=b"%PDF-fingerprint",
                content="\n\n".join(c.text for c in chunks),
                docling_json="{}",
                items=items,
                chunks=chunks,
            )
        )
    written = D.write_documents(store, news)
    embedded = []
    for index, (document, chunk_ids) in enumerate(written):
        if index % 7 == 3:  # text-only: its vectors never landed
            continue
        vectors = rng.standard_normal((len(chunk_ids), DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        D.add_vectors(store, [document] * len(chunk_ids), chunk_ids, vectors)
        embedded.append(document)
    D.mark_hybrid(store, embedded)
    store.maintain_indexes(force=True)
    store.close()
    print(f"built {location}: {documents} documents")


def variants() -> list[dict]:
    fusion = {"method": "score", "fts_weight": 1.0, "vector_weight": 1.0, "fts_only_share": 0.25}
    return [
        {},  # the configured defaults
        {"page_share": None, "name_weight": 0.0, "fusion": {**fusion, "method": "rrf"}},
        {"page_share": 0.5, "name_weight": 2.0},
        {"page_share": None, "fusion": {**fusion, "fts_only_share": 1.0}},
        {"fusion": {**fusion, "fts_weight": 0.0}},
        {"fusion": {**fusion, "vector_weight": 0.0}},
        {"fusion": {**fusion, "fts_pool": 3, "vector_pool": 5}, "candidate_factor": 2},
        {"fusion": {**fusion, "method": "rrf", "fts_weight": 2.0}, "rrf_k": 10, "page_share": 0.0},
        {"exact_search_budget_mb": 0},  # through LanceDB's vector search, not the matrix
        {"exact_search_budget_mb": 0, "page_share": None, "fusion": {**fusion, "method": "rrf"}},
    ]


def run(location: Path, out: Path) -> str:
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    lines: list[str] = []
    for number, variant in enumerate(variants()):
        config = load_config()
        config.search = config.search.model_validate({**config.search.model_dump(), **variant})
        client = HaikuRAG(location, config, read_only=True, skip_validation=True)
        client._embedder = QueryEmbedder()
        documents = sorted(client_documents(client))
        scopes = [None, documents[::3], documents[5:6]]
        for query in QUERIES:
            for search_type in ("hybrid", "fts", "vector"):
                for scope_number, scope in enumerate(scopes):
                    for limit in (3, 10):
                        results = client.search_sync(query, limit, search_type, document_ids=scope)
                        key = {"variant": number, "query": query, "type": search_type, "scope": scope_number, "limit": limit}
                        lines.append(json.dumps({**key, "results": [r.model_dump(mode="json") for r in results]}, sort_keys=True))
        client.close()
    text = "\n".join(lines) + "\n"
    out.write_text(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    print(f"{len(lines)} searches, sha256 {digest}")
    return digest


def client_documents(client) -> list[str]:
    from haiku.rag.store import documents as D

    return [d.id for d in D.list_documents(client.store)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("store", type=Path)
    b.add_argument("--documents", type=int, default=60)
    r = sub.add_parser("run")
    r.add_argument("store", type=Path)
    r.add_argument("out", type=Path)
    args = parser.parse_args()
    if args.command == "build":
        build(args.store, args.documents)
    else:
        run(args.store, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
