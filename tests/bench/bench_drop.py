"""40 real PDFs dropped on an empty library: when is all of it searchable by text, and by meaning?

    .venv/bin/python tests/bench/bench_drop.py [--data DIR] [--runs 1] [--skip-ocr]

What the app's queue does with a drop, through the same library calls in the same order: every
file parsed in the parse worker process (OCR for the scans included) and written, full-text
searchable, one after the other (``HaikuRAG.ingest_file(embed=False)``); then the vectors
(``HaikuRAG.embed_pending``, the default offline embedder). Reports, from the drop: the time
at which the last file became full-text searchable, the time at which everything was
searchable by meaning, and the chunks embedded. The same-run limit of the embedding stage:
the embedder's own rate (``embed_documents`` alone, no store or queue) on 128 of the same chunk
texts, timed right after the drop, times the number of chunks. ``DIR``: ``--data``, else
``$HAIKU_SHARED_DATA``, else ``../shared/data``; skips cleanly when absent.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE_CHUNKS = 128


async def one_drop(files: list[Path], work: Path, ocr: bool) -> dict[str, float]:
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config
    from haiku.rag.operations import Progress

    config = load_config()
    config.processing.ocr = ocr
    source = work / "files"
    source.mkdir()
    copies = []
    for f in files:  # a private copy: the library records file URIs
        shutil.copy2(f, source / f.name)
        copies.append(source / f.name)
    async with HaikuRAG(work / "library.lancedb", config, create=True) as client:
        dropped = time.perf_counter()
        outcomes = [await client.ingest_file(path, embed=False) for path in copies]
        text_at = time.perf_counter() - dropped
        print(f"  all {len(copies)} files handled, full-text searchable at {text_at:.1f} s "
              f"({sum(o.document is not None for o in outcomes)} ingested)", flush=True)
        last_print = [time.perf_counter()]

        def embedding_progress(p: Progress) -> None:
            now = time.perf_counter()
            if p.total and now - last_print[0] >= 30:
                last_print[0] = now
                rate = p.done / max(now - dropped - text_at, 1e-9)
                print(f"  embedding {p.done}/{p.total} at {now - dropped:.0f} s ({rate:.1f} chunks/s)", flush=True)

        from haiku.rag.store import documents as docs

        written = [o.document for o in outcomes if o.document is not None]
        texts = [text for _, _, text in await asyncio.to_thread(docs.chunks_missing_vectors, client.store, written)]
        chunks = await client.embed_pending(progress=embedding_progress)
        meaning_at = time.perf_counter() - dropped
        # The same-run limit of the embedding stage: the embedder alone (no store, no queue)
        # on a sample of the same chunk texts, spread evenly over them, right after the drop.
        sample = texts[:: max(1, len(texts) // SAMPLE_CHUNKS)][:SAMPLE_CHUNKS]
        started = time.perf_counter()
        await asyncio.to_thread(client.embedder.embed_documents, sample)
        bare_rate = len(sample) / (time.perf_counter() - started)
    return {
        "bare_rate": bare_rate,
        "sample": len(sample),
        "ingested": sum(o.document is not None for o in outcomes),
        "failed": sum(o.document is None for o in outcomes),
        "text_at": text_at,
        "meaning_at": meaning_at,
        "chunks": chunks,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_data = Path(os.environ.get("HAIKU_SHARED_DATA") or REPO.parent / "shared" / "data")
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--skip-ocr", action="store_true", help="OCR off: the scans fail as needing OCR")
    args = parser.parse_args()
    folder = args.data / "pdfs_realworld" / "files"
    if not folder.is_dir():
        print(f"skipped: no real PDFs under {folder}")
        return 0
    files = sorted(folder.glob("*.pdf"))
    results = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-drop-") as tmp:
            load = os.getloadavg()[0]
            result = asyncio.run(one_drop(files, Path(tmp), ocr=not args.skip_ocr))
            results.append(result)
            embed_seconds = result["meaning_at"] - result["text_at"]
            result["embed_limit"] = result["chunks"] / result["bare_rate"]
            result["embed_ratio"] = result["embed_limit"] / max(embed_seconds, 1e-9)
            print(f"run {run + 1}: {result['ingested']} ingested, {result['failed']} failed; "
                  f"text-searchable at {result['text_at']:.1f} s, meaning-searchable at "
                  f"{result['meaning_at']:.1f} s ({result['chunks']} chunks embedded in {embed_seconds:.1f} s, "
                  f"{result['chunks'] / max(embed_seconds, 1e-9):.1f} chunks/s); same-run limit of the "
                  f"embedding: the embedder alone at {result['bare_rate']:.1f} chunks/s on {result['sample']} of "
                  f"the chunks -> {result['embed_limit']:.1f} s (ratio {result['embed_ratio']:.2f}); "
                  f"load {load:.2f} -> {os.getloadavg()[0]:.2f}", flush=True)
    if len(results) > 1:
        for key in ("text_at", "meaning_at", "embed_limit", "embed_ratio"):
            print(f"median {key}: {statistics.median(r[key] for r in results):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
