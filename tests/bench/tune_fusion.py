"""Choose hybrid fusion settings from the arms' rankings that bench_retrieval.py dumped.

    .venv/bin/python tests/bench/bench_retrieval.py scifact --db D --dump /tmp/scifact-arms.json
    .venv/bin/python tests/bench/bench_retrieval.py financebench --db D --dump /tmp/fb-arms.json
    .venv/bin/python tests/bench/tune_fusion.py /tmp/scifact-arms.json [--financebench /tmp/fb-arms.json]

Replays ``search_chunks``' weighted RRF offline (same pools, same k, same cut, same collapse to
documents) over a grid of (rrf_k, fts_weight : vector_weight, candidate_factor), so a grid of
hundreds of settings costs seconds instead of hours of searches. The setting is **chosen on the
SciFact train queries of the "tune" half only** (``bench_retrieval.split_of``); the "held" half
and FinanceBench are only reported beside it, so a choice that fits the tuning queries shows.
The chosen values are then confirmed through the public API by bench_retrieval.py.

``--alternatives`` replays the other fusions tried beside it (rank fusion, z-scores, per-query
arm confidence, agreement) the same way.

``--shares`` replays asymmetric score fusion (``search.fusion.fts_only_share``) over both dumps
at the library's other defaults, per half of each set (session 8's choice).

``--levers`` replays, over the FinanceBench dump, page grouping (``search.page_share``) and the
named-document boost (``search.name_weight``) with the library's own functions, per arm and per
half of the questions (chosen on the "tune" half, the "held" half only reported).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_retrieval import ndcg_at_10, recall_at, split_of  # noqa: E402


def fuse(fts: list, vec: list, *, k: int, fts_weight: float, vector_weight: float, limit: int, factor: int) -> list:
    """The first ``limit`` of search_chunks' hybrid order over the dumped arm rankings."""
    pool = max(limit * factor, 20)  # search_chunks' per-arm pool for a hybrid search
    scores: dict[str, float] = {}
    first: dict[str, list] = {}
    for ranking, weight in ((fts[:pool], fts_weight), (vec[:pool], vector_weight)):
        if weight == 0:
            continue
        for rank, hit in enumerate(ranking, start=1):
            scores[hit[0]] = scores.get(hit[0], 0.0) + weight / (k + rank)
            first.setdefault(hit[0], hit)
    order = sorted(scores, key=lambda cid: -scores[cid])
    return [first[cid] for cid in order[:limit]]


def fuse_scores(fts: list, vec: list, *, alpha: float, limit: int, factor: int) -> list:
    """Score-aware alternative: alpha × vector + (1 − alpha) × BM25, each min-max normalised
    over its arm's pool (an arm's missing candidate scores 0). Not in search_chunks: compared
    here to see whether it would beat weighted RRF."""
    pool = max(limit * factor, 20)
    combined: dict[str, float] = {}
    first: dict[str, list] = {}
    for ranking, weight in ((fts[:pool], 1 - alpha), (vec[:pool], alpha)):
        if not ranking:
            continue
        scores = [h[3] for h in ranking]
        low, high = min(scores), max(scores)
        for hit in ranking:
            norm = (hit[3] - low) / (high - low) if high > low else 1.0
            combined[hit[0]] = combined.get(hit[0], 0.0) + weight * norm
            first.setdefault(hit[0], hit)
    order = sorted(combined, key=lambda cid: -combined[cid])
    return [first[cid] for cid in order[:limit]]


def _hybrid(arms: dict, setting: dict, limit: int) -> list:
    if "alpha" in setting:
        return fuse_scores(arms["fts"], arms["vector"], limit=limit, **setting)
    return fuse(arms["fts"], arms["vector"], limit=limit, **setting)


def scifact_scores(dump: dict, setting: dict | None, arm: str = "hybrid") -> dict[str, tuple[float, float]]:
    out = {}
    for qid, arms in dump["rankings"].items():
        if arm == "hybrid":
            hits = _hybrid(arms, setting, 100)
        else:
            hits = arms[arm][:100]
        ranked = list(dict.fromkeys(h[1].removeprefix("scifact://") for h in hits))
        out[qid] = (ndcg_at_10(ranked, dump["qrels"][qid]), recall_at(ranked, dump["qrels"][qid], 100))
    return out


