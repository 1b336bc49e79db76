"""Evidence tables on real PDFs, through the command line, in every answer mode.

    nice -n 15 .venv/bin/python tests/bench/eval_extract_real.py [--data ../shared/data] \
        [--count 12] [--runs 3] [--modes search,tools,fallback] [--api] [--resume] [--show 3] \
        [--library /work/cache/eval-extract-real] [--records out.jsonl]

The PDFs of ``<data>/pdfs_realworld/files`` (``--data`` or ``HAIKU_SHARED_DATA``, default
``../shared/data``; skipped when absent; nothing is copied into the repository) that have a
text layer (at least 3,000 characters by PyMuPDF) and at most 20 pages; ``--count`` of them
spread evenly over their page counts (a rule about size, never about names). They are ingested
through the API into a library outside the repository (``--library``, kept between runs) and
put in a collection; then

    haiku-rag --db … --config … extract --collection "Real PDFs" --column … (x4) --json --mode M

runs once per mode and run, as a subprocess (the wall clock includes its start):

- ``search``: no model, the best passage per cell;
- ``tools``: a scripted OpenAI-compatible server on 127.0.0.1 that behaves like a tool-calling
  model: it calls ``rag_search`` with the question's keywords (the library scopes the search
  to the row's document), reads the passages the tool returned, calls ``rag_cite`` with the
  chunk id of the passage holding the sentence that shares most words with the question, and
  answers with that sentence (a number column: the sentence's first figure) or, when no
  passage shares a word, cites nothing and says it cannot find it. It sees only what the tools
  returned: nothing of the documents or of the row;
- ``fallback``: the same server offered no tools: it answers from the numbered passages in the
  prompt with the best sentence and its ``[n]`` marker.

Reported per mode: cells grounded / low confidence / not found, the share of cells whose every
citation is a chunk of the row's own document (each chunk id looked up in the store, not taken
from the export), cells per minute (median of ``--runs``), and ``--show`` sample cells (value,
quote, page) per column for reading.

``--api``: the same table also filled in this process through ``haiku.rag.extraction``
(``create_table`` over the collection, ``fill_table``), the model from the same configuration
file, once per mode.

``--resume``: a kept table (``--table``) filled in tools mode and killed mid-fill twice (SIGINT
after a few cells, then SIGTERM after a few more), then run to the end: the cells stored before
each kill must be kept as they were, and only the rest answered.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from shared_data import data_dir

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "haiku_rag"), str(REPO), str(REPO / "tests")]

COLLECTION = "Real PDFs"
COLUMNS = [
    ("Topic", "What is the main subject of this document?", "text"),
    ("Authors", "Who wrote or issued this document: its authors or organisation?", "text"),
    ("Year", "In which year was this document published or dated?", "number"),
    ("Method", "What method, approach or procedure does this document describe?", "text"),
]
_WORD = re.compile(r"[a-z0-9]+")
_STOP = set(
    "the a an of in on for to and or is was were be by with from as at what which who how does "
    "did this that its it in document answer few words one short sentence number writes followed "
    "unit main".split()
)
_FIGURE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s?%|\s+[A-Za-z]+)?")
_YEAR = re.compile(r"(?<![\w.,])(?:1[89]\d\d|20\d\d)(?!\w|[.,]\d)")



def choose(files: Path, count: int) -> list[Path]:
    """PDFs with a text layer and at most 20 pages, ``count`` of them spread over page counts."""
    import pymupdf

    fitting: list[tuple[int, str, Path]] = []
    for path in sorted(files.glob("*.pdf")):
        try:
            with pymupdf.open(path) as document:
                if document.needs_pass or document.page_count > 20:
                    continue
                chars = sum(len(page.get_text()) for page in document)
                pages = document.page_count
        except Exception:  # noqa: BLE001 - a file PyMuPDF cannot open is not a candidate
            continue
        if chars >= 3000:
            fitting.append((pages, path.name, path))
    fitting.sort()
    if len(fitting) <= count:
        return [p for _, _, p in fitting]
    step = (len(fitting) - 1) / (count - 1)
    return [fitting[round(i * step)][2] for i in range(count)]


# --- the scripted model -------------------------------------------------------------------


def words(text: str) -> set[str]:
    """Content words, cut to five letters (a reader's "published" meets "publication")."""
    return {w[:5] for w in _WORD.findall(text.casefold()) if len(w) > 2 and w not in _STOP}


def sentences(text: str) -> list[str]:
    """A passage's sentences (a paragraph's lines joined first) and table rows."""
    out = []
    for paragraph in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in paragraph.split("\n") if line.strip()]
        if lines and all(line.startswith("|") for line in lines):
            pieces = [
                " ".join(c.strip() for c in line.strip("|").split("|"))
                for line in lines
                if not set(line) <= set("|-: ")
            ]
        else:
            pieces = re.split(r"(?<=[a-z0-9)][.!?])\s+(?=[A-Z])", " ".join(lines))
        out.extend(p for piece in pieces if len((p := " ".join(piece.split())).split()) >= 3)
    return out


