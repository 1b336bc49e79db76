"""The "Model file (built in)" provider: a GGUF file served by ``runtime``, talked to through
the same OpenAI-compatible path as any model server (``haiku.rag.models``).

Configuration: ``qa.model.provider: model-file`` and ``qa.model.name: /path/to/model.gguf``
(optionally ``context_tokens``; default: what fits, ``fit.plan``). One model is loaded at a
time: choosing another file unloads the previous one.

The HTTP client's transport (``RuntimeTransport``) starts the child on the first request (in
a worker thread: loading takes seconds), points each request at the child's current port with
the session key, counts requests in flight (the idle unload waits for them) and turns a
connection lost because the child died into ``ModelProcessDied``; the next request starts a
new child. No retries: a model that died of memory would die again.

An embedding model file (``embedding_runtime_for``; the ``model-file`` embedder) gets a runtime
of its own, kept per file apart from the chat model's, started with ``embedding=True``;
``stop_all`` (the app's quit) stops both kinds.

``tools_support`` probes a model once (a tiny request offering one tool): a model that does not
call it correctly answers through the retrieve-then-write path. Verdicts are kept per file
(path, size, modification time) in memory and, when given, in a JSON file.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import weakref
from pathlib import Path
from typing import Any

from haiku.rag.config import ModelConfig
from haiku.rag.errors import ChatModelError
from haiku.rag.local_models.fit import plan
from haiku.rag.local_models.header import GGUFError, GGUFInfo, read_header
from haiku.rag.local_models.runtime import (
    INSTALL_HINT,
    ModelLoadError,
    ModelRuntime,
    RuntimeMissingError,
    RuntimeSettings,
    runtime_available,
)

log = logging.getLogger("haiku.rag")

PROVIDER = "model-file"
PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "get_page",
        "description": "Return the text of one page of the open document.",
        "parameters": {
            "type": "object",
            "properties": {"page": {"type": "integer", "description": "the page number"}},
            "required": ["page"],
        },
    },
}
PROBE_PROMPT = "Read page 3 of the document with the get_page tool."
PROBE_TIMEOUT_SECONDS = 600.0

_lock = threading.Lock()
_current: ModelRuntime | None = None
_embedding: dict[Path, ModelRuntime] = {}
# an embedding model's context: chunks are a few hundred tokens; an encoder's working memory
# grows with the square of this (one micro-batch holds a whole input)
EMBEDDING_CONTEXT = 2048
_verdicts: dict[tuple[str, int, int], bool] = {}


def runtime_for(
    path: str | Path, *, context: int | None = None, idle_seconds: float | None = None, purpose: str = "chat"
) -> ModelRuntime:
    """The runtime serving ``path`` (made if needed; another file's runtime is stopped first).
    Raises ``RuntimeMissingError`` without xllamacpp, ``ModelLoadError`` for a file that is
    not a model or does not fit in memory."""
    if not runtime_available():
        raise RuntimeMissingError(INSTALL_HINT)
    path = Path(path).expanduser()
    try:
        info = read_header(path)
    except GGUFError as exc:
        raise ModelLoadError(str(exc)) from exc
    if info.kind == "projector":
        raise ModelLoadError(f"{path.name} is a vision projector, not a model: choose the model file beside it")
    if purpose == "chat" and info.kind == "embedding":
        raise ModelLoadError(f"{info.name} ({path.name}) is an embedding model: it cannot chat; choose a chat model")
    global _current
    with _lock:
        # the model already serving this file is kept: planning again would read the memory it
        # now uses as taken, and pick a smaller context (a restart) or refuse it
        if _current is not None and _current.settings.path == path and context in (None, _current.settings.context):
            return _current
    fit = plan(info, context=context, file_size=_size_with_parts(path, info.split_count))
    if fit.needs_bytes > fit.available_bytes:
        raise ModelLoadError(f"{info.name} {fit.message}")
    settings = RuntimeSettings(path=path, context=fit.context, threads=fit.threads, embedding=info.kind == "embedding")
    with _lock:
        if _current is not None and _current.settings == settings:
            return _current
        if _current is not None:
            _current.close()
        kwargs: dict[str, Any] = {} if idle_seconds is None else {"idle_seconds": idle_seconds}
        _current = ModelRuntime(settings, **kwargs)
        log.info("model file %s: %s, %d context, %d threads", path.name, fit.message, fit.context, fit.threads)
        return _current


def embedding_runtime_for(path: str | Path, *, idle_seconds: float | None = None) -> ModelRuntime:
    """The runtime serving the embedding model ``path`` on ``/v1/embeddings`` (made if needed;
    nothing starts until its first request). Kept apart from the chat model's: a library can
    embed with one file while answering with another. Raises ``RuntimeMissingError`` without
    xllamacpp, ``ModelLoadError`` for a file that is not an embedding model or does not fit."""
    if not runtime_available():
        raise RuntimeMissingError(INSTALL_HINT)
    path = Path(path).expanduser()
    info = embedding_header(path)
    with _lock:
        running = _embedding.get(path)
        if running is not None:
            return running
    context = min(info.context_length or EMBEDDING_CONTEXT, EMBEDDING_CONTEXT)
    fit = plan(info, context=context, file_size=_size_with_parts(path, info.split_count))
    if fit.needs_bytes > fit.available_bytes:
        raise ModelLoadError(f"{info.name} {fit.message}")
    settings = RuntimeSettings(path=path, context=context, threads=fit.threads, embedding=True)
    kwargs: dict[str, Any] = {} if idle_seconds is None else {"idle_seconds": idle_seconds}
    with _lock:
        running = _embedding.get(path)
        if running is None:
            running = _embedding[path] = ModelRuntime(settings, **kwargs)
            log.info("embedding model file %s: %s, %d context", path.name, fit.message, context)
        return running


def embedding_header(path: str | Path) -> GGUFInfo:
    """``path``'s header, refused (``ModelLoadError``, saying why) unless it is an embedding
    model: what the store's vector column is sized from, before any request."""
    path = Path(path).expanduser()
    try:
        info = read_header(path)
    except GGUFError as exc:
        raise ModelLoadError(str(exc)) from exc
    if info.kind != "embedding":
        what = "a vision projector" if info.kind == "projector" else f"a {info.architecture} chat model"
        raise ModelLoadError(
            f"{info.name} ({path.name}) is {what}, not an embedding model: choose an embedding "
            "model file (such as nomic-embed-text or bge-m3)"
        )
    if not info.embedding_length:
        raise ModelLoadError(f"{path.name}: the header does not say the vector size ({info.architecture}.embedding_length)")
    return info


def stop_embedding(path: str | Path) -> None:
    """Stop the embedding model serving ``path``, if any (its embedder closed)."""
    with _lock:
        runtime = _embedding.pop(Path(path).expanduser(), None)
    if runtime is not None:
        runtime.close()


def stop_all() -> None:
    """Stop every built-in model, chat and embedding (the app's quit)."""
    unload()
    with _lock:
        runtimes = list(_embedding.values())
        _embedding.clear()
    for runtime in runtimes:
        runtime.close()


def current_runtime() -> ModelRuntime | None:
    return _current


def unload() -> None:
    """Stop the loaded model, if any (the app's quit, the person's Unload)."""
    global _current
    with _lock:
        runtime, _current = _current, None
    if runtime is not None:
        runtime.close()


def _size_with_parts(path: Path, parts: int) -> int | None:
    if parts <= 1:
        return None
    from haiku.rag.local_models.discovery import describe

    return describe(path).size


def chat_model(model: ModelConfig, *, runtime: ModelRuntime | None = None) -> Any:
    """A Pydantic AI chat model answered by the built-in runtime (nothing starts until the first
    request)."""
    if not model.name:
        raise ChatModelError("qa.model.name must be the path of a GGUF model file for the model-file provider")
    runtime = runtime or runtime_for(model.name, context=model.context_tokens)
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = AsyncOpenAI(
        base_url="http://127.0.0.1/v1",  # the transport puts the child's port in
        api_key=runtime.api_key,
        http_client=http_client(runtime),
        max_retries=0,
    )
    chat = OpenAIChatModel(runtime.settings.path.name, provider=OpenAIProvider(openai_client=client))
    _contexts[id(chat)] = runtime.settings.context
    weakref.finalize(chat, _contexts.pop, id(chat), None)
    return chat


# the context each model-file chat model's runtime loads its model with, by the model's id
# (Pydantic AI models are not hashable); dropped when the model is collected
_contexts: dict[int, int] = {}


def loaded_context(model: object) -> int | None:
    """The context (tokens) the built-in runtime loads ``model`` with, for a chat model this
    provider made; None for any other model. The no-tools answer path sizes its request to it."""
    return _contexts.get(id(model))


def http_client(runtime: ModelRuntime) -> Any:
    import httpx

    return httpx.AsyncClient(transport=RuntimeTransport(runtime), timeout=httpx.Timeout(600.0, connect=10.0))


def _transport_class() -> Any:
    import httpx

    class _RuntimeTransport(httpx.AsyncBaseTransport):
        def __init__(self, runtime: ModelRuntime) -> None:
            self.runtime = runtime
            self.inner = httpx.AsyncHTTPTransport()

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            runtime = self.runtime
            base = httpx.URL(await asyncio.to_thread(runtime.ensure_started))
            request.url = request.url.copy_with(scheme=base.scheme, host=base.host, port=base.port)
            request.headers["Host"] = f"{base.host}:{base.port}"
            request.headers["Authorization"] = f"Bearer {runtime.api_key}"
            runtime.request_started()
            try:
                response = await self.inner.handle_async_request(request)
            except httpx.TransportError as exc:
                runtime.request_ended()
                raise await _translated(runtime, exc) from exc
            except BaseException:
                runtime.request_ended()
                raise
            return httpx.Response(
                status_code=response.status_code,
                headers=response.headers,
                stream=_Tracked(response.stream, runtime),
                extensions=response.extensions,
                request=request,
            )

        async def aclose(self) -> None:
            await self.inner.aclose()

    class _Tracked(httpx.AsyncByteStream):
        """The response body; the request counts as in flight until it is closed."""

        def __init__(self, stream: Any, runtime: ModelRuntime) -> None:
            self.stream, self.runtime, self.open = stream, runtime, True

        async def __aiter__(self) -> Any:
            try:
                async for chunk in self.stream:
                    yield chunk
            except httpx.TransportError as exc:
                raise await _translated(self.runtime, exc) from exc

        async def aclose(self) -> None:
            if self.open:
                self.open = False
                self.runtime.request_ended()
            await self.stream.aclose()

    return _RuntimeTransport


async def _translated(runtime: ModelRuntime, exc: Exception) -> Exception:
    """``ModelProcessDied`` when the child is gone (waiting briefly: a killed process may not
    be reaped the instant its socket closes), else ``exc`` itself."""
    died = await asyncio.to_thread(runtime.wait_died, 2.0)
    return died or exc


class _Lazy:
    cls: Any = None


def RuntimeTransport(runtime: ModelRuntime) -> Any:  # noqa: N802 (a class made lazily: httpx)
    if _Lazy.cls is None:
        _Lazy.cls = _transport_class()
    return _Lazy.cls(runtime)


# --- the tool-calling probe ------------------------------------------------------------------


def _key(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return (str(path.resolve()), stat.st_size, stat.st_mtime_ns)


def probe_tools(runtime: ModelRuntime) -> bool:
    """One tiny request offering one tool: True if the model calls it with the right argument."""
    import httpx

    base = runtime.ensure_started()
    runtime.request_started()
    try:
        response = httpx.post(
            f"{base}/v1/chat/completions",
            headers={"Authorization": f"Bearer {runtime.api_key}"},
            json={
                "messages": [{"role": "user", "content": PROBE_PROMPT}],
                "tools": [PROBE_TOOL],
                "tool_choice": "auto",
                "temperature": 0,
                "max_tokens": 96,
            },
            timeout=PROBE_TIMEOUT_SECONDS,
        )
    except httpx.HTTPError as exc:
        raise runtime.died() or ChatModelError(f"the tool-calling check failed: {exc}") from exc
    finally:
        runtime.request_ended()
    if response.status_code != 200:  # a template that cannot render tools is a "no"
        log.info("tool probe for %s: HTTP %s", runtime.settings.path.name, response.status_code)
        return False
    return called_probe_tool(response.json())


def called_probe_tool(body: Any) -> bool:
    try:
        calls = body["choices"][0]["message"].get("tool_calls") or []
        for call in calls:
            function = call["function"]
            arguments = function.get("arguments")
            args = json.loads(arguments) if isinstance(arguments, str) else arguments
            if function.get("name") == "get_page" and isinstance(args, dict) and str(args.get("page")) == "3":
                return True
    except (KeyError, IndexError, TypeError, AttributeError, ValueError):
        pass
    return False


def tools_verdict(runtime: ModelRuntime, cache: Path | None = None) -> bool:
    """Whether the runtime's model calls tools, probed once per file (kept in ``cache``)."""
    key = _key(runtime.settings.path)
    if key in _verdicts:
        return _verdicts[key]
    stored = _read_cache(cache)
    name = "|".join(map(str, key))
    if name in stored:
        _verdicts[key] = bool(stored[name])
        return _verdicts[key]
    verdict = probe_tools(runtime)
    log.info("tool probe for %s: %s", runtime.settings.path.name, "calls tools" if verdict else "no tools")
    _verdicts[key] = verdict
    if cache is not None:
        stored[name] = verdict
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(".tmp")
            tmp.write_text(json.dumps(stored, indent=1))
            tmp.replace(cache)
        except OSError:
            log.warning("could not keep the tool probe's verdict in %s", cache, exc_info=True)
    return verdict


def _read_cache(cache: Path | None) -> dict[str, Any]:
    if cache is None:
        return {}
    try:
        data = json.loads(cache.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def known_tools_verdict(path: str | Path, cache: Path | None = None) -> bool | None:
    """The probe's verdict for ``path`` if it is already known (this session or ``cache``),
    without loading anything; None when the model was never probed (for an app deciding the
    answer path without blocking)."""
    path = Path(path).expanduser()
    try:
        key = _key(path)
    except OSError:
        return None
    if key in _verdicts:
        return _verdicts[key]
    stored = _read_cache(cache).get("|".join(map(str, key)))
    return bool(stored) if stored is not None else None


async def tools_support(
    model: ModelConfig, cache: Path | None = None, *, min_tools_context: int = 8192
) -> bool | None:
    """For ``answer_stream``'s auto mode: the configured ``supports_tools`` when set; for the
    model-file provider, the probe's verdict (in a worker thread: it may load the model); else None."""
    if model.supports_tools is not None or model.provider != PROVIDER or not model.name:
        return model.supports_tools
    runtime = runtime_for(model.name, context=model.context_tokens)
    if runtime.settings.context < min_tools_context:
        # the context chosen to fit memory is too small for the tools path (the answering
        # engine passes its own small-context threshold): no need to probe
        return False
    return await asyncio.to_thread(tools_verdict, runtime, cache)
