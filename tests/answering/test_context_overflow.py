"""A request larger than the model's context is said in words a person reads, never as the
server's raw JSON: the error is typed (``ChatContextTooSmall``), so the app's turn and banner
word it, over the real HTTP path against a loopback server giving the real 400 bodies."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from context_overflow_bodies import LLAMA_CPP, LM_STUDIO, OLLAMA, OPENAI

from haiku.rag import answering
from haiku.rag.answering import AnswerOptions
from haiku.rag.errors import ChatContextTooSmall


class Refusing:
    """An OpenAI-compatible server on 127.0.0.1 that answers every chat request with 400 ``body``."""

    def __init__(self, body: dict[str, Any]) -> None:
        raw = json.dumps(body).encode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        host, port = self.server.server_address[:2]
        self.base_url = f"http://{host}:{port}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def model_at(base_url: str) -> Any:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel("small-model", provider=OpenAIProvider(base_url=base_url, api_key="local"))


@pytest.fixture(autouse=True)
def _requests_allowed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    import pydantic_ai.models

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    yield


@pytest.mark.parametrize("mode", ["fallback", "tools"])
async def test_llama_cpp_s_context_refusal_is_worded_with_both_sizes(lent_client, mode) -> None:
    server = Refusing(LLAMA_CPP)
    try:
        with pytest.raises(ChatContextTooSmall) as caught:
            await answering.answer(lent_client, "What do otters eat?", None, AnswerOptions(mode=mode), model=model_at(server.base_url))
    finally:
        server.close()
    error = caught.value
    assert (error.context_tokens, error.request_tokens) == (2048, 7942)
    assert str(error) == (
        "This model's context (2,048 tokens) is too small for the question and its passages "
        "(7,942 tokens). Choose a model with a larger context, or show the passages."
    )


@pytest.mark.parametrize(
    ("body", "sizes"),
    [(OPENAI, (2048, 7942)), (LM_STUDIO, (2048, 7942)), (OLLAMA, (None, None))],
    ids=["openai", "lm-studio", "ollama"],
)
async def test_other_servers_context_refusals_are_the_same_error(lent_client, body, sizes) -> None:
    server = Refusing(body)
    try:
        with pytest.raises(ChatContextTooSmall) as caught:
            await answering.answer(lent_client, "What do otters eat?", None, AnswerOptions(mode="fallback"), model=model_at(server.base_url))
    finally:
        server.close()
    error = caught.value
    assert (error.context_tokens, error.request_tokens) == sizes
    text = str(error)
    assert text.startswith("This model's context") and "Choose a model with a larger context" in text
    assert "{" not in text and "status_code" not in text