def best_sentence(
    question: str, passages: list[tuple[str, str]], number: bool
) -> tuple[str, str] | None:
    """(passage key, sentence): the sentence sharing most words with the question (a number
    column: one stating a figure); None when no sentence shares a word."""
    asked = words(question)
    figure = _YEAR if number and "year" in question.casefold() else _FIGURE
    best: tuple[tuple[int, int], str, str] | None = None
    for key, text in passages:
        for sentence in sentences(text):
            shared = len(asked & words(sentence))
            has_figure = bool(figure.search(sentence))
            if number and not has_figure:
                continue
            score = (shared, int(has_figure))
            if best is None or score > best[0]:
                best = (score, key, sentence)
    if best is None or best[0][0] == 0:
        return None
    return best[1], best[2]


def value_of(sentence: str, number: bool, question: str = "") -> str:
    if number:
        match = (_YEAR if "year" in question.casefold() else _FIGURE).search(sentence)
        if match:
            return match.group().strip().rstrip(",.;:")
    return sentence[:200].rstrip(" .")


def search_return_passages(text: str) -> list[tuple[str, str]]:
    """(chunk id, unquoted text) of every passage a ``rag_search`` return showed."""
    from haiku.rag.capabilities.formatting import RESULT_HEADER, RESULT_SEPARATOR

    out: list[tuple[str, str]] = []
    for block in text.split(RESULT_SEPARATOR):
        header = RESULT_HEADER.search(block)
        if header is None or "Content:" not in block:
            continue
        content = block.split("Content:", 1)[1]
        parts = re.split(r"^Passage \[([0-9a-f]{32})\](?: \(search hit\))?:$", content, flags=re.M)
        pieces = (
            [(header.group(1), parts[0])]
            if len(parts) == 1
            else list(zip(parts[1::2], parts[2::2], strict=True))
        )
        for chunk_id, quoted in pieces:
            lines = [
                line[2:] if line.startswith("> ") else ""
                for line in quoted.split("\n")
                if line.startswith(">")
            ]
            out.append((chunk_id, "\n".join(lines)))
    return out


