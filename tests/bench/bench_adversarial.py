"""Every adversarial PDF through `haiku-rag add-src`, one command per file, each bounded in time.

    .venv/bin/python tests/bench/bench_adversarial.py [--data ../shared/data] [--markdown out.md]

For each file of ``pdfs_adversarial/files`` (in manifest order) the real CLI runs against one
store that already holds a generated report; the parse timeout is set to 30 s
(``HAIKU_RAG_PROCESSING__PARSE_TIMEOUT_SECONDS``) and the whole command gets an outer bound of
180 s (a breach counts as a hang). Password-protected files whose password the manifest gives
are tried again with ``--password``. Afterwards the report's rows must be byte-identical and
``haiku-rag doctor`` must pass. Prints a Markdown table (file, manifest category, outcome,
message, seconds) and the totals; times are wall time of the whole command, start-up included
(a ``haiku-rag list`` on the same store is timed for reference).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
HAIKU_RAG = str(Path(sys.executable).parent / "haiku-rag")
OUTER_TIMEOUT = 180
PARSE_TIMEOUT = 30
HANDLED = {
    "password_required",
    "wrong_password",
    "needs_ocr",
    "damaged",
    "empty",
    "unsupported_type",
    "too_large",
    "timeout",
    "parser_failed",
}


def run(db: Path, *args: str) -> tuple[subprocess.CompletedProcess[str] | None, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAIKU_RAG_")}
    env["HAIKU_RAG_PROCESSING__PARSE_TIMEOUT_SECONDS"] = str(PARSE_TIMEOUT)
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
    start = time.perf_counter()
    try:
        result = subprocess.run(
            [HAIKU_RAG, "--db", str(db), *args], capture_output=True, text=True, timeout=OUTER_TIMEOUT, env=env
        )
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - start
    return result, time.perf_counter() - start


def classify(result: subprocess.CompletedProcess[str] | None) -> tuple[str, str, bool]:
    """(outcome, message, handled)."""
    if result is None:
        return "HANG", f"no answer within {OUTER_TIMEOUT} s", False
    if "Traceback" in result.stderr or result.returncode not in (0, 1):
        return "CRASH", result.stderr.strip().splitlines()[-1][:160] if result.stderr.strip() else f"exit {result.returncode}", False
    try:
        [record] = json.loads(result.stdout)
    except (ValueError, TypeError):
        return "CRASH", (result.stderr or result.stdout).strip()[:160], False
    if record["status"] in ("ingested", "updated", "unchanged"):
        return record["status"], f"{record.get('index_state')}", True
    category = record.get("category") or "?"
    return category, (record.get("reason") or "").replace("|", "/")[:160], category in HANDLED


def snapshot(db: Path) -> dict:
    from reliability.badfiles import snapshot as take

    from haiku.rag.store.engine import Store

    store = Store(str(db), read_only=True)
    try:
        return take(store)
    finally:
        store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("HAIKU_SHARED_DATA", str(REPO.parent / "shared" / "data")))
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    folder = Path(args.data) / "pdfs_adversarial"
    if not (folder / "manifest.csv").is_file():
        print(f"skipped: {folder} not found")
        return 0
    rows = list(csv.DictReader((folder / "manifest.csv").open()))

    import pdf_factory

    work = Path(tempfile.mkdtemp(prefix="bench-adversarial-"))
    db = work / "lib.lancedb"
    report = pdf_factory.make_report_pdf(work / "report.pdf").path
    first, _ = run(db, "add-src", str(report))
    assert first is not None and first.returncode == 0, first and first.stderr
    before = snapshot(db)
    startup = [run(db, "list")[1] for _ in range(3)]

    table = []
    for row in rows:
        path = folder / "files" / row["file"]
        result, seconds = run(db, "add-src", str(path), "--json")
        outcome, message, handled = classify(result)
        table.append((row["file"], row["category"], outcome, message, seconds, handled))
        password = row.get("password", "")
        if row.get("needs_password") == "True" and password and password not in ("unknown",) and not password.startswith("("):
            result, seconds = run(db, "add-src", str(path), "--json", "--password", password)
            outcome, message, handled = classify(result)
            table.append((row["file"] + " (with password)", row["category"], outcome, message, seconds, handled))
        print(f"{table[-1][4]:6.1f}s  {table[-1][2]:<18} {row['file']}", file=sys.stderr, flush=True)

    after = snapshot(db)
    untouched = {k: after[k] for k in before} == before
    doctor, _ = run(db, "doctor")
    doctor_ok = doctor is not None and doctor.returncode == 0

    lines = [
        "| file | manifest category | outcome | message | s |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {f} | {c} | {o} | {m} | {s:.1f} |" for f, c, o, m, s, _ in table]
    hangs = sum(1 for t in table if t[2] == "HANG")
    crashes = sum(1 for t in table if t[2] == "CRASH")
    handled = sum(1 for t in table if t[5])
    ingested = sum(1 for t in table if t[2] in ("ingested", "updated", "unchanged"))
    summary = [
        "",
        f"files and runs: {len(table)} ({len(rows)} files + {len(table) - len(rows)} password retries); "
        f"handled {handled}/{len(table)} ({100 * handled / len(table):.0f} %): {ingested} ingested, "
        f"{handled - ingested} refused with a category; hangs {hangs}; crashes {crashes}",
        f"earlier document untouched: {untouched}; `haiku-rag doctor` afterwards: {'passed' if doctor_ok else 'FAILED'}",
        f"command wall time: median {statistics.median(t[4] for t in table):.1f} s, max {max(t[4] for t in table):.1f} s; "
        f"start-up reference (`haiku-rag list`): median {statistics.median(startup):.1f} s",
    ]
    text = "\n".join(lines + summary)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")
    return 0 if (hangs == 0 and crashes == 0 and untouched and doctor_ok and handled == len(table)) else 1


if __name__ == "__main__":
    sys.exit(main())
