"""Chat models: the chosen provider and model, discovery, connection tests, keys in the keychain;
and the search settings chosen beside them: the reranker, and each library's embedder (changing
it re-embeds the library as an operation: ``rebuild_vectors``).

The choice is kept in a small typed, versioned settings file next to the library
(``<data_dir>/haiku-desk/settings.json``); it overrides ``qa.model`` from haiku.rag's YAML
configuration. API keys are never written there, nor logged: they live only in the OS keychain
(service ``haiku-desk``, user = provider name), which is where ``haiku.rag.models`` looks first.
"""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from PySide6.QtCore import QObject, Signal

from haiku.rag.config import AppConfig, ModelConfig, RerankConfig
from haiku.rag.files import write_text_atomic
from haiku.rag.models import KEYRING_SERVICE
from haiku_desk.services.model_choices import (
    DEFAULT_BASE_URLS,
    DISCOVERY_TIMEOUT,
    EMBEDDER_LABELS,
    HOSTED,
    NO_KEYCHAIN,
    PROVIDER_LABELS,
    SERVERLESS_EMBEDDERS,
    SETTINGS_DIR_NAME,
    SETTINGS_FILE_NAME,
    SETTINGS_VERSION,
    ChatModelChoice,
    ConnectionReport,
    DesktopSettings,
    EmbedderChoice,
    EmbedderProvider,
    KeychainUnavailable,
    Provider,
    RerankChoice,
    migrate_settings,
)
from haiku_desk.services.model_discovery import (
    check_provider,
    embedding_model_files,
    list_models,
    model_file_report,
    ollama_tools,
)
from haiku_desk.services.notifications import Notifications

log = logging.getLogger("haiku_desk")

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from haiku_desk.bridge import Operation
    from haiku_desk.services.library import LibraryService

# The values live in model_choices.py and discovery in model_discovery.py; the views and tests
# take them from here too.
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
    "EmbedderChoice",
    "EmbedderProvider",
    "KeychainUnavailable",
    "ModelsService",
    "Provider",
    "RerankChoice",
]


