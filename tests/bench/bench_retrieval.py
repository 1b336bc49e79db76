"""Retrieval quality: SciFact (BEIR, train split) and FinanceBench page hits.

    .venv/bin/python tests/bench/bench_retrieval.py scifact [--data DIR] [--db DIR] [--dump FILE]
    .venv/bin/python tests/bench/bench_retrieval.py financebench [--data DIR] [--db DIR] [--dump FILE]

Data comes from ``--data``, else ``$HAIKU_SHARED_DATA``, else ``../shared/data``; a missing set
is skipped with one line. Everything goes through the public API (``HaikuRAG``: the batch
import, ``add_source``, ``embed_pending``, ``search_sync``); search settings come from the usual
config (``--config FILE`` or ``HAIKU_RAG_SEARCH__...`` variables), so a "before" run is the same
command with the old values.

SciFact: every abstract becomes a document (title as heading + abstract) through the real
pipeline (converter, HybridChunker, default embedder); each train query is searched with
limit 100 and chunk hits are collapsed to documents by best rank. Reports nDCG@10 and
Recall@100 per arm, on all train queries and on its two halves (``split_of``: the "tune" half
is where fusion settings were chosen, the "held" half is only reported).

FinanceBench: the public questions' filings are ingested through ``add_source``; a question
counts when its 0-based evidence page is among the pages of the top-5 hits, searched within
that question's filing (a reader with it open) and across the one store of all filings (the
app's default; a hit counts only from the question's own filing), also per hash half of the
questions (``split_of``: settings are chosen on the "tune" half).

Arms: fts, vector, hybrid and hybrid+rerank. The last runs only when a reranker is configured
(``search.rerank``, e.g. ``--rerank-url http://127.0.0.1:8080/v1``): no installed package ships
cross-encoder weights offline, so without a server it is reported as not run.

``--db`` keeps the built store so a second run skips ingestion. ``--dump FILE`` writes each
query's full-text and vector chunk rankings (``--dump-depth`` deep) for ``tune_fusion.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARMS = ("fts", "vector", "hybrid", "hybrid+rerank")


def ndcg_at_10(ranked: list[str], relevant: dict[str, int]) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    hits = {d for d in ranked[:k] if relevant.get(d, 0) > 0}
    return len(hits) / sum(1 for g in relevant.values() if g > 0)


def split_of(query_id: str) -> str:
    """A fixed half of the queries ("tune" or "held"), by a hash of the id: no data peeking."""
    return "tune" if hashlib.sha256(query_id.encode()).digest()[0] % 2 == 0 else "held"


def default_data() -> Path:
    return Path(os.environ.get("HAIKU_SHARED_DATA") or REPO.parent / "shared" / "data")


async def build_scifact(client, data: Path) -> None:
    from haiku.rag.client import ImportItem

    if await client.list_documents(limit=1):
        await client.embed_pending()  # finish an interrupted earlier build
        return
    corpus = [json.loads(line) for line in (data / "retrieval_beir_scifact" / "corpus.jsonl").open()]
    started = time.perf_counter()
    items = (
        ImportItem(
            f"# {record['title']}\n\n{record['text']}\n", uri=f"scifact://{record['_id']}",
            filename=f"{record['_id']}.md", title=record["title"],
        )
        for record in corpus
    )
    outcomes = await client.import_documents(items, embed=False)  # the public batch import
    parsed = time.perf_counter() - started
    embedded = await client.embed_pending()
    print(f"ingested {sum(o.document is not None for o in outcomes)} abstracts: parse+chunk {parsed:.0f} s, "
          f"embedded {embedded} chunks in {time.perf_counter() - started - parsed:.0f} s", file=sys.stderr)
    client.store.optimize()


def scifact_qrels(data: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    folder = data / "retrieval_beir_scifact" / "qrels"
    path = next(p for p in folder.iterdir() if "train" in p.name)
    for line in path.open():
        parts = line.strip().split("\t")
        if len(parts) < 3 or parts[0] == "query-id":
            continue
        qrels[parts[0]][parts[1]] = int(parts[2])
    return qrels


def run_arm(clients: dict, arm: str, query: str, limit: int, filter: str | None = None):
    """One search of ``arm``: hybrid+rerank is a hybrid search of the reranking client."""
    return clients[arm].search_sync(query, limit, "hybrid" if arm == "hybrid+rerank" else arm, filter)


def _describe_settings(client) -> str:
    search = client.config.search
    fusion = search.fusion
    return (f"rrf_k={search.rrf_k} candidate_factor={search.candidate_factor} fts_weight={fusion.fts_weight} "
            f"vector_weight={fusion.vector_weight} fts_pool={fusion.fts_pool} vector_pool={fusion.vector_pool} "
            f"method={fusion.method} fts_only_share={getattr(fusion, 'fts_only_share', None)} page_share={getattr(search, 'page_share', None)} "
            f"name_weight={getattr(search, 'name_weight', None)} rerank={search.rerank.provider}")


def dump_rankings(
    client, queries: dict[str, str], depth: int, filters: dict[str, str | None] | None = None,
    arms: tuple[str, ...] = ("fts", "vector"),
) -> dict:
    """Per query, the fts and vector chunk rankings (chunk id, document uri, pages, score), raw:
    one result per chunk, no naming boost, whatever the configured search does on top."""
    search = client.config.search
    saved = getattr(search, "page_share", None), getattr(search, "name_weight", 0.0)
    if hasattr(search, "page_share"):
        search.page_share, search.name_weight = None, 0.0
    out = {}
    try:
        for qid, text in queries.items():
            entry = {}
            for arm in arms:
                results = client.search_sync(text, depth, arm, (filters or {}).get(qid))
                entry[arm] = [[r.chunk_id, r.document_uri, r.page_numbers, r.score] for r in results]
            out[qid] = entry
    finally:
        if hasattr(search, "page_share"):
            search.page_share, search.name_weight = saved
    return out


def not_run(arm: str, clients: dict, wanted: set[str], text_only: bool = False) -> str | None:
    """Why ``arm`` is not measured in this run, or None when it is."""
    if arm not in wanted:
        return "not asked for (--arms)"
    if text_only and arm != "fts":
        return "text only"
    if arm not in clients:
        return "no reranker configured (search.rerank)"
    return None


async def eval_scifact(
    clients: dict, data: Path, dump: Path | None, depth: int, wanted: set[str], max_queries: int | None = None
) -> None:
    client = clients["hybrid"]
    qrels = scifact_qrels(data)
    queries = {
        q["_id"]: q["text"]
        for q in map(json.loads, (data / "retrieval_beir_scifact" / "queries.train.jsonl").open())
        if q["_id"] in qrels
    }
    if max_queries:
        queries = dict(list(queries.items())[:max_queries])
    print(f"settings: {_describe_settings(clients.get('hybrid+rerank', client))}")
    print("| search | nDCG@10 | Recall@100 | nDCG@10 tune half | nDCG@10 held half | queries | s/query |")
    print("|---|---|---|---|---|---|---|")
    rankings: dict[str, dict] = {}
    for arm in ARMS:
        if reason := not_run(arm, clients, wanted):
            print(f"| {arm} | not run: {reason} | | | | | |", flush=True)
            continue
        ndcgs: dict[str, list[float]] = {"tune": [], "held": []}
        recalls = []
        started = time.perf_counter()
        # with --dump, a single arm's search goes --dump-depth deep once: its first 100 are
        # the limit-100 search (same ranking), the rest feeds tune_fusion.py
        deep = dump is not None and arm in ("fts", "vector")
        if deep and (getattr(client.config.search, "page_share", None) is not None or getattr(client.config.search, "name_weight", 0)):
            print("--dump wants the raw arms: set search.page_share: null and search.name_weight: 0", file=sys.stderr)
            return
        for qid, text in queries.items():
            results = run_arm(clients, arm, text, depth if deep else 100)
            if deep:
                rankings.setdefault(qid, {})[arm] = [[r.chunk_id, r.document_uri, r.page_numbers, r.score] for r in results]
                results = results[:100]
            ranked = list(dict.fromkeys(r.document_uri.removeprefix("scifact://") for r in results))
            ndcgs[split_of(qid)].append(ndcg_at_10(ranked, qrels[qid]))
            recalls.append(recall_at(ranked, qrels[qid], 100))
        every = ndcgs["tune"] + ndcgs["held"]
        per_query = (time.perf_counter() - started) / len(every)
        print(f"| {arm} | {sum(every) / len(every):.4f} | {sum(recalls) / len(recalls):.4f} | "
              f"{_mean(ndcgs['tune'])} | {_mean(ndcgs['held'])} | {len(every)} | {per_query:.3f} |", flush=True)
    if dump:
        documents = {d.uri: d.title for d in await client.list_documents()}
        dump.write_text(json.dumps({"queries": queries, "qrels": qrels, "rankings": rankings, "documents": documents}))
        print(f"wrote {dump}", file=sys.stderr)


def _mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):.4f} ({len(values)})" if values else "-"


async def financebench(
    clients: dict, data: Path, text_only: bool, dump: Path | None, depth: int, wanted: set[str]
) -> None:
    client = clients["hybrid"]
    folder = data / "qa_financebench" / "pdfs"
    if not await client.list_documents(limit=1):
        started = time.perf_counter()
        outcomes = await client.add_source(folder, embed=not text_only)
        failed = [o for o in outcomes if o.status == "failed"]
        print(f"ingested {len(outcomes) - len(failed)} filings in {time.perf_counter() - started:.0f} s; failed: "
              f"{[(o.source, o.reason) for o in failed]}", file=sys.stderr)
        client.store.optimize()
    if not text_only:
        await client.embed_pending()
    documents = await client.list_documents()
    by_name = {Path(d.uri).stem: d for d in documents}
    questions = [json.loads(line) for line in (data / "qa_financebench" / "questions.public.jsonl").open()]
    asked = [q for q in questions if q["doc_name"] in by_name]
    print(f"settings: {_describe_settings(clients.get('hybrid+rerank', client))}")
    print(f"{len(asked)} of {len(questions)} public questions have their filing; one store of {len(documents)} filings")
    print("| search | within the filing | across all filings | right filing in top 5 (across) "
          "| within: tune / held half | across: tune / held half |\n|---|---|---|---|---|---|")
    for arm in ARMS:
        if reason := not_run(arm, clients, wanted, text_only):
            print(f"| {arm} | not run: {reason} | | |", flush=True)
            continue
        within = across = right_filing = 0
        halves: dict[str, list[int]] = {"tune": [0, 0, 0], "held": [0, 0, 0]}  # questions, within, across
        for q in asked:
            document = by_name[q["doc_name"]]
            pages = {e["evidence_page_num"] + 1 for e in q["evidence"] if e.get("doc_name", q["doc_name"]) == q["doc_name"]}
            results = run_arm(clients, arm, q["question"], 5, f"id = '{document.id}'")
            hit_within = any(pages & set(r.page_numbers) for r in results)
            results = run_arm(clients, arm, q["question"], 5)
            own = [r for r in results if r.document_id == document.id]
            right_filing += bool(own)
            hit_across = any(pages & set(r.page_numbers) for r in own)
            within += hit_within
            across += hit_across
            half = halves[split_of(q["financebench_id"])]
            half[0] += 1
            half[1] += hit_within
            half[2] += hit_across
        n = len(asked)
        tune, held = halves["tune"], halves["held"]
        print(f"| {arm} | {within / n:.3f} ({within}/{n}) | {across / n:.3f} ({across}/{n}) | {right_filing}/{n} "
              f"| {tune[1]}/{tune[0]} / {held[1]}/{held[0]} | {tune[2]}/{tune[0]} / {held[2]}/{held[0]} |", flush=True)
    if dump:
        arms = ("fts",) if text_only else ("fts", "vector")
        qs = {q["financebench_id"]: q["question"] for q in asked}
        within_filter = {q["financebench_id"]: f"id = '{by_name[q['doc_name']].id}'" for q in asked}
        gold = {
            q["financebench_id"]: {
                "uri": by_name[q["doc_name"]].uri,
                "pages": sorted({e["evidence_page_num"] + 1 for e in q["evidence"]}),
            }
            for q in asked
        }
        out = {
            "queries": qs, "gold": gold, "documents": {d.uri: d.title for d in documents},
            "within": dump_rankings(client, qs, depth, within_filter, arms),
            "across": dump_rankings(client, qs, depth, arms=arms),
        }
        dump.write_text(json.dumps(out))
        print(f"wrote {dump}", file=sys.stderr)


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset", choices=["scifact", "financebench"])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--config", type=Path, default=None, help="a haiku.rag.yaml with the search settings")
    parser.add_argument("--text-only", action="store_true", help="financebench: full-text only (no embedding)")
    parser.add_argument("--rerank-url", default=None, help="a /rerank server (search.rerank provider http)")
    parser.add_argument("--dump", type=Path, default=None, help="write the arms' chunk rankings for tune_fusion.py")
    parser.add_argument("--dump-depth", type=int, default=400)
    parser.add_argument("--max-queries", type=int, default=None, help="scifact: only the first N train queries (a quick look, not the figure)")
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated subset of " + ", ".join(ARMS))
    args = parser.parse_args()
    needed = {"scifact": "retrieval_beir_scifact", "financebench": "qa_financebench"}[args.dataset]
    if not (args.data / needed).is_dir():
        print(f"skipped: {args.data / needed} not found")
        return 0
    import tempfile

    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import RerankConfig, load_config

    config = load_config(args.config)
    config.embeddings.threads = 2
    rerank_config = config.model_copy(deep=True)
    config.search.rerank = RerankConfig()  # the plain arms never rerank
    if args.rerank_url:
        rerank_config.search.rerank = RerankConfig(provider="http", base_url=args.rerank_url)
    db = args.db or Path(tempfile.mkdtemp()) / f"{args.dataset}.lancedb"
    print(f"load average at start: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    async with HaikuRAG(db, config, create=True) as client:
        wanted = set(args.arms.split(","))
        clients = {"fts": client, "vector": client, "hybrid": client}
        reranking = None
        if rerank_config.search.rerank.provider != "none" and "hybrid+rerank" in wanted:
            if not await client.list_documents(limit=1):
                print("build the store first (run once without a reranker)", file=sys.stderr)
                return 1
            reranking = HaikuRAG(db, rerank_config, read_only=True)
            clients["hybrid+rerank"] = reranking
        try:
            if args.dataset == "scifact":
                await build_scifact(client, args.data)
                await eval_scifact(clients, args.data, args.dump, args.dump_depth, wanted, args.max_queries)
            else:
                await financebench(clients, args.data, args.text_only, args.dump, args.dump_depth, wanted)
        finally:
            if reranking is not None:
                reranking.close()
    print(f"load average at end: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
