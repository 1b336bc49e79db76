"""PDF conversion benchmark: ``fast`` (heuristics) vs ``layout`` (PyMuPDF's ONNX analyser).

Run on demand (pytest does not collect it):

    python tests/bench/bench_pdf_layout.py [--data DIR] [--runs 3] [--sample-pages 4] [--json OUT]

Reads the real PDFs of ``DIR/pdfs_realworld/files`` (``DIR`` defaults to ``../shared/data``
next to the repository) with their ``manifest.csv`` and ``groundtruth/``; skips cleanly
when they are absent.

* Speed: pages/s (wall) and pages per CPU-second of ``convert_pdf`` over every text PDF
  (scans excluded), median of ``--runs`` runs, for ``fast``, each run followed by a run of
  bare PyMuPDF extraction (the floor) so that the share of the floor compares two figures
  taken under the same load; the layout model is ~100x slower, so both modes are also
  timed on a sample (the first ``--sample-pages`` pages of each text PDF), once each.
* Quality, on the sample pages for both modes:
  - headings: precision/recall of our title + section headers against docling's reference
    conversions in ``groundtruth/*.json`` (fuzzy text match), on the pages sampled;
  - tables and pictures found vs the reference counts, and tables found on the PDFs whose
    manifest category mentions tables;
  - reading order on two-column papers: column switches per page among body paragraphs
    (1 is ideal: the left column, then the right; line-by-line interleaving gives many);
  - text coverage: share of the characters PyMuPDF extracts that end up in document items.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
try:
    import haiku.rag  # noqa: F401
except ImportError:  # a plain checkout without `pip install -e .`
    sys.path.insert(0, str(REPO_ROOT / "haiku_rag"))

import pymupdf  # noqa: E402
from docling_core.types.doc import (  # noqa: E402
    ContentLayer,
    DocItemLabel,
    DoclingDocument,
    PictureItem,
    TableItem,
    TextItem,
)

from haiku.rag.errors import IngestError  # noqa: E402
from haiku.rag.ingest.pdf import convert_pdf  # noqa: E402

REALWORLD = Path("pdfs_realworld")
MODES = ("fast", "layout")
ALL_LAYERS = {ContentLayer.BODY, ContentLayer.FURNITURE}
HEADING_LABELS = {DocItemLabel.TITLE, DocItemLabel.SECTION_HEADER}


@dataclass
class PdfFile:
    name: str
    category: str
    data: bytes
    pages: int


@dataclass
class Quality:
    heading_hits: int = 0  # our headings that match a reference heading
    heading_found: int = 0
    heading_reference: int = 0
    heading_recalled: int = 0
    tables: dict[str, tuple[int, int | None]] = field(default_factory=dict)  # file -> (ours, ref)
    pictures: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    column_switches: list[int] = field(default_factory=list)  # per two-column page
    chars_in_items: int = 0
    chars_on_pages: int = 0


def load_corpus(root: Path) -> list[PdfFile]:
    rows = {row["file"]: row for row in csv.DictReader((root / "manifest.csv").open())}
    files = []
    for path in sorted((root / "files").glob("*.pdf")):
        row = rows.get(path.name, {})
        category = row.get("category", "")
        if "scanned" in category and "ocr" not in category:
            continue  # image-only: nothing to parse, conversion raises NeedsOCRError
        files.append(PdfFile(path.name, category, path.read_bytes(), int(row.get("pages_pymupdf") or 0)))
    return files


def sample_bytes(data: bytes, pages: int) -> bytes:
    """The first ``pages`` pages as a new PDF (so both modes see the same pages)."""
    with pymupdf.open(stream=data, filetype="pdf") as source, pymupdf.open() as sample:
        sample.insert_pdf(source, to_page=min(pages, source.page_count) - 1)
        return sample.tobytes()


def timed_run(files: list[PdfFile], mode: str, datas: list[bytes]) -> tuple[int, float, float]:
    """(pages converted, wall seconds, CPU seconds of this process). The CPU figure is the
    one to compare when other work shares the machine."""
    pages = 0
    start, start_cpu = time.perf_counter(), time.process_time()
    for pdf, data in zip(files, datas, strict=True):
        try:
            pages += convert_pdf(data, source=pdf.name, layout=mode).page_count
        except IngestError:
            pass
    return pages, time.perf_counter() - start, time.process_time() - start_cpu


def extraction_floor(datas: list[bytes]) -> float:
    """Pages per CPU-second of bare PyMuPDF text extraction (the same flags as the
    converter): no converter built on it can go faster, whatever the machine's load."""
    from haiku.rag.ingest.pdf.extract import TEXT_FLAGS

    pages = 0
    start = time.process_time()
    for data in datas:
        with pymupdf.open(stream=data, filetype="pdf") as pdf:
            for page in pdf:
                page.get_textpage(flags=TEXT_FLAGS).extractDICT()
                pages += 1
    return pages / (time.process_time() - start)


