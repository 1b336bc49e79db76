"""API keys never leak: after conversations that really used a key (a local OpenAI-compatible
server that refuses requests without it), the key is searched for in every file under the
data dir, the config and the store, in DEBUG logs of every logger, in CLI output, and in the
error output of a failed request run with --debug (our crash report: the traceback)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from haiku.rag.answering import AnswerOptions, answer
from haiku.rag.client import HaikuRAG
from haiku.rag.errors import HaikuRAGError

from .secrets_helpers import KeyedStub, _leaks

HAIKU_RAG = str(Path(sys.executable).parent / "haiku-rag")
QUESTION = "What did the customs brokers record?"


def _config_file(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "config" / "haiku.rag.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(
        f"storage:\n  data_dir: {tmp_path / 'data'}\n"
        "qa:\n  model:\n    provider: openai-compatible\n    name: stub-model\n"
        f"    base_url: {base_url}\n"
    )
    return path


async def test_a_conversation_with_a_keychain_key_leaks_it_nowhere(
    tmp_path, chat_library, keychain, secret, config, caplog, allow_requests
):
    caplog.set_level(logging.DEBUG)  # every logger: ours, httpx, openai, pydantic_ai
    log_file = tmp_path / "data" / "logs" / "debug.log"
    log_file.parent.mkdir(parents=True)
    handler = logging.FileHandler(log_file)
    handler.setLevel(logging.DEBUG)
    logging.getLogger().addHandler(handler)
    try:
        with KeyedStub(secret) as stub:
            config.storage.data_dir = tmp_path / "data"
            config.qa.model.provider, config.qa.model.name = "openai-compatible", "stub-model"
            config.qa.model.base_url = stub.base_url
            async with HaikuRAG(chat_library, config) as client:
                first = await answer(client, QUESTION)
                second = await answer(client, "And the fog?", None, AnswerOptions(mode="fallback"))
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    # The key was really used, on every request.
    assert stub.authorizations and set(stub.authorizations) == {f"Bearer {secret}"}
    assert first.text and first.citations
    assert second.text

    assert secret not in caplog.text
    assert any(r.name.startswith(("httpx", "openai", "pydantic_ai", "haiku")) for r in caplog.records)
    for result in (first, second):
        assert secret not in repr(result)
    assert _leaks(tmp_path, secret) == []  # data dir, config, store, log file, papers


def test_the_cli_with_an_environment_key_leaks_it_nowhere(tmp_path, chat_library, secret):
    env = {
        **os.environ,
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        "OPENAI_COMPATIBLE_API_KEY": secret,
    }

    def run(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
        command = [HAIKU_RAG, "--db", str(chat_library), "--config", str(config), *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)

    with KeyedStub(secret) as stub:
        config = _config_file(tmp_path, stub.base_url)
        answered = run(config, "ask", QUESTION, "--json")
        settings = run(config, "settings")
    assert answered.returncode == 0, answered.stderr
    assert set(stub.authorizations) == {f"Bearer {secret}"}

    # A request that fails, with --debug: the traceback is the crash report.
    with KeyedStub(secret, fail=True) as failing:
        config = _config_file(tmp_path, failing.base_url)
        crashed = run(config, "--debug", "ask", QUESTION)
        plain = run(config, "ask", QUESTION)
    assert failing.authorizations and crashed.returncode != 0 and plain.returncode != 0
    assert "Traceback" in crashed.stderr  # the full report was printed ...
    for output in (answered, settings, crashed, plain):
        assert secret not in output.stdout + output.stderr  # ... and holds no key
    assert _leaks(tmp_path, secret) == []


async def test_an_error_from_the_provider_carries_no_key(tmp_path, chat_library, keychain, secret, config, allow_requests):
    import traceback

    with KeyedStub(secret, fail=True) as stub:
        config.qa.model.provider, config.qa.model.name = "openai-compatible", "stub-model"
        config.qa.model.base_url = stub.base_url
        async with HaikuRAG(chat_library, config) as client:
            with pytest.raises(HaikuRAGError) as raised:
                await answer(client, QUESTION)
    error: Any = raised.value
    text = "".join(traceback.format_exception(error)) + repr(error.__dict__)
    assert stub.authorizations and secret not in text
