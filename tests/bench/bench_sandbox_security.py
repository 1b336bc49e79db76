"""Run the hostile programs of ``tests/sandbox/hostile.py`` through ``analysis_execute_code``
and write the table in ``docs/security.md``.

    .venv/bin/python tests/bench/bench_sandbox_security.py            # rewrite the table
    .venv/bin/python tests/bench/bench_sandbox_security.py --print    # print it only

The corpus is the capability tests' (five Markdown notes and the report PDF), ingested into a
temporary store. Times are wall-clock, from the model's tool call to the model receiving the
result, on whatever machine runs this; the limits are ``HOSTILE_LIMITS`` (2 s per call, 64 MiB,
2,000 characters of output), not the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from capabilities.corpus import build_corpus  # noqa: E402
from sandbox.hostile import HOSTILE_LIMITS, Outcome, run_hostile  # noqa: E402

from haiku.rag.capabilities.analysis import create_capability  # noqa: E402
from haiku.rag.client import HaikuRAG  # noqa: E402

DOC = TESTS.parent / "docs" / "security.md"
BEGIN = "<!-- hostile-table:begin -->"
END = "<!-- hostile-table:end -->"

WHAT_STOPPED_IT = {
    "refused": "refused before running (import/name check)",
    "error": "the interpreter raised it (read-only filesystem, host functions, Python error)",
    "time limit": "time limit per call",
    "memory limit": "memory limit",
    "recursion limit": "recursion depth limit",
    "output limit": "output limit (flood stopped)",
    "crash": "worker crashed and was replaced",
    "none": "completed harmlessly",
}


def first_line(outcome: Outcome) -> str:
    """The line of the message that says what happened (tracebacks end with it)."""
    lines = [line.strip() for line in outcome.shown.splitlines() if line.strip()]
    if outcome.stopped_by == "none":
        return "(no error) " + lines[0][:60] if lines else "(no output)"
    picked = next((line for line in lines if line.startswith(("Stopped:", "Refused:"))), None)
    if picked is None:
        picked = next(
            (
                line
                for line in reversed(lines)
                if not line.startswith(("File", "Output:", "Traceback", "~", "^"))
                and line not in {c.strip() for c in outcome.program.code.splitlines()}
            ),
            lines[-1] if lines else "",
        )
    return picked if len(picked) <= 110 else picked[:107] + "..."


def table(outcomes: list[Outcome]) -> str:
    rows = [
        "| # | Program | What stopped it | Message shown to the model | Time | Next execution |",
        "|---|---|---|---|---|---|",
    ]
    for number, outcome in enumerate(outcomes, start=1):
        program = outcome.program
        message = first_line(outcome).replace("|", "\\|").replace("`", "'")
        ok = "works" if outcome.next_execution.split() == ["6", "42"] else "FAILED"
        rows.append(
            f"| {number} | {program.name} ({program.category}) | "
            f"{WHAT_STOPPED_IT[outcome.stopped_by]} | `{message}` | {outcome.seconds:.2f} s | {ok} |"
        )
    return "\n".join(rows)


def measure() -> list[Outcome]:
    with tempfile.TemporaryDirectory() as root:
        corpus = build_corpus(Path(root))  # runs its own event loop
        config = corpus.config.model_copy(deep=True)
        for key, value in HOSTILE_LIMITS.items():
            setattr(config.analysis, key, value)
        client = HaikuRAG(corpus.db_path, config, read_only=True)
        try:
            capability = create_capability(rag=client, config=config, request_limit=None)
            return asyncio.run(run_hostile(capability))
        finally:
            client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--print", action="store_true", help="print the table, leave the doc alone")
    args = parser.parse_args()
    outcomes = measure()
    text = (
        f"{table(outcomes)}\n\nMeasured with `tests/bench/bench_sandbox_security.py` on "
        f"{platform.system()} {platform.machine()}, Python {platform.python_version()}, "
        f"{len(outcomes)} programs, limits {HOSTILE_LIMITS}."
    )
    if args.print:
        print(text)
        return
    doc = DOC.read_text(encoding="utf-8")
    start, stop = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    DOC.write_text(doc[:start] + "\n" + text + "\n" + doc[stop:], encoding="utf-8")
    print(f"wrote {len(outcomes)} rows to {DOC}")


if __name__ == "__main__":
    main()
