"""Evidence tables over FinanceBench: does each cell's citation land on the gold evidence page?

    nice -n 15 .venv/bin/python tests/bench/bench_extract.py [--data ../shared/data] \
        [--max-pages 90] [--runs 3] [--modes baseline,search,reader,oracle] [--full-table] \
        [--library /work/cache/bench-extract] [--records out.jsonl]

The public FinanceBench questions (``<data>/qa_financebench``; ``--data`` or
``HAIKU_SHARED_DATA``, default ``../shared/data``; skipped when absent) as one evidence table:
rows are the filings (those with at most ``--max-pages`` pages, a rule about size, never about
names), columns are the question templates (a question with its company's name made "the
company", so one template asked of several companies is one column). A cell with a gold
question is scored: its question is answered from its filing alone by
``haiku.rag.extraction`` and its citation's page compared with FinanceBench's evidence pages.

Modes (``--modes``):

- ``search``: no model, the best passage per cell (``FillOptions(mode="search-only")``);
- ``reader``: a scripted extracting model without tools (a Pydantic AI ``FunctionModel`` in the
  fallback mode: the library retrieves passages from the filing, the model picks the passage
  sharing most words with the question and answers with its sentence): no gold knowledge;
- ``baseline`` (same run, for the ratio): not a table; the chat's search-only answer for the
  same question scoped to the filing (``answering.answer`` with ``mode="search-only"``), its
  first citation's pages as they are (no best sentence across passages, no quote pinned to its
  item);
- ``oracle``: the same as ``reader``, but the model cites the passage holding the gold answer's figures (a
  gold answer without figures: the sentence holding most of its words, half at least) when one
  was shown (else says it did not find it): an upper bound of what a perfect reader could
  cite from what the library retrieved. Not a product figure.

Reported per mode: cells scored, **first page on gold** (the page the cell names: its quote's
citation, narrowed to the quote's item), **any page on gold** (any page of any of its
citations), not found, low confidence, and **cells per minute** (median of ``--runs`` runs,
wall clock, the whole fill: search, expansion, the model call, the write). ``--full-table``
fills every cell of the table (rows x columns), not only the scored ones, for the rate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from shared_data import data_dir

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "haiku_rag"), str(REPO)]

_PASSAGE = re.compile(r"^\[(\d+)\] Source:[^\n]*\n((?:>.*\n?)+)", re.MULTILINE)
_WORD = re.compile(r"[a-z0-9]+")
_STOP = set(
    "the a an of in on for to and or is was were be by with from as at what which how does did "
    "company its their this that give response question relying details shown statement "
    "using use based round your answer please".split()
)



def gold_pages(question: dict[str, Any]) -> set[int]:
    """Evidence pages, 1-based (FinanceBench numbers them from 0)."""
    return {int(e["evidence_page_num"]) + 1 for e in question.get("evidence") or []}


def template(question: dict[str, Any]) -> str:
    """The question with its company's name made "the company"."""
    text = question["question"]
    names = {question["company"], question["company"].title()}
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(rf"\b{re.escape(name)}(?:'s)?\b", "the company", text, flags=re.IGNORECASE)
    return " ".join(text.split())


def load(root: Path, max_pages: int) -> tuple[list[dict[str, Any]], dict[str, int]]:
    import pymupdf

    rows = [json.loads(line) for line in (root / "questions.public.jsonl").open()]
    pages: dict[str, int] = {}
    for name in {q["doc_name"] for q in rows}:
        path = root / "pdfs" / f"{name}.pdf"
        if path.exists():
            with pymupdf.open(path) as document:
                pages[name] = document.page_count
    chosen = [q for q in rows if q["doc_name"] in pages and pages[q["doc_name"]] <= max_pages]
    return chosen, {n: p for n, p in pages.items() if n in {q["doc_name"] for q in chosen}}


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if len(w) > 2 and w not in _STOP}


def _unquote(block: str) -> str:
    return " ".join(line[1:].strip() for line in block.splitlines())


