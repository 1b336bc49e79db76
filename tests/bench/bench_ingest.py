"""Parse + chunk throughput on the real PDFs: what a document costs before it is searchable.

    .venv/bin/python tests/bench/bench_ingest.py [--data ../shared/data] [--runs 3]

Times ``prepare_document`` (PyMuPDF conversion, item extraction, HybridChunker with the
embedder's tokenizer: everything but the store write and the embedding) over every PDF of
``pdfs_realworld/files`` that has a text layer, in this process (the app and the CLI run the
same code in a parse worker process). Reports pages/s wall and pages per CPU-second, median of
``--runs`` runs, and the slowest documents.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    folder = args.data / "pdfs_realworld" / "files"
    if not folder.is_dir():
        print(f"skipped: no real PDFs under {folder}")
        return 0

    from haiku.rag.config import load_config
    from haiku.rag.errors import IngestError
    from haiku.rag.ingest.pipeline import prepare_document

    config = load_config()
    sources = [(p.name, p.read_bytes()) for p in sorted(folder.glob("*.pdf"))]
    usable: list[tuple[str, bytes]] = []
    for name, data in sources:  # warm-up pass: imports, tokenizer, and which files have text
        try:
            prepare_document(data, filename=name, uri=f"bench://{name}", config=config)
            usable.append((name, data))
        except IngestError as exc:
            print(f"<!-- left out {name}: {exc.category.value} -->", file=sys.stderr)

    walls, cpus, per_doc = [], [], {}
    pages = 0
    for _ in range(args.runs):
        pages = 0
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for name, data in usable:
            started = time.perf_counter()
            new = prepare_document(data, filename=name, uri=f"bench://{name}", config=config)
            per_doc.setdefault(name, []).append(time.perf_counter() - started)
            pages += new.page_count
        walls.append(pages / (time.perf_counter() - wall0))
        cpus.append(pages / (time.process_time() - cpu0))
    print(f"{len(usable)} PDFs with text, {pages} pages, {args.runs} runs")
    print(f"parse+chunk: median {statistics.median(walls):.1f} pages/s wall, "
          f"{statistics.median(cpus):.1f} pages per CPU-second (runs: {', '.join(f'{w:.1f}' for w in walls)})")
    slowest = sorted(per_doc.items(), key=lambda kv: -statistics.median(kv[1]))[:5]
    for name, times in slowest:
        print(f"  slowest: {name} {statistics.median(times):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
