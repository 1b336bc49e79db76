"""``haiku.rag.operations.stop_parse_workers``: what a program quitting mid-ingest calls (the
app's Quit) so no parse worker outlives it; the public way in, instead of reaching into
``haiku.rag.ingest.isolation``'s module state."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO_ROOT

from haiku.rag.ingest.isolation import parse_document, shared_pool
from haiku.rag.operations import stop_parse_workers


def _parse(config, text: str):
    data = text.encode()
    return parse_document(data, filename="note.txt", uri="file:///note.txt", config=config)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a child not yet reaped is a zombie: gone as far as work goes
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ", 1)[1].startswith("Z")


def test_the_workers_are_killed_and_the_next_parse_starts_a_fresh_one(config):
    config.processing.parse_isolation = "process"
    assert _parse(config, "Otters hunt eels at dusk.").chunks
    before = shared_pool().pids
    assert before, "the parse ran in a worker process"

    stop_parse_workers()

    assert shared_pool().pids == []
    assert all(_gone(pid) for pid in before)
    assert _parse(config, "Herons wait in the shallows.").chunks  # a fresh worker
    after = shared_pool().pids
    assert after and not set(after) & set(before)


def test_with_nothing_parsed_it_does_not_import_the_ingest_machinery():
    code = (
        "import sys\n"
        "from haiku.rag.operations import stop_parse_workers\n"
        "stop_parse_workers()\n"
        "assert 'haiku.rag.ingest.isolation' not in sys.modules, 'imported'\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