# --- quality ------------------------------------------------------------------------------


def normalise(text: str) -> str:
    return " ".join(text.lower().replace("#", " ").split()).strip(" .:")


def reference_summary(path: Path, pages: int) -> tuple[list[str], int, int]:
    """Headings, tables and pictures of docling's reference JSON on the first ``pages``."""
    reference = json.loads(path.read_text())

    def on_sample(item: dict) -> bool:
        return any(prov.get("page_no", 1) <= pages for prov in item.get("prov", [])) or not item.get("prov")

    headings = [
        t["text"] for t in reference.get("texts", [])
        if t.get("label") in ("title", "section_header") and on_sample(t)
    ]
    tables = sum(1 for t in reference.get("tables", []) if on_sample(t))
    pictures = sum(1 for p in reference.get("pictures", []) if on_sample(p))
    return headings, tables, pictures


def matches(a: str, b: str) -> bool:
    a, b = normalise(a), normalise(b)
    return a == b or SequenceMatcher(None, a, b).ratio() >= 0.85


def column_switches(doc: DoclingDocument, page_widths: dict[int, float]) -> list[int]:
    """Per page: how often consecutive narrow body paragraphs change column."""
    sides: dict[int, list[str]] = {}
    for item, _ in doc.iterate_items():
        if not isinstance(item, TextItem) or item.label != DocItemLabel.TEXT or not item.prov:
            continue
        prov = item.prov[0]
        middle = page_widths[prov.page_no] / 2
        box = prov.bbox
        if box.r <= middle + 5:
            sides.setdefault(prov.page_no, []).append("L")
        elif box.l >= middle - 5:
            sides.setdefault(prov.page_no, []).append("R")
    return [
        sum(1 for a, b in zip(seq, seq[1:], strict=False) if a != b)
        for seq in sides.values() if "L" in seq and "R" in seq
    ]


def item_chars(doc: DoclingDocument) -> int:
    total = 0
    for item, _ in doc.iterate_items(included_content_layers=ALL_LAYERS):
        if isinstance(item, TextItem):
            total += len(item.text.replace(" ", ""))
        elif isinstance(item, TableItem):
            total += sum(len(cell.text.replace(" ", "")) for cell in item.data.table_cells)
    return total


def page_chars(data: bytes) -> int:
    with pymupdf.open(stream=data, filetype="pdf") as pdf:
        return sum(len("".join(page.get_text().split())) for page in pdf)


def assess(files: list[PdfFile], samples: list[bytes], mode: str, groundtruth: Path, pages: int) -> Quality:
    quality = Quality()
    for pdf, data in zip(files, samples, strict=True):
        try:
            conversion = convert_pdf(data, source=pdf.name, layout=mode)
        except IngestError:
            continue
        doc = conversion.document
        ours_tables = sum(1 for item, _ in doc.iterate_items() if isinstance(item, TableItem))
        ours_pictures = sum(1 for item, _ in doc.iterate_items() if isinstance(item, PictureItem))
        reference = groundtruth / f"{pdf.name}.json"
        if reference.exists():
            ref_headings, ref_tables, ref_pictures = reference_summary(reference, pages)
            headings = [i.text for i, _ in doc.iterate_items() if isinstance(i, TextItem) and i.label in HEADING_LABELS]
            quality.heading_found += len(headings)
            quality.heading_hits += sum(1 for h in headings if any(matches(h, r) for r in ref_headings))
            quality.heading_reference += len(ref_headings)
            quality.heading_recalled += sum(1 for r in ref_headings if any(matches(h, r) for h in headings))
            quality.tables[pdf.name] = (ours_tables, ref_tables)
            quality.pictures[pdf.name] = (ours_pictures, ref_pictures)
        elif "table" in pdf.category:
            quality.tables[pdf.name] = (ours_tables, None)
        if "2col" in pdf.category:
            widths = {no: page.size.width for no, page in doc.pages.items()}
            quality.column_switches += column_switches(doc, widths)
        quality.chars_in_items += item_chars(doc)
        quality.chars_on_pages += page_chars(data)
    return quality