def make_stub(on_answer: Any = None) -> Any:
    from openai_stub_server import StubOpenAI, _call, _text, _tool_name_of

    class ScriptedReader(StubOpenAI):
        """A tool-calling (or, offered no tools, a passage-reading) model that uses only what
        it was shown."""

        answers = 0
        shown: list[set[str]] = []  # the chunk ids of each search return it read

        def reply(self, body: dict[str, Any]) -> dict[str, Any]:
            messages = body["messages"]
            tools = {t["function"]["name"] for t in body.get("tools", [])}
            prompt = next(_text(m["content"]) for m in messages if m["role"] == "user")
            number = "number as the document writes it" in prompt
            last = messages[-1]
            if last["role"] == "tool":
                called = _tool_name_of(messages, last["tool_call_id"])
                searched = next(
                    (_text(m["content"]) for m in reversed(messages)
                     if m["role"] == "tool" and _tool_name_of(messages, m["tool_call_id"]) == "rag_search"),
                    "",
                )  # fmt: skip
                question = prompt.split("\n", 1)[0]
                best = best_sentence(question, search_return_passages(searched), number)
                if called == "rag_search":
                    self.shown.append({c for c, _ in search_return_passages(searched)})
                    return _call("rag_cite", {"chunk_ids": [best[0]] if best else []})
                if called == "rag_cite":
                    return self._answer(
                        value_of(best[1], number, question) if best
                        else "I cannot find enough information in the knowledge base to answer this question."
                    )  # fmt: skip
            if "load_capability" in tools and "rag_search" not in tools:
                return _call("load_capability", {"id": "haiku-rag"})
            if "rag_search" in tools:
                question = prompt.split("\n", 1)[0]
                return _call(
                    "rag_search",
                    {"query": " ".join(sorted(words(question), key=question.casefold().find))},
                )
            # no tools: numbered passages in the prompt, "[n] Source: …" then quoted lines
            asked = prompt.rsplit("Question:", 1)[-1].strip().split("\n", 1)[0]
            passages = [
                (m.group(1), "\n".join(line[2:] for line in m.group(2).split("\n") if line.startswith("> ")))
                for m in re.finditer(r"^\[(\d+)\] Source:[^\n]*\n((?:>.*\n?)+)", prompt, re.M)
            ]  # fmt: skip
            best = best_sentence(asked, passages, number)
            if best is None:
                return self._answer("I did not find this in the documents.")
            return self._answer(f"{value_of(best[1], number, asked)} [{best[0]}]")

        def _answer(self, text: str) -> dict[str, Any]:
            type(self).answers += 1
            if on_answer is not None:
                on_answer(type(self).answers)
            return {"content": text}

    reader = ScriptedReader()
    # a killed command leaves a reply unsent: not an error of the script's
    reader._server.handle_error = lambda request, address: None  # type: ignore[method-assign]
    return reader


# --- the library and the command ----------------------------------------------------------


async def prepare(library: Path, pdfs: list[Path]) -> dict[str, str]:
    """Ingest (once) and the collection; document id -> file name."""
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    config = load_config(library / "haiku.rag.yaml")
    names: dict[str, str] = {}
    async with HaikuRAG(library / "library.lancedb", config, create=True) as client:
        for path in pdfs:
            existing = await client.get_document_by_uri(path.as_uri())
            if existing is None:
                started = time.perf_counter()
                outcome = await client.ingest_file(path, embed=False)
                if outcome.document is None:
                    print(f"  not ingested: {path.name}: {outcome.reason}", flush=True)
                    continue
                print(
                    f"  ingested {path.name} in {time.perf_counter() - started:.0f} s", flush=True
                )
                existing = outcome.document
            names[existing.id] = path.name
        started = time.perf_counter()
        await client.embed_pending()
        print(f"  vectors ready in {time.perf_counter() - started:.0f} s", flush=True)
        if COLLECTION in {c.name for c in await client.list_collections()}:
            await client.delete_collection(COLLECTION)
        await client.create_collection(COLLECTION, list(names))
    return names


def write_config(library: Path, base_url: str | None) -> Path:
    path = library / ("haiku.rag.yaml" if base_url is None else "model.yaml")
    text = f"storage:\n  data_dir: {library / 'data'}\n"
    if base_url is not None:
        text += f"qa:\n  model:\n    provider: openai-compatible\n    name: scripted-reader\n    base_url: {base_url}\n"
    path.write_text(text)
    return path


def command(library: Path, config: Path, mode: str, *extra: str) -> list[str]:
    columns: list[str] = []
    for name, question, kind in COLUMNS:
        columns += ["--column", name, "--question", question, "--type", kind]
    # Ctrl-C as in a terminal (a process started from a background job inherits SIGINT ignored)
    runner = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from haiku.rag.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    return [
        sys.executable, "-c", runner, "--db", str(library / "library.lancedb"), "--config", str(config),
        "extract", "--collection", COLLECTION, *columns, "--mode", mode, *extra,
    ]  # fmt: skip


def environment() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "haiku_rag"), str(REPO)]),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
    }


async def chunk_documents(library: Path, chunk_ids: set[str]) -> dict[str, str]:
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    found: dict[str, str] = {}
    config = load_config(library / "haiku.rag.yaml")
    async with HaikuRAG(library / "library.lancedb", config, read_only=True) as client:
        for chunk_id in chunk_ids:
            found[chunk_id] = (await client.get_chunk(chunk_id)).document_id
    return found


