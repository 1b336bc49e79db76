"""The app's import graph has no cycle (issue 31): drawn by grimp (the graph import-linter
checks), type-checking imports included, since a cycle through an annotation is still two
modules that cannot be understood, tested or moved apart. Each cycle found is named with the
modules in it."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import grimp


def import_cycles(package: str) -> list[list[str]]:
    """The strongly connected parts of ``package``'s import graph with more than one module
    (Tarjan's algorithm), each sorted; empty when the graph has no cycle."""
    graph = grimp.build_graph(package, cache_dir=None)
    modules = sorted(graph.modules)
    edges = {m: sorted(i for i in graph.find_modules_directly_imported_by(m) if i in graph.modules) for m in modules}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # iterative would do too; the app is a few dozen modules deep at most
        order[module] = low[module] = len(order)
        stack.append(module)
        on_stack.add(module)
        for imported in edges[module]:
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            part = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.append(member)
                if member == module:
                    break
            if len(part) > 1:
                cycles.append(sorted(part))

    for module in modules:
        if module not in order:
            visit(module)
    return sorted(cycles)


def test_the_app_has_no_import_cycle():
    assert import_cycles("haiku_desk") == []


def test_a_cycle_is_found_and_named(tmp_path: Path, monkeypatch):
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
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert import_cycles("cyclic_app") == [["cyclic_app.menu", "cyclic_app.window"]]
    finally:
        for name in [m for m in sys.modules if m.startswith("cyclic_app")]:
            del sys.modules[name]
