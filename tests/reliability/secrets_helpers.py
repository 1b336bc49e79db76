"""Shared by the secrets tests: a local server that requires the key, an in-memory keychain
backend, and a byte search for the key."""

from __future__ import annotations

from pathlib import Path

from keyring.backend import KeyringBackend
from openai_stub_server import StubOpenAI


class KeyedStub(StubOpenAI):
    """The scripted server, refusing any request without ``Bearer <key>`` (or failing every
    request with a 500 when ``fail`` is set)."""

    def __init__(self, key: str, fail: bool = False) -> None:
        self.key, self.fail = key, fail
        self.authorizations: list[str | None] = []
        super().__init__()

    def _handler(self) -> type:
        base, stub = super()._handler(), self

        class Keyed(base):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:
                auth = self.headers.get("Authorization")
                stub.authorizations.append(auth)
                if auth != f"Bearer {stub.key}":
                    self._json({"error": {"message": "invalid api key", "type": "auth"}}, status=401)
                elif stub.fail:
                    self._json({"error": {"message": "the model crashed", "type": "server"}}, status=500)
                else:
                    super().do_POST()

        return Keyed


class MemoryKeyring(KeyringBackend):
    """A real keyring backend (the OS keychain's interface), kept in memory for the test."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.passwords.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.passwords[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.passwords.pop((service, username), None)


def _leaks(root: Path, secret: str) -> list[str]:
    """Every file below ``root`` holding the key (raw bytes, so binary store files count)."""
    needle = secret.encode()
    return [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]
