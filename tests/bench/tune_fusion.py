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
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("scifact", type=Path)
    parser.add_argument("--financebench", type=Path, default=None)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
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
