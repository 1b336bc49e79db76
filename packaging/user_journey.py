"""A new user's first session, driven through the real window on a real X server.

    .venv/bin/python packaging/user_journey.py [--out docs/screenshots] [--display :20]
        [--pdfs DIR] [--keep]

Starts ``Xvfb`` and the ``openbox`` window manager on ``--display``, a scripted
OpenAI-compatible model server on 127.0.0.1 (``tests/openai_stub_server.py``: it streams and
calls ``rag_search`` / ``rag_cite`` like a tool-calling model), and ``haiku-desk`` as its own
process in a temporary data dir and library, with real PDFs the project did not generate
(``../shared/data/pdfs_realworld``, or ``--pdfs``; generated papers when neither exists).
Then, as a person would, with ``xdotool`` keys and clicks only:

1. starts the app with files on its command line, shot while ingesting;
2. waits until every file is in the library, shot of the library;
3. asks a question from the keyboard, shot of the streamed answer with its citations;
4. clicks a citation chip (found on screen beside the Supported badge's fill colour), shot of
   the cited page;
5. opens a new chat (Ctrl+N: the citation panel follows it) and ticks a toggle with Shift+Tab
   and Space, shot; resizes the window to 1024×640, shot;
6. quits with Ctrl+Q and checks that no process of the app is left;
7. relaunches on the same library, shot of the documents shown at once;
8. quits again, resizes nothing, leaves the screenshots in ``--out``.

Every screenshot is the whole X screen (``import -window root``): what a person sees.
Exits 0 when every step passed, else 1 naming the step that failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))

SCREEN = (1440, 900)
DEFAULT_PDFS = (
    "pdfjs__tracemonkey.pdf",
    "unstructured__multi-column.pdf",
    "pymupdf__2201.00069.pdf",
    "ocrmypdf__linn.pdf",  # a scan: OCR or a failed row that stays visible
)
QUESTION = "What does a trace tree record about loops?"
STEP_TIMEOUT = 300.0
CHIP_GAP = 20  # px from the badge pill's left edge to the middle of the chip left of it
CHIP_HALF_HEIGHT = 7  # px from a pill's top row to its middle


class JourneyError(Exception):
    pass


def shared_data() -> Path:
    return Path(os.environ.get("HAIKU_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


class XSession:
    """Xvfb + openbox on one display, torn down on exit."""

    def __init__(self, display: str, screen: tuple[int, int] = SCREEN) -> None:
        self.display = display
        self.screen = screen
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> XSession:
        for tool in ("Xvfb", "openbox", "xdotool", "import"):
            if shutil.which(tool) is None:
                raise JourneyError(
                    f"{tool} is missing: apt-get install -y xvfb openbox xdotool imagemagick"
                )
        width, height = self.screen
        self.procs.append(
            subprocess.Popen(
                ["Xvfb", self.display, "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        deadline = time.monotonic() + 20
        while subprocess.run(["xdpyinfo", "-display", self.display], capture_output=True).returncode:
            if time.monotonic() > deadline:
                raise JourneyError(f"Xvfb on {self.display} did not answer")
            time.sleep(0.2)
        self.procs.append(
            subprocess.Popen(["openbox"], env=self.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )
        time.sleep(1.0)
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "DISPLAY": self.display, **extra}

    def xdotool(self, *args: str) -> str:
        result = subprocess.run(["xdotool", *args], env=self.env(), capture_output=True, text=True)
        return result.stdout.strip()

    def key(self, *keys: str) -> None:
        self.xdotool("key", "--clearmodifiers", *keys)
        time.sleep(0.3)

    def type(self, text: str) -> None:
        self.xdotool("type", "--delay", "20", text)

    def click(self, x: int, y: int) -> None:
        self.xdotool("mousemove", str(x), str(y), "click", "1")
        time.sleep(0.3)

    def shot(self, path: Path) -> Path:
        subprocess.run(["import", "-window", "root", str(path)], env=self.env(), check=True)
        return path

    def window(self, name: str = "haiku-desk", timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ids = self.xdotool("search", "--onlyvisible", "--name", name).split()
            if ids:
                return ids[-1]
            time.sleep(0.3)
        raise JourneyError(f"no visible window named {name!r} within {timeout:.0f} s")


def app_processes(marker: str) -> list[int]:
    """Pids whose environment carries ``marker`` (the app and every child it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ:
            found.append(int(entry.name))
    return found


def find_colour(
    png: Path, rgb: tuple[int, int, int], tolerance: int = 24, left: int = 0
) -> tuple[int, int] | None:
    """The leftmost pixel of ``rgb`` in the first screen row holding several of them (right
    of ``left``), or None."""
    import pymupdf

    pix = pymupdf.Pixmap(str(png))
    if pix.alpha:
        pix = pymupdf.Pixmap(pix, 0)
    samples, n, width = pix.samples, pix.n, pix.width
    r0, g0, b0 = rgb
    for y in range(pix.height):
        row = y * width * n
        xs = [
            x
            for x in range(left, width)
            if abs(samples[row + x * n] - r0) <= tolerance
            and abs(samples[row + x * n + 1] - g0) <= tolerance
            and abs(samples[row + x * n + 2] - b0) <= tolerance
        ]
        if len(xs) >= 6:
            return xs[0], y
    return None


def chip_left_of(png: Path, badge: tuple[int, int]) -> tuple[int, int]:
    """The middle of the citation chip just left of the grounding badge, a pill whose top-left
    fill pixel is ``badge``: the chips are pills too (no border to walk to), CHIP_GAP px left of
    the badge's edge to a chip's middle, half a pill's height down."""
    return badge[0] - CHIP_GAP, badge[1] + CHIP_HALF_HEIGHT


def wait_for(predicate, what: str, timeout: float = STEP_TIMEOUT, every: float = 1.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise JourneyError(f"timed out after {timeout:.0f} s waiting for {what}")


class Journey:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix="haiku-journey-"))
        self.data_dir = self.tmp / "data"
        self.db = self.tmp / "library.lancedb"
        self.marker = f"HAIKU_JOURNEY={self.tmp.name}"
        self.shots: list[Path] = []
        self.app: subprocess.Popen[bytes] | None = None

    def pdfs(self) -> list[Path]:
        if self.args.pdfs:
            return sorted(Path(self.args.pdfs).glob("*.pdf"))[:6]
        files = shared_data() / "pdfs_realworld" / "files"
        chosen = [files / name for name in DEFAULT_PDFS if (files / name).is_file()]
        if chosen:
            return chosen
        from pdf_factory import make_report_pdf, make_two_column_pdf  # type: ignore[import-not-found]

        make_report_pdf(self.tmp / "report.pdf")
        make_two_column_pdf(self.tmp / "two-column.pdf")
        return [self.tmp / "report.pdf", self.tmp / "two-column.pdf"]

    def configure_scheme(self) -> None:
        """View › Appearance's choice, as the app keeps it (QSettings: haiku-desk.conf)."""
        if self.args.scheme == "system":
            return
        conf = self.tmp / "config" / "haiku-desk" / "haiku-desk.conf"
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text(f"[appearance]\nscheme={self.args.scheme}\n", encoding="utf-8")

    def configure_model(self, base_url: str) -> None:
        settings = self.data_dir / "haiku-desk" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(
            json.dumps(
                {
                    "version": 1,
                    "model": {"provider": "openai-compatible", "name": "stub-model", "base_url": base_url},
                }
            )
        )

    def launch(self, x: XSession, *paths: Path) -> None:
        name, value = self.marker.split("=", 1)
        env = x.env(
            QT_QPA_PLATFORM="xcb",
            HAIKU_RAG_STORAGE__DATA_DIR=str(self.data_dir),
            XDG_CONFIG_HOME=str(self.tmp / "config"),
            XDG_DATA_HOME=str(self.tmp / "share"),
            **{name: value},
        )
        log = open(self.tmp / f"app-{len(self.shots)}.log", "wb")  # noqa: SIM115
        self.app = subprocess.Popen(
            [str(Path(sys.executable).with_name("haiku-desk")), "--db", str(self.db), *map(str, paths)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def shot(self, x: XSession, name: str) -> None:
        path = x.shot(self.out / f"{self.args.prefix}{name}")
        self.shots.append(path)
        print(f"  saved {path}", flush=True)

    def documents(self) -> list[dict[str, object]]:
        result = subprocess.run(
            [str(Path(sys.executable).with_name("haiku-rag")), "--db", str(self.db), "--read-only", "list", "--json"],
            capture_output=True,
            text=True,
            env={**os.environ, "HAIKU_RAG_STORAGE__DATA_DIR": str(self.data_dir)},
        )
        if result.returncode:
            return []
        try:
            return list(json.loads(result.stdout))
        except json.JSONDecodeError:
            return []

    def quit(self, x: XSession, window: str) -> float:
        """Ctrl+Q, accept the dialog's default; seconds until no app process is left."""
        x.xdotool("windowactivate", "--sync", window)
        x.key("ctrl+q")
        time.sleep(1.0)
        if x.xdotool("search", "--onlyvisible", "--name", "Quit haiku-desk").split():
            x.key("Return")  # the quit dialog's default: stop the work and quit
        start = time.monotonic()
        wait_for(lambda: not app_processes(self.marker), "every app process to end", timeout=15.0, every=0.2)
        return time.monotonic() - start

    def run(self) -> int:
        from openai_stub_server import StubOpenAI  # type: ignore[import-not-found]

        step = "setup"
        try:
            with StubOpenAI() as model, XSession(self.args.display, self.args.screen) as x:
                self.configure_model(model.base_url)
                self.configure_scheme()
                pdfs = self.pdfs()

                step = "1 start with files"
                self.launch(x, *pdfs)
                window = x.window()
                if self.args.maximize:
                    x.xdotool("windowsize", "--sync", window, "100%", "100%")
                    x.xdotool("windowmove", "--sync", window, "0", "0")
                time.sleep(3.0)
                self.shot(x, "journey-01-ingesting.png")

                step = "2 library"
                wait_for(lambda: len(self.documents()) >= len(pdfs) - 1, "the files to be in the library")
                time.sleep(2.0)
                self.shot(x, "journey-02-library.png")

                step = "3 ask"
                x.xdotool("windowactivate", "--sync", window)
                x.key("ctrl+n")
                x.type(QUESTION)
                x.key("ctrl+Return")
                wait_for(lambda: len(model.requests) >= 3, "the model to answer", timeout=120.0)
                time.sleep(3.0)
                self.shot(x, "journey-03-answer.png")

                step = "4 click a citation"
                # The chips sit just left of the grounding badge (a pill in the ready colours).
                # (right of the library pane, whose "ready" badges are green too)
                badge = find_colour(
                    self.shots[-1], self.args.badge_colour, tolerance=4, left=self.args.screen[0] * 3 // 10
                )
                if badge is None:
                    raise JourneyError("no grounding badge (and so no chip) on screen")
                x.click(*chip_left_of(self.shots[-1], badge))
                time.sleep(2.5)
                self.shot(x, "journey-04-citation.png")

                step = "5 toggle from the keyboard"
                x.key("ctrl+n")  # a new chat: the question box has the focus
                x.key(*["shift+Tab"] * self.args.toggle_tabs)
                x.key("space")
                time.sleep(1.0)
                self.shot(x, "journey-05-toggle.png")

                step = "5b a laptop-sized window"
                x.xdotool("windowsize", "--sync", window, "1024", "640")
                time.sleep(1.5)
                self.shot(x, "journey-05b-1024x640.png")

                step = "6 quit"
                seconds = self.quit(x, window)
                print(f"  no app process left {seconds:.1f} s after the quit", flush=True)

                step = "7 relaunch"
                self.launch(x)
                window = x.window()
                time.sleep(1.5)
                self.shot(x, "journey-06-relaunch.png")
                wait_for(lambda: len(self.documents()) >= len(pdfs) - 1, "the relaunched library")
                time.sleep(4.0)
                self.shot(x, "journey-07-relaunched.png")
                seconds = self.quit(x, window)
                print(f"  no app process left {seconds:.1f} s after the second quit", flush=True)
        except JourneyError as exc:
            print(f"user journey failed at step {step}: {exc}", file=sys.stderr)
            self._kill_leftovers()
            return 1
        finally:
            if not self.args.keep:
                shutil.rmtree(self.tmp, ignore_errors=True)
        print(f"user journey passed: {len(self.shots)} screenshots in {self.out}")
        return 0

    def _kill_leftovers(self) -> None:
        for pid in app_processes(self.marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(REPO_ROOT / "docs" / "screenshots"))
    parser.add_argument("--display", default=":20")
    parser.add_argument("--pdfs", help="a folder of PDFs to use instead of ../shared/data")
    parser.add_argument("--keep", action="store_true", help="keep the temporary library and logs")
    parser.add_argument(
        "--screen",
        type=lambda s: tuple(int(v) for v in s.lower().split("x")),
        default=SCREEN,
        help="the X screen's size, WIDTHxHEIGHT (default 1440x900)",
    )
    parser.add_argument(
        "--scheme",
        choices=("system", "light", "dark"),
        default="system",
        help="View › Appearance's choice for the app (default: follow the system)",
    )
    parser.add_argument(
        "--maximize",
        action="store_true",
        help="make the window as large as the screen after it opens (for a 1920x1080 screen)",
    )
    parser.add_argument(
        "--prefix",
        default="",
        help="put before every screenshot's file name (e.g. dark-1920-)",
    )
    parser.add_argument(
        "--toggle-tabs",
        type=int,
        default=5,
        help="Shift+Tab presses from the question box to the Evidence compaction check box",
    )
    parser.add_argument(
        "--badge-colour",
        type=lambda s: tuple(int(s.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4)),
        default=None,
        help="the Supported badge's fill colour (the chips are found on screen beside it; "
        "default: the theme's ready_bg for --scheme)",
    )
    args = parser.parse_args(argv)
    if args.badge_colour is None:
        from haiku_desk.views.theme import TOKENS

        ready = TOKENS["dark" if args.scheme == "dark" else "light"].ready_bg
        args.badge_colour = tuple(int(ready[i : i + 2], 16) for i in (1, 3, 5))
    return Journey(args).run()


if __name__ == "__main__":
    sys.exit(main())
