"""What parse + chunk produces for the real PDFs, saved and compared between two versions.

    PYTHONPATH=<old>/haiku_rag:<old> .venv/bin/python tests/bench/compare_parse.py save before.pickle
    PYTHONPATH=<new>/haiku_rag:<new> .venv/bin/python tests/bench/compare_parse.py save after.pickle
    .venv/bin/python tests/bench/compare_parse.py diff before.pickle after.pickle

``save`` runs ``prepare_document`` (OCR off, as ``bench_ingest.py``) on every PDF of
``pdfs_realworld/files`` (``--set pdfs_adversarial``: the damaged and odd files) and keeps, per file, everything the store receives from it: the
chunks (text, embed text, headings, labels, item refs, pages, boxes), the item records,
the Markdown content, title, page count, metadata, or the error. ``diff`` lists every
difference, file by file. Data folder: ``--data``, else ``$HAIKU_SHARED_DATA``, else
``../shared/data``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pickle
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def snapshot(folder: Path) -> dict[str, Any]:
    from haiku.rag.config import load_config
    from haiku.rag.errors import IngestError
    from haiku.rag.ingest.pipeline import prepare_document

    config = load_config()
    config.processing.ocr = False
    out: dict[str, Any] = {}
    for path in sorted(folder.glob("*.pdf")):
        try:
            new = prepare_document(path.read_bytes(), filename=path.name, uri=f"bench://{path.name}", config=config)
        except IngestError as exc:
            out[path.name] = ("error", type(exc).__name__, str(exc))
            continue
        out[path.name] = {
            "title": new.title,
            "page_count": new.page_count,
            "metadata": new.metadata,
            "content": new.content,
            "items": [dataclasses.asdict(item) for item in new.items],
            "chunks": [dataclasses.asdict(chunk) for chunk in new.chunks],
        }
    return out


def diff(before: dict[str, Any], after: dict[str, Any], limit: int = 8) -> int:
    differences = 0
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a == b:
            continue
        differences += 1
        print(f"== {name}")
        if not isinstance(a, dict) or not isinstance(b, dict):
            print(f"   before: {str(a)[:300]}\n   after:  {str(b)[:300]}")
            continue
        for key in ("title", "page_count", "metadata", "content"):
            if a[key] != b[key]:
                print(f"   {key} differs: {str(a[key])[:200]!r} -> {str(b[key])[:200]!r}")
        for key in ("items", "chunks"):
            if len(a[key]) != len(b[key]):
                print(f"   {key}: {len(a[key])} -> {len(b[key])}")
            shown = 0
            for i, (x, y) in enumerate(zip(a[key], b[key], strict=False)):
                if x != y and shown < limit:
                    shown += 1
                    fields = [f for f in x if x[f] != y.get(f)]
                    print(f"   {key}[{i}] differs in {fields}")
                    for f in fields:
                        print(f"      {f}: {str(x[f])[:300]!r}\n      {' ' * len(f)}  {str(y[f])[:300]!r}")
    print(f"{differences} of {len(set(before) | set(after))} files differ")
    return differences


def main() -> int:
    parser = argparse.ArgumentParser()
    default_data = Path(os.environ.get("HAIKU_SHARED_DATA") or REPO.parent / "shared" / "data")
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--set", default="pdfs_realworld", help="the data set's folder (pdfs_adversarial: edge cases)")
    sub = parser.add_subparsers(dest="command", required=True)
    save = sub.add_parser("save")
    save.add_argument("out", type=Path)
    compare = sub.add_parser("diff")
    compare.add_argument("before", type=Path)
    compare.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "save":
        folder = args.data / args.set / "files"
        if not folder.is_dir():
            print(f"skipped: no real PDFs under {folder}")
            return 0
        args.out.write_bytes(pickle.dumps(snapshot(folder)))
        return 0
    before = pickle.loads(args.before.read_bytes())
    after = pickle.loads(args.after.read_bytes())
    return 1 if diff(before, after) else 0


if __name__ == "__main__":
    sys.exit(main())
