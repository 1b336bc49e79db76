"""How often search answers a topical query with a reference list, before and after the
demotion of reference-list chunks (``search.reference_weight``), in the same run.

    nice -n 15 .venv/bin/python tests/bench/eval_reference_demotion.py [--data ../shared/data] [--db LIB]
    nice -n 15 .venv/bin/python tests/bench/eval_reference_demotion.py --db LIB --fb-db FB_LIB

The library is ``--db`` (opened read-only), or one built here in a temporary folder from
``pdfs_realworld/files`` (slow: the 40 PDFs take ~30 min to ingest and embed on two busy cores).
Two fixed families of topical queries, taken from the documents themselves, not chosen by
looking at results:

- ``headings``: the documents' own section headings (the last heading of each chunk's path,
  numbering stripped, 3 to 12 words, reference-list names left out), at most
  ``--per-document`` per document spread evenly through it; the heading's own section is the
  passage a reader wants ("own section/document in top 5");
- ``titles``: each document's title (3 to 20 words): what the paper is about, the question a
  researcher asks of a library on its topic, and what its bibliography's titles echo.

For each ``reference_weight`` (1 = off, first) it reports, per family, over all queries and
over those of documents that have a reference list:

- the share of top-5 hits that are reference-list chunks, and how often the top hit is one;
- how often the top 5 holds a chunk of the section the query is the heading of (of the
  document, for titles);
- how many queries' top 5 changed at all, and how many of those had no reference chunk in
  their top 5 with the setting off (the demotion must leave those alone);
- ms per query (median of ``--runs`` interleaved runs over all queries, query embedding
  included), and the demotion's own cost: each query embedded once, then the ranking alone
  (``search_chunks``) timed off and on in turn ``--pairs`` times, the median of each query's
  paired differences.

Reference-list chunks are judged by ``haiku.rag.search.references.is_reference_chunk`` and,
separately, by their section heading alone (the part that needs no text heuristics).

Also, cheaply, that the demotion leaves other benchmarks alone: SciFact's abstracts are
judged one by one (any judged a reference list would be demoted), and with ``--fb-db`` (a
FinanceBench library built by ``bench_retrieval.py financebench``) its public questions are
searched with the setting off and on and their results compared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_retrieval import default_data  # noqa: E402

WEIGHTS = (1.0, 0.75, 0.5, 0.25)
LIMIT = 5
_NUMBERING = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[IVXLC]+\.|[A-Z]\.)\s+")
_WORD = re.compile(r"[^\W\d_]{2,}")


def heading_queries(client, per_document: int) -> list[tuple[str, str, str]]:
    """(document id, query, section heading) for each document's own section headings."""
    from haiku.rag.search.references import is_reference_heading
    from haiku.rag.store import schema as S

    live = client.store.current_generations()
    rows = (
        client.store.table(S.CHUNKS)
        .search()
        .select(["document_id", "generation", "order", "headings"])
        .limit(None)
        .to_list()
    )
    by_document: dict[str, list[str]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r["document_id"], r["order"])):
        if live.get(row["document_id"]) != row["generation"] or not row["headings"]:
            continue
        heading = row["headings"][-1]
        query = _NUMBERING.sub("", heading).strip()
        words = _WORD.findall(query)
        if is_reference_heading(heading) or not 3 <= len(words) <= 12 or len(query) > 120:
            continue
        if heading not in by_document[row["document_id"]]:
            by_document[row["document_id"]].append(heading)
    queries = []
    for document_id, headings in sorted(by_document.items()):
        step = max(1, len(headings) / per_document)
        chosen = [headings[int(i * step)] for i in range(min(per_document, len(headings)))]
        queries += [(document_id, _NUMBERING.sub("", h).strip(), h) for h in chosen]
    return queries


