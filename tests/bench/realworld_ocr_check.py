"""Done-when check of the OCR work on the real PDFs: every file of ``pdfs_realworld`` is
ingested through the CLI (full text only, the real parse worker), each outcome is listed,
and a phrase from each scan that needed OCR is searched with ``haiku-rag search --json``:
its hit must be that file, on the expected page, with a box.

    flock /work/coord/heavy.lock python tests/bench/realworld_ocr_check.py [--data DIR] [--json OUT]

Skips cleanly when the data folder is absent.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
try:
    import haiku.rag  # noqa: F401
except ImportError:
    sys.path.insert(0, str(REPO_ROOT / "haiku_rag"))

from haiku.rag.cli import main as cli  # noqa: E402

# A phrase printed on each scan that fails without OCR, and the page it is on.
PHRASES = {
    "ocrmypdf__linn.pdf": ("32 simultaneous polyphonic tracks", 1),
    # the Linn page four times, turned 0/90/180/270 degrees: one phrase per page
    "ocrmypdf__cardinal.pdf": ("Exclusive REPEAT function automatically repeats", 1),
    "ocrmypdf__cardinal.pdf#2": ("TIMING CORRECTION works during playback", 2),
    "ocrmypdf__cardinal.pdf#3": ("Optional SMPTE time code synchronization", 3),
    "ocrmypdf__cardinal.pdf#4": ("Linn dealer today for a demonstration", 4),
    "ocrmypdf__c02-22.pdf": ("stooping down so as the branches", 1),
    "ocrmypdf__skew.pdf": ("Composition Without Compromise", 1),
    "docling__ocr_test.pdf": ("self contained package", 1),
    "privategpt__file_scanned.pdf": ("facility of facsimile transmission", 1),
}


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(list(args))
    return code, out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_data = Path(os.environ.get("HAIKU_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", nargs="*", help="file names to ingest (default: all)")
    args = parser.parse_args()
    files = args.data / "pdfs_realworld" / "files"
    if not files.is_dir():
        print(f"skipped: {files} not found")
        return 0
    report: dict = {"load_before": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "pdfs"
        folder.mkdir()
        for path in sorted(files.glob("*.pdf")):
            if not args.only or path.name in args.only:
                shutil.copyfile(path, folder / path.name)  # links leaving the folder are skipped by add-src
        db = str(Path(tmp) / "lib.lancedb")
        started = time.perf_counter()
        code, out = run_cli("--db", db, "add-src", str(folder), "--json", "--no-embed")
        report["ingest_seconds"] = round(time.perf_counter() - started, 1)
        outcomes = json.loads(out)
        _, listed = run_cli("--db", db, "list", "--json")
        documents = {Path(d["uri"]).name: d for d in json.loads(listed)}
        report["outcomes"] = {}
        for outcome in outcomes:
            name = Path(outcome["source"]).name
            document = documents.get(name) or {}
            meta = document.get("metadata") or {}
            report["outcomes"][name] = {
                "status": outcome["status"],
                "category": outcome.get("category"),
                "reason": outcome.get("reason"),
                "seconds": outcome.get("seconds"),
                "pages": document.get("page_count"),
                "pages_recognised": meta.get("pages_recognised", []),
                "pages_needing_ocr": meta.get("pages_needing_ocr", []),
            }
            print(name, report["outcomes"][name], flush=True)
        report["phrases"] = {}
        for key, (phrase, page) in PHRASES.items():
            name = key.split("#")[0]
            if name not in report["outcomes"]:
                continue
            code, out = run_cli("--db", db, "search", phrase, "--json", "--limit", "10")
            hits = json.loads(out) if code == 0 else []
            # the best hit of that file on that page (the linn page is printed in three files)
            mine = [h for h in hits if Path(h["document_uri"]).name == name and page in h["page_numbers"]]
            top = mine[0] if mine else (hits[0] if hits else {})
            found = {
                "phrase": phrase,
                "top_file": Path(top.get("document_uri", "")).name,
                "pages": top.get("page_numbers"),
                "boxes_on_page": sum(1 for b in top.get("boxes", []) if b["page"] == page),
                "ok": Path(top.get("document_uri", "")).name == name
                and page in (top.get("page_numbers") or [])
                and any(b["page"] == page for b in top.get("boxes", [])),
            }
            found["rank"] = hits.index(top) + 1 if top in hits else None
            report["phrases"][key] = found
            print(key, found, flush=True)
    report["load_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
