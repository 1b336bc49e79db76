"""A real small model answering in the real window: which badge each answer gets, on screen.

    .venv/bin/python packaging/small_model_journey.py --gguf model.gguf [--display :41]
        [--out DIR] [--pdfs DIR] [--question "…" …] [--keep]
    .venv/bin/python packaging/small_model_journey.py --base-url http://127.0.0.1:8080/v1 …

Starts ``Xvfb`` + ``openbox`` on ``--display`` and ``haiku-desk`` as its own process in a
temporary data dir and library, with real PDFs the project did not generate
(``../shared/data/pdfs_realworld``; ``--pdfs``). The chat model is either a GGUF file run by the
app's own "Model file (built in)" provider (``--gguf``: llama.cpp in a child process on
127.0.0.1, started on first use, as a new user would choose it in Settings), or any
OpenAI-compatible endpoint (``--base-url``). Then, with ``xdotool`` keys only, it asks each
question in a new chat, waits for the answer to be saved, shoots the whole screen and records
the badge the answer got (the support check's verdict) with the answer's text.

The model is not part of the product: a small instruct GGUF the person running this has
(tests/bench/bench_answers.py names the ones used and their hashes). Nothing is scripted on the
model's side: what it writes, and whether it cites, is the model's own.

Prints one line per question (verdict, citations, answer) and writes ``answers.json`` to
``--out``; exits 0 when every question got a saved answer.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "packaging"))

from user_journey import Journey, JourneyError, XSession, shared_data, wait_for  # noqa: E402

PDFS = (
    "pdfjs__tracemonkey.pdf",
    "pymupdf__2201.00069.pdf",
    "pdfplumber__nics-background-checks-2015-11.pdf",
)
QUESTIONS = (
    "What speedup does TraceMonkey achieve?",
    "How many handgun background checks were there in Kentucky in November 2015?",
    "What is a trace tree?",
    "How many employees does the TraceMonkey team have?",
    "What does the paper 2201.00069 propose?",
    "Which browser does TraceMonkey run in, and in what year was it released?",
)
ANSWER_TIMEOUT = 900.0  # seconds: a small model on two busy cores


class SmallModelJourney(Journey):
    def configure_model(self, base_url: str) -> None:
        settings = self.data_dir / "haiku-desk" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        if self.args.gguf:
            model = {"provider": "model-file", "name": str(Path(self.args.gguf).resolve())}
        else:
            model = {"provider": "openai-compatible", "name": self.args.model, "base_url": base_url,
                     "supports_tools": False}  # fmt: skip
        settings.write_text(json.dumps({"version": 1, "model": model}))

    def pdfs(self) -> list[Path]:
        folder = Path(self.args.pdfs) if self.args.pdfs else shared_data() / "pdfs_realworld" / "files"
        chosen = [folder / name for name in PDFS if (folder / name).is_file()]
        if not chosen:
            chosen = sorted(folder.glob("*.pdf"))[:3]
        if not chosen:
            raise JourneyError(f"no PDFs in {folder}")
        return chosen

    def turns(self) -> list[dict[str, object]]:
        folder = self.db / "haiku-desk" / "conversations"
        turns: list[dict[str, object]] = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                turns.extend(json.loads(path.read_text(encoding="utf-8")).get("turns", []))
            except (OSError, json.JSONDecodeError):
                continue  # being written: read again on the next poll
        return sorted(turns, key=lambda turn: str(turn.get("asked_at", "")))  # the newest last

    def run(self) -> int:
        step = "setup"
        results: list[dict[str, object]] = []
        try:
            with XSession(self.args.display) as x:
                self.configure_model(self.args.base_url or "")
                pdfs = self.pdfs()
                step = "start with files"
                self.launch(x, *pdfs)
                window = x.window()
                wait_for(lambda: len(self.documents()) >= len(pdfs), "the files to be in the library",
                         timeout=900.0)  # fmt: skip
                time.sleep(3.0)
                for number, question in enumerate(self.args.question or QUESTIONS, start=1):
                    step = f"question {number}"
                    before = len(self.turns())
                    x.xdotool("windowactivate", "--sync", window)
                    x.key("ctrl+n")
                    x.type(question)
                    x.key("ctrl+Return")
                    started = time.monotonic()
                    wait_for(lambda b=before: len(self.turns()) > b, "the answer to be saved", timeout=ANSWER_TIMEOUT)
                    seconds = time.monotonic() - started
                    time.sleep(2.0)
                    shot = f"small-model-{number:02d}.png"
                    self.shot(x, shot)
                    turn = self.turns()[-1]
                    support = turn.get("support") or {}
                    result = {
                        "question": question,
                        "answer": turn.get("answer"),
                        "grounding": turn.get("grounding"),
                        "verdict": support.get("verdict") if isinstance(support, dict) else None,
                        "citations": len(turn.get("citations") or []),  # type: ignore[arg-type]
                        "seconds": round(seconds),
                        "screenshot": shot,
                    }
                    results.append(result)
                    print(f"  {number}: {result['verdict']} ({result['citations']} citations, "
                          f"{seconds:.0f} s) {str(result['answer'])[:160]!r}", flush=True)  # fmt: skip
                step = "quit"
                self.quit(x, window)
        except JourneyError as exc:
            print(f"small-model journey failed at step {step}: {exc}", file=sys.stderr)
            self._kill_leftovers()
            return 1
        finally:
            (self.out / "answers.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))
            if not self.args.keep:
                import shutil

                shutil.rmtree(self.tmp, ignore_errors=True)
        print(f"small-model journey passed: {len(results)} answers, screenshots in {self.out}")
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--gguf", help="a GGUF chat model run by the app's built-in provider")
    source.add_argument("--base-url", help="an OpenAI-compatible endpoint (…/v1) on 127.0.0.1")
    parser.add_argument("--model", default="local", help="the model name the endpoint expects")
    parser.add_argument("--out", default="small-model-journey")
    parser.add_argument("--display", default=":41")
    parser.add_argument("--pdfs", help="a folder of PDFs to use instead of ../shared/data")
    parser.add_argument("--question", action="append", help="ask this instead of the default questions")
    parser.add_argument("--keep", action="store_true", help="keep the temporary library and logs")
    return SmallModelJourney(parser.parse_args(argv)).run()


if __name__ == "__main__":
    sys.exit(main())
