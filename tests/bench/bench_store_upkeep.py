"""The store's share of a ``create_document`` loop, two variants of the store interleaved in
one run so that both see the same load.

    .venv/bin/python tests/bench/bench_store_upkeep.py [--arms A,B] [--count 2000] [--window 300] [--tmp DIR]

Per document, on each store: the lookup by URI, the write of a three-chunk document with its
(random, 384-d) vectors in one transaction, and the upkeep check: the store calls a
``create_document`` makes, without parsing and embedding. Arms:

- ``rows_only``: upkeep on the row-lag trigger only (``SMALL_FRAGMENTS_BEFORE_MAINTENANCE`` out
  of reach), as before session 7;
- ``checked``: the fragment trigger too, with session 7's costs: the tables look for versions
  written elsewhere before every operation and the trigger is read from every table's stats
  after each write;
- ``counted``: the store as it is: a writer holding the lock does not look for other versions,
  and upkeep counts the writes it is told about.

Reports ms per document over the first and the last ``--window`` documents of each.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def new_document(n: int):  # type: ignore[no-untyped-def]
    from haiku.rag.ingest.records import Box, ChunkRecord, ItemRecord, NewDocument

    texts = [f"Abstract {n}, sentence {k}: results of trial {n * 7 + k} on glacier melt." * 8 for k in range(3)]
    box = Box(1, 72, 100, 500, 114)
    return NewDocument(
        uri=f"scifact://{n}",
        title=f"Abstract {n}",
        metadata={},
        content_hash=f"h{n}",
        mime_type="text/markdown",
        page_count=1,
        source_bytes="\n\n".join(texts).encode(),
        content="\n\n".join(texts),
        docling_json="{}",
        items=[ItemRecord(k, f"#/texts/{k}", "text", t, [], 0, [box]) for k, t in enumerate(texts)],
        chunks=[ChunkRecord(k, t, t, [], ["text"], [f"#/texts/{k}"], [], []) for k, t in enumerate(texts)],
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--window", type=int, default=300)
    parser.add_argument("--tmp", type=Path, default=None)
    parser.add_argument("--arms", default="checked,counted", help="two or more of rows_only, checked, counted")
    args = parser.parse_args()

    import numpy as np

    from haiku.rag.store import documents as D
    from haiku.rag.store import engine

    fragment_trigger = engine.SMALL_FRAGMENTS_BEFORE_MAINTENANCE
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        stores = {}
        class Checked(engine.Store):
            def _pin_tables(self) -> None:  # keep looking for other writers' versions
                pass

            def note_append(self, *, rows: int, fragments: int = 1) -> None:  # read the stats every time
                pass

        for name in args.arms.split(","):
            kind = engine.Store if name == "counted" else Checked
            stores[name] = kind(str(Path(tmp) / f"{name}.lancedb"), create=True)
            stores[name].ensure_vector_table("bench", "random", 384)
        seconds: dict[str, list[float]] = {name: [] for name in stores}
        upkeeps = {name: 0 for name in stores}
        for n in range(args.count):
            new = new_document(n)
            vectors = rng.random((3, 384), dtype=np.float32)
            for name, store in stores.items():
                engine.SMALL_FRAGMENTS_BEFORE_MAINTENANCE = 10**9 if name == "rows_only" else fragment_trigger
                started = time.perf_counter()
                existing = D.find_document_by_uri(store, new.uri)
                D.write_document(store, new, replaces=existing, vectors=vectors)
                upkeeps[name] += store.maintain_indexes()
                seconds[name].append(time.perf_counter() - started)
            if (n + 1) % 500 == 0:
                print(f"<!-- {n + 1}: " + ", ".join(f"{k} {1000 * sum(v[-500:]) / 500:.0f} ms" for k, v in seconds.items())
                      + f", load {os.getloadavg()[0]:.1f} -->", file=sys.stderr, flush=True)
        w = min(args.window, args.count)
        result = {
            name: {
                "first_ms_per_doc": round(1000 * sum(v[:w]) / w, 1),
                "last_ms_per_doc": round(1000 * sum(v[-w:]) / w, 1),
                "upkeeps": upkeeps[name],
                "small_fragments_at_end": stores[name].small_fragments(),
            }
            for name, v in seconds.items()
        }
        for store in stores.values():
            store.close()
    print(json.dumps({"documents": args.count, **result}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
