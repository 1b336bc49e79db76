"""The type checker passes over the library and the app (``[tool.mypy]`` in pyproject.toml:
``haiku.rag`` and, since issue 31, ``haiku_desk``).

Run in CI as an ordinary test: about 60 s of CPU from a cold cache on the reference machine.
Per-module exceptions in pyproject.toml each carry their reason.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO_ROOT


# A guard against a hung checker, not a speed limit: a cold mypy run took 4.7 min at load 13.
@pytest.mark.timeout(1200)
def test_mypy_passes_on_the_library_and_the_app(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=1100,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "Success: no issues found" in result.stdout