# --- report -------------------------------------------------------------------------------


def ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sample-pages", type=int, default=4)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--speed-only", action="store_true", help="skip the sample and quality part")
    args = parser.parse_args()

    root = args.data / REALWORLD
    if not (root / "files").is_dir():
        print(f"skipped: no real-world PDFs under {root}")
        return 0
    files = load_corpus(root)
    datas = [pdf.data for pdf in files]
    samples = [sample_bytes(pdf.data, args.sample_pages) for pdf in files]
    print(
        f"{len(files)} text PDFs; {os.cpu_count()} CPUs; {platform.python_version()}; "
        f"PyMuPDF {pymupdf.__version__}; load average {os.getloadavg()[0]:.2f}"
    )
    timed_run(files[:3], "fast", datas[:3])  # warm-up (imports, caches)
    # Each run is followed by a floor run, so that each share of the floor compares two
    # measurements taken under the same load from other processes.
    fast_runs, floors = [], []
    for _ in range(args.runs):
        fast_runs.append(timed_run(files, "fast", datas))
        floors.append(extraction_floor(datas))
    fast_pages = fast_runs[0][0]
    wall_rates = [pages / wall for pages, wall, _ in fast_runs]
    cpu_rates = [pages / cpu for pages, _, cpu in fast_runs]
    fast_rate = statistics.median(wall_rates)
    fast_cpu_rate = statistics.median(cpu_rates)
    floor = statistics.median(floors)
    share = statistics.median(rate / f for rate, f in zip(cpu_rates, floors, strict=True))
    results: dict[str, dict] = {
        "full_corpus_fast": {
            "pages": fast_pages,
            "pages_per_s": fast_rate,
            "pages_per_cpu_s": fast_cpu_rate,
            "extraction_floor_pages_per_cpu_s": floor,
            "share_of_floor": share,
        }
    }
    print(
        f"fast, all {fast_pages} pages: {fast_rate:.1f} pages/s wall, {fast_cpu_rate:.1f} pages "
        f"per CPU-second (median of {args.runs}; runs: "
        f"{', '.join(f'{w:.0f}/{c:.0f}' for w, c in zip(wall_rates, cpu_rates, strict=True))} "
        f"wall/CPU); load average now {os.getloadavg()[0]:.2f}\n"
        f"bare PyMuPDF extraction: {floor:.1f} pages per CPU-second "
        f"(runs: {', '.join(f'{f:.0f}' for f in floors)}); the converter runs at "
        f"{share:.2f} of it (median of the per-run shares)"
    )

    for mode in () if args.speed_only else MODES:
        pages, seconds, cpu = timed_run(files, mode, samples)
        quality = assess(files, samples, mode, root / "groundtruth", args.sample_pages)
        switches = quality.column_switches
        results[mode] = {
            "sample_pages": pages,
            "pages_per_s": pages / seconds,
            "pages_per_cpu_s": pages / cpu,
            "heading_precision": quality.heading_hits / quality.heading_found if quality.heading_found else None,
            "heading_recall": quality.heading_recalled / quality.heading_reference if quality.heading_reference else None,
            "tables": quality.tables,
            "pictures": quality.pictures,
            "two_column_pages": len(switches),
            "mean_column_switches": statistics.mean(switches) if switches else None,
            "text_coverage": quality.chars_in_items / quality.chars_on_pages if quality.chars_on_pages else None,
        }
        print(
            f"\n## {mode}: {pages} sample pages, {pages / seconds:.1f} pages/s wall, "
            f"{pages / cpu:.1f} per CPU-second\n"
            f"headings vs groundtruth: precision {ratio(quality.heading_hits, quality.heading_found)}, "
            f"recall {ratio(quality.heading_recalled, quality.heading_reference)} "
            f"({quality.heading_found} found, {quality.heading_reference} in the references)\n"
            f"two-column pages: {len(switches)}, column switches per page: "
            f"mean {statistics.mean(switches) if switches else float('nan'):.2f}, "
            f"max {max(switches, default=0)}\n"
            f"text coverage: {ratio(quality.chars_in_items, quality.chars_on_pages)}"
        )
        print("tables (ours/reference):", ", ".join(
            f"{name.split('__')[-1][:28]} {ours}/{'-' if ref is None else ref}"
            for name, (ours, ref) in quality.tables.items()
        ))
        print("pictures (ours/reference):", ", ".join(
            f"{name.split('__')[-1][:28]} {ours}/{ref}" for name, (ours, ref) in quality.pictures.items()
        ))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