def title_queries(client) -> list[tuple[str, str, str]]:
    """(document id, its title, "") for each document titled in 3 to 20 words."""
    from haiku.rag.search.references import is_reference_heading

    queries = []
    for document_id, (_, title, _) in sorted(client.store.document_labels().items()):
        if title and 3 <= len(_WORD.findall(title)) <= 20 and not is_reference_heading(title):
            queries.append((document_id, title, ""))
    return queries


def documents_with_references(client) -> set[str]:
    from haiku.rag.search.references import is_reference_chunk
    from haiku.rag.store import schema as S

    live = client.store.current_generations()
    rows = client.store.table(S.CHUNKS).search().select(["document_id", "generation", "headings", "content"]).limit(None).to_list()
    return {
        r["document_id"]
        for r in rows
        if live.get(r["document_id"]) == r["generation"] and is_reference_chunk(r["headings"], r["content"])
    }


def evaluate(client, queries, with_references: set[str], runs: int, show: bool = False) -> dict[float, dict]:
    from haiku.rag.search.references import is_reference_chunk, is_reference_heading

    results: dict[float, dict] = {}
    timings: dict[float, list[float]] = {w: [] for w in WEIGHTS}
    hits: dict[float, list[list]] = {}
    for run in range(runs):
        for weight in WEIGHTS:  # interleaved, so load drifts alike for each setting
            client.config.search.reference_weight = weight
            started = time.perf_counter()
            found = [client.search_sync(query, LIMIT) for _, query, _ in queries]
            timings[weight].append((time.perf_counter() - started) / len(queries) * 1000)
            if run == 0:
                hits[weight] = found
    baseline = hits[1.0]
    if show:
        chosen_weight = WEIGHTS[2]
        for i, (_, query, _) in enumerate(queries):
            before = [r.chunk_id for r in baseline[i]]
            after = hits[chosen_weight][i]
            if before != [r.chunk_id for r in after]:
                print(f"  changed at {chosen_weight}: {query[:70]!r}")
                for label, found in (("off", baseline[i]), ("on ", after)):
                    marks = "".join("R" if is_reference_chunk(r.headings, r.content) else "." for r in found)
                    top = found[0] if found else None
                    section = " > ".join(top.headings[-1:]) if top else ""
                    print(f"    {label} {marks}  top: {(top.document_title or '')[:30] if top else ''} > {section[:40]}")
    for weight in WEIGHTS:
        groups: dict[str, dict[str, float]] = {}
        for group, keep in (("all", lambda d: True), ("with reference list", lambda d: d in with_references)):
            chosen = [i for i, (doc, _, _) in enumerate(queries) if keep(doc)]
            top5 = [hits[weight][i] for i in chosen]
            judged = [[is_reference_chunk(r.headings, r.content) for r in found] for found in top5]
            by_heading = [[bool(r.headings) and is_reference_heading(r.headings[-1]) for r in found] for found in top5]
            own = [  # the heading's own section (headings), the titled document (titles)
                any(r.document_id == queries[i][0] and (not queries[i][2] or r.headings[-1:] == [queries[i][2]]) for r in found)
                for i, found in zip(chosen, top5, strict=True)
            ]
            changed = [
                [r.chunk_id for r in hits[weight][i]] != [r.chunk_id for r in baseline[i]] for i in chosen
            ]
            untouched = [
                c
                for i, c in zip(chosen, changed, strict=True)
                if not any(is_reference_chunk(r.headings, r.content) for r in baseline[i])
            ]
            hits_total = sum(len(found) for found in top5) or 1
            groups[group] = {
                "queries": len(chosen),
                "reference share of top-5 hits": sum(map(sum, judged)) / hits_total,
                "top hit a reference chunk": sum(1 for j in judged if j and j[0]),
                "reference share (heading only)": sum(map(sum, by_heading)) / hits_total,
                "top hit under a reference heading": sum(1 for j in by_heading if j and j[0]),
                "own section/document in top 5": sum(own),
                "top 5 changed": sum(changed),
                "changed without a reference chunk (off)": sum(untouched),
            }
        results[weight] = {"groups": groups, "ms/query": timings[weight]}
    client.config.search.reference_weight = WEIGHTS[0]
    return results


