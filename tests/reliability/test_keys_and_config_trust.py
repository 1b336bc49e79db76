"""A secret only goes to the endpoint the user chose, and is never printed (issue 32).

- A ``haiku.rag.yaml`` in the current folder (a shared project, a downloaded data set) that
  points the chat model at its own server does not receive the user's API key: the file is
  refused unless named with ``--config``; the CLI says which settings file it read.
- Credentials in a base URL (``http://user:password@host/v1``) are masked in ``settings``,
  in error messages, in the log, and in the ``--debug`` crash report, including a provider's
  401 body echoing the key and the password.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from openai_stub_server import StubOpenAI

from .secrets_helpers import KeyedStub

HAIKU_RAG = str(Path(sys.executable).parent / "haiku-rag")
QUESTION = "What did the customs brokers record?"
PASSWORD = "pw-7f3a9c2e1b5d"


def run(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HAIKU_RAG, *args], capture_output=True, text=True, timeout=600, cwd=cwd, env=env)


def model_yaml(base_url: str) -> str:
    return f"qa:\n  model:\n    provider: openai-compatible\n    name: stub-model\n    base_url: {base_url}\n"


def user_env(tmp_path: Path, secret: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        "OPENAI_COMPATIBLE_API_KEY": secret,
        "HAIKU_RAG_STORAGE__DATA_DIR": str(tmp_path / "data"),
    }


def test_a_working_folder_config_cannot_redirect_the_users_key(tmp_path, chat_library, secret):
    env = user_env(tmp_path, secret)
    shared = tmp_path / "downloaded-dataset"
    shared.mkdir()
    with KeyedStub(secret) as own, KeyedStub("not-the-key") as foreign:
        (tmp_path / "data" / "haiku.rag.yaml").write_text(model_yaml(own.base_url))
        (shared / "haiku.rag.yaml").write_text(model_yaml(foreign.base_url))

        refused = run("--db", str(chat_library), "ask", QUESTION, cwd=shared, env=env)
        assert foreign.authorizations == [], "the key went to the working folder's server"
        assert refused.returncode == 1
        assert "qa.model.base_url" in refused.stderr and "--config" in refused.stderr
        assert str(shared / "haiku.rag.yaml") in refused.stderr

        # from any other folder, the user's own settings (their data folder) are used and named
        answered = run("--db", str(chat_library), "ask", QUESTION, cwd=tmp_path, env=env)
        assert answered.returncode == 0, answered.stderr
        assert own.authorizations and set(own.authorizations) == {f"Bearer {secret}"}
        settings = run("settings", cwd=tmp_path, env=env)
        assert f"# settings file read: {tmp_path / 'data' / 'haiku.rag.yaml'}" in settings.stdout

    # a working-folder file that does not say where requests go is read, and said to be
    (shared / "haiku.rag.yaml").write_text("search:\n  limit: 3\n")
    listed = run("--db", str(chat_library), "list", cwd=shared, env=env)
    assert listed.returncode == 0, listed.stderr
    assert f"using settings from {shared / 'haiku.rag.yaml'} (the current folder)" in listed.stderr
    settings = run("settings", cwd=shared, env=env)
    assert f"# settings file read: {shared / 'haiku.rag.yaml'}" in settings.stdout
    assert "limit: 3" in settings.stdout


class EchoingStub(StubOpenAI):
    """A provider that refuses every request with a 401 whose body echoes what it was sent:
    the key, and the URL's user and password (some proxies do)."""

    def __init__(self) -> None:
        self.authorizations: list[str | None] = []
        super().__init__()

    def _handler(self) -> type:
        base, stub = super()._handler(), self

        class Echoing(base):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:
                auth = self.headers.get("Authorization")
                stub.authorizations.append(auth)
                body = {"error": {"message": f"Incorrect API key provided: {auth}; user alice:{PASSWORD}", "type": "auth"}}
                self._json(body, status=401)

        return Echoing


def test_credentials_in_a_base_url_are_never_printed(tmp_path, chat_library, secret):
    env = user_env(tmp_path, secret)
    config = tmp_path / "mine.yaml"
    with EchoingStub() as stub:
        with_password = stub.base_url.replace("http://", f"http://alice:{PASSWORD}@")
        config.write_text(model_yaml(with_password))
        settings = run("--config", str(config), "settings", cwd=tmp_path, env=env)
        plain = run("--config", str(config), "--db", str(chat_library), "ask", QUESTION, cwd=tmp_path, env=env)
        debug = run("--config", str(config), "--db", str(chat_library), "--debug", "ask", QUESTION, cwd=tmp_path, env=env)
    assert stub.authorizations, "the provider was really asked"
    assert settings.returncode == 0 and "http://***@127.0.0.1" in settings.stdout
    assert plain.returncode == 1 and debug.returncode == 1
    assert "Traceback" in debug.stderr  # the crash report is there ...
    log = (tmp_path / "data" / "logs" / "haiku-rag.log").read_text()
    assert "401" in log or "API key" in log
    for output in (settings.stdout, settings.stderr, plain.stdout, plain.stderr, debug.stdout, debug.stderr, log):
        assert PASSWORD not in output  # ... and no credential in it, nor in the log
        assert secret not in output
