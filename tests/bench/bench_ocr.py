"""OCR benchmark: speed and quality of the scan OCR, and the speed of text PDFs beside it.

Run on demand (pytest does not collect it); take the heavy lock on a shared machine:

    flock /work/coord/heavy.lock python tests/bench/bench_ocr.py [--data DIR] [--dpi 150]
        [--runs 3] [--baseline-rev REV] [--json OUT]

Reads ``DIR/pdfs_realworld`` (``DIR`` defaults to ``../shared/data`` beside the repository;
``HAIKU_SHARED_DATA`` also works) and skips cleanly when it is absent.

* OCR: every real PDF that fails without OCR (no usable text layer) is converted with OCR
  on; pages recognised per second (wall) and per CPU-second of this process, per file and
  in total, at each ``--dpi``.
* Quality: character error rate (Levenshtein distance / reference length, whitespace
  collapsed; also with all whitespace removed, which ignores word-space errors) of
  ``ocrmypdf__linn.pdf`` against ``groundtruth/ocrmypdf__linn.pdf.reference.txt``, of
  ``docling__ocr_test.pdf`` against docling's Tesseract reference, and page by page of the
  scans that print the Linn page again: ``ocrmypdf__skew.pdf`` (skewed) and
  ``ocrmypdf__cardinal.pdf`` (turned 0/90/180/270 degrees), against linn's reference.
  Reading order counts: a page read in another order than the reference's has a higher CER.
* ``--dpi-sweep [DPI ...]``: only one generated page of text scanned at 150, 300, 600 and
  1200 dpi (PNG files without a resolution, so the page's letters render as large as the
  scan's dpi makes them): whether each reads the same text as at the first dpi, its CER,
  the turn the orientation vote chose, time (issue 32: 400 dpi and above read upside down).
* Text PDFs, side by side: ``prepare_document`` (convert + items + chunks) over the text
  PDFs with the current code and with the code of ``--baseline-rev`` (extracted with
  ``git archive`` into a temporary folder and run in a subprocess), alternating which goes
  first, ``--runs`` times; pages per second and per CPU-second, median. OCR never runs on these files, so
  the figures should match.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
try:
    import haiku.rag  # noqa: F401
except ImportError:  # a plain checkout without `pip install -e .`
    sys.path.insert(0, str(REPO_ROOT / "haiku_rag"))

REALWORLD = Path("pdfs_realworld")
CER_REFERENCES = {
    "ocrmypdf__linn.pdf": "ocrmypdf__linn.pdf.reference.txt",
    "docling__ocr_test.pdf": "docling__ocr_test.pdf.tesseract.md",
    # the Linn page printed again: skewed, and turned 0/90/180/270 degrees (one per page)
    "ocrmypdf__skew.pdf": "ocrmypdf__linn.pdf.reference.txt",
    "ocrmypdf__cardinal.pdf": "ocrmypdf__linn.pdf.reference.txt",
}

# Run in a subprocess with one code tree on sys.path: converts and chunks the files given,
# prints {"pages", "wall", "cpu"}.
TEXT_SPEED_SCRIPT = r"""
import json, sys, time
from haiku.rag.config import AppConfig
from haiku.rag.ingest.pipeline import prepare_document
paths = sys.argv[1:]
config = AppConfig()
prepare_document(open(paths[0], "rb").read(), filename="warm.pdf", uri="warm", config=config)
pages = 0
wall, cpu = time.perf_counter(), time.process_time()
for path in paths:
    new = prepare_document(open(path, "rb").read(), filename=path, uri=path, config=config)
    pages += new.page_count
