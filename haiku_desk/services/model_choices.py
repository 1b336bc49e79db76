"""The model and search choices the app keeps (``<data_dir>/haiku-desk/settings.json``): the
chat model (and every provider's last URL and model), the reranker and each library's embedder,
as typed values; with the provider names and default endpoints the settings dialog shows. Keys
are never part of them.

The file is versioned: ``migrate_settings`` brings an older file's content up to
``SETTINGS_VERSION`` without dropping anything (version 1 had no per-provider memory: its
chosen model becomes its provider's)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from haiku.rag.config import EmbeddingsConfig

__all__ = [
    "DEFAULT_BASE_URLS",
    "DISCOVERY_TIMEOUT",
    "EMBEDDER_LABELS",
    "HOSTED",
    "NO_KEYCHAIN",
    "PROVIDER_LABELS",
    "SETTINGS_DIR_NAME",
    "SETTINGS_FILE_NAME",
    "SETTINGS_VERSION",
    "SERVERLESS_EMBEDDERS",
    "ChatModelChoice",
    "ConnectionReport",
    "DesktopSettings",
    "migrate_settings",
    "EmbedderChoice",
    "EmbedderProvider",
    "KeychainUnavailable",
    "Provider",
    "RerankChoice",
]

Provider = Literal["ollama", "openai-compatible", "openai", "anthropic", "google", "model-file"]

SETTINGS_VERSION = 2
SETTINGS_DIR_NAME = "haiku-desk"
SETTINGS_FILE_NAME = "settings.json"
DISCOVERY_TIMEOUT = 5.0

PROVIDER_LABELS: dict[str, str] = {
    "ollama": "Ollama",
    "openai-compatible": "OpenAI-compatible endpoint (LM Studio, llama.cpp, vLLM)",
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "google": "Google",
    # a GGUF file on this computer, run by the built-in llama.cpp (haiku.rag.local_models)
    "model-file": "Model file on this computer (built in)",
}
DEFAULT_BASE_URLS: dict[str, str] = {
    "ollama": "http://localhost:11434",
    "openai-compatible": "http://localhost:1234/v1",
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "google": "https://generativelanguage.googleapis.com",
}
HOSTED = ("openai", "anthropic", "google")
NO_KEYCHAIN = (
    "No OS keychain is available, so the key cannot be stored. Start or unlock your desktop's "
    "keychain (GNOME Keyring, KWallet, macOS Keychain, Windows Credential Manager), or set the "
    "provider's environment variable (e.g. OPENAI_API_KEY) before starting haiku-desk."
)


class ChatModelChoice(BaseModel):
    """The model the user chose: everything but the key."""

    provider: Provider
    name: str
    base_url: str | None = None
    # None: assume tool calling works; False: answer from passages (the no-tool fallback)
    supports_tools: bool | None = None
    vision: bool = False


EmbedderProvider = Literal["local", "ollama", "openai-compatible", "model-file"]
EMBEDDER_LABELS: dict[str, str] = {
    "local": "Built-in, offline",
    "ollama": "Ollama",
    "openai-compatible": "OpenAI-compatible endpoint (LM Studio, llama.cpp, vLLM)",
    # a GGUF embedding model on this computer, run by the built-in llama.cpp (no server)
    "model-file": "Model file on this computer (built in)",
}
# embedders with no server (no URL to ask for)
SERVERLESS_EMBEDDERS = ("local", "model-file")


class EmbedderChoice(BaseModel):
    """The embedder a library's vectors come from (its key, if any, is never here)."""

    provider: EmbedderProvider = "local"
    model: str | None = None  # None: the provider's default (local: all-MiniLM-L6-v2)
    base_url: str | None = None

    def to_config(self, base: EmbeddingsConfig) -> EmbeddingsConfig:
        # the vector size is read from the new model's first answer
        return base.model_copy(
            update={"provider": self.provider, "model": self.model, "base_url": self.base_url, "vector_dim": None}
        )


class RerankChoice(BaseModel):
    """Off, or a /rerank endpoint (llama.cpp --reranking, vLLM, an OpenAI-compatible server)."""

    provider: Literal["none", "http"] = "none"
    base_url: str | None = None
    model: str | None = None


class DesktopSettings(BaseModel):
    version: int = SETTINGS_VERSION
    model: ChatModelChoice | None = None  # None: no model, search only
    # every provider's last URL and model (version 2): switching to another provider, or to
    # search only, and back finds them again
    providers: dict[Provider, ChatModelChoice] = {}
    rerank: RerankChoice | None = None
    # library location -> the embedder its vectors were last rebuilt with from the app
    embedders: dict[str, EmbedderChoice] = {}


def migrate_settings(raw: dict[str, Any]) -> dict[str, Any]:
    """An older settings file's content as the current version's; nothing is dropped."""
    version = raw.get("version", 1)
    if not isinstance(version, int) or version >= SETTINGS_VERSION:
        return raw
    migrated = dict(raw)
    if version < 2:  # the chosen model is its provider's remembered one
        model = raw.get("model")
        provider = model.get("provider") if isinstance(model, dict) else None
        migrated["providers"] = {provider: model} if provider else {}
    migrated["version"] = SETTINGS_VERSION
    return migrated


class KeychainUnavailable(Exception):
    """There is no usable OS keychain backend; the message says what to do."""


@dataclass
class ConnectionReport:
    ok: bool
    message: str
    models: list[str] = field(default_factory=list)
    supports_tools: bool | None = None  # when the server says (Ollama /api/show)
    # how each of ``models`` is shown, when its name is not for reading (a model file's path:
    # "smollm2:135m · 135M · Q4_1 · 92 MB · 8k context", the path kept as the item's value)
    labels: list[str] = field(default_factory=list)