def summarise(data: dict[str, Any], owners: dict[str, str]) -> dict[str, Any]:
    counts = {"grounded": 0, "low_confidence": 0, "not_found": 0, "edited": 0, "missing": 0}
    cited = own = 0
    for row in data["rows"]:
        for cell in row["cells"].values():
            if cell is None:
                counts["missing"] += 1
                continue
            counts[cell["status"]] += 1
            if cell["chunk_ids"]:
                cited += 1
                own += all(owners[c] == row["document_id"] for c in cell["chunk_ids"])
    return {**counts, "cited": cited, "own": own}


def run_mode(library: Path, mode: str, runs: int, sink: Any) -> dict[str, Any]:
    rates: list[float] = []
    first: dict[str, Any] | None = None
    for number in range(runs):
        stub = make_stub() if mode != "search" else None
        if stub is not None:
            stub.shown = []
        if stub is not None:
            stub.__enter__()
        try:
            config = write_config(library, stub.base_url if stub is not None else None)
            started = time.perf_counter()
            done = subprocess.run(
                command(library, config, mode, "--json"),
                capture_output=True,
                text=True,
                env=environment(),
                check=False,
            )
            seconds = time.perf_counter() - started
        finally:
            if stub is not None:
                stub.__exit__(None, None, None)
        if done.returncode != 0:
            raise SystemExit(f"{mode}: exit {done.returncode}\n{done.stderr[-3000:]}")
        data = json.loads(done.stdout)
        if stub is not None:
            data["_model"] = {
                "requests": len(stub.requests),
                "with_tools": sum(1 for b in stub.requests if b.get("tools")),
                "search_returns": [sorted(s) for s in stub.shown],
            }
        cells = sum(len(r["cells"]) for r in data["rows"])
        rates.append(cells / (seconds / 60))
        print(
            f"  {mode} run {number + 1}: {cells} cells in {seconds:.0f} s, {rates[-1]:.1f} cells/min",
            flush=True,
        )
        if first is None:
            first = data
            if sink is not None:
                for row in data["rows"]:
                    for cid, cell in row["cells"].items():
                        sink.write(
                            json.dumps(
                                {
                                    "mode": mode,
                                    "document": row["document"],
                                    "column": cid,
                                    **(cell or {}),
                                },
                                ensure_ascii=False,
                            )
                            + "\n"
                        )
    assert first is not None
    return {"data": first, "rates": rates}


def show(data: dict[str, Any], count: int) -> None:
    names = {c["id"]: c["name"] for c in data["columns"]}
    for cid, name in names.items():
        shown = 0
        for row in data["rows"]:
            cell = row["cells"].get(cid)
            if not cell or cell["status"] == "not_found" or shown >= count:
                continue
            shown += 1
            print(f"    [{name}] {row['document'][:50]!r} p.{cell['pages'][:1]} {cell['status']}")
            print(f"       value: {cell['value'][:160]!r}")
            if cell["quote"] != cell["value"]:
                print(f"       quote: {cell['quote'][:160]!r}")


# --- the API, in process ------------------------------------------------------------------


async def api_fill(library: Path, mode: str, config_path: Path) -> dict[str, Any]:
    """The same table filled through ``haiku.rag.extraction`` in this process, the model (if
    any) from the configuration file as the command line reads it."""
    from haiku.rag import extraction as X
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    config = load_config(config_path)
    columns = [{"name": n, "question": q, "type": t} for n, q, t in COLUMNS]
    async with HaikuRAG(library / "library.lancedb", config) as client:
        table = await X.create_table(
            client, f"eval-extract api {mode}", columns, collection=COLLECTION
        )
        started = time.perf_counter()
        options = X.FillOptions(mode="search-only" if mode == "search" else mode)  # type: ignore[arg-type]
        try:
            filled = await X.fill_table(client, table.id, options)
        finally:
            seconds = time.perf_counter() - started
        counts = {"grounded": 0, "low_confidence": 0, "not_found": 0, "edited": 0}
        cited = own = 0
        for document_id in filled.document_ids:
            for column in filled.columns:
                cell = filled.cell(document_id, column.id)
                assert cell is not None
                counts[cell.status] += 1
                if cell.citations:
                    cited += 1
                    owners = {
                        (await client.get_chunk(c.chunk_id)).document_id for c in cell.citations
                    }
                    own += owners == {document_id}
        await X.delete_table(client, table.id)
    cells = sum(counts.values())
    return {**counts, "cited": cited, "own": own, "rate": cells / (seconds / 60)}