def reader_model(gold_of: dict[str, list[str]] | None = None) -> Any:
    """A scripted model without tools: picks a numbered passage and answers from it, citing it.
    ``gold_of`` (question -> gold answers) makes it the oracle: the passage holding the gold
    figures, else "not found"."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
    from pydantic_ai.models.function import FunctionModel

    from haiku.rag.answering.support import _number_found, _numbers
    from haiku.rag.citations import split_sentences

    def respond(messages: list[Any], info: Any) -> ModelResponse:
        prompt = next(
            p.content
            for m in reversed(messages)
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, UserPromptPart) and isinstance(p.content, str)
        )
        question = prompt.rsplit("Question:", 1)[-1].strip()
        passages = [(int(m.group(1)), _unquote(m.group(2))) for m in _PASSAGE.finditer(prompt)]
        asked = _words(question)
        if gold_of is not None:
            golds = gold_of.get(question.splitlines()[0].strip(), [])
            for number, text in passages:
                given = _numbers(text, claims=False)
                holding = [
                    wanted for gold in golds
                    if (wanted := _numbers(gold.split(". ")[0], claims=False))
                    and all(_number_found(w, given, [0, 3, 6, 9]) for w in wanted)
                ]  # fmt: skip
                if holding:
                    wanted = holding[0]
                    sentence = max(
                        (text[s:e] for s, e in split_sentences(text)),
                        key=lambda t: sum(_number_found(w, _numbers(t, claims=False), [0, 3, 6, 9]) for w in wanted),
                    )
                    return ModelResponse(parts=[TextPart(f"{' '.join(sentence.split())[:300]} [{number}]")])
            # a gold answer without figures: the passage holding most of its words (half at least)
            best_text: tuple[float, int, str] | None = None
            for gold in golds:
                if _numbers(gold.split(". ")[0], claims=False):
                    continue
                gold_words = _words(gold.split(". ")[0])
                for number, text in passages:
                    for s, e in split_sentences(text):
                        share = len(gold_words & _words(text[s:e])) / max(1, len(gold_words))
                        if share >= 0.5 and (best_text is None or share > best_text[0]):
                            best_text = (share, number, " ".join(text[s:e].split()))
            if best_text is not None:
                return ModelResponse(parts=[TextPart(f"{best_text[2][:300]} [{best_text[1]}]")])
            return ModelResponse(parts=[TextPart("I did not find this in the documents.")])
        best = None
        for number, text in passages:
            for s, e in split_sentences(text):
                sentence = " ".join(text[s:e].split())
                score = (len(asked & _words(sentence)), bool(re.search(r"\d", sentence)))
                if best is None or score > best[0]:
                    best = (score, number, sentence)
        if best is None or best[0][0] == 0:
            return ModelResponse(parts=[TextPart("I did not find this in the documents.")])
        return ModelResponse(parts=[TextPart(f"{best[2][:300]} [{best[1]}]")])

    return FunctionModel(respond, model_name="oracle-reader" if gold_of else "scripted-reader")


async def ingest(client: Any, root: Path, names: list[str]) -> dict[str, str]:
    ids: dict[str, str] = {}
    for name in names:
        path = root / "pdfs" / f"{name}.pdf"
        existing = await client.get_document_by_uri(path.as_uri())
        if existing is None:
            started = time.perf_counter()
            outcome = await client.ingest_file(path, embed=False)
            assert outcome.document is not None, outcome
            print(f"  ingested {name} in {time.perf_counter() - started:.0f} s", flush=True)
            existing = outcome.document
        ids[name] = existing.id
    started = time.perf_counter()
    await client.embed_pending()
    print(f"  vectors ready in {time.perf_counter() - started:.0f} s", flush=True)
    return ids


async def baseline(
    client: Any, gold_cells: list[tuple[str, str, dict[str, Any]]], templates: list[str],
    column_of: dict[str, str], runs: int, sink: Any,
) -> dict[str, Any]:
    """The chat's search-only answer per gold cell (its first citation), timed like a fill."""
    from haiku.rag.answering import AnswerOptions, answer
    from haiku.rag.citations import matched_pages

    question_of = {c: t for t, c in column_of.items()}
    rates: list[float] = []
    scored: list[dict[str, Any]] = []
    for run_number in range(runs):
        started = time.perf_counter()
        answers = []
        for row, column, _ in gold_cells:
            options = AnswerOptions(mode="search-only", document_ids=(row,), search_limit=1)
            answers.append(await answer(client, question_of[column], options=options))
        rates.append(len(gold_cells) / ((time.perf_counter() - started) / 60))
        if run_number == 0:
            for (_, _, q), done in zip(gold_cells, answers, strict=True):
                gold = gold_pages(q)
                pages = matched_pages(done.citations[0]) if done.citations else []
                record = {
                    "mode": "baseline", "id": q["financebench_id"], "filing": q["doc_name"],
                    "gold_pages": sorted(gold), "status": "grounded" if pages else "not_found",
                    "pages": pages, "first_on_gold": bool(pages and pages[0] in gold),
                    "any_on_gold": bool(set(pages) & gold),
                }  # fmt: skip
                scored.append(record)
                if sink is not None:
                    sink.write(json.dumps(record, ensure_ascii=False) + "\n")
        print(f"  baseline run {run_number + 1}: {len(gold_cells)} answers, {rates[-1]:.1f} per min", flush=True)
    return {"scored": scored, "rates": rates}


