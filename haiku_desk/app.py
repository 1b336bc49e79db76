"""Entry point of the ``haiku-desk`` command.

Only Qt and the window's own modules load before the window is shown; the library's heavy
parts (LanceDB, PyMuPDF, the embedder, Pydantic AI) load on first use, and the store opens in
a worker thread once the window is up.
"""

from __future__ import annotations

import argparse
import sys

from haiku_desk import __version__


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="haiku-desk", description="Desktop research assistant")
    parser.add_argument("--version", action="version", version=f"haiku-desk {__version__}")
    parser.add_argument("--db", help="library location (default: the haiku.rag data dir)")
    parser.add_argument("paths", nargs="*", help="files or folders to add to the library")
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="offscreen smoke test in a temporary library: ingest, search, render, answer; exit 0 on success",
    )
    # For start-up benchmarks: print "shown" once the window is painted, then quit.
    parser.add_argument("--quit-after-shown", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.self_test:
        from haiku_desk.self_test import run_self_test

        return run_self_test()

    # Settings before PySide6: once PySide6 is imported, shiboken reads the source of every
    # module imported after it (looking for ``from __feature__ import``), ~0.2 s over pydantic.
    from haiku.rag.config import load_config

    config = load_config()

    import asyncio

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from haiku_desk.bridge import install_event_loop

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("haiku-desk")
    app.setApplicationName("haiku-desk")
    app.setApplicationDisplayName("haiku-desk")
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("haiku-desk")
    _set_icon(app)
    from haiku_desk.views.theme import apply_system_theme

    apply_system_theme(app)
    loop = install_event_loop(app)

    from haiku_desk.services import create_services
    from haiku_desk.views.main_window import MainWindow

    services = create_services(args.db, config)
    window = MainWindow(services)
    window.show()

    def after_first_paint() -> None:
        if args.quit_after_shown:
            print("shown", flush=True)
            app.quit()
            return
        services.library.start()
        if args.paths:
            services.library.add_paths(args.paths)

    QTimer.singleShot(0, after_first_paint)

    quit_requested = asyncio.Event()
    app.aboutToQuit.connect(quit_requested.set)
    try:
        with loop:
            loop.run_until_complete(quit_requested.wait())
    finally:
        services.library.close()
        services.pages.close()
    return 0


def _set_icon(app) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    from PySide6.QtGui import QIcon

    here = Path(__file__).resolve().parent
    # installed from the wheel: inside the package; from a clone or the bundle: beside it
    for resources in (here / "resources", here.parent / "resources"):
        icon = resources / "icons" / "haiku-desk.svg"
        if icon.is_file():
            app.setWindowIcon(QIcon(str(icon)))
            return


if __name__ == "__main__":
    sys.exit(main())