class ModelsService(QObject):
    """Which chat model answers, and everything needed to connect one."""

    model_changed = Signal(object)  # haiku.rag ModelConfig, or None when none is configured
    rerank_changed = Signal(object)  # RerankChoice
    embedder_changed = Signal(object)  # EmbedderChoice, after a rebuild finished

    def __init__(
        self,
        config: AppConfig,
        notifications: Notifications,
        parent: QObject | None = None,
        *,
        library: LibraryService | None = None,
    ) -> None:
        super().__init__(parent)
        self.config = config
        self.notifications = notifications
        self.settings_path = Path(config.storage.data_dir) / SETTINGS_DIR_NAME / SETTINGS_FILE_NAME
        self.settings = self._read_settings()
        self._instance: Model | None = None
        self._instance_supports_tools = True
        self.library = library
        self.rebuild_operation: Operation | None = None
        # the catalog's downloads (Settings › "Download a recommended model…"), kept here so
        # a download goes on when the dialogs close; its folder is searched for model files
        from haiku_desk.services.model_downloads import MODELS_FOLDER_NAME, ModelDownloads

        self.downloads = ModelDownloads(self.settings_path.parent / MODELS_FOLDER_NAME, self)
        if self.settings.rerank is not None:
            self._apply_rerank(self.settings.rerank)
        # The embedder of a library the app never rebuilt (haiku.rag's configuration), kept to
        # come back to when switching from a library that was rebuilt with another one.
        self._configured_embeddings = config.embeddings.model_copy(deep=True)
        if library is not None:
            self._use_library_embedder(str(library.db_path))
            # emitted before the next library opens: its client must embed with its own model
            library.library_changed.connect(self._use_library_embedder)

    def _use_library_embedder(self, db_path: str) -> None:
        """Embed with the model ``db_path``'s vectors were last rebuilt with from the app, else
        with the configured one (a library records its embedder and refuses another)."""
        chosen = self.settings.embedders.get(db_path)
        base = self._configured_embeddings.model_copy(deep=True)
        self.config.embeddings = chosen.to_config(base) if chosen is not None else base

    # --- the choice ---------------------------------------------------------------------

    @property
    def choice(self) -> ChatModelChoice | None:
        return self.settings.model

    def model_config(self) -> ModelConfig:
        """The effective ``qa.model``: the app's choice when made, else haiku.rag's config."""
        base = self.config.qa.model
        choice = self.settings.model
        if choice is None:
            return base.model_copy()
        return base.model_copy(
            update={
                "provider": choice.provider,
                "name": choice.name,
                "base_url": choice.base_url,
                "supports_tools": choice.supports_tools,
                "vision": choice.vision,
            }
        )

    def is_configured(self) -> bool:
        if self._instance is not None:
            return True
        model = self.model_config()
        return bool(model.provider and model.name)

    def supports_tools(self) -> bool:
        if self._instance is not None:
            return self._instance_supports_tools
        model = self.model_config()
        if model.provider == "model-file" and model.supports_tools is None and model.name:
            # a model file calls tools only once its probe said so (Test runs it); until
            # then it answers from retrieved passages, as most small local models must
            from haiku.rag.local_models.provider import known_tools_verdict

            return known_tools_verdict(model.name, self.probe_cache) is True
        return model.supports_tools is not False

    def describe(self) -> str:
        if self._instance is not None:
            return self._instance.model_name
        model = self.model_config()
        if not (model.provider and model.name):
            return "No chat model (search only)"
        name = model.name
        if model.provider == "model-file":
            name = model_file_name(name)
        return f"{name} ({PROVIDER_LABELS.get(model.provider, model.provider).split(' (')[0]})"

    def choose(self, choice: ChatModelChoice | None, *, also: list[ChatModelChoice] | None = None) -> None:
        """Remember ``choice`` (``None``: no model, search only) and announce it. Each
        provider's URL and model stay remembered (``remembered``), with ``also``'s: the other
        providers' edited in the same dialog."""
        providers = dict(self.settings.providers)
        for kept in [*(also or []), *([choice] if choice is not None else [])]:
            providers[kept.provider] = kept
        self.settings = self.settings.model_copy(update={"model": choice, "providers": providers})
        self._write_settings()
        self.model_changed.emit(self.model_config() if self.is_configured() else None)

    def remembered(self, provider: str) -> ChatModelChoice | None:
        """The URL and model last chosen for ``provider`` (kept while another provider, or
        search only, is chosen)."""
        return self.settings.providers.get(provider)  # type: ignore[call-overload]

    @property
    def uses_model_instance(self) -> bool:
        return self._instance is not None

    def use_model_instance(self, model: Model | None, *, supports_tools: bool = True) -> None:
        """Answer with this Pydantic AI model object instead of the chosen one (embedding hosts,
        tests with ``FunctionModel``); ``None`` returns to the chosen model. Not persisted."""
        self._instance = model
        self._instance_supports_tools = supports_tools
        self.model_changed.emit(self.model_config() if self.is_configured() else None)

    def create_model(self) -> Model | None:
        """The model that answers now, or ``None`` for search-only mode.

        Raises ``HaikuRAGError`` with a one-line reason (missing key, missing base URL).
        """
        if self._instance is not None:
            return self._instance
        model = self.model_config()
        if not (model.provider and model.name):
            return None
        from haiku.rag.models import get_model

        return get_model(model, self.config)

    # --- search: reranker and embedder ----------------------------------------------------

    def rerank_choice(self) -> RerankChoice:
        rerank = self.config.search.rerank
        if rerank.provider != "http":
            return RerankChoice()  # cohere/jina from YAML are not offered here; shown as off
        return RerankChoice(provider="http", base_url=rerank.base_url, model=rerank.model)

    def choose_reranker(self, choice: RerankChoice) -> None:
        """Rerank every search from now on (``provider="http"``) or stop reranking."""
        if choice.provider == "http" and not (choice.base_url or "").strip():
            raise ValueError("a rerank endpoint needs its URL, e.g. http://localhost:8080/v1")
        self.settings = self.settings.model_copy(update={"rerank": choice})
        self._write_settings()
        self._apply_rerank(choice)
        self.rerank_changed.emit(choice)

    def _apply_rerank(self, choice: RerankChoice) -> None:
        # the open library's client reads this on its next search (HaikuRAG.reranker)
        current = self.config.search.rerank
        self.config.search.rerank = RerankConfig(
            provider=choice.provider,
            base_url=choice.base_url,
            model=choice.model,
            pool=current.pool,
            timeout_seconds=current.timeout_seconds,
        )

    @staticmethod
    def installed_embedders() -> list[tuple[str, str, int]]:
        from haiku.rag.client import installed_embedders

        return installed_embedders()

    def embedding_model_files(self) -> list[tuple[str, str]]:
        """(description, path) of the embedding model files on this computer."""
        return embedding_model_files(self.model_file_search_roots())

    def embedder_choice(self) -> EmbedderChoice:
        """The embedder the open library's vectors come from (as configured)."""
        cfg = self.config.embeddings
        provider = cfg.provider if cfg.provider != "openai" else "openai-compatible"
        return EmbedderChoice(provider=provider, model=cfg.model, base_url=cfg.base_url)

    @property
    def rebuilding(self) -> bool:
        return self.rebuild_operation is not None and self.rebuild_operation.running

    def rebuild_vectors(self, choice: EmbedderChoice) -> Operation:
        """Re-embed the open library with ``choice``, as an operation (progress, cancel).

        The library stays searchable meanwhile (with its old vectors); cancelling, or an
        embedding server that fails, keeps the old vectors (``HaikuRAG.rebuild``). The choice
        is remembered for this library only once the rebuild has finished.
        """
        from haiku_desk.bridge import Operation

        if self.library is None:
            raise RuntimeError("no library is open")
        if self.rebuilding:
            raise RuntimeError("the library's vectors are already being rebuilt")
        if choice.provider != "local" and not (choice.model or "").strip():
            raise ValueError(f"choose the {EMBEDDER_LABELS[choice.provider]} model to embed with")
        if choice.provider not in SERVERLESS_EMBEDDERS and not (choice.base_url or "").strip():
            raise ValueError("the embedding server's URL is missing")
        library = self.library
        embeddings = choice.to_config(self.config.embeddings)
        key = str(library.db_path)

        async def body(token: Any, report: Any) -> int:
            client = await library.ensure_open()
            # a plain coroutine: the worker thread holds no Qt object
            return await client.rebuild(embeddings=embeddings, progress=report, cancel=token)

        def finished(count: object) -> None:
            self.config.embeddings = embeddings
            embedders = {**self.settings.embedders, key: choice}
            self.settings = self.settings.model_copy(update={"embedders": embedders})
            self._write_settings()
            self.embedder_changed.emit(choice)

        operation = Operation("Rebuilding the library's vectors", body, self)
        operation.succeeded.connect(finished)
        self.rebuild_operation = operation.start()
        return operation

    # --- settings file ------------------------------------------------------------------

    def _read_settings(self) -> DesktopSettings:
        try:
            raw = json.loads(self.settings_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return DesktopSettings()
        except (OSError, ValueError) as exc:
            self.notifications.error(
                f"Model settings could not be read ({self.settings_path}); using defaults", str(exc)
            )
            return DesktopSettings()
        if isinstance(raw, dict) and raw.get("version", 0) > SETTINGS_VERSION:
            self.notifications.error(
                f"Model settings were written by a newer haiku-desk ({self.settings_path}); using defaults"
            )
            return DesktopSettings()
        migrated = migrate_settings(raw) if isinstance(raw, dict) else raw
        try:
            settings = DesktopSettings.model_validate(migrated)
        except ValidationError as exc:
            self.notifications.error(
                f"Model settings are invalid ({self.settings_path}); using defaults", str(exc)
            )
            return DesktopSettings()
        if migrated is not raw:  # an older version's file: written back in the current one
            try:
                write_text_atomic(self.settings_path, settings.model_dump_json(indent=1), private=True)
            except OSError as exc:
                log.warning("Could not write the migrated settings %s: %s", self.settings_path, exc)
        return settings

    def _write_settings(self) -> None:
        write_text_atomic(self.settings_path, self.settings.model_dump_json(indent=1), private=True)

    # --- keychain -----------------------------------------------------------------------

    @staticmethod
    def keychain_available() -> bool:
        import keyring
        from keyring.backends import fail

        try:
            backend = keyring.get_keyring()
        except Exception:
            return False
        return not isinstance(backend, fail.Keyring) and backend.priority > 0

    def store_key(self, provider: str, key: str) -> None:
        """Keep ``key`` in the OS keychain; raises ``KeychainUnavailable`` when there is none."""
        check_provider(provider)
        if not key.strip():
            raise ValueError("the key is empty")
        import keyring
        from keyring.errors import KeyringError, NoKeyringError

        if not self.keychain_available():
            raise KeychainUnavailable(NO_KEYCHAIN)
        try:
            keyring.set_password(KEYRING_SERVICE, provider, key.strip())
        except NoKeyringError as exc:
            raise KeychainUnavailable(NO_KEYCHAIN) from exc
        except KeyringError as exc:  # locked, refused: say so without echoing the key
            raise KeychainUnavailable(
                f"The OS keychain refused to store the key: {type(exc).__name__}"
            ) from exc

    def has_key(self, provider: str) -> bool:
        from haiku.rag.models import keychain_key

        return keychain_key(provider) is not None

    def delete_key(self, provider: str) -> None:
        import keyring
        from keyring.errors import KeyringError, PasswordDeleteError

        try:
            keyring.delete_password(KEYRING_SERVICE, provider)
        except PasswordDeleteError:
            pass
        except KeyringError as exc:
            raise KeychainUnavailable(NO_KEYCHAIN) from exc

    # --- discovery and connection tests -------------------------------------------------

    async def discover(
        self, provider: str, base_url: str | None = None, api_key: str | None = None
    ) -> list[str]:
        """Model names the provider offers (Ollama: ``/api/tags``; others: ``/v1/models``).

        Raises ``ConnectionError`` with a one-line, key-free reason.
        """
        return await list_models(provider, base_url or self._default_url(provider), self._key_for(provider, api_key))

    async def ollama_supports_tools(self, name: str, base_url: str | None = None) -> bool | None:
        """What Ollama's ``/api/show`` says about tool calling (None when it does not say)."""
        return await ollama_tools(name, base_url or self._default_url("ollama"))

    async def test_connection(
        self,
        provider: str,
        base_url: str | None = None,
        name: str | None = None,
        api_key: str | None = None,
    ) -> ConnectionReport:
        """Reach the provider and list its models; never raises for an unreachable server."""
        if provider == "model-file":
            return await model_file_report(name, self.model_file_search_roots(), self.probe_cache)
        try:
            names = await self.discover(provider, base_url, api_key)
        except ConnectionError as exc:
            return ConnectionReport(False, str(exc))
        tools = None
        if provider == "ollama" and name:
            tools = await self.ollama_supports_tools(name, base_url)
        if name and names and name not in names:
            return ConnectionReport(
                False, f"connected, but the server has no model named {name!r}", names, tools
            )
        found = f"{len(names)} model{'s' if len(names) != 1 else ''} available"
        message = f"Connected: {found}"
        if tools is False:
            message += (
                f"; {name} cannot call tools, so answers will come from passages (no-tool mode)"
            )
        return ConnectionReport(True, message, names, tools)

    # where "Find models" looks for model files (None: Ollama, LM Studio, GPT4All, HF cache)
    model_file_roots: Any = None
    # the model files the last "Find model files" listed (Settings shows them when it opens)
    last_model_files: ConnectionReport | None = None

    def model_file_search_roots(self) -> Any:
        """``model_file_roots`` (default: this computer's usual places) and the folder the
        catalog downloads to."""
        from haiku.rag.local_models import Roots

        return (self.model_file_roots or Roots.default()).with_downloads(self.downloads.folder)

    @property
    def probe_cache(self) -> Path:
        """The tool probe's verdicts per model file, beside the settings."""
        return self.settings_path.with_name("model-file-probes.json")

    def _default_url(self, provider: str) -> str:
        if provider == "ollama":
            return self.config.providers.ollama.base_url
        return DEFAULT_BASE_URLS[provider]

    def _key_for(self, provider: str, explicit: str | None) -> str | None:
        from haiku.rag.models import resolve_api_key

        return resolve_api_key(provider, explicit)



@functools.lru_cache(maxsize=32)
def model_file_name(path: str) -> str:
    """How a model file is named in the window: the name its header gives ("SmolLM2 135M
    Instruct"), else its file name; never a whole path or an Ollama blob's digest. (A header
    read is a few kilobytes; cached, as the window asks on every model change.)"""
    from haiku.rag.local_models.header import GGUFError, read_header

    try:
        name = read_header(Path(path)).name.strip()
    except (GGUFError, OSError):
        name = ""
    return name or Path(path).name
