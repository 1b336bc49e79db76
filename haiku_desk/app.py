"""Entry point of the ``haiku-desk`` command.

Only the window's own modules are imported before it is shown; the library's heavy parts
(LanceDB, PyMuPDF, the embedder, Pydantic AI) load on first use.
"""

from __future__ import annotations

import argparse
import sys

from haiku_desk import __version__


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="haiku-desk", description="Desktop research assistant")
    parser.add_argument("--version", action="version", version=f"haiku-desk {__version__}")
    parser.add_argument("--db", help="library location (default: the haiku.rag data dir)")
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="offscreen smoke test in a temporary library: ingest, search, render, answer; exit 0 on success",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.self_test:
        from haiku_desk.self_test import run_self_test

        return run_self_test()
    from PySide6.QtWidgets import QApplication

    from haiku_desk.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("haiku-desk")
    app.setApplicationVersion(__version__)
    window = MainWindow(db_path=args.db)
    window.show()
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
