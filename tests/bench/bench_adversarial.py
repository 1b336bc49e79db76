"""Every adversarial PDF through `haiku-rag add-src`, each bounded in time.

    .venv/bin/python tests/bench/bench_adversarial.py [--data ../shared/data] [--markdown out.md]

The files of ``pdfs_adversarial/files`` are copied to a temporary folder and go through one
real ``haiku-rag add-src FOLDER --json`` against a store that already holds a generated report:
each file is parsed in the parse worker with a 30 s stall bound
(``HAIKU_RAG_PROCESSING__PARSE_TIMEOUT_SECONDS``), and the command as a whole has an outer
bound of 60 s per file (a breach counts as a hang). Password-protected files whose password
the manifest gives are tried again, one ``add-src FILE --password ...`` each. Afterwards the
report's rows must be byte-identical and ``haiku-rag doctor`` must pass. Prints a Markdown
table (file, manifest category, outcome, message, seconds) and the totals. Seconds are the
per-file time reported by ``add-src --json`` (read, parse, store; embedding is batched at the
end of the folder and excluded); password retries show the whole command's wall time.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
HAIKU_RAG = str(Path(sys.executable).parent / "haiku-rag")
OUTER_TIMEOUT_PER_FILE = 60
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


def run(db: Path, *args: str, timeout: float = 300) -> tuple[subprocess.CompletedProcess[str] | None, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAIKU_RAG_")}
    env["HAIKU_RAG_PROCESSING__PARSE_TIMEOUT_SECONDS"] = str(PARSE_TIMEOUT)
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
    start = time.perf_counter()
    try:
        result = subprocess.run(
            [HAIKU_RAG, "--db", str(db), *args], capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - start
    return result, time.perf_counter() - start


def crashed(result: subprocess.CompletedProcess[str]) -> str | None:
    if "Traceback" in result.stderr or result.returncode not in (0, 1):
        return result.stderr.strip().splitlines()[-1][:160] if result.stderr.strip() else f"exit {result.returncode}"
    return None


def classify(record: dict) -> tuple[str, str, bool]:
    """(outcome, message, handled) of one ``add-src --json`` record."""
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
    startup = [run(db, "list")[1] for _ in range(2)]

    incoming = work / "incoming"
    incoming.mkdir()
    for row in rows:
        shutil.copy(folder / "files" / row["file"], incoming / row["file"])
    limit = OUTER_TIMEOUT_PER_FILE * len(rows)
    result, total_seconds = run(db, "add-src", str(incoming), "--json", timeout=limit)
    if result is None:
        print(f"HANG: the folder did not finish within {limit} s")
        return 1
    failure = crashed(result)
    if failure:
        print(f"CRASH: {failure}")
        return 1
    records = {Path(r["source"]).name: r for r in json.loads(result.stdout)}

    table = []
    for row in rows:
        record = records.get(row["file"])
        if record is None:
            table.append((row["file"], row["category"], "MISSING", "no record in the report", 0.0, False))
            continue
        outcome, message, handled = classify(record)
        table.append((row["file"], row["category"], outcome, message, record.get("seconds") or 0.0, handled))
        password = row.get("password", "")
        if row.get("needs_password") == "True" and password and password != "unknown" and not password.startswith("("):
            retry, seconds = run(db, "add-src", str(incoming / row["file"]), "--json", "--password", password)
            if retry is None:
                outcome, message, handled = "HANG", "no answer", False
            elif crashed(retry):
                outcome, message, handled = "CRASH", crashed(retry), False
            else:
                outcome, message, handled = classify(json.loads(retry.stdout)[0])
            table.append((row["file"] + " (with password)", row["category"], outcome, message, seconds, handled))

    after = snapshot(db)
    untouched = {k: after[k] for k in before} == before
    doctor, _ = run(db, "doctor")
    doctor_ok = doctor is not None and doctor.returncode == 0

    lines = [
        "| file | manifest category | outcome | message | s |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {f} | {c} | {o} | {m} | {s:.2f} |" for f, c, o, m, s, _ in table]
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
        f"per-file seconds in the folder run: median {statistics.median(t[4] for t in table if '(with password)' not in t[0]):.2f}, "
        f"max {max(t[4] for t in table):.2f}; the whole folder command took {total_seconds:.0f} s; "
        f"start-up reference (`haiku-rag list`): median {statistics.median(startup):.1f} s",
    ]
    text = "\n".join(lines + summary)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")
    return 0 if (hangs == 0 and crashes == 0 and untouched and doctor_ok and handled == len(table)) else 1


if __name__ == "__main__":
    sys.exit(main())
