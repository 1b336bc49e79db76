"""OCR without OpenCV against the RapidOCR path it replaced: the same pages, text and boxes.

Run on demand (pytest does not collect it), niced on a shared machine:

    nice -n 15 python tests/bench/compare_ocr_engines.py [--data DIR] [--baseline-rev REV]
        [--dpi 150] [--runtime auto|onnxruntime|openvino] [--json OUT]

Each page of a few real scans from ``DIR/pdfs_realworld/files`` (``DIR`` defaults to
``../shared/data`` beside the repository; ``HAIKU_SHARED_DATA`` also works; skipped cleanly
when absent) is rendered at ``--dpi`` and recognised by ``haiku.rag.ingest.ocr.recognise``
twice, each in a fresh process: with this tree's code and with the code of
``--baseline-rev`` (extracted with ``git archive``; default 1dd4173, the last main with the
RapidOCR path that imports OpenCV). A text page in French (``unstructured__fr_olap.pdf``, page 1) is
rendered to pixels as a scan of it, for the accents. Per page: the character error rate
of the new text against the old (Levenshtein distance / old length, whitespace collapsed),
the lines of each, and how the boxes agree (each new line's best intersection-over-union
with an old line: mean, and the lines under 0.8). Each child also reports whether ``cv2``
was imported, and the CPU time of its ``recognise`` calls (one run: a rough figure on a
shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from shared_data import data_dir

REPO_ROOT = Path(__file__).resolve().parents[2]
SCANS = [
    ("ocrmypdf__linn.pdf", None),
    ("privategpt__file_scanned.pdf", None),
    ("ocrmypdf__skew.pdf", None),
    ("ocrmypdf__cardinal.pdf", None),  # four pages, turned 0/90/180/270 degrees
    ("ocrmypdf__c02-22.pdf", None),
    ("unstructured__fr_olap.pdf", [0]),  # a text page in French, rendered as a scan
]

CHILD = r"""
import json, sys, time
import numpy as np
import pymupdf
from haiku.rag.ingest import ocr
jobs, dpi = json.loads(sys.argv[1]), int(sys.argv[2])
out = []
ocr._load_engine()
cpu = 0.0
for path, pages in jobs:
    with pymupdf.open(path) as doc:
        for index in (pages if pages is not None else range(doc.page_count)):
            pix = doc[index].get_pixmap(dpi=dpi)
            image = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, pix.n)
            image = np.ascontiguousarray(image[:, :, :3])
            started = time.process_time()
            result = ocr.recognise(image)
            cpu += time.process_time() - started
            out.append({
                "file": path.rsplit("/", 1)[-1], "page": index + 1, "rotation": result.rotation,
                "lines": [{"text": l.text, "box": list(l.box)} for l in result.lines],
            })
print(json.dumps({"pages": out, "cv2": "cv2" in sys.modules, "runtime": ocr.runtimes, "cpu": cpu}))
"""



def levenshtein(a: str, b: str) -> int:
    import numpy as np

    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    codes_b = np.array([ord(c) for c in b], dtype=np.int64)
    columns = np.arange(len(b) + 1, dtype=np.int64)
    previous = columns.copy()
    t = np.empty(len(b) + 1, dtype=np.int64)
    for i, ca in enumerate(a, 1):
        t[0] = i
        np.minimum(previous[1:] + 1, previous[:-1] + (codes_b != ord(ca)), out=t[1:])
        previous = np.minimum.accumulate(t - columns) + columns
    return int(previous[-1])


def cer(reference: str, hypothesis: str) -> float:
    ref, hyp = " ".join(reference.split()), " ".join(hypothesis.split())
    return levenshtein(ref, hyp) / max(1, len(ref))


def iou(a: list[float], b: list[float]) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    area = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / area


def run(tree: Path, jobs: list, dpi: int, runtime: str) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{tree}", "HAIKU_RAG_OCR_RUNTIME": runtime}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(jobs), str(dpi)],
        env=env, capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data")
    # the last main with the RapidOCR path (OpenCV): the OpenCV-free OCR was merged after it
    parser.add_argument("--baseline-rev", default="1dd4173")
    parser.add_argument("--dpi", type=int, default=150)
    parser.add_argument("--runtime", default="auto")
    parser.add_argument("--json")
    args = parser.parse_args()
    files = data_dir(args.data) / "pdfs_realworld" / "files"
    if not files.is_dir():
        print(f"skipped: {files} is absent")
        return 0
    jobs = [[str(files / name), pages] for name, pages in SCANS if (files / name).is_file()]
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "baseline.tar"
        subprocess.run(
            ["git", "-C", str(REPO_ROOT), "archive", "-o", str(archive), args.baseline_rev,
             "haiku_rag"],
            check=True,
        )
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        old = run(Path(tmp) / "haiku_rag", jobs, args.dpi, args.runtime)
    new = run(REPO_ROOT / "haiku_rag", jobs, args.dpi, args.runtime)
    rows = []
    for before, after in zip(old["pages"], new["pages"], strict=True):
        old_text = "\n".join(line["text"] for line in before["lines"])
        new_text = "\n".join(line["text"] for line in after["lines"])
        overlaps = [
            max((iou(line["box"], other["box"]) for other in before["lines"]), default=0.0)
            for line in after["lines"]
        ]
        rows.append({
            "page": f'{after["file"]}#{after["page"]}',
            "cer": round(cer(old_text, new_text), 5),
            "chars": len(old_text),
            "lines": [len(before["lines"]), len(after["lines"])],
            "rotation": [before["rotation"], after["rotation"]],
            "mean_iou": round(sum(overlaps) / max(1, len(overlaps)), 4),
            "iou_below_0.8": sum(1 for v in overlaps if v < 0.8),
            "differences": [
                (a, b) for a, b in zip(old_text.splitlines(), new_text.splitlines(), strict=False)
                if a != b
            ][:5],
        })
    print(f"runtime {args.runtime}: old {old['runtime']} (cv2 imported: {old['cv2']}), "
          f"new {new['runtime']} (cv2 imported: {new['cv2']})")
    print(f"OCR CPU-s over the {len(rows)} pages (this process's recognise calls, one run each): "
          f"old {old['cpu']:.1f}, new {new['cpu']:.1f}")
    print("| page | CER new vs old | chars | lines old/new | turn old/new | mean box IoU | boxes IoU<0.8 |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['page']} | {row['cer']:.2%} | {row['chars']} | {row['lines'][0]}/{row['lines'][1]} "
              f"| {row['rotation'][0]}/{row['rotation'][1]} | {row['mean_iou']} | {row['iou_below_0.8']} |")
    for row in rows:
        for a, b in row["differences"]:
            print(f"  {row['page']}: old {a!r}\n  {' ' * len(row['page'])}  new {b!r}")
    if args.json:
        Path(args.json).write_text(json.dumps({"old": old, "new": new, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
