"""Library RSS after ingesting the app benchmark's 12 files, before and after the idle release.

    .venv/bin/python tests/bench/bench_memory.py [FOLDER] [--max-files 12] [--runs 3]

The same files as ``bench_app.py --max-files 12`` (the first 12 PDFs of
../shared/data/pdfs_realworld/files by name), each through ``HaikuRAG.ingest_file`` (parsed in
the isolated worker, embedded by the default embedder), then one search. RSS of this process
(the parse worker is a child and not counted, as in bench_app): at open, once ingestion is
done (the same run's before), and after ``HaikuRAG.release_memory()`` and 2 s idle. Each run in
a fresh interpreter; medians printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_FOLDER = REPO.parent / "shared" / "data" / "pdfs_realworld" / "files"


async def one_run(folder: Path, max_files: int) -> dict:
    import psutil

    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    def rss() -> float:
        return round(psutil.Process().memory_info().rss / 2**20, 1)

    files = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".pdf")[:max_files]
    config = load_config()
    with tempfile.TemporaryDirectory() as tmp:
        config.storage.data_dir = Path(tmp) / "data"
        async with HaikuRAG(Path(tmp) / "lib.lancedb", config, create=True) as client:
            out: dict = {"open_mb": rss()}
            started = time.perf_counter()
            statuses = [(await client.ingest_file(f)).status for f in files]
            await client.search("results of the experiment")
            out.update(files=len(files), ingested=statuses.count("ingested"), seconds=round(time.perf_counter() - started, 1))
            out["after_ingest_mb"] = rss()
            client.release_memory()
            await asyncio.sleep(2)
            out["after_release_mb"] = rss()
            await client.search("a new question after the release")
            out["after_next_search_mb"] = rss()
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER)
    parser.add_argument("--max-files", type=int, default=12)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.folder.is_dir():
        print(f"skipped: no folder {args.folder}")
        return 0
    if args.one:
        print(json.dumps(asyncio.run(one_run(args.folder, args.max_files))))
        return 0
    runs = []
    for _ in range(args.runs):
        done = subprocess.run(
            [sys.executable, __file__, str(args.folder), "--max-files", str(args.max_files), "--one"],
            capture_output=True, text=True, check=True,
        )
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(runs[-1]), flush=True)
    for key in ("open_mb", "after_ingest_mb", "after_release_mb", "after_next_search_mb", "seconds"):
        print(f"{key}: median {statistics.median(r[key] for r in runs)} ({' / '.join(str(r[key]) for r in runs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
