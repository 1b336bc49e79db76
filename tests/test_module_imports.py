"""Every module of both packages imports on its own, in a fresh interpreter, one at a time.

The app must not survive by import order: ``import haiku_desk.services.models`` alone used to
fail (PySide6's import hook inspects modules mid-import and trips pydantic's lazy attributes).
Modules are found from the source tree, so a new module is covered without listing it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import REPO_ROOT

ROOTS = {"haiku.rag": REPO_ROOT / "haiku_rag" / "haiku" / "rag", "haiku_desk": REPO_ROOT / "haiku_desk"}


def module_names() -> list[str]:
    names = []
    for package, root in ROOTS.items():
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__main__":
                continue  # runs the program when imported
            if parts[-1] == "__init__":
                parts.pop()
            names.append(".".join([package, *parts]))
    return names


def import_alone(name: str) -> tuple[str, int, str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run(
        [sys.executable, "-c", f"import {name}"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=Path(REPO_ROOT),
    )
    return name, result.returncode, result.stderr.strip().splitlines()[-1:] and result.stderr


# Some 250 fresh interpreters: ~150 s on 2 idle cores, near the suite's 300 s hang guard when
# other work loads them. This guard is for a hang, not for speed.
@pytest.mark.timeout(1200)
def test_every_module_imports_alone_in_a_fresh_interpreter():
    names = module_names()
    assert "haiku_desk.services.models" in names and "haiku.rag.answering.run" in names
    with ThreadPoolExecutor(max_workers=2) as pool:  # CI has 2 cores
        results = list(pool.map(import_alone, names))
    failed = {name: err.strip().splitlines()[-1] for name, code, err in results if code != 0}
    assert failed == {}
