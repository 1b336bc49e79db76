"""ModelsService: discovery against local servers on 127.0.0.1, connection tests, the keychain,
and the persisted choice (never with a key)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail
from keyring.errors import PasswordDeleteError
from openai_stub_server import StubOpenAI

from haiku.rag.models import KEYRING_SERVICE
from haiku_desk.services.models import (
    NO_KEYCHAIN,
    ChatModelChoice,
    KeychainUnavailable,
    ModelsService,
)
from haiku_desk.services.notifications import Notifications

SECRET = "sk-test-4f1c9e-do-not-store"


class MemoryKeyring(KeyringBackend):
    """A working keychain backend that lives in memory (the test machine has none)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if (service, username) not in self.items:
            raise PasswordDeleteError("not stored")
        del self.items[(service, username)]


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


@pytest.fixture
def no_keyring() -> Iterator[None]:
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(previous)


class StubModelServer:
    """Ollama's ``/api/tags`` and ``/api/show``, and an OpenAI-style ``/v1/models``, on 127.0.0.1."""

    def __init__(self, tags: list[str], tool_models: set[str]) -> None:
        self.tags = tags
        self.tool_models = tool_models
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> StubModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, body: Any, status: int = 200) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                stub.requests.append(("GET", self.path, dict(self.headers)))
                if self.path == "/api/tags":
                    models = [{"name": n, "model": n, "size": 1} for n in stub.tags]
                    self._json({"models": models})
                elif self.path == "/v1/models":
                    if self.headers.get("Authorization") not in (None, f"Bearer {SECRET}"):
                        self._json({"error": "bad key"}, status=401)
                        return
                    self._json({"object": "list", "data": [{"id": n} for n in stub.tags]})
                else:
                    self._json({"error": "not found"}, status=404)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                stub.requests.append(("POST", self.path, dict(self.headers)))
                if self.path == "/api/show" and body.get("model") in stub.tags:
                    tools = ["tools"] if body["model"] in stub.tool_models else []
                    self._json({"capabilities": ["completion", *tools]})
                else:
                    self._json({"error": "not found"}, status=404)

        return Handler


@pytest.fixture
def server() -> Iterator[StubModelServer]:
    with StubModelServer(["qwen3:8b", "gemma:2b"], tool_models={"qwen3:8b"}) as stub:
        yield stub


@pytest.fixture
def models(config) -> ModelsService:
    return ModelsService(config, Notifications())


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- discovery ----------------------------------------------------------------------------


async def test_ollama_models_are_discovered_from_its_api(models, server):
    assert await models.discover("ollama", server.url) == ["qwen3:8b", "gemma:2b"]
    assert ("GET", "/api/tags") in [(m, p) for m, p, _ in server.requests]


async def test_ollama_discovery_accepts_the_v1_url_too(models, server):
    assert await models.discover("ollama", server.url + "/v1") == ["qwen3:8b", "gemma:2b"]


async def test_ollama_reports_which_models_call_tools(models, server):
    assert await models.ollama_supports_tools("qwen3:8b", server.url) is True
    assert await models.ollama_supports_tools("gemma:2b", server.url) is False
    report = await models.test_connection("ollama", server.url, "gemma:2b")
    assert report.ok and report.supports_tools is False and "no-tool" in report.message


async def test_an_unreachable_server_is_a_one_line_reason(models):
    url = f"http://127.0.0.1:{free_port()}"
    report = await models.test_connection("ollama", url, "qwen3:8b")
    assert not report.ok
    assert report.message.startswith(f"cannot reach {url}/api/tags")
    assert "is the server running?" in report.message


async def test_a_missing_model_is_named(models, server):
    report = await models.test_connection("ollama", server.url, "llama9")
    assert not report.ok and "no model named 'llama9'" in report.message
    assert report.models == ["qwen3:8b", "gemma:2b"]


async def test_openai_compatible_models_are_listed_with_the_key_from_the_keychain(
    models, server, memory_keyring
):
    models.store_key("openai-compatible", SECRET)
    report = await models.test_connection("openai-compatible", server.url + "/v1", "qwen3:8b")
    assert report.ok and report.models == ["qwen3:8b", "gemma:2b"]
    headers = next(h for m, p, h in server.requests if p == "/v1/models")
    assert headers["Authorization"] == f"Bearer {SECRET}"


