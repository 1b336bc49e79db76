"""The "layout" PDF mode with and without OpenCV: does leaving cv2 out of the bundle change it?

Run on demand (pytest does not collect it), niced on a shared machine:

    nice -n 15 python tests/bench/check_layout_without_cv2.py [--data DIR] [FILE ...]

``pymupdf.layout`` imports cv2 inside a try: with it, its picture detector's class logits are
scaled to the feature map bilinearly (``cv2.resize``), without it by nearest neighbour; and
docling-core encodes pictures' PNGs with cv2 when it can, else with Pillow. The bundle no
longer carries OpenCV (the OCR does not need it), so this converts a few real PDFs with
figures in the layout mode twice, each in a fresh process, once as installed and once with
``cv2`` made unimportable, and compares every item: its label, page and box (rounded to
0.1 pt), and its text. Files come from ``DIR/pdfs_realworld/files`` (``DIR``: ``--data``,
else ``HAIKU_SHARED_DATA``, else ``../shared/data`` beside the repository; skipped cleanly
when absent).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from shared_data import data_dir

REPO_ROOT = Path(__file__).resolve().parents[2]
FILES = [
    "docling__picture_classification.pdf",
    "docling__amt_handbook_sample.pdf",
    "docling__table_mislabeled_as_picture.pdf",
    "unstructured__layout-parser-paper-with-empty-pages.pdf",
]

CHILD = r"""
import json, sys
if sys.argv[2] == "without":
    sys.modules["cv2"] = None  # `import cv2` raises ImportError, as in the bundle
from haiku.rag.ingest.pdf import convert_pdf
data = open(sys.argv[1], "rb").read()
conversion = convert_pdf(data, source=sys.argv[1], layout="layout")
items = []
for item, _ in conversion.document.iterate_items():
    for prov in getattr(item, "prov", []):
        box = [round(v, 1) for v in (prov.bbox.l, prov.bbox.t, prov.bbox.r, prov.bbox.b)]
        items.append([str(item.label), prov.page_no, box, getattr(item, "text", "")])
print(json.dumps({"items": items, "cv2": "cv2" in sys.modules and sys.modules["cv2"] is not None}))
"""



def run(path: Path, mode: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "haiku_rag")}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), mode],
        env=env, capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    folder = data_dir(args.data) / "pdfs_realworld" / "files"
    if not folder.is_dir():
        print(f"skipped: {folder} is absent")
        return 0
    print("| file | items with cv2 | items without | cv2 loaded (with) | identical |")
    print("|---|---|---|---|---|")
    for name in args.files or FILES:
        path = folder / name
        if not path.is_file():
            continue
        with_cv2, without = run(path, "with"), run(path, "without")
        same = with_cv2["items"] == without["items"]
        print(f"| {name} | {len(with_cv2['items'])} | {len(without['items'])} | "
              f"{with_cv2['cv2']} | {same} |")
        if not same:
            for a, b in zip(with_cv2["items"], without["items"], strict=False):
                if a != b:
                    print(f"    with:    {a[:3]} {a[3][:60]!r}\n    without: {b[:3]} {b[3][:60]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
