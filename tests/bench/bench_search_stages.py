"""What page grouping and named documents cost a hybrid search, on a built FinanceBench store.

    flock /work/coord/heavy.lock .venv/bin/python tests/bench/bench_search_stages.py --db /work/cache/fb.lancedb

Searches the public questions (limit 5, whole library) with both stages off (``page_share``
None, ``name_weight`` 0) and with the configured defaults, interleaved, 3 runs each after 5
warm-up queries; prints ms/query per run and the median. Run it under the heavy lock.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_retrieval import default_data  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", type=Path, required=True, help="a store built by bench_retrieval.py financebench")
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    questions_file = args.data / "qa_financebench" / "questions.public.jsonl"
    if not questions_file.is_file() or not args.db.is_dir():
        print(f"skipped: {questions_file} or {args.db} not found")
        return 0
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    config = load_config()
    config.embeddings.threads = 2
    defaults = (config.search.page_share, config.search.name_weight)
    settings = {"both off": (None, 0.0), f"defaults {defaults}": defaults}
    questions = [json.loads(line)["question"] for line in questions_file.open()]
    client = HaikuRAG(args.db, config, read_only=True)
    try:
        for question in questions[:5]:
            client.search_sync(question, 5)  # warm: model, vectors, indexes
        print(f"load before: {os.getloadavg()[0]:.2f}")
        runs: dict[str, list[float]] = {name: [] for name in settings}
        for _ in range(args.runs):
            for name, (share, weight) in settings.items():
                config.search.page_share, config.search.name_weight = share, weight
                started = time.perf_counter()
                for question in questions:
                    client.search_sync(question, 5)
                runs[name].append((time.perf_counter() - started) / len(questions) * 1000)
        for name, values in runs.items():
            print(f"{name}: hybrid, limit 5, {len(questions)} questions: ms/query per run "
                  f"{[round(v, 1) for v in values]}, median {statistics.median(values):.1f}")
        print(f"load after: {os.getloadavg()[0]:.2f}")
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
