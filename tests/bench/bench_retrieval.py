"""Retrieval quality: SciFact (BEIR, train split) and FinanceBench page hits.

    .venv/bin/python tests/bench/bench_retrieval.py scifact [--data ../shared/data] [--db DIR]
    .venv/bin/python tests/bench/bench_retrieval.py financebench [--data ../shared/data] [--db DIR]

SciFact: every abstract becomes a document (title as heading + abstract) through the real
pipeline (converter, HybridChunker, default embedder); each train query is searched with
limit 100 and chunk hits are collapsed to documents by best rank. Reports nDCG@10 and
Recall@100 for full-text, vector and hybrid search.

FinanceBench: the public questions' filings are ingested through ``add_source``; for each
question, the share whose 0-based evidence page is among the pages of the top-5 hits (searched
within that question's filing, as a reader with that document open would).

``--db`` keeps the built store so a second run skips ingestion.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def ndcg_at_10(ranked: list[str], relevant: dict[str, int]) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    hits = {d for d in ranked[:k] if relevant.get(d, 0) > 0}
    return len(hits) / sum(1 for g in relevant.values() if g > 0)


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


async def eval_scifact(client, data: Path) -> None:
    qrels = scifact_qrels(data)
    queries = {
        q["_id"]: q["text"]
        for q in map(json.loads, (data / "retrieval_beir_scifact" / "queries.train.jsonl").open())
        if q["_id"] in qrels
    }
    print("| search | nDCG@10 | Recall@100 | queries |\n|---|---|---|---|")
    for search_type in ("fts", "vector", "hybrid"):
        ndcgs, recalls = [], []
        for qid, text in queries.items():
            results = client.search_sync(text, 100, search_type)
            ranked = list(dict.fromkeys(r.document_uri.removeprefix("scifact://") for r in results))
            ndcgs.append(ndcg_at_10(ranked, qrels[qid]))
            recalls.append(recall_at(ranked, qrels[qid], 100))
        print(f"| {search_type} | {sum(ndcgs) / len(ndcgs):.4f} | {sum(recalls) / len(recalls):.4f} | {len(ndcgs)} |", flush=True)


async def financebench(client, data: Path, text_only: bool) -> None:
    folder = data / "qa_financebench" / "pdfs"
    if not await client.list_documents(limit=1):
        started = time.perf_counter()
        outcomes = await client.add_source(folder, embed=not text_only)
        failed = [o for o in outcomes if o.status == "failed"]
        print(f"ingested {len(outcomes) - len(failed)} filings in {time.perf_counter() - started:.0f} s; failed: "
              f"{[(o.source, o.reason) for o in failed]}", file=sys.stderr)
        client.store.optimize()
    by_name = {Path(d.uri).stem: d for d in await client.list_documents()}
    questions = [json.loads(line) for line in (data / "qa_financebench" / "questions.public.jsonl").open()]
    if not text_only:
        await client.embed_pending()
    print("| search | questions | evidence page in top-5 pages |\n|---|---|---|")
    for search_type in ("fts",) if text_only else ("fts", "vector", "hybrid"):
        hits = total = 0
        for q in questions:
            document = by_name.get(q["doc_name"])
            if document is None:
                continue
            pages = {e["evidence_page_num"] + 1 for e in q["evidence"] if e.get("doc_name", q["doc_name"]) == q["doc_name"]}
            results = client.search_sync(q["question"], 5, search_type, f"id = '{document.id}'")
            total += 1
            hits += any(pages & set(r.page_numbers) for r in results)
        print(f"| {search_type} | {total} | {hits / total:.3f} ({hits}/{total}) |", flush=True)


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset", choices=["scifact", "financebench"])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--text-only", action="store_true", help="financebench: full-text only (no embedding)")
    args = parser.parse_args()
    needed = {"scifact": "retrieval_beir_scifact", "financebench": "qa_financebench"}[args.dataset]
    if not (args.data / needed).is_dir():
        print(f"skipped: {args.data / needed} not found")
        return 0
    import tempfile

    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    config = load_config()
    config.embeddings.threads = 2
    db = args.db or Path(tempfile.mkdtemp()) / f"{args.dataset}.lancedb"
    async with HaikuRAG(db, config, create=True) as client:
        if args.dataset == "scifact":
            await build_scifact(client, args.data)
            await eval_scifact(client, args.data)
        else:
            await financebench(client, args.data, args.text_only)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
