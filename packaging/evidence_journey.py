"""Evidence as a new user sees it, driven through the real window (issues 29 and 30).

    .venv/bin/python packaging/evidence_journey.py [--out /tmp/evidence] [--display :47]
        [--otsl 2305.03393v1-pg9.pdf] [--rotated ocr_test_rotated_90.pdf]
        [--gguf SmolLM2.gguf --llm-python /work/cache/llm-venv/bin/python] [--keep]

The same machinery as ``packaging/user_journey.py`` (imported, not copied): Xvfb + openbox on
``--display``, ``haiku-desk`` as its own process in a temporary data dir, keys and clicks from
``xdotool``, whole-screen shots (``import -window root``). The model is a scripted
OpenAI-compatible server on 127.0.0.1 whose script is per question: it calls ``rag_search``,
logs the tool return it was given (``tool-returns.jsonl`` beside the shots: exactly what a model
would read), cites the passage that matches a pattern with ``rag_cite``, then writes an answer
(quoting that passage, or a fixed text for the support-badge checks).

The library: real PDFs from ``../shared/data/pdfs_realworld`` (``HAIKU_SHARED_DATA``) with tables
and vector charts; a French scan made by rasterising page 1 of the real French paper
``unstructured__fr_olap.pdf`` (image only, 150 dpi) and the same scan turned 90°; optional extra
real files given on the command line (``--otsl``: the one-page arXiv excerpt with the OTSL/HTML
table, docling's ``tests/data/pdf/sources/2305.03393v1-pg9.pdf``; ``--rotated``: docling's
``tests/data/ocr/sources/ocr_test_rotated_90.pdf``).

Steps (each shot is named ``evidence-NN-*.png``):

1. tables: the OTSL question; the answer quotes the passage it was given; its citation opened;
   other table questions (a ruled table, a wide table), each citation opened;
2. charts: a question about a vector chart (DPR's top-k accuracy figure), citation opened;
3. French scan: its citation's text (accents) and the turned page's reading order;
4. page labels: a citation in a 14-page paper names the cited chunk's page(s);
5. support badges with scripted answers: supported, partly supported, cited but unsupported;
6. with ``--gguf``: a real small model served by xllamacpp, set up in Settings › Models from the
   keyboard as an OpenAI-compatible server that cannot call tools, 2 questions;
7. Ctrl+Q leaves no process; relaunch shows the library; 1024×640.

Prints what it saw (tool returns, badge texts are in the shots) and exits 0 when every step ran;
what the shots show is for a person to judge: look at each.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent / "tests")]

from openai_stub_server import StubOpenAI, _call, _text, _tool_name_of  # type: ignore[import-not-found]  # noqa: E402
from user_journey import (  # noqa: E402
    REPO_ROOT,
    Journey,
    JourneyError,
    XSession,
    chip_left_of,
    shared_data,
    wait_for,
)

BADGE_COLOURS = {
    "green": (0x2E, 0x7D, 0x32),
    "orange": (0xB2, 0x6A, 0x00),
    "red": (0xC6, 0x28, 0x28),
    "blue": (0x15, 0x65, 0xC0),
}
RESULT = re.compile(r"^\[([0-9a-f]{32})\] \[rank \d+ of \d+\]$", re.M)
PASSAGE = re.compile(r"^Passage \[([0-9a-f]{32})\]", re.M)


@dataclass
class Plan:
    """What the scripted model does for one question."""

    question: str
    key: str = ""  # the part of the question that identifies it (typing may drop a letter)
    cite: str = ""  # a regex: the first passage it matches is cited (else the first passage)
    answer: str = ""  # fixed text; empty: quote the cited passage
    log: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False


def passages_of(search_return: str) -> list[tuple[str, str]]:
    """(chunk id, text) of every passage a rag_search return shows, in order."""
    found: list[tuple[str, str]] = []
    current: str | None = None
    lines: list[str] = []
    for line in search_return.split("\n"):
        header = RESULT.match(line) or PASSAGE.match(line)
        if header:
            if current and lines:
                found.append((current, "\n".join(lines)))
            current, lines = header.group(1), []
        elif line.startswith("> ") or line == ">":
            lines.append(line[2:])
    if current and lines:
        found.append((current, "\n".join(lines)))
    return found


class ScriptedModel(StubOpenAI):
    """The stub server with a script per question (tools mode), logging every tool return."""

    def __init__(self, log_path: Path) -> None:
        super().__init__()
        self.plans: dict[str, Plan] = {}
        self.log_path = log_path

    def plan(self, plan: Plan) -> Plan:
        self.plans[plan.question] = plan
        return plan

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        question = next(_text(m["content"]) for m in reversed(messages) if m["role"] == "user")
        plan = next((p for p in self.plans.values() if (p.key or p.question) in question), None)
        tools = {t["function"]["name"] for t in body.get("tools", [])}
        if plan is None or "rag_search" not in tools and "load_capability" not in tools:
            return super().reply(body)
        last = messages[-1]
        if last["role"] == "tool":
            called = _tool_name_of(messages, last["tool_call_id"])
            content = _text(last["content"])
            entry = {"question": plan.question, "tool": called, "return": content}
            plan.log.append(entry)
            with self.log_path.open("a") as log:
                log.write(json.dumps(entry) + "\n")
            if called == "rag_search":
                passages = passages_of(content)
                pattern = re.compile(plan.cite, re.M) if plan.cite else None
                chosen = next((p for p in passages if pattern and pattern.search(p[1])), passages[0] if passages else None)
                plan.cited = chosen  # type: ignore[attr-defined]
                return _call("rag_cite", {"chunk_ids": [chosen[0]] if chosen else []})
            if called == "rag_cite":
                plan.done = True
                chosen = getattr(plan, "cited", None)
                if plan.answer:  # {n1}: the first decimal figure of the cited passage
                    figures = re.findall(r"\b\d\.\d{3}\b", chosen[1]) if chosen else []
                    return {"content": plan.answer.replace("{n1}", figures[0] if figures else "0.5")}
                quoted = "\n".join(f"> {line}" for line in (chosen[1] if chosen else "nothing").split("\n")[:24])
                return {"content": f"The passage I was given reads:\n\n{quoted}"}
        return super().reply(body)


class EvidenceJourney(Journey):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        if args.reuse:  # a library an earlier run kept (--keep): no second ingest
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = Path(args.reuse)
            self.data_dir, self.db = self.tmp / "data", self.tmp / "library.lancedb"
            self.marker = f"HAIKU_JOURNEY={self.tmp.name}"
        self.step_no = 0
        self.window_id = ""

    # --- the library ------------------------------------------------------------------------

    def pdfs(self) -> list[Path]:
        files = shared_data() / "pdfs_realworld" / "files"
        chosen = [
            files / name
            for name in (
                "unstructured__multi-column.pdf",  # DPR: a vector line chart (Figure 1), tables
                "pdfjs__tracemonkey.pdf",  # 14 pages, vector bar charts
                "pymupdf__test-styled-table.pdf",  # a ruled, styled table
                "pdfplumber__nics-background-checks-2015-11.pdf",  # a wide table
            )
            if (files / name).is_file()
        ]
        folder = self.tmp / "pdfs"
        folder.mkdir(exist_ok=True)
        french = files / "unstructured__fr_olap.pdf"
        if french.is_file():
            chosen += self.french_scans(french, folder)
        for extra in (self.args.otsl, self.args.rotated):
            if extra and Path(extra).is_file():
                chosen.append(Path(extra))
        if not chosen:
            raise JourneyError("no real PDFs: set HAIKU_SHARED_DATA")
        return chosen

    @staticmethod
    def french_scans(source: Path, folder: Path) -> list[Path]:
        """Page 1 of a real French paper as an image-only scan, upright and turned 90°."""
        import pymupdf

        with pymupdf.open(source) as doc:
            pix = doc[0].get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
            rect = doc[0].rect
        made = []
        for name, turn in (("scan-fr-olap.pdf", 0), ("scan-fr-olap-turned.pdf", 90)):
            out = pymupdf.open()
            page = out.new_page(width=rect.height if turn else rect.width, height=rect.width if turn else rect.height)
            page.insert_image(page.rect, pixmap=pix, rotate=turn)
            out.save(folder / name)
            out.close()
            made.append(folder / name)
        return made

    # --- helpers ------------------------------------------------------------------------------

    def snap(self, x: XSession, what: str) -> Path:
        self.step_no += 1
        self.shot(x, f"evidence-{self.step_no:02d}-{what}.png")
        return self.shots[-1]

    def ask(self, x: XSession, model: ScriptedModel | None, plan: Plan | None, question: str, timeout: float = 180.0) -> None:
        x.xdotool("windowactivate", "--sync", self.window_id)
        x.key("ctrl+n")
        x.type(question)
        x.key("ctrl+Return")
        if plan is not None:
            try:
                wait_for(lambda: plan.done, f"the scripted answer to {question!r}", timeout=timeout)
            except JourneyError as exc:
                print(f"  NO SCRIPTED ANSWER: {exc}", flush=True)
            else:  # the answer is finished when its badge shows (checked, cited, saved)
                try:
                    wait_for(lambda: find_badge(x.shot(self.tmp / "poll.png")) is not None, "the badge", timeout=90.0, every=2.0)
                except JourneyError as exc:
                    print(f"  NO BADGE: {exc}", flush=True)
        time.sleep(2.0)

    def open_first_chip(self, x: XSession, png: Path) -> bool:
        """Click the chip left of the badge (any verdict's colour), in the chat pane only."""
        badge = find_badge(png)
        if badge is None:
            print("  no badge found on screen", flush=True)
            return False
        x.click(*chip_left_of(png, badge))
        time.sleep(3.0)
        return True

    def scripted(self, x: XSession, model: ScriptedModel, tag: str, question: str, cite: str = "", answer: str = "", key: str = "", open_chip: bool = True) -> Plan:
        plan = model.plan(Plan(question=question, key=key or question, cite=cite, answer=answer))
        self.ask(x, model, plan, question)
        png = self.snap(x, f"{tag}-answer")
        search = next((e["return"] for e in plan.log if e["tool"] == "rag_search"), "")
        chosen = getattr(plan, "cited", None)
        print(f"  [{tag}] cited passage {chosen[0] if chosen else None}:\n    " + (chosen[1][:600].replace("\n", "\n    ") if chosen else "-"), flush=True)
        print(f"  [{tag}] search return had {len(passages_of(search))} passages, {len(search)} chars", flush=True)
        if open_chip and self.open_first_chip(x, png):
            self.snap(x, f"{tag}-citation")
        return plan

    # --- the run ------------------------------------------------------------------------------

    def run(self) -> int:  # noqa: C901 - one journey, step by step
        step = "setup"
        llm = None
        try:
            with ScriptedModel(self.out / "tool-returns.jsonl") as model, XSession(self.args.display) as x:
                (self.out / "tool-returns.jsonl").write_text("")
                self.configure_model(model.base_url)
                pdfs = self.pdfs()
                print("library:", *[p.name for p in pdfs], sep="\n  ", flush=True)

                step = "0 ingest"
                self.launch(x, *([] if self.args.reuse else pdfs))
                self.window_id = x.window()
                time.sleep(3.0)
                self.snap(x, "ingesting")
                wait_for(lambda: len(self.documents()) >= len(pdfs), "every file in the library", timeout=1500.0, every=5.0)
                time.sleep(5.0)
                self.snap(x, "library")

                steps = set(self.args.steps.split(","))
                if self.args.otsl and "tables" in steps:
                    step = "1 tables: OTSL"
                    self.scripted(x, model, "otsl", "How much faster is inference with OTSL than with HTML?", cite=r"2\.73|5\.39|Inference time")
                step = "1b tables: others"
                if "tables" in steps:
                    self.scripted(x, model, "nics", "How many handgun background checks were there in Texas?", cite=r"Texas")
                    self.scripted(x, model, "styled", "What does the styled table list?", cite=r"\|")

                step = "2 charts"
                if "charts" in steps:
                    self.scripted(x, model, "chart", "What does Figure 1 show about retriever top-k accuracy?", cite=r"^Figure 1:")
                    self.scripted(x, model, "chart2", "What does Figure 12 show about the fraction of time spent on major VM activities?", cite=r"Figure 12")

                step = "3 French scan"
                if "french" in steps:
                    self.scripted(x, model, "french", "Quelle méthode proposent les auteurs pour résumer les logs OLAP ?", cite=r"[Rr]..?sum", key="proposent les auteurs")
                    self.scripted(x, model, "french-turned", "Qui sont les auteurs de l'article de Blois sur les logs OLAP ?", cite=r"Rabelais|Blois|Aligon", key="les auteurs de l")
                if self.args.rotated and "french" in steps:
                    self.scripted(x, model, "rotated", "What does Docling bundle?", cite=r"Docling")

                step = "4 page labels"
                if "pages" in steps:
                    self.scripted(x, model, "pages", "What does a trace tree record about loops?", cite=r"trace")

                step = "5 support badges"
                # the cited passage's first 3-decimal score is quoted ({n1}), so the verdicts do
                # not depend on which passage search ranks first
                cite = r"\b0\.9\d\d\b"
                for tag, question, answer in (
                    ("supported", "Which score does the OTSL table report first?", "The table reports {n1} for OTSL."),
                    ("partly", "Which two scores does the OTSL table report?",
                     "The table reports {n1} for OTSL. For HTML it reports 9.12 seconds."),
                    ("unsupported", "Which score does the OTSL table report last?", "The table reports 7.64 seconds for OTSL."),
                ):
                    if "support" in steps:
                        self.scripted(x, model, tag, question, cite=cite, answer=answer)
                if self.args.gguf and "real" in steps:
                    step = "6 a real small model"
                    llm = self.real_model(x)

                step = "7 laptop size, quit, relaunch"
                x.xdotool("windowsize", "--sync", self.window_id, "1024", "640")
                time.sleep(2.0)
                self.snap(x, "1024x640")
                seconds = self.quit(x, self.window_id)
                print(f"  no app process left {seconds:.1f} s after Ctrl+Q", flush=True)
                self.launch(x)
                self.window_id = x.window()
                time.sleep(6.0)
                self.snap(x, "relaunched")
                seconds = self.quit(x, self.window_id)
                print(f"  no app process left {seconds:.1f} s after the second Ctrl+Q", flush=True)
        except JourneyError as exc:
            print(f"evidence journey failed at step {step}: {exc}", file=sys.stderr)
            try:
                self.snap(x, "failure")  # type: ignore[possibly-undefined]
            except Exception:  # noqa: BLE001 - best effort
                pass
            self._kill_leftovers()
            return 1
        finally:
            for server in (llm, getattr(self, "llm", None)):
                if server is not None:
                    server.kill()
            if not self.args.keep:
                shutil.rmtree(self.tmp, ignore_errors=True)
            else:
                print(f"kept {self.tmp}")
        print(f"evidence journey ran: {len(self.shots)} screenshots in {self.out}; look at each")
        return 0

    def real_model(self, x: XSession) -> subprocess.Popen[bytes]:
        """Serve the GGUF, set it in Settings › Models from the keyboard, ask two questions."""
        sys.path.insert(0, str(REPO_ROOT / "tests" / "bench"))
        from bench_answers import serve_gguf  # type: ignore[import-not-found]

        server, base_url = serve_gguf(self.args.llm_python, Path(self.args.gguf), self.args.context, 1)
        self.llm = server  # killed at the end even when a step fails
        print(f"  real model served at {base_url}", flush=True)
        x.xdotool("windowactivate", "--sync", self.window_id)
        x.key("ctrl+comma")
        time.sleep(2.0)
        self.snap(x, "models-dialog")
        dialog = x.window("Settings", timeout=20.0)
        x.xdotool("windowactivate", "--sync", dialog)
        self.fill_models_dialog(x, base_url)
        self.snap(x, "models-dialog-filled")
        x.key("Return")
        time.sleep(2.0)
        for tag, question in (
            ("llm-otsl", "What is the inference time of OTSL with 6 encoder layers?"),
            ("llm-texas", "How many handgun background checks were there in Texas?"),
        ):
            self.ask(x, None, None, question)
            wait_for(lambda: self._answer_done(x), f"the real model's answer to {question!r}", timeout=900.0, every=10.0)
            time.sleep(3.0)
            png = self.snap(x, f"{tag}-answer")
            if self.open_first_chip(x, png):
                self.snap(x, f"{tag}-citation")
        return server

    def fill_models_dialog(self, x: XSession, base_url: str) -> None:
        """The provider combo has the focus when the dialog opens (it is already the
        OpenAI-compatible endpoint the stub used); Tab order (settings_dialog.py): provider,
        server URL, model, Find models, API key, "cannot call tools"."""
        x.key("Tab")
        x.key("ctrl+a")
        x.type(base_url)
        x.key("Tab")
        x.key("ctrl+a")
        x.type("smollm2")
        x.key("Tab", "Tab", "Tab")
        x.key("space")
        time.sleep(0.5)

    def _answer_done(self, x: XSession) -> bool:
        png = x.shot(self.tmp / "poll.png")
        return find_badge(png) is not None


def find_badge(png: Path) -> tuple[int, int] | None:
    """The badge: the lowest row in the chat pane's columns holding a badge colour."""
    import pymupdf

    pix = pymupdf.Pixmap(str(png))
    if pix.alpha:
        pix = pymupdf.Pixmap(pix, 0)
    samples, n, width = pix.samples, pix.n, pix.width
    best: tuple[int, int] | None = None
    x_max = int(width * 0.72)  # the citation panel (right) draws highlight colours too
    for y in range(120, pix.height - 60):
        row = y * width * n
        for rgb in BADGE_COLOURS.values():
            r0, g0, b0 = rgb
            xs = [
                x
                for x in range(300, x_max)
                if abs(samples[row + x * n] - r0) <= 24
                and abs(samples[row + x * n + 1] - g0) <= 24
                and abs(samples[row + x * n + 2] - b0) <= 24
            ]
            if len(xs) >= 6:
                return xs[0], y  # the first (top) row of the first badge
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="/tmp/evidence-journey")
    parser.add_argument("--display", default=":47")
    parser.add_argument("--otsl", help="docling's 2305.03393v1-pg9.pdf (the OTSL/HTML table page)")
    parser.add_argument("--rotated", help="docling's ocr_test_rotated_90.pdf (a page turned 90°)")
    parser.add_argument("--gguf", help="a small instruct GGUF to serve with xllamacpp (step 6)")
    parser.add_argument("--llm-python", default="/work/cache/llm-venv/bin/python")
    parser.add_argument("--context", type=int, default=8192)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--steps", default="tables,charts,french,pages,support,real",
                        help="which steps to run (the quit and relaunch always run)")
    parser.add_argument("--reuse", help="the temporary folder of an earlier --keep run: its library, no new ingest")
    return EvidenceJourney(parser.parse_args(argv)).run()


if __name__ == "__main__":
    sys.exit(main())
