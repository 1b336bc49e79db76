"""Entry point of the ``haiku-desk`` command.

Only Qt and the window's own modules load before the window is shown; the library's heavy
parts (LanceDB, PyMuPDF, the embedder, Pydantic AI) load on first use, and the store opens in
a worker thread once the window is up.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, cast

from haiku_desk import __version__


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="haiku-desk", description="Desktop research assistant")
    parser.add_argument("--version", action="version", version=f"haiku-desk {__version__}")
    parser.add_argument("--db", help="library location (default: the last library used, else the haiku.rag data dir)")
    parser.add_argument("paths", nargs="*", help="files or folders to add to the library")
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="offscreen smoke test in a temporary library: ingest, search, render, answer; exit 0 on success",
    )
    parser.add_argument("--debug", action="store_true", help="log everything, to stderr and the log file")
    # For start-up benchmarks: print "shown" once the window is painted, then quit.
    parser.add_argument("--quit-after-shown", action="store_true", help=argparse.SUPPRESS)
    # ... and "listed {timings}" once the library's documents are listed (tests/bench/bench_app.py)
    parser.add_argument("--quit-after-listed", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    import time

    began = time.perf_counter()
    marks: dict[str, float] = {"main": began}  # start-up steps (--quit-after-listed prints them)
    args = _parse(argv)
    if args.self_test:
        from haiku_desk.self_test import run_self_test

        return run_self_test()

    from haiku_desk.platform_check import xcb_problem

    problem = xcb_problem()
    if problem:  # else Qt aborts with a page about plugins
        print(problem, file=sys.stderr)
        return 1

    # Settings before PySide6: once PySide6 is imported, shiboken reads the source of every
    # module imported after it (looking for ``from __feature__ import``), ~0.2 s over pydantic.
    from haiku.rag.config import load_config
    from haiku.rag.errors import ConfigError
    from haiku.rag.logs import configure_logging

    try:
        # a ./haiku.rag.yaml that would redirect API keys is skipped (and said so in the window)
        config = load_config(skip_untrusted=True)
    except ConfigError as exc:
        print(f"haiku-desk: {exc}", file=sys.stderr)
        return 1
    configure_logging("haiku-desk", config.storage.data_dir, debug=args.debug)
    marks["config"] = time.perf_counter()

    import asyncio
    import logging
    import os
    import signal

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from haiku_desk.bridge import install_event_loop

    log = logging.getLogger("haiku_desk")
    app = cast(QApplication, QApplication.instance() or QApplication(sys.argv[:1]))  # Qt types it QCoreApplication
    app.setOrganizationName("haiku-desk")
    app.setApplicationName("haiku-desk")
    app.setApplicationDisplayName("haiku-desk")
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("haiku-desk")
    app.setQuitOnLastWindowClosed(False)  # the window's close starts the shutdown, which quits

    from haiku_desk.services.library_choice import initial_library
    from haiku_desk.single_instance import InstanceServer, hand_over

    db_path = initial_library(args.db, config)
    handover = hand_over(db_path, args.paths)
    if handover.handed_over:
        print(handover.message, flush=True)
        return 0
    if handover.message:
        print(handover.message, file=sys.stderr, flush=True)
    server = InstanceServer(app)
    server.listen(db_path)

    _set_icon(app)
    from haiku_desk.views.theme import apply_theme

    apply_theme(app)  # the scheme chosen in View › Appearance, else the system's
    loop = install_event_loop(app)

    marks["qt"] = time.perf_counter()
    from haiku_desk.services import create_services
    from haiku_desk.views.main_window import MainWindow

    marks["imports"] = time.perf_counter()
    services = create_services(db_path, config)
    marks["services"] = time.perf_counter()
    window = MainWindow(services)
    marks["window"] = time.perf_counter()
    window.quit_flow.manage_shutdown = True
    server.paths_received.connect(services.library.add_paths)
    server.folders_received.connect(lambda folders: _confirm_folders(window, services, folders))
    server.activate_requested.connect(lambda: _bring_to_front(window))
    services.library.library_changed.connect(server.listen)
    if handover.message:
        services.notifications.info(handover.message)
    from haiku.rag.config import is_working_folder_file

    if is_working_folder_file(config.source_file):  # not the user's settings folder: say so
        services.notifications.info(
            f"Settings read from {config.source_file} (the folder haiku-desk was started in)."
        )
    for reason in config.refused:
        from haiku_desk.services.notifications import Level

        services.notifications.post(Level.WARNING, f"Settings file not read: {reason}")
    window.show()

    def after_first_paint() -> None:
        marks["shown"] = time.perf_counter()
        if args.quit_after_shown:
            print("shown", flush=True)
            app.quit()
            return
        if args.quit_after_listed:
            print("shown", flush=True)

            def listed() -> None:
                import json

                steps = {**marks, **services.library.startup_times}
                print("listed " + json.dumps({k: round(v - began, 4) for k, v in steps.items()}), flush=True)
                QTimer.singleShot(0, window.quit_flow.force_quit)  # as at SIGTERM: work kept, nothing asked

            services.library.opened.connect(listed)
        services.library.start()
        if args.paths:
            services.library.add_paths(args.paths)

    QTimer.singleShot(0, after_first_paint)

    quit_requested = asyncio.Event()
    outcome: dict[str, bool] = {}

    def shut_down(stopped: bool) -> None:
        outcome["stopped"] = stopped
        quit_requested.set()

    window.quit_flow.finished.connect(shut_down)
    app.aboutToQuit.connect(quit_requested.set)
    # SIGTERM / SIGINT (a session ending, Ctrl-C in a terminal): quit without asking, work kept.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: QTimer.singleShot(0, window.quit_flow.force_quit))
    try:
        with loop:  # type: ignore[attr-defined]  # qasync's loop is a context manager (stop, close)
            loop.run_until_complete(quit_requested.wait())
    finally:
        log.info("event loop ended")
        if "stopped" not in outcome:
            services.library.close()
            services.pages.close()
        server.close()
    stopped = outcome.get("stopped", True)
    if not stopped:
        # A job did not stop in time (a thread busy in C code): its write is undone by the
        # store's recovery at the next open, and the queue file keeps the job.
        log.warning("exiting with work still stopping; it resumes at the next start")
    log.info("exiting")
    # Everything is saved by now: the store is closed (no write in flight), the work queue,
    # failed files and window state are on disk, the executor's threads have finished. The
    # interpreter's own teardown (freeing LanceDB, ONNX and Qt) takes seconds and would join a
    # thread still busy in C code, so the process ends here.
    stop_model_runtime()  # os._exit skips the runtime's atexit hook
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def stop_model_runtime() -> None:
    """Stop the built-in models' child processes (the chat model and any embedding model file),
    if one was loaded this session. The provider is imported only if something already did
    (a start-up that never used the built-in runtime imports nothing here)."""
    if "haiku.rag.local_models.provider" not in sys.modules:
        return
    from haiku.rag.local_models.provider import stop_all

    try:
        stop_all()
    except Exception:  # quitting goes on; the child also exits when its parent dies
        import logging

        logging.getLogger("haiku_desk").exception("could not stop the built-in model")


def _bring_to_front(window) -> None:
    from PySide6.QtCore import Qt

    window.setWindowState((window.windowState() & ~Qt.WindowState.WindowMinimized) | Qt.WindowState.WindowActive)
    window.show()
    window.raise_()
    window.activateWindow()


def _confirm_folders(window: Any, services: Any, folders: list[str]) -> None:
    """Folders handed over by another launch are added only when the person says so (a local
    process must not make the library ingest a whole folder unasked)."""
    from PySide6.QtWidgets import QMessageBox

    listed = "\n".join(folders[:10]) + (f"\n… and {len(folders) - 10} more" if len(folders) > 10 else "")
    answer = QMessageBox.question(
        window,
        "Add folders?",
        f"Another haiku-desk launch asked to add everything in:\n\n{listed}\n\nAdd these folders to the library?",
    )
    if answer == QMessageBox.StandardButton.Yes:
        services.library.add_paths(folders)


def _set_icon(app) -> None:
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