print(json.dumps({"pages": pages, "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}))
"""


def levenshtein(a: str, b: str) -> int:
    """Edit distance, one NumPy row per character of the longer string: a row's insertions
    chain left to right, so ``current[j] = j + min(t[k] - k for k <= j)`` with ``t`` the
    row from deletions and substitutions alone, a running minimum. (The plain double loop
    held the heavy lock for minutes on the bench's pages.)"""
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


def cer(reference: str, hypothesis: str, *, spaces: bool = True) -> float:
    join = " " if spaces else ""
    ref = join.join(reference.split())
    hyp = join.join(hypothesis.split())
    return levenshtein(ref, hyp) / max(1, len(ref))


def markdown_to_text(text: str) -> str:
    text = re.sub(r"^#+\s*", "", text, flags=re.MULTILINE)
    return re.sub(r"^\s*[-*]\s+", "", text, flags=re.MULTILINE)


def page_texts(document) -> dict[int, str]:  # type: ignore[no-untyped-def]
    """The document's text page by page, in our reading order."""
    from docling_core.types.doc import ContentLayer

    layers = {ContentLayer.BODY, ContentLayer.FURNITURE}
    pages: dict[int, list[str]] = {}
    for item, _ in document.iterate_items(included_content_layers=layers):
        text = getattr(item, "text", "")
        if text and getattr(item, "prov", None):
            pages.setdefault(item.prov[0].page_no, []).append(text)
    return {page: "\n".join(texts) for page, texts in sorted(pages.items())}


def scans_failing_without_ocr(files: Path) -> list[Path]:
    from haiku.rag.errors import NeedsOCRError
    from haiku.rag.ingest.pdf import OcrOptions, convert_pdf

    failing = []
    for path in sorted(files.glob("*.pdf")):
        try:
            convert_pdf(path.read_bytes(), source=path.name, ocr=OcrOptions(enabled=False))
        except NeedsOCRError:
            failing.append(path)
        except Exception:  # other failures are another benchmark's business
            continue
    return failing


def bench_ocr(scans: list[Path], groundtruth: Path, dpi: int) -> dict:
    from haiku.rag.ingest.pdf import OcrOptions, convert_pdf

    rows = []
    total_pages = total_wall = total_cpu = 0.0
    for path in scans:
        wall, cpu = time.perf_counter(), time.process_time()
        conversion = convert_pdf(path.read_bytes(), source=path.name, ocr=OcrOptions(dpi=dpi))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        pages = len(conversion.pages_recognised)
        row = {"file": path.name, "pages": pages, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}
        reference = CER_REFERENCES.get(path.name)
        if reference:
            ref_text = (groundtruth / reference).read_text(encoding="utf-8")
            if reference.endswith(".md"):
                ref_text = markdown_to_text(ref_text)
            texts = list(page_texts(conversion.document).values())
            row["cer"] = [round(cer(ref_text, text), 4) for text in texts]
            row["cer_no_spaces"] = [round(cer(ref_text, text, spaces=False), 4) for text in texts]
        rows.append(row)
        total_pages += pages
        total_wall += wall
        total_cpu += cpu
        print(f"  {dpi} dpi {row}", flush=True)
    return {
        "dpi": dpi,
        "files": rows,
        "pages": int(total_pages),
        "pages_per_s": round(total_pages / total_wall, 3) if total_wall else None,
        "pages_per_cpu_s": round(total_pages / total_cpu, 3) if total_cpu else None,
    }


SWEEP_LINES = [
    "Archival scans are commonly made at 400 to 600 dots per inch.",
    "The committee approved the budget for the new library wing,",
    "and the reading room will open to the public in the spring.",
    "Each page of the ledger was photographed twice, once in colour,",
    "once in grey, and the better copy kept for the catalogue.",
    "Letters from 1912 to 1931 fill the remaining eleven boxes.",
]


def sweep_page(dpi: int) -> bytes:
    """One Letter page of text rendered at ``dpi`` as a PNG without a resolution: the image
    converter takes it as 150 dpi, so a 1200 dpi scan is a page 8x too large whose letters
    render 8x too tall (up to the render's size cap), as with real files that carry no or a
    meaningless resolution."""
    import io

    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 80), "Records of the Harbour Board", fontsize=18, fontname="tiro")
    for index, line in enumerate(SWEEP_LINES):
        page.insert_text((72, 120 + 18 * index), line, fontsize=11, fontname="tiro")
    pixmap = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
    doc.close()
    from PIL import Image

    image = Image.frombytes("L", (pixmap.width, pixmap.height), pixmap.samples)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def bench_dpi_sweep(dpis: list[int]) -> list[dict]:
    """The same page scanned at each of ``dpis``: its text (CER against the printed lines,
    and whether it equals the text read at the first dpi), how the page was turned, time."""
    from haiku.rag.ingest import ocr
    from haiku.rag.ingest.converters import convert_source

    reference = " ".join(["Records of the Harbour Board", *SWEEP_LINES])
    rows = []
    first: str | None = None
    turned: list[int] = []
    original = ocr.read_lines

    def recording(page, cancel=None):  # type: ignore[no-untyped-def]
        turned.append(page.rotation)
        return original(page, cancel)

    for dpi in dpis:
        data = sweep_page(dpi)
        turned.clear()
        ocr.read_lines = recording  # the converter imports it at each call
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            conversion = convert_source(data, filename=f"scan-{dpi}.png")
        finally:
            ocr.read_lines = original
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        text = " ".join(page_texts(conversion.document).values())
        first = text if first is None else first
        row = {
            "dpi": dpi,
            "cer": round(cer(reference, text), 4),
            "same_as_first": " ".join(text.split()) == " ".join(first.split()),
            "rotation": turned[:1],
            "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2),
            "text": text[:70],
        }
        rows.append(row)
        print(f"  sweep {row}", flush=True)
    return rows


def extract_baseline(rev: str, into: Path) -> Path:
    archive = into / "baseline.tar"
    subprocess.run(
        ["git", "-C", str(REPO_ROOT), "archive", "-o", str(archive), rev, "haiku_rag"], check=True
    )
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "haiku_rag"


def text_speed(code_root: Path, paths: list[Path]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(code_root))
    out = subprocess.run(
        [sys.executable, "-c", TEXT_SPEED_SCRIPT, *map(str, paths)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),  # not the checkout: the code tree comes from PYTHONPATH
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_data = Path(os.environ.get("HAIKU_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--dpi", type=int, action="append")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline-rev", default="9233ee0")
    parser.add_argument("--text-files", type=int, default=12, help="text PDFs in the speed run")
    parser.add_argument("--skip-text", action="store_true")
    parser.add_argument("--skip-ocr", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--dpi-sweep",
        type=int,
        nargs="*",
        help="only the resolution sweep: one page scanned at these dpi (default 150 300 600 1200)",
    )
    args = parser.parse_args()
    if args.dpi_sweep is not None:
        rows = bench_dpi_sweep(args.dpi_sweep or [150, 300, 600, 1200])
        if args.json:
            args.json.write_text(json.dumps({"sweep": rows, "load": os.getloadavg()}, indent=1))
        return 0
    root = args.data / REALWORLD
    if not (root / "files").is_dir():
        print(f"skipped: {root} not found (set --data or HAIKU_SHARED_DATA)")
        return 0
    result: dict = {
        "machine": f"{platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }
    scans = scans_failing_without_ocr(root / "files")
    print(f"{len(scans)} PDFs fail without OCR: {[p.name for p in scans]}", flush=True)
    result["scans"] = [p.name for p in scans]
    if not args.skip_ocr:
        result["ocr"] = []
        for dpi in args.dpi or [150]:
            # --runs times each; pages/s is the median run's (CER does not change between runs)
            measured = [bench_ocr(scans, root / "groundtruth", dpi) for _ in range(args.runs)]
            per_s = sorted(m["pages_per_s"] for m in measured)
            per_cpu = sorted(m["pages_per_cpu_s"] for m in measured)
            result["ocr"].append(
                {
                    **measured[0],
                    "runs": len(measured),
                    "pages_per_s_runs": per_s,
                    "pages_per_s": statistics.median(per_s),
                    "pages_per_cpu_s": statistics.median(per_cpu),
                    "load_after": [round(x, 2) for x in os.getloadavg()],
                }
            )

    if not args.skip_text:
        with open(root / "manifest.csv", newline="", encoding="utf-8") as handle:
            manifest = list(csv.DictReader(handle))
        scan_names = {p.name for p in scans}
        text_files = [
            root / "files" / row["file"]
            for row in manifest
            if row["file"] not in scan_names and int(row["pages_pymupdf"] or 0) <= 80
        ][: args.text_files]
        with tempfile.TemporaryDirectory() as tmp:
            baseline = extract_baseline(args.baseline_rev, Path(tmp))
            runs: dict[str, list[dict]] = {"baseline": [], "current": []}
            trees = {"baseline": baseline, "current": REPO_ROOT / "haiku_rag"}
            for index in range(args.runs):
                # which goes first alternates, so a drift in the machine's load favours neither
                order = ("baseline", "current") if index % 2 == 0 else ("current", "baseline")
                for name in order:
                    runs[name].append(text_speed(trees[name], text_files))
                print(
                    f"  text run {order}: {runs['baseline'][-1]} vs {runs['current'][-1]}",
                    flush=True,
                )
        summary = {}
        for name, measured in runs.items():
            summary[name] = {
                "pages": measured[0]["pages"],
                "pages_per_s": round(
                    statistics.median(m["pages"] / m["wall"] for m in measured), 1
                ),
                "pages_per_cpu_s": round(
                    statistics.median(m["pages"] / m["cpu"] for m in measured), 1
                ),
            }
        summary["ratio_cpu"] = round(
            summary["current"]["pages_per_cpu_s"] / summary["baseline"]["pages_per_cpu_s"], 3
        )
        result["text_pdfs"] = {
            "files": [p.name for p in text_files],
            "rev": args.baseline_rev,
            **summary,
        }
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
