"""Eight real text PDFs ingested one after the other (``HaikuRAG.ingest_file(embed=False)``, OCR
off, a fresh store, the parse worker started first): the wall time until all are full-text
searchable, and each file's stored bibliographic record, written to OUT as JSON, to compare two
versions of the code (issue 31 moved the record's reading into the parse worker).

    PYTHONPATH=<tree>/haiku_rag python tests/bench/check_ingest_records.py OUT [--data DIR]

``DIR``: ``--data``, else ``$HAIKU_SHARED_DATA``, else ``../shared/data``; skips cleanly when
the files are absent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FILES = [
    "paperqa__paper.pdf",
    "pdfjs__tracemonkey.pdf",
    "pdfjs__TAMReview.pdf",
    "unstructured__fr_olap.pdf",
    "pymupdf__2201.00069.pdf",
    "unstructured__layout-parser-paper-with-empty-pages.pdf",
    "unstructured__multi-column.pdf",
    "docling__multi_page.pdf",
]


async def run(folder: Path, out: Path) -> float:
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    with tempfile.TemporaryDirectory() as tmp:
        config = load_config()
        config.storage.data_dir = Path(tmp) / "data"
        config.processing.ocr = False
        async with HaikuRAG(Path(tmp) / "lib.lancedb", config, create=True, skip_validation=True) as client:
            warm = await client.ingest_file(folder / FILES[-1], embed=False)  # starts the worker
            if warm.document is not None:
                await client.delete_document(warm.document.id)
            started = time.perf_counter()
            records = {}
            for name in FILES:
                outcome = await client.ingest_file(folder / name, embed=False)
                record = outcome.document.metadata.get("bibliographic") if outcome.document else None
                records[name] = [outcome.status, record]
            took = time.perf_counter() - started
    out.write_text(json.dumps(records, sort_keys=True, indent=1))
    return took


def main() -> int:
    default = Path(os.environ.get("HAIKU_SHARED_DATA", REPO.parent / "shared" / "data"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--data", type=Path, default=default)
    args = parser.parse_args()
    folder = args.data / "pdfs_realworld" / "files"
    if not all((folder / name).is_file() for name in FILES):
        print(f"skipped: the PDFs are not under {folder}")
        return 0
    print(f"{asyncio.run(run(folder, args.out)):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
