"""What OpenVINO buys the OCR per page, to weigh against what it costs the bundle in MB.

    nice -n 15 python packaging/ocr_runtime_cost.py [--data DIR] [--runs 3] [--dpi 200]

Reads the scanned PDFs ``ocrmypdf__linn.pdf`` and ``privategpt__file_scanned.pdf`` from
``DIR/pdfs_realworld/files`` (``DIR``: ``--data``, else ``HAIKU_SHARED_DATA``, else
``../shared/data`` beside the repository; skipped cleanly when absent), renders each page at
``--dpi`` and recognises it with ``haiku.rag.ingest.ocr.recognise`` in a fresh process per
runtime (``HAIKU_RAG_OCR_RUNTIME=openvino`` / ``onnxruntime``), alternating which goes first,
``--runs`` times. Reports the process CPU seconds per page (all threads; the engine's load
excluded) and wall seconds, median over the runs, and the ratio. The text read is compared
between the runtimes (the same models, so it should match).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

FILES = ("ocrmypdf__linn.pdf", "privategpt__file_scanned.pdf")

CHILD = r"""
import json, sys, time
import numpy as np
import pymupdf
from haiku.rag.ingest import ocr
paths, dpi = json.loads(sys.argv[1]), int(sys.argv[2])
images = []
for path in paths:
    with pymupdf.open(path) as doc:
        for page in doc:
            pix = page.get_pixmap(dpi=dpi)
            images.append(np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, pix.n)[:, :, :3].copy())
ocr._load_engine()
cpu0, wall0 = time.process_time(), time.perf_counter()
texts = [" ".join(line.text for line in ocr.recognise(image).lines) for image in images]
cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
print(json.dumps({"runtime": ocr.runtime(), "pages": len(images), "cpu": cpu, "wall": wall,
                  "chars": sum(len(t) for t in texts), "text": texts}))
"""


def data_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    if os.environ.get("HAIKU_SHARED_DATA"):
        return Path(os.environ["HAIKU_SHARED_DATA"])
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def run(runtime: str, paths: list[str], dpi: int) -> dict:
    env = {**os.environ, "HAIKU_RAG_OCR_RUNTIME": runtime}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(paths), str(dpi)],
        env=env, capture_output=True, text=True, check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dpi", type=int, default=200)
    args = parser.parse_args()
    folder = data_dir(args.data) / "pdfs_realworld" / "files"
    paths = [str(folder / name) for name in FILES if (folder / name).is_file()]
    if not paths:
        print(f"skipped: no scanned PDFs under {folder}")
        return 0
    results: dict[str, list[dict]] = {"openvino": [], "onnxruntime": []}
    for i in range(args.runs):
        order = ["openvino", "onnxruntime"] if i % 2 == 0 else ["onnxruntime", "openvino"]
        for runtime in order:
            result = run(runtime, paths, args.dpi)
            if result["runtime"] != runtime:
                print(f"asked for {runtime}, the OCR loaded on {result['runtime']}")
                return 1
            results[runtime].append(result)
            print(f"run {i + 1} {runtime}: {result['pages']} pages, CPU {result['cpu']:.2f} s, wall {result['wall']:.2f} s")
    per_page = {}
    for runtime, runs in results.items():
        pages = runs[0]["pages"]
        cpu = statistics.median(r["cpu"] for r in runs) / pages
        wall = statistics.median(r["wall"] for r in runs) / pages
        per_page[runtime] = (cpu, wall)
        print(f"{runtime}: median CPU {cpu:.2f} s/page, wall {wall:.2f} s/page over {pages} pages, {args.runs} runs")
    same = results["openvino"][0]["text"] == results["onnxruntime"][0]["text"]
    print(f"same text from both runtimes: {same}")
    ratio = per_page["onnxruntime"][0] / per_page["openvino"][0]
    print(f"onnxruntime / openvino CPU per page: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
