"""Parse + chunk throughput on the real PDFs: what a document costs before it is searchable.

    .venv/bin/python tests/bench/bench_ingest.py [--data ../shared/data] [--runs 3] [--in-process]

Times what the CLI's ``add-src`` and ``import_documents`` do to parse a batch of files, minus
the store write and the embedding: every PDF of ``pdfs_realworld/files`` that has a text layer
through ``parse_document`` in the parse worker processes (conversion, item extraction,
chunking with the embedder's tokenizer, the Markdown content), with the library's own batch
parallelism (``isolation.parse_ahead`` over ``processing.parse_workers`` workers, largest files
first, when the library has it; a library without it parses one file at a time in its one worker, as its
``add-src`` did). ``--in-process`` times ``prepare_document`` in this process instead, one file
after the other (the figure of sessions 6-7).

The limit, side by side in each run over the same files: PyMuPDF's raw ``page.get_text()``,
in this one process, one page after the other. Reports pages/s wall and pages per CPU-second
(this process plus the worker processes), median of ``--runs`` runs, the ratio to the raw
extraction, and the slowest documents. ``--profile`` adds a cProfile of one in-process pass
(top functions by own time). The data folder: ``--data``, else ``$HAIKU_SHARED_DATA``, else
``../shared/data``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser()
    default_data = Path(os.environ.get("HAIKU_SHARED_DATA") or REPO.parent / "shared" / "data")
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--in-process", action="store_true", help="prepare_document here, one file at a time")
    args = parser.parse_args()
    folder = args.data / "pdfs_realworld" / "files"
    if not folder.is_dir():
        print(f"skipped: no real PDFs under {folder}")
        return 0

    from haiku.rag.config import load_config
    from haiku.rag.errors import IngestError
    from haiku.rag.ingest.pipeline import prepare_document

    config = load_config()
    # text PDFs only: the scans are the OCR benchmark's (bench_ocr.py), at ~0.03 pages/s
    config.processing.ocr = False
    sources = [(p.name, p.read_bytes()) for p in sorted(folder.glob("*.pdf"))]
    usable: list[tuple[str, bytes]] = []
    for name, data in sources:  # which files have text (and imports, tokenizer)
        try:
            prepare_document(data, filename=name, uri=f"bench://{name}", config=config)
            usable.append((name, data))
        except IngestError as exc:
            print(f"<!-- left out {name}: {exc.category.value} -->", file=sys.stderr)
    batch, how = batch_parser(config, in_process=args.in_process)
    print(f"parse+chunk path timed: {how}; limit: raw get_text() in this one process")
    batch(usable)  # warm-up through the timed path: worker processes started, outside the clock

    walls, cpus, raw_walls, raw_cpus, per_doc = [], [], [], [], {}
    pages = 0
    for _ in range(args.runs):
        raw_wall, raw_cpu = raw_extraction(usable)
        wall0, cpu0 = time.perf_counter(), cpu_seconds()
        results = batch(usable)
        wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
        pages = sum(new.page_count for _name, new, _seconds in results)
        for name, _new, seconds in results:
            per_doc.setdefault(name, []).append(seconds)
        walls.append(pages / wall)
        cpus.append(pages / cpu)
        raw_walls.append(pages / raw_wall)
        raw_cpus.append(pages / raw_cpu)
        print(f"  run: parse+chunk {walls[-1]:.1f} pages/s wall ({cpus[-1]:.1f}/CPU-s); "
              f"raw get_text {raw_walls[-1]:.1f} pages/s wall ({raw_cpus[-1]:.1f}/CPU-s); "
              f"ratio {walls[-1] / raw_walls[-1]:.3f}", flush=True)
    ratios = [w / r for w, r in zip(walls, raw_walls, strict=True)]
    print(f"{len(usable)} PDFs with text, {pages} pages, {args.runs} runs")
    print(f"parse+chunk: median {statistics.median(walls):.1f} pages/s wall, "
          f"{statistics.median(cpus):.1f} pages per CPU-second (runs: {', '.join(f'{w:.1f}' for w in walls)})")
    print(f"raw get_text(), same runs: median {statistics.median(raw_walls):.1f} pages/s wall, "
          f"{statistics.median(raw_cpus):.1f} per CPU-second")
    print(f"ratio parse+chunk / raw (wall), median {statistics.median(ratios):.3f} "
          f"(runs: {', '.join(f'{r:.3f}' for r in ratios)})")
    slowest = sorted(per_doc.items(), key=lambda kv: -statistics.median(kv[1]))[:5]
    for name, times in slowest:
        print(f"  slowest: {name} {statistics.median(times):.2f} s")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for name, data in usable:
            prepare_document(data, filename=name, uri=f"bench://{name}", config=config)
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue())
    return 0


Parsed = list[tuple[str, Any, float]]  # (file name, NewDocument, seconds from submit to result)


def batch_parser(config: Any, *, in_process: bool) -> tuple[Callable[[list[tuple[str, bytes]]], Parsed], str]:
    """The timed path: the library's batch parse (``parse_ahead`` over the worker pool) when it
    has one, else one file at a time through ``parse_document`` (its one worker)."""
    from haiku.rag.ingest.isolation import parse_document
    from haiku.rag.ingest.pipeline import prepare_document

    def one(source: tuple[str, bytes], parse: Callable[..., Any] = parse_document) -> tuple[str, Any, float]:
        name, data = source
        started = time.perf_counter()
        new = parse(data, filename=name, uri=f"bench://{name}", config=config)
        return name, new, time.perf_counter() - started

    if in_process:
        return (lambda sources: [one(s, prepare_document) for s in sources]), "prepare_document in this process, serial"
    try:
        from haiku.rag.ingest.isolation import largest_first, parse_ahead, parse_workers
    except ImportError:
        return (lambda sources: [one(s) for s in sources]), "parse_document, one file at a time in the parse worker"
    workers = parse_workers(config.processing)

    def batch(sources: list[tuple[str, bytes]]) -> Parsed:
        # as import_documents does: largest files first when more than one worker
        ordered = [source for _i, source in largest_first(sources, lambda s: len(s[1]))] if workers > 1 else sources
        return list(parse_ahead(ordered, one, workers))

    return batch, f"parse_ahead over parse_document, {workers} parse worker processes, largest files first"


def cpu_seconds() -> float:
    """CPU seconds of this process and of its live parse workers (Linux: /proc)."""
    total = time.process_time()
    try:
        from haiku.rag.ingest.isolation import shared_pool

        pids = shared_pool().pids
    except ImportError:
        from haiku.rag.ingest.isolation import shared_worker

        pids = [pid for pid in [shared_worker().pid] if pid is not None]
    ticks = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def raw_extraction(sources: list[tuple[str, bytes]]) -> tuple[float, float]:
    """Wall and CPU seconds of PyMuPDF's plain ``get_text()`` over every page of ``sources``."""
    from haiku.rag.mupdf import import_pymupdf

    pymupdf = import_pymupdf()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _name, data in sources:
        with pymupdf.open(stream=data, filetype="pdf") as doc:
            for page in doc:
                page.get_text()
    return time.perf_counter() - wall0, time.process_time() - cpu0


if __name__ == "__main__":
    sys.exit(main())
