"""Asking a model provider what it offers: its model names (Ollama ``/api/tags``; the others
``/v1/models``) and, for Ollama, whether a model calls tools (``/api/show``). Errors are one
key-free line; URLs are shown without their query."""

from __future__ import annotations

from typing import Any

from haiku.rag.models import PROVIDERS
from haiku_desk.services.model_choices import DISCOVERY_TIMEOUT, PROVIDER_LABELS, ConnectionReport

__all__ = ["check_provider", "list_models", "model_file_report", "ollama_tools"]


async def list_models(provider: str, base_url: str, key: str | None) -> list[str]:
    """Model names the provider at ``base_url`` offers; ``ConnectionError`` says why not."""
    import httpx

    check_provider(provider)
    base = base_url.rstrip("/")
    url, headers, params = _models_request(provider, base, key)
    try:
        async with httpx.AsyncClient(timeout=DISCOVERY_TIMEOUT, trust_env=False) as http:
            response = await http.get(url, headers=headers, params=params)
    except httpx.HTTPError as exc:
        raise ConnectionError(f"cannot reach {_safe_url(url)}: {type(exc).__name__}; is the server running?") from exc
    if response.status_code in (401, 403):
        raise ConnectionError(f"{PROVIDER_LABELS[provider].split(' (')[0]} refused the key (HTTP {response.status_code})")
    if response.status_code >= 400:
        raise ConnectionError(f"{_safe_url(url)} answered HTTP {response.status_code}")
    try:
        return _model_names(provider, response.json())
    except (ValueError, KeyError, TypeError) as exc:
        raise ConnectionError(f"{_safe_url(url)} did not answer with a model list") from exc


async def ollama_tools(name: str, base_url: str) -> bool | None:
    """What Ollama's ``/api/show`` says about ``name`` calling tools (None when it does not say)."""
    import httpx

    base = base_url.rstrip("/").removesuffix("/v1")
    try:
        async with httpx.AsyncClient(timeout=DISCOVERY_TIMEOUT, trust_env=False) as http:
            response = await http.post(f"{base}/api/show", json={"model": name})
        capabilities = response.json().get("capabilities") if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return "tools" in capabilities if isinstance(capabilities, list) else None

def check_provider(provider: str) -> None:
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; use one of {', '.join(PROVIDERS)}")


def _models_request(
    provider: str, base: str, key: str | None
) -> tuple[str, dict[str, str], dict[str, str]]:
    if provider == "ollama":
        return f"{base.removesuffix('/v1')}/api/tags", {}, {}
    if provider == "anthropic":
        headers = {"anthropic-version": "2023-06-01"}
        if key:
            headers["x-api-key"] = key
        return f"{base.removesuffix('/v1')}/v1/models", headers, {}
    if provider == "google":
        return f"{base}/v1beta/models", {"x-goog-api-key": key} if key else {}, {}
    root = base if base.endswith("/v1") else f"{base}/v1"
    return f"{root}/models", {"Authorization": f"Bearer {key}"} if key else {}, {}


def _model_names(provider: str, body: Any) -> list[str]:
    if provider == "ollama":
        return [m.get("name") or m["model"] for m in body["models"]]
    if provider == "google":
        return [m["name"].removeprefix("models/") for m in body["models"]]
    return [m["id"] for m in body["data"]]


def _safe_url(url: str) -> str:
    return url.split("?", 1)[0]


def embedding_model_files(roots: Any = None) -> list[tuple[str, str]]:
    """(one-line description, path) of each GGUF embedding model on this computer (headers
    only: a few milliseconds a file), for the embedder choice."""
    from haiku.rag.local_models import embedding_models

    return [(model.summary(), str(model.path)) for model in embedding_models(roots)]


async def model_file_report(name: str | None, roots: Any = None, probe_cache: Any = None) -> ConnectionReport:
    """"Find models" / "Test" for a model file: the chat models found on this computer; with
    ``name``, that file's description and fit, then a load and the tool probe (seconds)."""
    import asyncio

    from haiku.rag.errors import HaikuRAGError
    from haiku.rag.local_models import describe, discover, plan
    from haiku.rag.local_models.provider import runtime_for, tools_verdict

    found = [m for m in await asyncio.to_thread(discover, roots) if m.kind == "chat"]
    names = [str(m.path) for m in found]
    labels = [f"{m.summary()} ({m.source})" for m in found]
    if not name:
        count = f"{len(names)} model file{'s' if len(names) != 1 else ''} found on this computer"
        return ConnectionReport(True, count, names, labels=labels)
    model = describe(name)
    if model.info is None:
        return ConnectionReport(False, f"cannot use {name}: {model.error}", names, labels=labels)
    fit = plan(model.info, file_size=model.size)
    try:
        runtime = runtime_for(name)
        tools = await asyncio.to_thread(tools_verdict, runtime, probe_cache)
    except HaikuRAGError as exc:
        return ConnectionReport(False, str(exc), names, labels=labels)
    message = f"Loaded {model.summary()}: {fit.message}"
    if not tools:
        message += "; it cannot call tools, so answers will come from passages (no-tool mode)"
    return ConnectionReport(True, message, names, tools, labels=labels)
