"""Hostile programs through ``analysis_execute_code`` (the list is in ``hostile.py``).

Each is refused or stopped with a clear message, the test process stays healthy, and the next
execution works. No timing thresholds: the limits themselves (2 s per call here) are what stop
the runaway programs, and the sandbox reports which one did.
"""

from __future__ import annotations

import os
import resource
import threading

import pytest
import pytest_asyncio

from haiku.rag.capabilities.analysis import create_capability
from sandbox.hostile import HOSTILE_LIMITS, PROGRAMS, run_hostile


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def outcomes(sandbox_corpus, sandbox_client):
    config = sandbox_corpus.config.model_copy(deep=True)
    for key, value in HOSTILE_LIMITS.items():
        setattr(config.analysis, key, value)
    threads_before = threading.active_count()
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    capability = create_capability(rag=sandbox_client, config=config, request_limit=None)
    result = await run_hostile(capability)
    return result, threads_before, peak_before


def test_there_are_at_least_25_hostile_programs():
    stopped = [p for p in PROGRAMS if p.stopped_by != "none"]
    assert len(stopped) >= 25
    assert {p.category for p in PROGRAMS} >= {
        "host files", "writes", "imports", "network", "time", "recursion", "memory", "output",
        "exceptions", "escape",
    }


@pytest.mark.parametrize("index", range(len(PROGRAMS)), ids=[p.name for p in PROGRAMS])
def test_each_program_is_refused_or_stopped_with_a_clear_message(outcomes, index):
    outcome = outcomes[0][index]
    program = outcome.program
    assert outcome.stopped_by == program.stopped_by, outcome.shown
    assert program.message in outcome.shown
    if program.stopped_by == "none":
        assert outcome.tool_outcome == "success"
    else:
        assert outcome.tool_outcome == "failed"  # ToolFailed: the run goes on


@pytest.mark.parametrize("index", range(len(PROGRAMS)), ids=[p.name for p in PROGRAMS])
def test_the_next_execution_works(outcomes, index):
    assert outcomes[0][index].next_execution.split() == ["6", "42"]


def test_the_process_stays_healthy(outcomes, sandbox_client, tmp_path):
    _, threads_before, peak_before = outcomes
    # Nothing was written on the host, the store is intact, no sandbox thread or worker is left.
    assert not os.path.exists("/tmp/pwned.txt")
    # (the search pool's and asyncio's worker threads persist by design; the sandbox's must not)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("haiku-sandbox")]
    # The high-water mark of this process (which the rest of the suite has already raised)
    # grew by far less than the 10**9-element list would need: it never reached this process.
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert peak_mib - peak_before < 1024


async def test_the_store_is_untouched(outcomes, sandbox_client):
    documents = await sandbox_client.list_documents()
    assert len(documents) == 6
    for document in documents:
        assert await sandbox_client.get_content(document) != "gone"