async def test_a_refused_key_is_reported_without_the_key(models, server):
    report = await models.test_connection(
        "openai-compatible", server.url + "/v1", api_key="sk-wrong-key"
    )
    assert not report.ok and "refused the key (HTTP 401)" in report.message
    assert "sk-wrong-key" not in report.message


# --- keychain -----------------------------------------------------------------------------


def test_keys_go_to_the_keychain_and_never_into_files(models, memory_keyring, config):
    models.store_key("openai", SECRET)
    assert memory_keyring.items[(KEYRING_SERVICE, "openai")] == SECRET
    assert models.has_key("openai")
    models.choose(ChatModelChoice(provider="openai", name="gpt-5-mini"))

    built = models.create_model()  # the key reaches the model from the keychain
    assert built.client.api_key == SECRET
    for path in config.storage.data_dir.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="ignore"), path

    models.delete_key("openai")
    assert not models.has_key("openai")
    models.delete_key("openai")  # deleting twice is fine


def test_without_a_keychain_storing_a_key_says_what_to_do(models, no_keyring):
    assert not models.keychain_available()
    with pytest.raises(KeychainUnavailable) as raised:
        models.store_key("anthropic", SECRET)
    assert str(raised.value) == NO_KEYCHAIN and SECRET not in str(raised.value)
    assert not models.has_key("anthropic")  # reading degrades to "no key"


def test_a_hosted_provider_without_a_key_says_where_to_put_one(models, memory_keyring, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    models.choose(ChatModelChoice(provider="anthropic", name="claude-sonnet-4-5"))
    with pytest.raises(Exception, match="keychain"):
        models.create_model()


# --- the persisted choice -----------------------------------------------------------------


def test_the_choice_is_persisted_typed_and_versioned_and_reloaded(config):
    first = ModelsService(config, Notifications())
    assert not first.is_configured() and first.create_model() is None
    changes = []
    first.model_changed.connect(changes.append)
    first.choose(
        ChatModelChoice(provider="ollama", name="gemma:2b", supports_tools=False, base_url=None)
    )
    assert changes[-1].name == "gemma:2b"
    saved = json.loads(first.settings_path.read_text())
    assert saved["version"] == 2 and saved["model"]["name"] == "gemma:2b"

    again = ModelsService(config, Notifications())
    assert again.is_configured() and not again.supports_tools()
    assert again.model_config().provider == "ollama"
    assert again.create_model().model_name == "gemma:2b"

    again.choose(None)
    assert not ModelsService(config, Notifications()).is_configured()


def test_a_settings_file_from_a_newer_version_is_not_misread(config):
    models = ModelsService(config, Notifications())
    models.settings_path.parent.mkdir(parents=True, exist_ok=True)
    models.settings_path.write_text(json.dumps({"version": 99, "model": {"provider": "x"}}))
    notifications = Notifications()
    reread = ModelsService(config, notifications)
    assert not reread.is_configured()
    assert "newer haiku-desk" in notifications.history[-1].message


def test_without_a_choice_the_yaml_model_is_used(config):
    config.qa.model.provider = "ollama"
    config.qa.model.name = "qwen3"
    models = ModelsService(config, Notifications())
    assert models.is_configured() and models.model_config().name == "qwen3"


def test_a_chosen_openai_compatible_model_answers_over_http(qloop, config, tmp_path, monkeypatch):
    """The whole production path: choice -> model factory -> HTTP streaming -> chat service.

    Real model requests are allowed for this test only: the socket guard keeps them on loopback.
    """
    import pydantic_ai.models
    from qt_helpers import run_until

    from app.chat_helpers import build_library, open_library
    from haiku_desk.services.chat import ChatService

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    built = build_library(tmp_path / "lib")
    notifications = Notifications()
    library = open_library(built, qloop, notifications)
    try:
        with StubOpenAI() as stub:
            models = ModelsService(config, notifications)
            models.choose(
                ChatModelChoice(
                    provider="openai-compatible", name=stub.model, base_url=stub.base_url
                )
            )
            chat = ChatService(library, models, notifications)
            operation = chat.ask("kerosene shortage")
            deltas: list[str] = []
            operation.text_delta.connect(deltas.append)
            run_until(qloop, lambda: not operation.running)
            assert operation.error is None, operation.error
            turn = operation.result
            assert turn.mode == "tools" and turn.grounding == "grounded"
            assert turn.answer.startswith("According to the library:")
            assert "".join(deltas) == turn.answer
            assert any(r.get("stream") for r in stub.requests)
    finally:
        library.close()
