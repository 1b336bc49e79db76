"""``haiku-desk --self-test`` and ``--version`` as a user runs them: the installed command, in a
subprocess. The self-test is the release's smoke test; the bundle runs the same code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from haiku.rag import __version__

HAIKU_DESK = str(Path(sys.executable).parent / "haiku-desk")
STEPS = (
    "temp library",
    "qt offscreen",
    "generate pdf",
    "ingest + embed",
    "search",
    "ocr scanned page",
    "ocr runtime",
    "pdf layout model",
    "llama.cpp runtime",
    "render highlight",
    "answer with citations",
    "word file cited",
    "epub file cited",
    "mcp server",
    "main window",
)


def run_desk(*args: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        **env,
    }
    return subprocess.run(
        [HAIKU_DESK, *args], capture_output=True, text=True, env=environment, timeout=240
    )


def test_version_prints_the_one_version(tmp_path):
    result = run_desk("--version", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"haiku-desk {__version__}"


def test_self_test_passes_every_step_from_the_source_install(tmp_path):
    # The user's settings (here an Ollama embedder that is not running) are not what the
    # self-test checks: it tests the installation's own components, so it still passes.
    result = run_desk(
        "--self-test",
        tmp_path=tmp_path,
        TMPDIR=str(tmp_path),
        HAIKU_RAG_EMBEDDINGS__PROVIDER="ollama",
        HAIKU_RAG_EMBEDDINGS__MODEL="nomic-embed-text",
        HAIKU_RAG_EMBEDDINGS__BASE_URL="http://127.0.0.1:9",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"haiku-desk {__version__} self-test")
    for step in STEPS:
        assert any(line.split()[:1] == ["ok"] and step in line for line in lines), step
    assert "self-test passed: 15 steps" in result.stdout
    # Its temporary library is removed afterwards.
    assert not list(tmp_path.glob("haiku-desk-self-test-*"))


def test_self_test_fails_with_a_message_naming_the_step(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("a file where the temp dir should be")
    result = run_desk("--self-test", tmp_path=tmp_path, TMPDIR=str(not_a_dir / "tmp"))
    assert result.returncode == 1
    assert "self-test FAILED at step 'temp library'" in result.stderr
    assert str(not_a_dir) in result.stderr
    assert "Traceback" not in result.stderr
