"""The library's import graph, drawn from the source with grimp (import-linter's engine), has no
cycle: every module can be read, tested and moved knowing only what it imports (issue 31).

Imports inside functions and under ``TYPE_CHECKING`` count: a cycle hidden in a function is
still a cycle between two modules' ideas. The graph is drawn in a fresh interpreter whose path
holds this checkout's ``haiku`` only (an editable install of another checkout would add its
``haiku/`` to the namespace package and mix two trees into one graph).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conftest import REPO_ROOT

DRAW = textwrap.dedent(
    """
    import json, os, sys
    mine = os.path.abspath(sys.argv[1])
    sys.path = [
        p for p in sys.path
        if not os.path.isdir(os.path.join(p or ".", "haiku", "rag")) or os.path.abspath(p or ".") == mine
    ]
    sys.path[:0] = [mine, *sys.argv[3:]]
    import grimp

    package = sys.argv[2]
    graph = grimp.build_graph(package.split(".")[0], cache_dir=None)
    edges = {
        module: sorted(m for m in graph.find_modules_directly_imported_by(module) if m.startswith(package))
        for module in graph.modules
        if module.startswith(package)
    }
    print(json.dumps(edges))
    """
)


def import_graph(package: str = "haiku.rag", *paths: str) -> dict[str, list[str]]:
    """``package``'s modules, each with the modules of ``package`` it imports; ``paths`` go on
    the fresh interpreter's path after this checkout's ``haiku_rag`` (where another top-level
    package, the app or a test's planted one, is found)."""
    result = subprocess.run(
        [sys.executable, "-c", DRAW, str(REPO_ROOT / "haiku_rag"), package, *paths],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def cycles(edges: dict[str, list[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(edges.get(start, [])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, []))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_finder_sees_a_cycle():
    edges = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"], "e": []}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": ["b"], "b": []}) == []


def test_the_library_imports_without_cycles():
    edges = import_graph("haiku.rag")
    assert "haiku.rag.client.facade" in edges and "haiku.rag.store.engine" in edges  # drawn
    assert cycles(edges) == []
