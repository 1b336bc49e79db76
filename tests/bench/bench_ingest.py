"""Parse + chunk throughput on the real PDFs: what a document costs before it is searchable.

    .venv/bin/python tests/bench/bench_ingest.py [--data ../shared/data] [--runs 3]

Times ``prepare_document`` (PyMuPDF conversion, item extraction, chunking with the
embedder's tokenizer, the Markdown content and the document's JSON: everything but the store
write and the embedding) over every PDF of ``pdfs_realworld/files`` that has a text layer, in
this process (the app and the CLI run the same code in a parse worker process). Side by side in
each run, over the same files, the limit: PyMuPDF's raw ``page.get_text()``. Reports pages/s
wall and pages per CPU-second, median of ``--runs`` runs, the ratio to the raw extraction, and
the slowest documents. ``--profile`` adds a cProfile of one pass (top functions by own time).
The data folder: ``--data``, else ``$HAIKU_SHARED_DATA``, else ``../shared/data``.
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser()
    default_data = Path(os.environ.get("HAIKU_SHARED_DATA") or REPO.parent / "shared" / "data")
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
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
    for name, data in sources:  # warm-up pass: imports, tokenizer, and which files have text
        try:
            prepare_document(data, filename=name, uri=f"bench://{name}", config=config)
            usable.append((name, data))
        except IngestError as exc:
            print(f"<!-- left out {name}: {exc.category.value} -->", file=sys.stderr)

    walls, cpus, raw_walls, raw_cpus, per_doc = [], [], [], [], {}
    pages = 0
    for _ in range(args.runs):
        raw_wall, raw_cpu = raw_extraction(usable)
        pages = 0
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for name, data in usable:
            started = time.perf_counter()
            new = prepare_document(data, filename=name, uri=f"bench://{name}", config=config)
            per_doc.setdefault(name, []).append(time.perf_counter() - started)
            pages += new.page_count
        walls.append(pages / (time.perf_counter() - wall0))
        cpus.append(pages / (time.process_time() - cpu0))
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