def summary(scores: dict[str, tuple[float, float]]) -> dict[str, float]:
    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else 0.0

    return {
        "tune": mean([s[0] for q, s in scores.items() if split_of(q) == "tune"]),
        "held": mean([s[0] for q, s in scores.items() if split_of(q) == "held"]),
        "all": mean([s[0] for s in scores.values()]),
        "recall": mean([s[1] for s in scores.values()]),
    }


def financebench_hits(dump: dict, setting: dict | None, arm: str, where: str) -> int:
    hits = 0
    for qid, arms in dump[where].items():
        gold = dump["gold"][qid]
        if arm == "hybrid":
            top = _hybrid(arms, setting, 5)
        else:
            top = arms[arm][:5]
        hits += any(h[1] == gold["uri"] and set(h[2]) & set(gold["pages"]) for h in top)
    return hits


# --- the levers beyond fusion: named documents and page aggregation -----------------------


def replay(
    fts: list, vec: list, *, limit: int, factor: int = 4, fts_weight: float = 1.0, vector_weight: float = 1.0,
    page_share: float | None = None, fts_only_share: float = 1.0, fusion: Callable | None = None,
    name_weight: float = 0.0, named: dict[str, float] | None = None, scoped: dict[str, list] | None = None,
) -> list:
    """The first ``limit`` of search_chunks' score-fusion hybrid order over dumped rankings
    (``[chunk id, document uri, pages, score]``), with the real fusion, naming boost and page
    aggregation functions; documents are keyed by uri. ``scoped``: each arm's ranking within
    the named documents (their own candidates join the pool, as in search_chunks)."""
    from haiku.rag.search.hybrid import score_fusion
    from haiku.rag.search.naming import boost_named
    from haiku.rag.search.pages import Candidate, aggregate_pages

    pool = max(limit * factor, 20)
    arms = {"fts": fts[:pool], "vector": vec[:pool]}
    if name_weight and named and scoped:
        for arm in arms:
            seen = {h[0] for h in arms[arm]}
            extra = [h for h in scoped[arm][:pool] if h[0] not in seen]
            arms[arm] = sorted(arms[arm] + extra, key=lambda h: -h[3])
    hits = {h[0]: h for ranking in arms.values() for h in ranking}
    pairs = [[(h[0], h[3]) for h in arms["fts"]], [(h[0], h[3]) for h in arms["vector"]]]
    if fusion is not None:  # an alternative fusion, compared in --alternatives
        scored = fusion(pairs)
    else:
        scored = score_fusion(
            pairs, [fts_weight, vector_weight],
            alone=[fts_only_share if arms["vector"] else 1.0, 1.0],  # every dumped document has its vectors
        )
    if name_weight and named:
        scored = boost_named(scored, {cid: h[1] for cid, h in hits.items()}, named, name_weight)
    if page_share is not None:
        scored = aggregate_pages([Candidate(cid, s, hits[cid][1], hits[cid][2]) for cid, s in scored], page_share)
    return [hits[cid] for cid, _ in scored[:limit]]


def replay_single(ranking: list, *, limit: int, factor: int = 4, page_share: float | None = None,
                  name_weight: float = 0.0, named: dict[str, float] | None = None, scoped: list | None = None) -> list:
    """A single arm through the same stages (search_chunks normalises it when names boost)."""
    from haiku.rag.search.hybrid import score_fusion
    from haiku.rag.search.naming import boost_named
    from haiku.rag.search.pages import Candidate, aggregate_pages

    pool = max(limit * factor, 20) if page_share is not None else limit * 2
    arm = ranking[:pool]
    if name_weight and named and scoped:
        seen = {h[0] for h in arm}
        arm = sorted(arm + [h for h in scoped[:pool] if h[0] not in seen], key=lambda h: -h[3])
    hits = {h[0]: h for h in arm}
    scored = [(h[0], h[3]) for h in arm]
    if name_weight and named:
        scored = boost_named(score_fusion([scored], [1.0]), {cid: h[1] for cid, h in hits.items()}, named, name_weight)
    if page_share is not None:
        scored = aggregate_pages([Candidate(cid, s, hits[cid][1], hits[cid][2]) for cid, s in scored], page_share)
    return [hits[cid] for cid, _ in scored[:limit]]


