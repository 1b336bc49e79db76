"""The built-in runtime with a real llama.cpp (xllamacpp) in a child process, on a tiny model
made in the test (random weights: what it writes is noise; the plumbing is what is checked):
load on first use, stream, stop, unload, idle unload, a killed child, the tool probe."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from gguf_factory import tiny_llama
from processes import gone

from haiku.rag.config import AppConfig, ModelConfig
from haiku.rag.local_models import provider
from haiku.rag.local_models.runtime import (
    ModelLoadError,
    ModelProcessDied,
    ModelRuntime,
    RuntimeMissingError,
    RuntimeSettings,
    runtime_available,
)
from haiku.rag.models import get_model

pytestmark = pytest.mark.skipif(not runtime_available(), reason="xllamacpp is not installed")


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_llama(tmp_path_factory.mktemp("rt") / "tiny.gguf", context=2048)


@pytest.fixture(autouse=True)
def unload_after() -> Iterator[None]:
    yield
    provider.unload()
    provider._verdicts.clear()


async def stream_text(model: object, prompt: str, max_tokens: int = 12) -> list[str]:
    from pydantic_ai import Agent

    agent = Agent(model)  # type: ignore[call-overload]
    deltas: list[str] = []
    # greedy and seeded: the random-weight model's bytes are the same every run (sampled, a
    # run's bytes could be incomplete UTF-8 the server holds back, and come as one delta)
    settings = {"max_tokens": max_tokens, "temperature": 0.0, "seed": 0}
    async with agent.run_stream(prompt, model_settings=settings) as result:
        async for delta in result.stream_text(delta=True, debounce_by=None):
            deltas.append(delta)
    return deltas


async def test_loads_on_first_use_streams_on_loopback_with_a_key_and_unloads(model_file: Path) -> None:
    model = get_model(ModelConfig(provider="model-file", name=str(model_file)), AppConfig())
    runtime = provider.current_runtime()
    assert runtime is not None and not runtime.running  # nothing starts before a request
    deltas = await stream_text(model, "Hello")
    assert len(deltas) >= 2  # streamed, not one piece
    pid, base = runtime.pid, runtime.base_url
    assert pid is not None and pid != os.getpid() and base is not None
    assert base.startswith("http://127.0.0.1:")
    # the session key is required
    assert httpx.get(f"{base}/v1/models").status_code == 401
    ok = httpx.get(f"{base}/v1/models", headers={"Authorization": f"Bearer {runtime.api_key}"})
    assert ok.status_code == 200
    # the child runs with the planned context and a core left free
    assert runtime.settings.context == 2048 and runtime.settings.threads >= 1
    assert runtime._in_flight == 0
    provider.unload()
    assert not runtime.running and gone(pid)


async def test_stop_mid_stream_leaves_nothing_in_flight_and_the_next_request_works(model_file: Path) -> None:
    from pydantic_ai import Agent

    model = get_model(ModelConfig(provider="model-file", name=str(model_file)), AppConfig())
    runtime = provider.current_runtime()
    assert runtime is not None
    agent = Agent(model)
    async with agent.run_stream("Hello", model_settings={"max_tokens": 400}) as result:
        async for _ in result.stream_text(delta=True, debounce_by=None):
            assert runtime._in_flight == 1
            break  # Stop: the stream is closed mid-answer
    assert runtime._in_flight == 0
    assert await stream_text(model, "Again")
    assert runtime.starts == 1  # the same child answered both


async def test_a_killed_child_gives_a_clear_error_and_the_next_request_starts_a_new_one(model_file: Path) -> None:
    model = get_model(ModelConfig(provider="model-file", name=str(model_file)), AppConfig())
    runtime = provider.current_runtime()
    assert runtime is not None
    await stream_text(model, "Hello")
    first = runtime.pid
    assert first is not None
    # The child is frozen, then killed as the next request goes out: it dies mid-request
    # whatever the machine's speed (no timing involved).
    os.kill(first, signal.SIGSTOP)
    started = runtime.request_started

    def kill_then_start() -> None:
        os.kill(first, signal.SIGKILL)
        started()

    runtime.request_started = kill_then_start  # type: ignore[method-assign]
    with pytest.raises(ModelProcessDied, match=r"stopped unexpectedly \(killed by SIGKILL: out of memory\?\); ask again"):
        await stream_text(model, "Hello again")
    runtime.request_started = started  # type: ignore[method-assign]
    assert runtime._in_flight == 0
    assert await stream_text(model, "Third time")
    assert runtime.pid not in (None, first) and runtime.starts == 2


def test_idle_unload_waits_for_requests_in_flight(model_file: Path) -> None:
    now = [0.0]
    runtime = ModelRuntime(
        RuntimeSettings(model_file, context=512, threads=1), idle_seconds=60, clock=lambda: now[0], watch_interval=3600
    )
    try:
        runtime.ensure_started()
        pid = runtime.pid
        assert pid is not None
        now[0] = 59
        assert not runtime.check_idle()
        runtime.request_started()  # a long answer streaming
        now[0] = 500
        assert not runtime.check_idle() and runtime.running
        runtime.request_ended()
        now[0] = 559
        assert not runtime.check_idle()
        now[0] = 561
        assert runtime.check_idle() and not runtime.running and gone(pid)
        runtime.ensure_started()  # used again: loaded again
        assert runtime.running and runtime.starts == 2
    finally:
        runtime.close()


def test_a_file_llama_cpp_cannot_load_gives_its_reason(tmp_path: Path) -> None:
    import gguf
    import numpy as np

    path = tmp_path / "odd.gguf"
    writer = gguf.GGUFWriter(str(path), "nonesuch")
    writer.add_tensor("w", np.zeros(4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    runtime = ModelRuntime(RuntimeSettings(path, context=512, threads=1), idle_seconds=None)
    with pytest.raises(ModelLoadError, match="could not load odd.gguf") as caught:
        runtime.ensure_started()
    assert "nonesuch" in str(caught.value) or "architecture" in str(caught.value)
    assert not runtime.running


def test_not_a_model_file_is_refused_before_any_process(tmp_path: Path) -> None:
    text = tmp_path / "notes.gguf"
    text.write_text("hello")
    with pytest.raises(ModelLoadError, match="not a GGUF model file"):
        get_model(ModelConfig(provider="model-file", name=str(text)), AppConfig())
    assert provider.current_runtime() is None


def test_an_embedding_model_is_refused_for_chat(tmp_path: Path) -> None:
    import gguf
    import numpy as np

    path = tmp_path / "embed.gguf"
    writer = gguf.GGUFWriter(str(path), "nomic-bert")
    writer.add_name("Nomic Embed")
    writer.add_tensor("token_embd.weight", np.zeros((8, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ModelLoadError, match=r"Nomic Embed \(embed.gguf\) is an embedding model: it cannot chat"):
        get_model(ModelConfig(provider="model-file", name=str(path)), AppConfig())


def test_without_xllamacpp_the_provider_says_so(model_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # as if not installed
    with pytest.raises(RuntimeMissingError, match=r"not installed: pip install 'xllamacpp"):
        get_model(ModelConfig(provider="model-file", name=str(model_file)), AppConfig())


def test_tool_probe_runs_once_per_file_and_is_kept(model_file: Path, tmp_path: Path) -> None:
    cache = tmp_path / "probe.json"
    runtime = provider.runtime_for(model_file)
    assert provider.tools_verdict(runtime, cache) is False  # random weights call no tool
    assert runtime.starts == 1
    stored = json.loads(cache.read_text())
    assert list(stored.values()) == [False]
    assert provider.known_tools_verdict(model_file) is False
    provider.unload()
    provider._verdicts.clear()
    assert provider.known_tools_verdict(model_file) is None  # not probed in this session...
    assert provider.known_tools_verdict(model_file, cache) is False  # ...but kept
    again = provider.runtime_for(model_file)
    assert provider.tools_verdict(again, cache) is False
    assert again.starts == 0  # answered from the kept verdict: nothing loaded


def test_a_correct_tool_call_is_recognised() -> None:
    def body(name: str, arguments: object) -> dict:
        call = {"type": "function", "function": {"name": name, "arguments": arguments}}
        return {"choices": [{"message": {"role": "assistant", "tool_calls": [call]}}]}

    assert provider.called_probe_tool(body("get_page", '{"page": 3}'))
    assert provider.called_probe_tool(body("get_page", {"page": "3"}))
    assert not provider.called_probe_tool(body("get_page", '{"page": 4}'))
    assert not provider.called_probe_tool(body("get_pages", '{"page": 3}'))
    assert not provider.called_probe_tool(body("get_page", "{page: 3"))
    assert not provider.called_probe_tool({"choices": [{"message": {"content": "page 3 says"}}]})
    assert not provider.called_probe_tool({})


async def test_answer_path_follows_the_probe(tmp_path: Path) -> None:
    roomy = tiny_llama(tmp_path / "roomy.gguf", context=8192)
    model = ModelConfig(provider="model-file", name=str(roomy))
    assert await provider.tools_support(model) is False  # probed: random weights call no tool
    runtime = provider.current_runtime()
    assert runtime is not None and runtime.starts == 1 and runtime.settings.context == 8192
    assert await provider.tools_support(model.model_copy(update={"supports_tools": True})) is True
    assert await provider.tools_support(ModelConfig(provider="ollama", name="x")) is None


async def test_a_context_too_small_for_tools_answers_from_passages_without_a_probe(model_file: Path) -> None:
    model = ModelConfig(provider="model-file", name=str(model_file))  # trained for 2,048 tokens
    assert await provider.tools_support(model) is False
    runtime = provider.current_runtime()
    assert runtime is not None and runtime.starts == 0  # nothing loaded to decide


def test_the_model_process_ends_with_a_parent_that_dies_without_cleaning_up(model_file: Path, tmp_path: Path) -> None:
    """The app ends with os._exit (no atexit): the child must not outlive it."""
    import subprocess
    import time

    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from haiku.rag.local_models.runtime import ModelRuntime, RuntimeSettings\n"
        f"rt = ModelRuntime(RuntimeSettings(Path({str(model_file)!r}), context=512, threads=1), idle_seconds=None)\n"
        "rt.ensure_started()\n"
        "print(rt.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    child = int(done.stdout.split()[0])
    deadline = time.monotonic() + 60  # it checks for its parent every second
    while not gone(child) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert gone(child)


def test_the_model_serving_a_file_is_kept_when_free_memory_drops(
    model_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each answer asks for the runtime again (the tools probe, the chat model); once a model
    is loaded its own memory is no longer free, so planning again would choose a smaller
    context (a second process) or refuse the model that is running."""
    from haiku.rag.local_models import fit

    provider.unload()
    first = provider.runtime_for(model_file)
    monkeypatch.setattr(fit, "available_memory", lambda: 1)  # nothing left once it loaded
    try:
        assert provider.runtime_for(model_file) is first
    finally:
        provider.unload()
