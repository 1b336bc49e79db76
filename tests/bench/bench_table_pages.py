"""Time per page of the table-heavy real PDFs: parse + chunk, this tree against a baseline tree.

    .venv/bin/python tests/bench/bench_table_pages.py [--data ../shared/data] [--runs 3]
        [--baseline DIR]

The files: those of ``pdfs_realworld/manifest.csv`` whose category names a table (ruled
grids, unruled statistics, a landscape table report), each through ``prepare_document`` in
this process (conversion, items, chunks), one after the other, after a warm-up pass. Each run
is a fresh interpreter; with ``--baseline`` (another checkout's root, e.g. a ``git archive`` of
main) the runs alternate baseline, this tree, baseline, ... so both see the same load, and the
report gives each file's median CPU ms per page (this process's CPU time: the machine's
other load moves it far less than wall time) in both and the ratio, and the wall figures of
the whole set. The data folder:
``--data``, else ``$HAIKU_SHARED_DATA``, else ``../shared/data``; absent, the script says so
and stops.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def table_files(data: Path) -> list[Path]:
    folder = data / "pdfs_realworld"
    with (folder / "manifest.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [folder / "files" / row["file"] for row in rows if "table" in row["category"]]


def one_pass(files: list[Path]) -> dict[str, tuple[int, float, float]]:
    """Each file's (pages, CPU seconds, wall seconds) through prepare_document, after a
    warm-up pass."""
    from haiku.rag.config import load_config
    from haiku.rag.ingest.pipeline import prepare_document

    config = load_config()
    config.processing.ocr = False
    sources = [(path.name, path.read_bytes()) for path in files]
    for name, data in sources:  # imports, tokenizer, caches: outside the clock
        prepare_document(data, filename=name, uri=f"bench://{name}", config=config)
    timed: dict[str, tuple[int, float, float]] = {}
    for name, data in sources:
        cpu, wall = time.process_time(), time.perf_counter()
        new = prepare_document(data, filename=name, uri=f"bench://{name}", config=config)
        timed[name] = (new.page_count, time.process_time() - cpu, time.perf_counter() - wall)
    return timed


def run_tree(root: Path, files: list[Path]) -> dict[str, tuple[int, float, float]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "haiku_rag"), str(root)])}
    out = subprocess.run(
        [sys.executable, __file__, "--one-pass", *map(str, files)],
        env=env, check=True, capture_output=True, text=True,
    ).stdout
    return {name: (pages, cpu, wall) for name, (pages, cpu, wall) in json.loads(out.splitlines()[-1]).items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    default_data = Path(os.environ.get("HAIKU_SHARED_DATA") or REPO.parent / "shared" / "data")
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another checkout's root, timed in turn with this one")
    parser.add_argument("--one-pass", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_pass:
        print(json.dumps(one_pass([Path(p) for p in args.one_pass])))
        return 0
    if not (args.data / "pdfs_realworld" / "manifest.csv").is_file():
        print(f"skipped: no real PDFs under {args.data / 'pdfs_realworld'}")
        return 0
    files = table_files(args.data)
    trees = {"this tree": REPO}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve(), **trees}
    runs: dict[str, list[dict[str, tuple[int, float, float]]]] = {label: [] for label in trees}
    for _ in range(args.runs):
        for label, root in trees.items():
            runs[label].append(run_tree(root, files))
    print(f"{len(files)} table PDFs, {args.runs} runs a tree; CPU ms per page, median of the runs")
    medians: dict[str, dict[str, float]] = {}
    for label in trees:
        medians[label] = {}
        for path in files:
            pages = runs[label][0][path.name][0]
            medians[label][path.name] = 1000 * statistics.median(r[path.name][1] for r in runs[label]) / max(pages, 1)
    total_pages = sum(runs["this tree"][0][p.name][0] for p in files)
    for path in files:
        pages = runs["this tree"][0][path.name][0]
        cells = [f"{label} {medians[label][path.name]:7.1f}" for label in trees]
        ratio = (
            f"  ratio {medians['this tree'][path.name] / medians['baseline'][path.name]:.2f}"
            if "baseline" in trees else ""
        )
        print(f"  {path.name[:48]:48} {pages:3d} p  " + "  ".join(cells) + ratio)
    for label in trees:
        for what, at in (("CPU", 1), ("wall", 2)):
            total = [sum(r[p.name][at] for p in files) for r in runs[label]]
            print(f"{label}: all {total_pages} pages, median {1000 * statistics.median(total) / total_pages:.1f} "
                  f"{what} ms/page (runs: {', '.join(f'{1000 * t / total_pages:.1f}' for t in total)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
