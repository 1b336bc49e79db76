"""The library must import and work with no Qt installed: haiku.rag never imports PySide6."""

import re
import subprocess
import sys
import textwrap

from conftest import REPO_ROOT


def test_every_library_module_imports_with_qt_blocked():
    code = textwrap.dedent(
        """
        import importlib, pkgutil, sys
        for blocked in ("PySide6", "qasync", "haiku_desk"):
            sys.modules[blocked] = None  # any import of it now raises ImportError
        import haiku.rag
        names = [m.name for m in pkgutil.walk_packages(haiku.rag.__path__, "haiku.rag.")]
        for name in names:
            importlib.import_module(name)
        assert not any(k.startswith("PySide6.") for k in sys.modules)
        print(len(names))
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) >= 10


# This checkout's ``haiku`` only: an editable install of another checkout (a git worktree beside
# the main one) puts its ``haiku/`` on the path too, and the namespace package would then mix
# both trees into one graph.
LINT = f"""
import os, sys
mine = {str(REPO_ROOT / "haiku_rag")!r}
sys.path = [p for p in sys.path
            if not os.path.isdir(os.path.join(p or ".", "haiku", "rag")) or os.path.abspath(p or ".") == mine]
sys.path.insert(0, mine)
sys.argv = ["lint-imports", "--no-cache"]
from importlinter.cli import lint_imports_command
lint_imports_command()
"""


def test_import_linter_contract_holds():
    result = subprocess.run([sys.executable, "-c", LINT], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    kept = re.search(r"Contracts: (\d+) kept, 0 broken", result.stdout)
    # Qt, layers, store through the client, client, ingest, store, app
    assert kept and int(kept.group(1)) >= 7, result.stdout


def test_importing_the_library_is_cheap():
    """`import haiku.rag.client` must not pull LanceDB, PyMuPDF, onnxruntime or pydantic_ai."""
    code = "import sys, haiku.rag.client, haiku.rag.cli; print(sorted(m for m in ('lancedb','pymupdf','onnxruntime','pydantic_ai','docling_core.transforms.chunker.hybrid_chunker') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