def stage_cost(client, queries, weight: float, pairs: int) -> tuple[float, float, float, float]:
    """(median ms off, median ms on, median of the per-query paired differences on - off, the
    same for each query's first search on: its candidates not judged yet) of the ranking
    alone, each query's vector computed once."""
    from haiku.rag.search import hybrid
    from haiku.rag.search.hybrid import SearchSettings, search_chunks

    config = client.config.search
    settings = {w: SearchSettings.from_config(config.model_copy(update={"reference_weight": w})) for w in (1.0, weight)}
    off, on, differences, first = [], [], [], []
    for _, query, _ in queries:
        vector = client.embedder.embed_query(query)
        times: dict[float, list[float]] = {1.0: [], weight: []}
        hybrid._JUDGED.clear()  # the first search on judges its candidates; the next know them
        for _ in range(pairs):
            for w in (1.0, weight):
                started = time.perf_counter()
                search_chunks(client.store, query, query_vector=vector, limit=LIMIT, settings=settings[w])
                times[w].append((time.perf_counter() - started) * 1000)
        off.append(statistics.median(times[1.0]))
        on.append(statistics.median(times[weight]))
        differences.append(on[-1] - off[-1])
        first.append(times[weight][0] - off[-1])
    return statistics.median(off), statistics.median(on), statistics.median(differences), statistics.median(first)


def report(results: dict[float, dict]) -> None:
    for weight, result in results.items():
        ms = result["ms/query"]
        label = "off" if weight == 1 else f"reference_weight {weight}"
        print(f"\n{label}: ms/query per run {[round(v, 1) for v in ms]}, median {statistics.median(ms):.1f}")
        for group, figures in result["groups"].items():
            text = ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items())
            print(f"  {group}: {text}")


def scifact_check(data: Path) -> None:
    from haiku.rag.search.references import is_reference_chunk

    corpus = data / "retrieval_beir_scifact" / "corpus.jsonl"
    if not corpus.is_file():
        print(f"\nSciFact: skipped ({corpus} not found)")
        return
    documents = [json.loads(line) for line in corpus.open()]
    judged = [d["_id"] for d in documents if is_reference_chunk([d.get("title") or ""], d["text"])]
    relevant = set()
    for qrels in (data / "retrieval_beir_scifact" / "qrels").glob("*.tsv"):
        relevant |= {line.split("\t")[1] for line in qrels.open() if line.strip() and not line.startswith("query")}
    print(f"\nSciFact: {len(judged)} of {len(documents)} abstracts judged a reference list {judged[:10]}; "
          f"relevant to a query in the qrels: {len(set(judged) & relevant)} (demoting the others cannot lower nDCG)")


def cost_on(db: Path, data: Path, weight: float, pairs: int, count: int = 60) -> None:
    """The stage's cost on another library (e.g. bench_search.py's kept 20k or 100k store),
    with SciFact train queries."""
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    queries_file = data / "retrieval_beir_scifact" / "queries.train.jsonl"
    if not queries_file.is_file():
        print(f"\ncost on {db}: skipped ({queries_file} not found)")
        return
    config = load_config()
    config.embeddings.threads = 2
    queries = [("", json.loads(line)["text"], "") for line in queries_file.open()][:count]
    client = HaikuRAG(db, config, read_only=True)
    try:
        chunks = client.store.table("chunks").count_rows()
        for _, query, _ in queries[:3]:
            client.search_sync(query, LIMIT)  # warm: model, vectors, indexes
        off, on, difference, first = stage_cost(client, queries, weight, pairs)
        print(f"\ncost on {db} ({chunks} chunks, {len(queries)} SciFact queries, load {os.getloadavg()[0]:.2f}): "
              f"off {off:.2f} ms, reference_weight {weight} {on:.2f} ms, paired difference {difference:+.2f} ms "
              f"(ratio {on / off:.2f}); a query's first search on {first:+.2f} ms")
    finally:
        client.close()


