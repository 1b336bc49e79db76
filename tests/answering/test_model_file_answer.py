"""A question answered by a model file through the built-in llama.cpp: the tool probe picks the
retrieve-then-write path by itself, the answer streams, and a killed model process gives a
clear error while the next question is answered. Real llama.cpp, a tiny random model (its
words are noise: the path, the events and the process are what is checked)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from gguf_factory import tiny_llama

from haiku.rag.answering import Answered, Started, answer_stream
from haiku.rag.client import HaikuRAG
from haiku.rag.config import ModelConfig
from haiku.rag.local_models import provider
from haiku.rag.local_models.runtime import ModelProcessDied, runtime_available

pytestmark = pytest.mark.skipif(not runtime_available(), reason="xllamacpp is not installed")


@pytest.fixture
def client(corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HaikuRAG]:
    import pydantic_ai.models

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    model = tiny_llama(tmp_path / "roomy.gguf", context=8192)  # room for tools: the probe decides
    config = corpus.config.model_copy(deep=True)
    config.qa.model = ModelConfig(provider="model-file", name=str(model), max_tokens=16)
    client = HaikuRAG(corpus.db_path, config, read_only=True)
    yield client
    client.close()
    provider.unload()
    provider._verdicts.clear()


async def events_of(client: HaikuRAG, question: str) -> list:
    return [event async for event in answer_stream(client, question)]


async def test_a_model_that_fails_the_probe_answers_from_retrieved_passages(client: HaikuRAG) -> None:
    events = await events_of(client, "What do otters eat?")
    started = next(e for e in events if isinstance(e, Started))
    answered = events[-1]
    assert started.mode == "fallback"
    assert isinstance(answered, Answered) and answered.mode == "fallback"
    runtime = provider.current_runtime()
    assert runtime is not None and runtime.running and runtime.starts == 1


async def test_a_killed_model_process_is_a_clear_error_and_the_next_question_works(client: HaikuRAG) -> None:
    await events_of(client, "What do otters eat?")
    runtime = provider.current_runtime()
    assert runtime is not None and runtime.pid is not None
    first = runtime.pid
    os.kill(first, signal.SIGSTOP)  # frozen, then killed as the answer's request goes out
    started = runtime.request_started

    def kill_then_start() -> None:
        os.kill(first, signal.SIGKILL)
        started()

    runtime.request_started = kill_then_start  # type: ignore[method-assign]
    with pytest.raises(ModelProcessDied, match="stopped unexpectedly"):
        await events_of(client, "What do otters eat?")
    runtime.request_started = started  # type: ignore[method-assign]
    events = await events_of(client, "What do otters eat?")
    assert isinstance(events[-1], Answered)
    assert runtime.starts == 2 and runtime.pid != first