def fb_levers(fb: dict, arm: str, where: str, setting: dict) -> dict[str, int]:
    """FinanceBench hits (evidence page in the top 5 from the question's filing) per half."""
    from haiku.rag.search.naming import named_documents

    labels = {uri: (uri, title) for uri, title in fb.get("documents", {}).items()}
    out = {"tune": 0, "held": 0, "all": 0}
    for qid, arms in fb[where].items():
        gold = fb["gold"][qid]
        named = named_documents(fb["queries"][qid], labels) if setting.get("name_weight") and where == "across" else None
        scoped = None
        if named:
            # each arm within the named filings: the global ranking's hits in them, plus the
            # question's own filing searched alone when it is named (dumped as "within")
            scoped = {
                a: sorted(
                    {h[0]: h for h in [*(h for h in arms[a] if h[1] in named),
                                       *(fb["within"][qid][a] if gold["uri"] in named else [])]}.values(),
                    key=lambda h: -h[3],
                )
                for a in ("fts", "vector")
            }
        if arm == "hybrid":
            top = replay(arms["fts"], arms["vector"], limit=5, named=named, scoped=scoped, **setting)
        else:
            single = {k: v for k, v in setting.items() if k in ("page_share", "name_weight", "factor")}
            top = replay_single(arms[arm], limit=5, named=named, scoped=scoped and scoped[arm], **single)
        hit = any(h[1] == gold["uri"] and set(h[2]) & set(gold["pages"]) for h in top)
        out[split_of(qid)] += hit
        out["all"] += hit
    return out