def run_api(library: Path, modes: list[str]) -> bool:
    print(
        "\n| API, in process | grounded | low confidence | not found | cells citing only their own document | cells/min |"
    )
    print("|---|---|---|---|---|---|")
    ok = True
    for mode in modes:
        stub = make_stub() if mode != "search" else None
        if stub is not None:
            stub.__enter__()
        try:
            config = write_config(library, stub.base_url if stub is not None else None)
            s = asyncio.run(api_fill(library, mode, config))
        finally:
            if stub is not None:
                stub.__exit__(None, None, None)
        print(
            f"| {mode} | {s['grounded']} | {s['low_confidence']} | {s['not_found']} | "
            f"{s['own']}/{s['cited']} | {s['rate']:.1f} |",
            flush=True,
        )
        ok = ok and s["own"] == s["cited"]
    write_config(library, None)
    return ok


# --- resume ---------------------------------------------------------------------------------


async def stored_cells(library: Path, table: str) -> dict[tuple[str, str], tuple[str, str]]:
    from haiku.rag import extraction as X
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config

    config = load_config(library / "haiku.rag.yaml")
    async with HaikuRAG(library / "library.lancedb", config, read_only=True) as client:
        loaded = await X.load_table(client, table)
        return {
            (d, c): (cell.updated_at, cell.value)
            for d in loaded.document_ids for c in [col.id for col in loaded.columns]
            if (cell := loaded.cell(d, c)) is not None
        }  # fmt: skip


async def drop_table(library: Path, table: str) -> None:
    from haiku.rag import extraction as X
    from haiku.rag.client import HaikuRAG
    from haiku.rag.config import load_config
    from haiku.rag.extraction.errors import TableNotFoundError

    config = load_config(library / "haiku.rag.yaml")
    async with HaikuRAG(library / "library.lancedb", config) as client:
        try:
            await X.delete_table(client, table)
        except TableNotFoundError:
            pass


