"""Search latency while real PDFs are being ingested (parsed, chunked, embedded, stored).

    .venv/bin/python tests/bench/bench_concurrency.py [--data ../shared/data] [--files 8]

One process, one ``HaikuRAG`` client, as in the app: an ingest of ``--files`` real PDFs from
``pdfs_realworld`` (those with a text layer and at most 40 pages, the smallest first, copied
to a temp folder) runs as one task while another
task issues a hybrid search every 100 ms (query embedding included; queries rotate so the
query cache rarely helps) until the ingest ends. Reports every error, searches done, and
p50/p95/max latency under load, then the same searches on the idle store for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
QUERIES = [
    "results of the experiment",
    "table of contents",
    "introduction and motivation",
    "financial statements revenue",
    "method evaluation dataset",
    "conclusion and future work",
    "references cited",
    "figure shows the distribution",
    "security considerations",
    "installation instructions",
    "risk factors",
    "abstract summary",
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def run(files: list[Path], work: Path) -> dict:
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    config = load_config()
    config.storage.data_dir = work / "data"
    seed, rest = files[:1], files[1:]
    folder = work / "incoming"
    folder.mkdir()
    for path in rest:
        shutil.copy(path, folder / path.name)

    async with HaikuRAG(work / "lib.lancedb", config, create=True) as client:
        await client.ingest_file(seed[0])  # something to find from the start
        client.search_sync("warm-up query")  # load the embedder before timing
        latencies: list[float] = []
        errors: list[str] = []
        started = time.perf_counter()
        ingest = asyncio.create_task(client.add_source(folder))
        n = 0
        while not ingest.done():
            t0 = time.perf_counter()
            try:
                await client.search(f"{QUERIES[n % len(QUERIES)]} {n}")
            except Exception as exc:  # every error counts
                errors.append(f"{type(exc).__name__}: {exc}")
            latencies.append((time.perf_counter() - t0) * 1000)
            n += 1
            await asyncio.sleep(max(0.0, 0.1 - (time.perf_counter() - t0)))
        outcomes = await ingest
        ingest_seconds = time.perf_counter() - started
        idle: list[float] = []
        for i in range(len(QUERIES) * 3):
            t0 = time.perf_counter()
            await client.search(f"{QUERIES[i % len(QUERIES)]} idle {i}")
            idle.append((time.perf_counter() - t0) * 1000)
        info = await client.info()
    return {
        "files": len(files),
        "ingested": sum(1 for o in outcomes if o.status == "ingested") + 1,
        "failed": [f"{Path(o.source).name}: {o.category}" for o in outcomes if o.status == "failed"],
        "pages": info["pages"],
        "chunks": info["chunks"],
        "ingest_s": ingest_seconds,
        "searches": len(latencies),
        "errors": errors,
        "load_p50": statistics.median(latencies),
        "load_p95": percentile(latencies, 0.95),
        "load_max": max(latencies),
        "idle_p50": statistics.median(idle),
        "idle_p95": percentile(idle, 0.95),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("HAIKU_SHARED_DATA", str(REPO.parent / "shared" / "data")))
    parser.add_argument("--files", type=int, default=8)
    args = parser.parse_args()
    folder = Path(args.data) / "pdfs_realworld"
    pdfs = []
    if (folder / "manifest.csv").is_file():
        # PDFs with a text layer (scans are refused quickly and would give no ingest load),
        # up to 40 pages each, smallest first.
        rows = list(csv.DictReader((folder / "manifest.csv").open()))
        chosen_rows = [
            r for r in rows
            if int(r["text_chars_pymupdf"] or 0) > 2000 and 0 < int(r["pages_pymupdf"] or 0) <= 40
        ]
        pdfs = sorted((folder / "files" / r["file"] for r in chosen_rows), key=lambda p: p.stat().st_size)
    if not pdfs:
        print(f"skipped: no PDFs under {folder}")
        return 0
    chosen = pdfs[: args.files]
    with tempfile.TemporaryDirectory(prefix="bench-concurrency-") as tmp:
        result = asyncio.run(run(chosen, Path(tmp)))
    print(f"cores: {os.cpu_count()}; load average at the end: {os.getloadavg()[0]:.1f}")
    print(
        f"ingested {result['ingested']}/{result['files']} real PDFs ({result['pages']} pages, "
        f"{result['chunks']} chunks) in {result['ingest_s']:.1f} s; failed: {result['failed'] or 'none'}"
    )
    print(f"searches during the ingest: {result['searches']}, errors: {len(result['errors'])}")
    for error in result["errors"][:5]:
        print(f"  {error}")
    print(
        f"hybrid search latency under load: p50 {result['load_p50']:.0f} ms, p95 {result['load_p95']:.0f} ms, "
        f"max {result['load_max']:.0f} ms; idle: p50 {result['idle_p50']:.0f} ms, p95 {result['idle_p95']:.0f} ms"
    )
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