def levers(fb: dict, scifact: dict | None, grid: list[dict]) -> None:
    n = {half: sum(split_of(q) == half for q in fb["within"]) for half in ("tune", "held")}
    print(f"FinanceBench halves: tune {n['tune']}, held {n['held']} questions")
    print("| setting | arm | within tune | within held | across tune | across held | within | across | SciFact tune | SciFact held |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for setting in grid:
        for arm in ("fts", "vector", "hybrid"):
            w = fb_levers(fb, arm, "within", setting)
            a = fb_levers(fb, arm, "across", setting)
            sci = ""
            if scifact and arm == "hybrid":
                share = setting.get("vector_weight", 1.0) / (setting.get("vector_weight", 1.0) + setting.get("fts_weight", 1.0))
                s = summary(scifact_scores(scifact, {"alpha": share, "factor": setting.get("factor", 4)}))
                sci = f"{s['tune']:.4f} | {s['held']:.4f}"
            print(f"| {setting} | {arm} | {w['tune']} | {w['held']} | {a['tune']} | {a['held']} | {w['all']} | {a['all']} | {sci} |")


def scifact_replay(scifact: dict, setting: dict) -> dict[str, float]:
    """SciFact nDCG@10 per half for a ``replay`` setting (limit 100, no pages, no names)."""
    scores = {}
    for qid, arms in scifact["rankings"].items():
        hits = replay(arms["fts"], arms["vector"], limit=100, **setting)
        ranked = list(dict.fromkeys(h[1].removeprefix("scifact://") for h in hits))
        scores[qid] = (ndcg_at_10(ranked, scifact["qrels"][qid]), recall_at(ranked, scifact["qrels"][qid], 100))
    return summary(scores)


def shares(fb: dict, scifact: dict, values: list[float]) -> None:
    """Asymmetric score fusion (``search.fusion.fts_only_share``) on both sets, per half, at the
    library's other defaults (page_share 0, name_weight 1); chosen where hybrid is at least its
    better arm on every tune half, the held halves only reported."""
    defaults = {"page_share": 0.0, "name_weight": 1.0}
    print("| arm / fts_only_share | FB within tune | held | FB across tune | held | SciFact tune | held | all |")
    print("|---|---|---|---|---|---|---|---|")
    for arm in ("fts", "vector"):
        w, a = fb_levers(fb, arm, "within", defaults), fb_levers(fb, arm, "across", defaults)
        s = summary(scifact_scores(scifact, None, arm))
        print(f"| {arm} | {w['tune']} | {w['held']} | {a['tune']} | {a['held']} | {s['tune']:.4f} | {s['held']:.4f} | {s['all']:.4f} |")
    for share in values:
        setting = {**defaults, "fts_only_share": share}
        w, a = fb_levers(fb, "hybrid", "within", setting), fb_levers(fb, "hybrid", "across", setting)
        s = scifact_replay(scifact, {"fts_only_share": share})
        print(f"| hybrid {share} | {w['tune']} | {w['held']} | {a['tune']} | {a['held']} | {s['tune']:.4f} | {s['held']:.4f} | {s['all']:.4f} |")


def alternative(kind: str, value: float = 0.0) -> Callable:
    """Fusions tried beside the asymmetric share (session 8), over [fts, vector] (id, score) lists:
    ``rrf`` (k = value); ``zscore`` (each arm z-normalised, a missing candidate adds the arm's
    lowest); ``dat-gap`` / ``dat-z`` (per-query arm weights from how peaked the arm's scores are:
    the top-1's lead over the 2nd relative to the pool's spread, or the top-1's z-score, as in
    dynamic-alpha fusion); ``agree`` (a candidate only one arm returned, whichever, keeps
    ``value``); ``vector-only`` (the mirror image: a vector hit full text did not return keeps
    ``value``)."""

    def minmax(hits: list) -> dict:
        low, high = min(s for _, s in hits), max(s for _, s in hits)
        return {c: (s - low) / (high - low) if high > low else 1.0 for c, s in hits}

    def zscore(hits: list) -> dict:
        mean, sd = statistics.fmean(s for _, s in hits), statistics.pstdev(s for _, s in hits)
        return {c: (s - mean) / sd if sd else 0.0 for c, s in hits}

    def peak(hits: list) -> float:
        scores = [s for _, s in hits]
        if len(scores) < 3 or scores[0] == scores[-1]:
            return 1.0
        if kind == "dat-gap":
            return (scores[0] - scores[1]) / (scores[0] - scores[-1])
        sd = statistics.pstdev(scores)
        return (scores[0] - statistics.fmean(scores)) / sd

    def fuse(arms: list) -> list:
        arms = [hits for hits in arms if hits]
        if kind == "rrf":
            fused: dict = {}
            for hits in arms:
                for rank, (c, _) in enumerate(hits, 1):
                    fused[c] = fused.get(c, 0.0) + 1 / (value + rank)
            return sorted(fused.items(), key=lambda p: -p[1])
        norms = [zscore(h) if kind == "zscore" else minmax(h) for h in arms]
        weights = [1.0] * len(arms)
        if kind.startswith("dat"):
            peaks = [peak(h) for h in arms]
            weights = [len(arms) * p / (sum(peaks) or 1.0) for p in peaks]
        ids = {c for n in norms for c in n}
        fused = {}
        for i, (norm, weight) in enumerate(zip(norms, weights, strict=True)):
            floor = min(norm.values()) if kind == "zscore" else 0.0
            for c in ids:
                score = norm.get(c, floor)
                alone = len(norms) == 2 and c not in norms[1 - i]
                if alone and (kind == "agree" or (kind == "vector-only" and i == 1)):
                    score *= value
                fused[c] = fused.get(c, 0.0) + weight * score
        return sorted(fused.items(), key=lambda p: -p[1])

    return fuse


def alternatives(fb: dict, scifact: dict) -> None:
    """The other fusions tried, at the library's other defaults, per half of each set."""
    defaults = {"page_share": 0.0, "name_weight": 1.0}
    print("| fusion | FB within tune | held | FB across tune | held | SciFact tune | held | all |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, value in (("rrf", 60), ("rrf", 5), ("zscore", 0), ("dat-gap", 0), ("dat-z", 0),
                        ("agree", 0.5), ("agree", 0.75), ("vector-only", 0.25), ("vector-only", 0.5)):
        setting = {**defaults, "fusion": alternative(kind, value)}
        w, a = fb_levers(fb, "hybrid", "within", setting), fb_levers(fb, "hybrid", "across", setting)
        s = scifact_replay(scifact, {"fusion": setting["fusion"]})
        print(f"| {kind} {value} | {w['tune']} | {w['held']} | {a['tune']} | {a['held']} | {s['tune']:.4f} | {s['held']:.4f} | {s['all']:.4f} |")
    for vector_weight in (1.5, 2.0):
        setting = {**defaults, "vector_weight": vector_weight}
        w, a = fb_levers(fb, "hybrid", "within", setting), fb_levers(fb, "hybrid", "across", setting)
        s = scifact_replay(scifact, {"vector_weight": vector_weight})
        print(f"| score, vector {vector_weight}:1 | {w['tune']} | {w['held']} | {a['tune']} | {a['held']} | {s['tune']:.4f} | {s['held']:.4f} | {s['all']:.4f} |")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("scifact", type=Path)
    parser.add_argument("--financebench", type=Path, default=None)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--levers", action="store_true", help="FinanceBench: replay page aggregation and named documents")
    parser.add_argument("--shares", action="store_true", help="both sets: asymmetric score fusion's fts_only_share")
    parser.add_argument("--alternatives", action="store_true", help="both sets: the other fusions tried in session 8")
    args = parser.parse_args()
    if args.alternatives:
        alternatives(json.loads(args.financebench.read_text()), json.loads(args.scifact.read_text()))
        return 0
    if args.shares:
        fb, scifact = json.loads(args.financebench.read_text()), json.loads(args.scifact.read_text())
        shares(fb, scifact, [1.0, 0.75, 0.5, 0.45, 0.4, 0.3, 0.25, 0.2, 0.1, 0.0])
        return 0
    if args.levers:
        fb = json.loads(args.financebench.read_text())
        scifact = json.loads(args.scifact.read_text()) if args.scifact.exists() else None
        grid = [
            {"vector_weight": vector_weight, "page_share": share, "name_weight": weight}
            for vector_weight in (1.0, 1.5, 2.0)
            for share in (None, 0.0, 0.25, 0.5, 1.0)
            for weight in (0.0, 0.5, 1.0, 2.0)
        ]
        levers(fb, scifact, grid)
        return 0
    scifact = json.loads(args.scifact.read_text())
    fb = json.loads(args.financebench.read_text()) if args.financebench else None
    n_fb = len(fb["within"]) if fb else 0
    fb_vectors = bool(fb) and all("vector" in arms for arms in fb["within"].values())

    for arm in ("fts", "vector"):
        s = summary(scifact_scores(scifact, None, arm))
        line = f"{arm:>8}: SciFact nDCG@10 tune {s['tune']:.4f} held {s['held']:.4f} all {s['all']:.4f} R@100 {s['recall']:.4f}"
        if fb and (arm == "fts" or fb_vectors):
            line += f" | FinanceBench within {financebench_hits(fb, None, arm, 'within')}/{n_fb}"
            line += f" across {financebench_hits(fb, None, arm, 'across')}/{n_fb}"
        print(line)

    grid = []
    for k, ratio, factor in itertools.product(
        (5, 10, 20, 30, 40, 60, 80, 120), (0.3, 0.5, 0.7, 0.85, 1.0, 1.2, 1.5, 2.0, 3.0), (1, 2, 4, 8)
    ):
        setting = {"k": k, "fts_weight": round(ratio, 2), "vector_weight": 1.0, "factor": factor}
        grid.append((setting, summary(scifact_scores(scifact, setting))))
    scored = []
    for alpha, factor in itertools.product((0.3, 0.4, 0.5, 0.6, 0.7), (1, 4)):
        setting = {"alpha": alpha, "factor": factor}
        scored.append((setting, summary(scifact_scores(scifact, setting))))
    scored.sort(key=lambda pair: -pair[1]["tune"])
    grid.sort(key=lambda pair: -pair[1]["tune"])

    default = {"k": 60, "fts_weight": 1.0, "vector_weight": 1.0, "factor": 4}
    # the best score-aware settings follow, for comparison (not chosen from)
    rows = [(default, summary(scifact_scores(scifact, default)))] + grid[: args.top] + scored[:3]
    print("\nsetting (chosen by the tune half) | tune | held | all | R@100 | FB within | FB across")
    for setting, s in rows:
        fb_part = ""
        if fb_vectors:
            fb_part = (f" | {financebench_hits(fb, setting, 'hybrid', 'within')}/{n_fb}"
                       f" | {financebench_hits(fb, setting, 'hybrid', 'across')}/{n_fb}")
        print(f"{setting} | {s['tune']:.4f} | {s['held']:.4f} | {s['all']:.4f} | {s['recall']:.4f}{fb_part}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
