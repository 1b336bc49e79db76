"""A folder of many small text files through ``haiku-rag add-src`` (issue 19, item 6).

    flock /work/coord/heavy.lock .venv/bin/python tests/bench/bench_folder.py [--files 3000] [--no-embed]

Writes the files to a temporary folder, runs the CLI on it in a child process and reports
wall time, the peak RSS of the CLI and of its parse worker (the largest of them), and per
table the versions and data fragments left in the store.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = "harbour keeper ledger whaler lantern tide estuary customs broker convoy fog crate".split()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--no-embed", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "notes"
        folder.mkdir()
        for i in range(args.files):
            words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(60))
            (folder / f"note-{i:05d}.txt").write_text(f"Note {i}. {words}.\n")
        db = Path(tmp) / "library.lancedb"
        command = [str(Path(sys.executable).parent / "haiku-rag"), "--db", str(db), "add-src", str(folder)]
        if args.no_embed:
            command.append("--no-embed")
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]

        from haiku.rag.store.engine import Store

        store = Store(str(db), read_only=True)
        print(f"{args.files} files, embed={not args.no_embed}: {seconds:.0f} s, peak RSS {peak_mb:.0f} MB; {summary}")
        print("| table | versions | fragments | rows |\n|---|---|---|---|")
        for name in ("documents", "document_blobs", "document_items", "chunks", "chunk_vectors"):
            if store.has_table(name):
                table = store.table(name)
                fragments = table.stats()["fragment_stats"]["num_fragments"]
                print(f"| {name} | {len(table.list_versions())} | {fragments} | {table.count_rows()} |")
        store.close()


if __name__ == "__main__":
    main()