def financebench_check(data: Path, db: Path | None) -> None:
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    questions_file = data / "qa_financebench" / "questions.public.jsonl"
    if db is None or not db.is_dir() or not questions_file.is_file():
        print("\nFinanceBench: skipped (give --fb-db, a library built by bench_retrieval.py financebench)")
        return
    config = load_config()
    config.embeddings.threads = 2
    questions = [json.loads(line)["question"] for line in questions_file.open()]
    client = HaikuRAG(db, config, read_only=True)
    try:
        found = {}
        for weight in (1.0, config.search.reference_weight if config.search.reference_weight < 1 else 0.5):
            config.search.reference_weight = weight
            found[weight] = [[(r.chunk_id, round(r.score, 6)) for r in client.search_sync(q, LIMIT)] for q in questions]
        off, on = found.values()
        same = sum(a == b for a, b in zip(off, on, strict=True))
        print(f"\nFinanceBench: {same} of {len(questions)} questions' top {LIMIT} identical (ids and scores), off vs on")
    finally:
        client.close()


async def build(data: Path, folder: Path) -> Path:
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    config = load_config()
    config.embeddings.threads = 2
    db = folder / "realworld.lancedb"
    async with HaikuRAG(db, config, create=True) as client:
        for pdf in sorted((data / "pdfs_realworld" / "files").glob("*.pdf")):
            outcome = await client.ingest_file(pdf)
            print(f"  {pdf.name}: {outcome.status}", flush=True)
    return db


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--db", type=Path, help="a library of pdfs_realworld (read-only); default: built here")
    parser.add_argument("--fb-db", type=Path, help="a FinanceBench library, for the no-change check")
    parser.add_argument("--per-document", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--show", action="store_true", help="print the queries whose top 5 changed")
    parser.add_argument("--cost-db", type=Path, help="another library to time the stage on (SciFact queries)")
    parser.add_argument("--pairs", type=int, default=7, help="off/on pairs per query for the stage cost")
    parser.add_argument("--weight", type=float, default=0.5, help="the setting whose stage cost is measured")
    args = parser.parse_args()
    files = args.data / "pdfs_realworld" / "files"
    if args.db is None and not files.is_dir():
        print(f"skipped: {files} not found")
        return 0
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    db = args.db or asyncio.run(build(args.data, Path(tempfile.mkdtemp())))
    config = load_config()
    config.embeddings.threads = 2
    print(f"library {db}; load {os.getloadavg()[0]:.2f}; search: fusion {config.search.fusion.method}, "
          f"page_share {config.search.page_share}, name_weight {config.search.name_weight}, limit {LIMIT}")
    client = HaikuRAG(db, config, read_only=True)
    try:
        with_references = documents_with_references(client)
        print(f"{len(with_references)} documents have a reference list")
        families = {"headings": heading_queries(client, args.per_document), "titles": title_queries(client)}
        for _, query, _ in families["headings"][:3]:
            client.search_sync(query, LIMIT)  # warm: model, vectors, indexes
        for family, queries in families.items():
            print(f"\n== {family}: {len(queries)} queries from {len({q[0] for q in queries})} documents")
            report(evaluate(client, queries, with_references, args.runs, args.show))
            off, on, difference, first = stage_cost(client, queries, args.weight, args.pairs)
            print(f"\n  ranking alone (query embedded once; median over queries of each one's median of "
                  f"{args.pairs}): off {off:.2f} ms, reference_weight {args.weight} {on:.2f} ms, "
                  f"paired difference {difference:+.2f} ms (ratio {on / off:.2f}); a query's first "
                  f"search on (nothing judged yet) {first:+.2f} ms")
        print(f"\nload after: {os.getloadavg()[0]:.2f}")
    finally:
        client.close()
    if args.cost_db:
        cost_on(args.cost_db, args.data, args.weight, args.pairs)
    scifact_check(args.data)
    financebench_check(args.data, args.fb_db)
    return 0


if __name__ == "__main__":
    sys.exit(main())