async def run(args: argparse.Namespace) -> int:
    from haiku.rag import extraction as X
    from haiku.rag.citations import matched_pages
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    root = data_dir(args.data) / "qa_financebench"
    if not (root / "questions.public.jsonl").exists():
        print(f"skipped: no FinanceBench data in {root}")
        return 0
    questions, pages = load(root, args.max_pages)
    if not questions:
        print(f"skipped: no filing of at most {args.max_pages} pages in {root / 'pdfs'}")
        return 0
    names = sorted(pages, key=lambda n: (pages[n], n))
    templates = list(dict.fromkeys(template(q) for q in questions))
    print(f"{len(names)} filings ({sum(pages.values())} pages), {len(templates)} templates, {len(questions)} gold cells")
    config = load_config()
    library = Path(args.library)
    config.storage.data_dir = library / "data"
    sink = open(args.records, "w") if args.records else None  # noqa: SIM115 - written as we go
    results: dict[str, dict[str, Any]] = {}
    async with HaikuRAG(library / "library.lancedb", config, create=True) as client:
        ids = await ingest(client, root, names)
        columns = [{"name": f"Q{n + 1}", "question": t} for n, t in enumerate(templates)]
        column_of = {t: f"c{n + 1}" for n, t in enumerate(templates)}
        gold_cells = [(ids[q["doc_name"]], column_of[template(q)], q) for q in questions]
        gold_of: dict[str, list[str]] = {}
        for q in questions:
            gold_of.setdefault(template(q), []).append(q["answer"])
        for mode in args.modes.split(","):
            if mode == "baseline":
                results[mode] = await baseline(client, gold_cells, templates, column_of, args.runs, sink)
                continue
            options = {
                "search": X.FillOptions(mode="search-only"),
                "reader": X.FillOptions(mode="fallback", model=reader_model(), supports_tools=False),
                "oracle": X.FillOptions(mode="fallback", model=reader_model(gold_of), supports_tools=False),
            }[mode]
            rates: list[float] = []
            scored: list[dict[str, Any]] = []
            for run_number in range(args.runs):
                for stale in await X.list_tables(client):
                    if stale.name.startswith("bench-extract "):
                        await X.delete_table(client, stale.id)
                table = await X.create_table(
                    client, f"bench-extract {mode} {run_number}", columns, document_ids=[ids[n] for n in names]
                )
                started = time.perf_counter()
                cells = 0
                if args.full_table:
                    filled = await X.fill_table(client, table.id, options)
                    cells = filled.filled
                else:
                    for row, column, _ in gold_cells:
                        await X.fill_table(client, table.id, options, rows=[row], columns=[column])
                        cells += 1
                    filled = await X.load_table(client, table.id)
                minutes = (time.perf_counter() - started) / 60
                rates.append(cells / minutes)
                if run_number == 0:
                    for row, column, q in gold_cells:
                        cell = filled.cell(row, column)
                        assert cell is not None
                        gold = gold_pages(q)
                        any_pages = {p for c in cell.citations for p in matched_pages(c)}
                        record = {
                            "mode": mode, "id": q["financebench_id"], "filing": q["doc_name"],
                            "question": q["question"], "gold": q["answer"], "gold_pages": sorted(gold),
                            "status": cell.status, "value": cell.value[:300], "pages": cell.pages,
                            "first_on_gold": bool(cell.pages and cell.pages[0] in gold),
                            "any_on_gold": bool(any_pages & gold),
                        }  # fmt: skip
                        scored.append(record)
                        if sink is not None:
                            sink.write(json.dumps(record, ensure_ascii=False) + "\n")
                            sink.flush()
                await X.delete_table(client, table.id)
                print(f"  {mode} run {run_number + 1}: {cells} cells, {rates[-1]:.1f} cells/min", flush=True)
            results[mode] = {"scored": scored, "rates": rates}
    if sink is not None:
        sink.close()
    print()
    print("| mode | cells scored | first page on gold | any page on gold | not found | low confidence | cells/min (median) | runs |")
    print("|---|---|---|---|---|---|---|---|")
    for mode, result in results.items():
        scored = result["scored"]
        n = len(scored)
        print(
            f"| {mode} | {n} | {sum(r['first_on_gold'] for r in scored)}/{n} "
            f"({100 * sum(r['first_on_gold'] for r in scored) / n:.0f} %) | "
            f"{sum(r['any_on_gold'] for r in scored)}/{n} | "
            f"{sum(r['status'] == 'not_found' for r in scored)} | "
            f"{sum(r['status'] == 'low_confidence' for r in scored)} | "
            f"{statistics.median(result['rates']):.1f} | {', '.join(f'{r:.1f}' for r in result['rates'])} |"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--max-pages", type=int, default=90, help="filings of at most this many pages")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", default="baseline,search,reader,oracle")
    parser.add_argument("--full-table", action="store_true", help="fill every cell, not only the scored ones")
    parser.add_argument("--library", default=str(REPO.parent / "cache" / "bench-extract"))
    parser.add_argument("--records", default=None)
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
