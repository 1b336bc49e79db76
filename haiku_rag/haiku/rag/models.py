"""Chat models from configuration, through Pydantic AI's providers (imported lazily).

API keys are never read from config files: an explicit argument wins, then the OS keychain
(service ``haiku-desk``, user = provider name, as the desktop app stores them), then the
provider's usual environment variable.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from haiku.rag.config import AppConfig, ModelConfig
from haiku.rag.errors import HaikuRAGError, ModelNotConfiguredError, register_secret

log = logging.getLogger("haiku.rag")

KEYRING_SERVICE = "haiku-desk"
PROVIDERS = ("ollama", "openai-compatible", "openai", "anthropic", "google", "model-file")
_KEY_ENV = {
    "openai": ("OPENAI_API_KEY",),
    "openai-compatible": ("OPENAI_COMPATIBLE_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
}
HOW_TO_CONNECT = (
    "no chat model is configured: set qa.model.provider (ollama, openai-compatible, openai, "
    "anthropic or google) and qa.model.name in haiku.rag.yaml, e.g. provider: ollama, name: qwen3"
)


def keychain_key(provider: str) -> str | None:
    """The provider's key from the OS keychain, or None (also when no keychain exists)."""
    try:
        import keyring
        from keyring.errors import KeyringError

        try:
            return keyring.get_password(KEYRING_SERVICE, provider)
        except KeyringError:
            return None
    except Exception:  # a broken backend must not stop search-only use
        log.debug("keychain unavailable", exc_info=True)
        return None


def resolve_api_key(provider: str, explicit: str | None = None) -> str | None:
    key = _resolve_api_key(provider, explicit)
    register_secret(key)  # masked in every error message from now on
    return key


def _resolve_api_key(provider: str, explicit: str | None) -> str | None:
    if explicit:
        return explicit
    stored = keychain_key(provider)
    if stored:
        return stored
    for name in _KEY_ENV.get(provider, ()):
        if os.environ.get(name):
            return os.environ[name]
    return None


def is_configured(model: ModelConfig) -> bool:
    return bool(model.provider and model.name)


def get_model(model: ModelConfig, config: AppConfig, *, api_key: str | None = None) -> Any:
    """A Pydantic AI model for ``model`` (raises ``ModelNotConfiguredError`` when unset)."""
    if not is_configured(model):
        raise ModelNotConfiguredError(HOW_TO_CONNECT)
    provider, name = model.provider, model.name
    assert provider is not None and name is not None
    if provider == "model-file":  # a GGUF file run by the built-in llama.cpp (haiku.rag.local_models)
        from haiku.rag.local_models.provider import chat_model

        return chat_model(model)
    key = resolve_api_key(provider, api_key)

    if provider == "ollama":
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.ollama import OllamaProvider

        base = (model.base_url or config.providers.ollama.base_url).rstrip("/")
        return OpenAIChatModel(name, provider=OllamaProvider(base_url=_v1(base), api_key=key))
    if provider == "openai-compatible":
        if not model.base_url:
            raise HaikuRAGError("qa.model.base_url must be set for an openai-compatible model (e.g. http://localhost:1234/v1)")
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        return OpenAIChatModel(name, provider=OpenAIProvider(base_url=model.base_url, api_key=key or "not-needed"))
    if provider == "openai":
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        _require_key(provider, key)
        return OpenAIChatModel(name, provider=OpenAIProvider(base_url=model.base_url, api_key=key))
    if provider == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        _require_key(provider, key)
        return AnthropicModel(name, provider=AnthropicProvider(api_key=key))
    if provider == "google":
        from pydantic_ai.models.google import GoogleModel
        from pydantic_ai.providers.google import GoogleProvider

        _require_key(provider, key)
        return GoogleModel(name, provider=GoogleProvider(api_key=key))
    raise HaikuRAGError(f"unknown model provider {provider!r}; use one of {', '.join(PROVIDERS)}")


def model_settings(model: ModelConfig) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if model.temperature is not None:
        settings["temperature"] = model.temperature
    if model.max_tokens is not None:
        settings["max_tokens"] = model.max_tokens
    return settings


def _v1(base: str) -> str:
    return base if base.endswith("/v1") else base + "/v1"


def _require_key(provider: str, key: str | None) -> None:
    if not key:
        names = " or ".join(_KEY_ENV[provider])
        raise HaikuRAGError(
            f"no API key for {provider}: store one in the OS keychain from haiku-desk's model "
            f"settings, or set {names}"
        )