def interrupted_run(
    library: Path, table: str, kill: signal.Signals | None, after: int
) -> tuple[int, int, int]:
    """One ``extract --table`` run in tools mode, sent ``kill`` once the model has answered
    ``after`` cells (None: run to the end); (exit code, answers the model gave, seconds)."""
    reached = threading.Event()
    stub = make_stub(lambda n: reached.set() if n >= after else None)
    type(stub).answers = 0
    with stub:
        config = write_config(library, stub.base_url)
        started = time.perf_counter()
        process = subprocess.Popen(
            command(library, config, "tools", "--table", table, "--json"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(),
        )  # fmt: skip
        if kill is not None:
            while process.poll() is None and not reached.wait(0.2):
                pass
            if process.poll() is None:
                process.send_signal(kill)
        _, err = process.communicate()
        seconds = time.perf_counter() - started
    if kill is not None:
        last = [line for line in err.strip().splitlines() if line.strip()][-1:] or ["(nothing)"]
        print(
            f"  resume: after {kill.name} the command's last line on stderr: {last[0][:160]!r}",
            flush=True,
        )
    if kill is None and process.returncode != 0:
        raise SystemExit(f"resume run: exit {process.returncode}\n{err[-3000:]}")
    return process.returncode, type(stub).answers, round(seconds)


def resume_check(library: Path, total: int) -> bool:
    table = "eval-extract resume"
    asyncio.run(drop_table(library, table))
    ok = True
    kept: dict[tuple[str, str], tuple[str, str]] = {}
    for kill, after in ((signal.SIGINT, 5), (signal.SIGTERM, 12), (None, 0)):
        code, answered, seconds = interrupted_run(library, table, kill, after)
        stored = asyncio.run(stored_cells(library, table))
        lost = [k for k, v in kept.items() if stored.get(k) != v]
        new = len(stored) - len(kept)
        label = kill.name if kill is not None else "to the end"
        print(
            f"  resume: {label}: exit {code} after {seconds} s; model answered {answered} cells, "
            f"{len(stored)}/{total} stored ({new} new), earlier cells changed or lost: {len(lost)}",
            flush=True,
        )
        if kill is not None and len(stored) == total:
            print(
                "  resume: the kill came after the last cell: nothing was interrupted", flush=True
            )
            ok = False
        ok = ok and not lost and (kill is not None or len(stored) == total) and answered <= new + 1
        kept = stored
    asyncio.run(drop_table(library, table))
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--count", type=int, default=12, help="how many PDFs (rows)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--modes", default="search,tools,fallback")
    parser.add_argument(
        "--resume", action="store_true", help="also kill a tools-mode fill twice and continue it"
    )
    parser.add_argument(
        "--show", type=int, default=3, help="sample cells shown per column and mode"
    )
    parser.add_argument(
        "--api",
        action="store_true",
        help="also fill the table in process through haiku.rag.extraction",
    )
    parser.add_argument("--library", default=str(REPO.parent / "cache" / "eval-extract-real"))
    parser.add_argument("--records", default=None)
    args = parser.parse_args()

    files = data_dir(args.data) / "pdfs_realworld" / "files"
    if not files.is_dir():
        print(f"skipped: no real-world PDFs in {files}")
        return 0
    pdfs = choose(files, args.count)
    if len(pdfs) < 2:
        print(f"skipped: too few PDFs with a text layer in {files}")
        return 0
    library = Path(args.library)
    library.mkdir(parents=True, exist_ok=True)
    write_config(library, None)
    print(f"{len(pdfs)} PDFs: {', '.join(p.name for p in pdfs)}", flush=True)
    names = asyncio.run(prepare(library, pdfs))
    total = len(names) * len(COLUMNS)
    sink = open(args.records, "w") if args.records else None  # noqa: SIM115 - written as we go
    results: dict[str, dict[str, Any]] = {}
    for mode in [m for m in args.modes.split(",") if m]:
        results[mode] = run_mode(library, mode, args.runs, sink)
    if sink is not None:
        sink.close()
    chunk_ids = {
        c
        for r in results.values()
        for row in r["data"]["rows"]
        for cell in row["cells"].values()
        if cell
        for c in cell["chunk_ids"]
    }
    chunk_ids |= {
        c
        for r in results.values()
        for shown in r["data"].get("_model", {}).get("search_returns", [])
        for c in shown
    }
    owners = asyncio.run(chunk_documents(library, chunk_ids))
    print()
    print(
        f"{len(names)} PDFs x {len(COLUMNS)} columns = {total} cells per fill; load: {os.getloadavg()}"
    )
    print(
        "| mode | grounded | low confidence | not found | cells citing only their own document | cells/min (median) | runs |"
    )
    print("|---|---|---|---|---|---|---|")
    for mode, result in results.items():
        s = summarise(result["data"], owners)
        share = (
            f"{s['own']}/{s['cited']} ({100 * s['own'] / s['cited']:.0f} %)"
            if s["cited"]
            else "0/0"
        )
        print(
            f"| {mode} | {s['grounded']} | {s['low_confidence']} | {s['not_found']} | {share} | "
            f"{statistics.median(result['rates']):.1f} | {', '.join(f'{r:.1f}' for r in result['rates'])} |"
        )
    for mode, result in results.items():
        model = result["data"].get("_model")
        if model:
            returns = model["search_returns"]
            single = sum(1 for shown in returns if len({owners[c] for c in shown}) <= 1)
            print(
                f"  {mode}: the model got {model['requests']} requests ({model['with_tools']} offering tools); "
                f"{len(returns)} search returns, {single} of them passages of one document only"
            )
    for mode, result in results.items():
        print(f"\n  samples, {mode}:")
        show(result["data"], args.show)
    ok = all(
        summarise(r["data"], owners)["own"] == summarise(r["data"], owners)["cited"]
        for r in results.values()
    )
    ok = ok and all(
        len({owners[c] for c in shown}) <= 1
        for r in results.values()
        for shown in r["data"].get("_model", {}).get("search_returns", [])
    )
    if args.api:
        ok = run_api(library, [m for m in args.modes.split(",") if m]) and ok
    if args.resume:
        print()
        ok = resume_check(library, total) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
