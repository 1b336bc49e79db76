"""The compaction benchmark's conversation, run over the test corpus: compaction must pay off.

The full benchmark (tests/bench/bench_compaction.py) runs the same script over RepLiQA documents.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from capabilities.corpus import TOPICS
from haiku.rag.capabilities.rag import RAGCapability
from haiku.rag.store.models import SearchResult

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_compaction.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_compaction", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


async def test_compaction_reduces_input_tokens_over_ten_turns(make_rag, monkeypatch):
    bench = load_bench()
    # Both arms make the same searches; the second arm reuses the first's results to halve the time.
    original, cache = RAGCapability.search_corpus, {}

    async def remembered(self: RAGCapability, query: str, limit: int | None) -> list[SearchResult]:
        if (query, limit) not in cache:
            cache[query, limit] = await original(self, query, limit)
        return cache[query, limit]

    monkeypatch.setattr(RAGCapability, "search_corpus", remembered)
    questions = [
        f"{heading} of {title}?"
        for title, sections in TOPICS.values()
        for heading, _ in sections[:2]
    ]
    assert len(questions) == 10
    plain = await bench.run_conversation(
        make_rag, questions, compact=False, searches=1, cite_count=1
    )
    compacted = await bench.run_conversation(
        make_rag, questions, compact=True, searches=1, cite_count=1
    )
    assert len(plain.tokens) == len(compacted.tokens) == 1 + 10 * 3
    assert (
        plain.tokens[: plain.turn_starts[1]] == compacted.tokens[: compacted.turn_starts[1]]
    )  # turn 1 alike
    assert bench.reduction(plain, compacted) >= 30
    # later turns grow far slower: the last turn's first request against the plain transcript
    last = plain.turn_starts[-1]
    assert compacted.tokens[last] < 0.6 * plain.tokens[last]
