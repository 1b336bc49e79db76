"""Evidence fidelity: is what the model reads and the citation shows what the page says?

Run on demand (pytest does not collect it):

    python tests/bench/bench_fidelity.py [--data DIR] [--baseline CHECKOUT] [--runs N]
                                         [--sections tables,speed] [--json OUT]

Reads ``DIR/pdfs_realworld`` (``DIR``: ``--data``, else ``HAIKU_SHARED_DATA``, else
``../shared/data`` next to the repository); skips cleanly when it is absent. With
``--baseline`` (another checkout, e.g. ``/work/main``) every figure is measured for both
trees in the same run, each tree in its own interpreter (``--worker``), so before/after
numbers share the machine's load.

Sections (one function per metric; more sections join the same script):

**tables** -- over the reference table grids in ``groundtruth/`` (docling's conversions:
``docling__*.json`` tables with their cells and header flags; for a reference with only
Markdown, its pipe tables, first line the header), against the chunks our ingestion stores
(``prepare_document``: conversion, items, chunker), per reference table:

- *row*: for each body row, the share of its words (lower-cased ``\\w+``, as a multiset) found
  in the one chunk holding most of them (``row_share``);
- *header*: the share of the column-header words found in that same chunk (``header_share``);
- *order*: whether the row's cells appear in that chunk in the row's order (``in_order``);

each averaged over the table's body rows, then over tables. Words a reference splits and the
PDF's text joins ("y y" / "yy") count as found when their concatenation is a chunk word.

**speed** -- parse + chunk of every text PDF of the set (manifest ``text_chars_pymupdf`` > 0,
OCR off): pages per second, wall, the median of ``--runs`` runs, the trees alternating.

Targets (issue 29): row >= 0.98, header >= 0.95, order >= 0.95; speed >= 150 pages/s.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from shared_data import data_dir

REPO_ROOT = Path(__file__).resolve().parents[2]
REALWORLD = Path("pdfs_realworld")
WORD = re.compile(r"\w+")


# ---------------------------------------------------------------------------------------------
# Data



@dataclass
class ReferenceTable:
    file: str  # the PDF's name in files/
    index: int  # the table's number in its reference
    header: list[list[str]]  # column-header rows, cell texts
    rows: list[list[str]]  # body rows, cell texts (empty cells left out)


def reference_tables(root: Path) -> list[ReferenceTable]:
    """Every table grid of the references whose PDF is in the set."""
    tables: list[ReferenceTable] = []
    ground = root / "groundtruth"
    for json_path in sorted(ground.glob("docling__*.json")):
        pdf = json_path.name.split(".pdf")[0] + ".pdf"
        if not (root / "files" / pdf).exists():
            continue
        document = json.loads(json_path.read_text())
        for index, table in enumerate(document.get("tables", [])):
            grid = table.get("data", {}).get("grid") or []
            if grid:
                tables.append(_from_grid(pdf, index, grid))
    for md_path in sorted(ground.glob("docling__*.md")):
        pdf = md_path.name.split(".pdf")[0] + ".pdf"
        if ".tesseract." in md_path.name or not (root / "files" / pdf).exists():
            continue
        if (ground / (md_path.name.split(".pdf")[0] + ".pdf.json")).exists():
            continue  # its grids came from the JSON
        for index, lines in enumerate(_pipe_tables(md_path.read_text())):
            cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
            body = [row for row in cells[1:] if not all(set(c) <= set("-: ") for c in row)]
            tables.append(ReferenceTable(pdf, index, [cells[0]], [[c for c in r if c] for r in body]))
    return tables


def _from_grid(pdf: str, index: int, grid: list[list[dict]]) -> ReferenceTable:
    def texts(row: list[dict]) -> list[str]:
        seen: set[tuple[int, int]] = set()
        out = []
        for cell in row:
            origin = (cell["start_row_offset_idx"], cell["start_col_offset_idx"])
            if cell["text"].strip() and origin not in seen:
                seen.add(origin)
                out.append(cell["text"].strip())
        return out

    header_count = 0
    for row in grid:
        filled = [c for c in row if c["text"].strip()]
        if filled and all(c.get("column_header") for c in filled):
            header_count += 1
        else:
            break
    header_count = header_count or 1
    return ReferenceTable(
        pdf, index, [texts(r) for r in grid[:header_count]], [texts(r) for r in grid[header_count:] if texts(r)]
    )


def _pipe_tables(markdown: str) -> list[list[str]]:
    tables, current = [], []
    for line in markdown.splitlines():
        if line.strip().startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return [t for t in tables if len(t) >= 3]


# ---------------------------------------------------------------------------------------------
# Section: tables


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def found_words(wanted: list[str], have: Counter) -> int:
    """How many of ``wanted`` (in order) ``have`` holds; a run of two or three wanted words
    whose concatenation is one word of ``have`` counts as found ("y y" printed "yy")."""
    left = Counter(have)
    count, i = 0, 0
    while i < len(wanted):
        if left[wanted[i]] > 0:
            left[wanted[i]] -= 1
            count, i = count + 1, i + 1
            continue
        for width in (2, 3):
            glued = "".join(wanted[i : i + width])
            if i + width <= len(wanted) and left[glued] > 0:
                left[glued] -= 1
                count, i = count + width, i + width
                break
        else:
            i += 1
    return count


def row_share(row: list[str], chunk: Counter) -> float:
    wanted = [w for cell in row for w in words(cell)]
    return found_words(wanted, chunk) / len(wanted) if wanted else 1.0


def header_share(header: list[list[str]], chunk: Counter) -> float:
    wanted = [w for row in header for cell in row for w in words(cell)]
    return found_words(wanted, chunk) / len(wanted) if wanted else 1.0


def in_order(row: list[str], chunk_words: list[str]) -> bool:
    """Whether each cell's words appear in the chunk, cell after cell, in the row's order
    (each cell's words consecutive, glued words allowed)."""
    position = 0
    for cell in row:
        cell_words = words(cell)
        if not cell_words:
            continue
        at = _find(cell_words, chunk_words, position)
        if at is None:
            return False
        position = at
    return True


def _find(needle: list[str], hay: list[str], start: int) -> int | None:
    joined = "".join(needle)
    for i in range(start, len(hay)):
        if hay[i : i + len(needle)] == needle:
            return i + len(needle)
        # the same words glued differently ("y y" / "yy")
        text, j = "", i
        while j < len(hay) and len(text) < len(joined):
            text += hay[j]
            j += 1
        if text == joined:
            return j
    return None


def score_table(table: ReferenceTable, chunks: list[str]) -> dict[str, float]:
    bags = [Counter(words(chunk)) for chunk in chunks]
    sequences = [words(chunk) for chunk in chunks]
    rows, headers, orders = [], [], []
    for row in table.rows:
        shares = [row_share(row, bag) for bag in bags] or [0.0]
        best = max(range(len(shares)), key=shares.__getitem__)
        rows.append(shares[best])
        headers.append(header_share(table.header, bags[best]) if bags else 0.0)
        orders.append(1.0 if sequences and in_order(row, sequences[best]) else 0.0)
    return {
        "rows": len(table.rows),
        "row": statistics.fmean(rows) if rows else 1.0,
        "header": statistics.fmean(headers) if headers else 1.0,
        "order": statistics.fmean(orders) if orders else 1.0,
    }


def chunk_texts(pdf: Path) -> list[str]:
    from haiku.rag.config import load_config
    from haiku.rag.ingest.pipeline import prepare_document

    config = load_config()
    document = prepare_document(pdf.read_bytes(), filename=pdf.name, uri=pdf.as_uri(), config=config)
    return [chunk.text for chunk in document.chunks]


def tables_section(root: Path) -> dict:
    per_table = []
    cache: dict[str, list[str]] = {}
    for table in reference_tables(root):
        if table.file not in cache:
            cache[table.file] = chunk_texts(root / "files" / table.file)
        per_table.append({"file": table.file, "table": table.index, **score_table(table, cache[table.file])})
    summary = {
        metric: statistics.fmean(t[metric] for t in per_table) if per_table else None
        for metric in ("row", "header", "order")
    }
    return {"tables": per_table, "summary": summary}


# ---------------------------------------------------------------------------------------------
# Section: speed


def text_pdfs(root: Path) -> list[Path]:
    with (root / "manifest.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    return [
        root / "files" / row["file"]
        for row in rows
        if int(row["text_chars_pymupdf"] or 0) > 0 and (root / "files" / row["file"]).exists()
    ]


def speed_section(root: Path) -> dict:
    """One run: parse + chunk of every text PDF, OCR off; pages per second, wall."""
    from haiku.rag.config import load_config
    from haiku.rag.errors import IngestError
    from haiku.rag.ingest.pipeline import prepare_document

    config = load_config()
    config.processing.ocr = False
    pages, elapsed, cpu = 0, 0.0, 0.0
    for pdf in text_pdfs(root):
        data = pdf.read_bytes()
        started, started_cpu = time.perf_counter(), time.process_time()
        try:
            document = prepare_document(data, filename=pdf.name, uri=pdf.as_uri(), config=config)
        except IngestError:
            continue
        elapsed += time.perf_counter() - started
        cpu += time.process_time() - started_cpu
        pages += document.page_count
    return {
        "pages": pages,
        "seconds": elapsed,
        "cpu_seconds": cpu,
        "pages_per_second": pages / elapsed if elapsed else 0.0,
        "pages_per_cpu_second": pages / cpu if cpu else 0.0,
    }


SECTIONS = {"tables": tables_section, "speed": speed_section}


# ---------------------------------------------------------------------------------------------
# Driver: each tree measured in its own interpreter


def worker(code: Path, section: str, root: Path) -> dict:
    sys.path.insert(0, str(code / "haiku_rag"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import haiku.rag

    result = SECTIONS[section](root)
    result["code"] = str(Path(haiku.rag.__file__).resolve().parents[2])
    return result


def run_worker(code: Path, section: str, root: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code / "haiku_rag")}
    out = subprocess.run(
        [sys.executable, __file__, "--worker", section, "--code", str(code), "--data", str(root.parent)],
        capture_output=True, text=True, env=env, check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"worker for {code} ({section}) failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data")
    parser.add_argument("--baseline", help="another checkout to measure in the same run (before)")
    parser.add_argument("--runs", type=int, default=3, help="speed runs per tree")
    parser.add_argument("--sections", default="tables,speed")
    parser.add_argument("--json")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--code", help=argparse.SUPPRESS)
    args = parser.parse_args()
    root = data_dir(args.data) / REALWORLD
    if args.worker:
        print(json.dumps(worker(Path(args.code), args.worker, root)))
        return
    if not (root / "files").is_dir():
        print(f"skipped: no {root} (give --data or HAIKU_SHARED_DATA)")
        return
    trees = {"this": REPO_ROOT}
    if args.baseline:
        trees = {"baseline": Path(args.baseline).resolve(), **trees}
    results: dict[str, dict] = {name: {} for name in trees}
    sections = [s for s in args.sections.split(",") if s]
    if "tables" in sections:
        for name, code in trees.items():
            results[name]["tables"] = run_worker(code, "tables", root)
        print("## tables (row / header / order, per reference table)")
        for name in trees:
            for t in results[name]["tables"]["tables"]:
                print(f"  {name:9s} {t['file']:48s} #{t['table']} rows={t['rows']:3d} "
                      f"row={t['row']:.3f} header={t['header']:.3f} order={t['order']:.3f}")
        for name in trees:
            s = results[name]["tables"]["summary"]
            print(f"  {name:9s} MEAN row={s['row']:.3f} header={s['header']:.3f} order={s['order']:.3f}")
    if "speed" in sections:
        runs: dict[str, list[float]] = {name: [] for name in trees}
        cpu_runs: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(args.runs):
            for name, code in trees.items():  # alternating, so both see the same load
                measured = run_worker(code, "speed", root)
                runs[name].append(measured["pages_per_second"])
                cpu_runs[name].append(measured["pages_per_cpu_second"])
        print("## speed (parse + chunk, text PDFs, OCR off; pages/s wall, pages per CPU-s)")
        for name in trees:
            results[name]["speed"] = {
                "runs": runs[name], "median": statistics.median(runs[name]),
                "cpu_runs": cpu_runs[name], "cpu_median": statistics.median(cpu_runs[name]),
            }
            print(
                f"  {name:9s} wall runs={[round(r, 1) for r in runs[name]]} median={statistics.median(runs[name]):.1f}"
                f"  per CPU-s runs={[round(r, 1) for r in cpu_runs[name]]} median={statistics.median(cpu_runs[name]):.1f}"
            )
        if "baseline" in trees:
            for key in ("median", "cpu_median"):
                ratio = results["this"]["speed"][key] / results["baseline"]["speed"][key]
                print(f"  ratio this/baseline ({key}): {ratio:.3f}")
    print(f"  load: {os.getloadavg()}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
