"""The app's import graph has no cycle (issue 31): drawn by grimp (the graph import-linter
checks), type-checking imports included, since a cycle through an annotation is still two
modules that cannot be understood, tested or moved apart. Each cycle found is named with the
modules in it. The graph and the cycle finder are the library's check's (test_import_graph)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from conftest import REPO_ROOT
from test_import_graph import cycles, import_graph


def test_the_app_has_no_import_cycle():
    edges = import_graph("haiku_desk", str(REPO_ROOT))
    assert "haiku_desk.app" in edges  # drawn
    assert cycles(edges) == []


def test_a_cycle_is_found_and_named(tmp_path: Path):
    """The check can fail: a package whose view and window import each other (one of them only
    for an annotation, as library_menu and main_window did) is reported."""
    package = tmp_path / "cyclic_app"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "window.py").write_text("from cyclic_app.menu import Menu\n")
    (package / "menu.py").write_text(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from cyclic_app.window import Window
            class Menu: ...
            """
        )
    )
    (package / "alone.py").write_text("import cyclic_app.menu\n")
    assert cycles(import_graph("cyclic_app", str(tmp_path))) == [["cyclic_app.menu", "cyclic_app.window"]]
