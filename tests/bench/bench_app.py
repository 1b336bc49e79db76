"""Desktop app figures: cold start, idle memory, GUI stalls while ingesting, citation → page.

    .venv/bin/python tests/bench/bench_app.py [FOLDER] [--starts 5] [--max-files N] [--clicks 40] [--json]
    .venv/bin/python tests/bench/bench_app.py [FOLDER] --listed-only [--listed-starts 3] [--library PATH]

FOLDER defaults to ../shared/data/pdfs_realworld/files (skipped cleanly when absent: the start
and memory figures are still measured).

- **cold start**: ``python -m haiku_desk.app --quit-after-shown`` in a subprocess, from spawn
  to the line the app prints once its window has been shown and painted (offscreen), repeated.
- **start-up to a listed library**: the same, on a library holding FOLDER's documents (40
  real-world PDFs, built once with ``haiku-rag add-src``, or ``--library PATH``), from spawn to
  the line the app prints once the documents are listed (``--quit-after-listed``), with where
  the time goes: the app's own steps (config, Qt, imports, services, window, first paint) and
  the library's (store open, documents read, rows shown, opened), p50 of ``--listed-starts``.
- **idle RSS**: this process with the real window shown and the library opened, after 2 s idle;
  and again after the ingestion below: the moment the queue is idle, and once the library's
  idle release has run and 2 s passed (``idle_rss_after_ingest_mb``).
- **event-loop stall**: a 10 ms QTimer heartbeat runs during the whole ingestion of FOLDER
  (parsing and embedding, through the window's library service); the stall of a tick is its
  lateness beyond the interval. p50/p99/max over all ticks.
- **citation → page shown**: citations built from real search results over the ingested files
  are shown in the real citation panel, from ``show_citation`` to the panel's ``page_shown``.
  ``cold`` clears the render cache first (the stored bytes stay cached, as after a first view of
  the document); ``warm`` shows the same citation again.

Targets (issue 5): start ≤ 2 s, idle RSS ≤ 500 MB, stall p99 ≤ 50 ms, page shown p95 ≤ 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[2]
DEFAULT_FOLDER = REPO.parent / "shared" / "data" / "pdfs_realworld" / "files"
HEARTBEAT_MS = 10
QUERIES = [
    "results", "method", "introduction", "table", "figure", "conclusion", "data", "performance",
    "model", "analysis", "system", "evaluation", "security", "license", "example", "algorithm",
]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def cold_starts(runs: int, db: Path) -> list[float]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "haiku_desk.app", "--db", str(db), "--quit-after-shown"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=REPO,
            env=env,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip() == "shown":
                times.append(time.perf_counter() - start)
                break
        proc.wait(timeout=60)
    return times


LISTED_STEPS = (
    "main", "config", "qt", "imports", "services", "window", "shown",
    "start", "snapshot_shown", "store_open", "documents_read", "rows_shown", "prepared",
)


def build_listed_library(folder: Path, db: Path) -> int:
    """A library of FOLDER's documents, parsed and embedded by the command line."""
    subprocess.run(
        [sys.executable, "-m", "haiku.rag.cli", "--db", str(db), "add-src", str(folder)],
        check=True, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    out = subprocess.run(
        [sys.executable, "-m", "haiku.rag.cli", "--db", str(db), "list"],
        check=True, cwd=REPO, capture_output=True, text=True,
    )
    return len([line for line in out.stdout.splitlines() if line.strip()])


def listed_starts(runs: int, db: Path, *, snapshot: bool = True) -> dict:
    """Spawn -> window shown -> documents listed, and the steps in between (p50 of ``runs``).
    ``snapshot`` False deletes the rows the last session left (rows.json) before each start:
    the rows then appear only once the store is open (the code before rows-first)."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    samples: list[dict[str, float]] = []
    rows_file = db / "haiku-desk" / "rows.json"
    for _ in range(runs):
        if not snapshot:
            rows_file.unlink(missing_ok=True)
        had_rows = rows_file.is_file()
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "haiku_desk.app", "--db", str(db), "--quit-after-listed"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO, env=env,
        )
        assert proc.stdout is not None
        sample: dict[str, float] = {}
        for line in proc.stdout:
            line = line.strip()
            if line == "shown":
                sample["spawn_to_shown"] = time.perf_counter() - start
            elif line.startswith("listed "):
                sample["spawn_to_listed"] = time.perf_counter() - start
                sample.update({f"at_{k}": v for k, v in json.loads(line[len("listed "):]).items()})
                # the first rows on screen: the last session's (rows first), else the store's
                first = sample.get("at_snapshot_shown") if had_rows else sample.get("at_rows_shown")
                if first is not None:
                    sample["spawn_to_rows"] = sample["spawn_to_listed"] - sample["at_prepared"] + first
                break
        proc.wait(timeout=120)
        samples.append(sample)
    keys = ["spawn_to_shown", "spawn_to_rows", "spawn_to_listed"] + [f"at_{k}" for k in LISTED_STEPS]
    result: dict = {"runs": len(samples)}
    for key in keys:
        values = [s[key] for s in samples if key in s]
        if values:
            result[key] = {"p50": round(statistics.median(values), 3), "all": [round(v, 3) for v in values]}
    # where the time goes: each step's duration (p50 over runs), in seconds
    steps: dict[str, float] = {}
    previous = "main"
    for name in LISTED_STEPS[1:]:
        durations = [s[f"at_{name}"] - s[f"at_{previous}"] for s in samples if f"at_{name}" in s and f"at_{previous}" in s]
        if durations:
            steps[f"{previous}->{name}"] = round(statistics.median(durations), 3)
        previous = name
    before_main = [s["spawn_to_listed"] - s["at_prepared"] for s in samples if "at_prepared" in s]
    if before_main:  # the interpreter's start and haiku_desk's import (and the print's way back)
        steps["spawn->main"] = round(statistics.median(before_main), 3)
    result["steps_p50_s"] = steps
    result["rows_first"] = snapshot
    return result


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 1024 / 1024


def run_until(loop: asyncio.AbstractEventLoop, predicate, timeout: float) -> None:  # type: ignore[no-untyped-def]
    async def poll() -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError("condition not met")
            await asyncio.sleep(0.001)

    loop.run_until_complete(poll())


def in_process(folder: Path | None, max_files: int | None, clicks: int, work: Path) -> dict:
    from PySide6.QtCore import QElapsedTimer, QTimer
    from PySide6.QtWidgets import QApplication

    from haiku.rag.citations import Citation
    from haiku_desk.bridge import install_event_loop
    from haiku_desk.services import create_services
    from haiku_desk.views.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    app.setOrganizationName("haiku-desk-bench")
    loop = install_event_loop(app)
    services = create_services(work / "library.lancedb")
    window = MainWindow(services)
    window.citation_panel.open_in_system_viewer = False
    window.show()
    opened: list[bool] = []
    services.library.opened.connect(lambda: opened.append(True))
    services.library.start()
    run_until(loop, lambda: bool(opened), 120)
    loop.run_until_complete(asyncio.sleep(2))  # idle: the window shown, the library open
    out: dict = {"idle_rss_mb": round(rss_mb(), 1)}

    if folder is None:
        return out
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".pdf")
    if max_files:
        files = files[:max_files]
    source = work / "files"
    source.mkdir()
    for f in files:  # a private copy: the library records file URIs
        shutil.copy2(f, source / f.name)

    stalls: list[float] = []
    clock = QElapsedTimer()
    heartbeat = QTimer()
    heartbeat.setInterval(HEARTBEAT_MS)

    def tick() -> None:
        if clock.isValid():
            stalls.append(max(0.0, clock.nsecsElapsed() / 1e6 - HEARTBEAT_MS))
        clock.restart()

    heartbeat.timeout.connect(tick)
    started = time.perf_counter()
    heartbeat.start()
    clock.start()
    services.library.add_paths([source])
    run_until(loop, lambda: services.library.busy, 60)
    run_until(loop, lambda: not services.library.busy, 24 * 3600)
    heartbeat.stop()
    entries = services.library.entries
    out["ingest"] = {
        "files": len(files),
        "searchable": sum(1 for e in entries if e.searchable),
        "failed": {e.name: e.category for e in entries if e.category},
        "seconds": round(time.perf_counter() - started, 1),
        "ticks": len(stalls),
        "stall_ms_p50": round(percentile(stalls, 50), 1),
        "stall_ms_p99": round(percentile(stalls, 99), 1),
        "stall_ms_max": round(max(stalls, default=float("nan")), 1),
    }
    # RSS the moment the queue went idle, then once its idle release (embedder session, search
    # caches, freed heap: HaikuRAG.release_memory) has run and 2 s passed, as for idle_rss_mb.
    out["rss_when_queue_idle_mb"] = round(rss_mb(), 1)
    if services.library.release_task is not None:
        loop.run_until_complete(services.library.release_task)
    loop.run_until_complete(asyncio.sleep(2))
    out["idle_rss_after_ingest_mb"] = round(rss_mb(), 1)

    citations = []
    for query in QUERIES:
        results = loop.run_until_complete(services.library.search_passages(query, limit=5))
        for r in results:
            if r.boxes and r.document_uri.endswith(".pdf"):
                citations.append(Citation.from_result(len(citations) + 1, r.chunk_id, r))
        if len(citations) >= clicks:
            break
    citations = citations[:clicks]
    panel = window.citation_panel
    shown: list[int] = []
    panel.page_shown.connect(shown.append)

    def show(citation: Citation) -> float:
        before = len(shown)
        start = time.perf_counter()
        panel.show_citation(citation)
        run_until(loop, lambda: len(shown) > before, 60)
        return (time.perf_counter() - start) * 1000

    cold, warm = [], []
    for citation in citations:
        services.pages._cache.clear()
        cold.append(show(citation))
        warm.append(show(citation))
    out["citation_to_page_ms"] = {
        "clicks": len(citations),
        "cold_p50": round(percentile(cold, 50), 1),
        "cold_p95": round(percentile(cold, 95), 1),
        "warm_p50": round(percentile(warm, 50), 1),
        "warm_p95": round(percentile(warm, 95), 1),
    }
    window.close()
    services.library.close()
    services.pages.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--max-files", type=int, default=None)
    parser.add_argument("--clicks", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--listed-starts", type=int, default=3, help="starts to a listed library (0: skip)")
    parser.add_argument("--library", type=Path, default=None, help="a library already holding FOLDER's documents")
    parser.add_argument("--listed-only", action="store_true", help="only the start-up to a listed library")
    args = parser.parse_args()
    folder = args.folder if args.folder.is_dir() else None
    if folder is None:
        print(f"folder {args.folder} not found: skipping the ingestion and citation figures", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="bench-app-") as tmp:
        work = Path(tmp)
        results: dict = {}
        if args.listed_starts and (args.library is not None or folder is not None):
            library = args.library
            if library is None:
                assert folder is not None
                library = work / "listed.lancedb"
                results["listed_library_documents"] = build_listed_library(folder, library)
            # rows first (the last session's rows.json) and, for a same-run baseline, without it;
            # one start first, unmeasured: the files in the page cache, rows.json written
            listed_starts(1, library)
            results["start_to_listed_s"] = listed_starts(args.listed_starts, library)
            results["start_to_listed_without_rows_first_s"] = listed_starts(args.listed_starts, library, snapshot=False)
            listed_starts(1, library)  # leave rows.json as a session would
        if args.listed_only:
            print(json.dumps(results, indent=2))
            return 0
        starts = cold_starts(args.starts, work / "start.lancedb")
        results["cold_start_s"] = {
            "runs": len(starts),
            "p50": round(statistics.median(starts), 2),
            "min": round(min(starts), 2),
            "max": round(max(starts), 2),
        }
        results.update(in_process(folder, args.max_files, args.clicks, work))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for key, value in results.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
