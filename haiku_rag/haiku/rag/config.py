"""Typed, versioned settings: defaults < YAML file < environment < explicit arguments.

The YAML file is found, in order, via ``--config`` / ``HAIKU_RAG_CONFIG_PATH`` (which must
exist), ``./haiku.rag.yaml``, then ``<data_dir>/haiku.rag.yaml``. A file in the working folder
is someone else's as often as the user's (a shared project, a downloaded data set), so it may
not say where requests go: one that sets an endpoint (any ``base_url``, ``lancedb.uri``,
``lancedb.storage_options``) is refused unless it is named with ``--config`` or
``HAIKU_RAG_TRUST_LOCAL_CONFIG=1`` is set (``ENDPOINT_SETTINGS``). ``AppConfig.source_file``
says which file was read; the CLI and the app tell the person. Environment variables override
single values with the ``HAIKU_RAG_`` prefix and ``__`` between levels, for example
``HAIKU_RAG_EMBEDDINGS__PROVIDER=ollama``. Unknown keys are rejected with their dotted name.
API keys never live here: they come from the OS keychain (the app) or the provider's own
environment variable (``OPENAI_API_KEY`` …).
"""

from __future__ import annotations

import logging
import os
import sys
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from haiku.rag.errors import ConfigError

CONFIG_VERSION = 1
CONFIG_FILE_NAME = "haiku.rag.yaml"
DB_FILE_NAME = "haiku.rag.lancedb"
ENV_PREFIX = "HAIKU_RAG_"
TRUST_LOCAL_ENV = f"{ENV_PREFIX}TRUST_LOCAL_CONFIG"

log = logging.getLogger("haiku.rag")


def default_data_dir() -> Path:
    """The platform's per-user data folder for haiku.rag."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "haiku.rag"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", home / "AppData" / "Roaming")) / "haiku.rag"
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else home / ".local" / "share") / "haiku.rag"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class StorageConfig(_Section):
    data_dir: Path = Field(default_factory=default_data_dir)


class LanceDBConfig(_Section):
    # Empty: the store is a local folder. Otherwise an object-storage or LanceDB Cloud URI
    # (s3://bucket/path, gs://…, az://…, db://…) used instead of the local path.
    uri: str = ""
    storage_options: dict[str, str] = Field(default_factory=dict)
    read_consistency_interval_seconds: float | None = None
    # object storage: the most one request may take, retries included (docs/reliability.md)
    request_deadline_seconds: float = Field(default=60.0, gt=0, le=3600)
    # LanceDB Cloud (db://) only; its API key comes from the LANCEDB_API_KEY environment variable.
    region: str | None = None


class EmbeddingsConfig(_Section):
    provider: Literal["local", "ollama", "openai-compatible", "openai", "model-file"] = "local"
    # None: the provider's default (local: all-MiniLM-L6-v2); model-file: a GGUF file's path
    model: str | None = None
    base_url: str | None = None
    # None: detected from the provider on first use
    vector_dim: int | None = Field(default=None, ge=1, le=16384)
    # None: the provider's own default (8 for the local model, which is fastest there)
    batch_size: int | None = Field(default=None, ge=1, le=4096)
    # None: all cores for bulk work
    threads: int | None = Field(default=None, ge=1, le=256)
    # HTTP providers: the most one request may take in total, seconds (a server that drips
    # bytes never trips the per-read timeout); docs/reliability.md
    request_deadline: float = Field(default=300.0, gt=0, le=3600)


class ProcessingConfig(_Section):
    chunk_size: int = Field(default=256, ge=32, le=8192)
    merge_peers: bool = True
    # "fast": PyMuPDF text blocks and heuristics; "layout": PyMuPDF's bundled ONNX layout model
    pdf_layout: Literal["fast", "layout"] = "fast"
    # Pages without a usable text layer (scans, images, fonts without a Unicode map) are
    # recognised offline by OCR (RapidOCR's bundled PP-OCRv4 models) at this resolution;
    # off, they are listed as needing OCR (and a wholly scanned file is refused).
    ocr: bool = True
    ocr_dpi: int = Field(default=150, ge=72, le=400)
    max_file_mb: int = Field(default=512, ge=1)
    # Parsing runs in a worker process ("process") so a file that hangs or crashes the parser
    # is stopped and reported; "none" parses in the calling thread (no time bound).
    parse_isolation: Literal["process", "none"] = "process"
    # A batch of files (add-src, import_documents) parses this many files at once, each in
    # its own worker process (at most one per core); a single file always uses one worker.
    parse_workers: int = Field(default=2, ge=1, le=16)
    # A file whose parsing makes no progress (a PDF: no new page) for this long is stopped
    # and reported with the "timeout" category.
    parse_timeout_seconds: float = Field(default=120, gt=0)
    # Memory one file's parse may take in the worker on top of what the worker holds before
    # it (its libraries and the file's bytes), enforced as an address-space limit (RLIMIT_AS,
    # Linux) and, on every OS, by the parent watching the worker's resident memory
    # (ingest/isolation.py). A file that needs more (a decompression bomb) is refused as
    # "too_large" and the worker is replaced. 0: no limit. 3 GiB leaves an 8 GB laptop usable.
    parse_memory_limit_mb: int = Field(default=3072, ge=0)


class FusionConfig(_Section):
    """How hybrid search fuses its full-text and vector arms.

    ``method="score"`` (the default): each arm's scores min-max normalised over its pool and
    summed with the weights; ``"rrf"``: weight / (k + rank). Weight 0 turns an arm off (it is
    not even run). Weights 1:1 and pools from ``candidate_factor`` were the best choice on the
    tuning half of SciFact train (``tests/bench/tune_fusion.py``).
    """

    # score: each arm's scores min-max normalised over its pool, summed with the weights
    # (chosen on SciFact train's tune half: nDCG@10 0.6953 -> 0.7225 there, 0.7380 -> 0.7445
    # on the held half; docs/benchmarks.md); rrf: weight / (k + rank), k = search.rrf_k
    method: Literal["score", "rrf"] = "score"
    fts_weight: float = Field(default=1.0, ge=0, le=100)
    vector_weight: float = Field(default=1.0, ge=0, le=100)
    # score: a full-text hit the vector arm did not return keeps this share of its score (1:
    # symmetric). BM25 then promotes the embedder's candidates but its own term-repeating
    # passages enter only partly. Chosen on the tune halves of FinanceBench and SciFact: every
    # share from 0 to 0.45 kept hybrid at least its better arm on all of them (identical
    # figures), 0.5 and above did not on FinanceBench within a filing; 0.25 sits inside that
    # plateau (docs/benchmarks.md, session 8).
    fts_only_share: float = Field(default=0.25, ge=0, le=1)
    # score: ...except the full-text arm's only hit, or its best when it scores at least this
    # many times the next (a rare word found in one passage: "SLEREXE" in a scanned letter
    # ranked below five passages of vector noise); 0: off.
    dominant_ratio: float = Field(default=1.5, ge=0, le=100)
    # Candidates each arm contributes before fusion; None: max(limit × candidate_factor, 20).
    fts_pool: int | None = Field(default=None, ge=1, le=10_000)
    vector_pool: int | None = Field(default=None, ge=1, le=10_000)

    @model_validator(mode="after")
    def _one_arm_counts(self) -> FusionConfig:
        if self.fts_weight == 0 and self.vector_weight == 0:
            raise ValueError("fts_weight and vector_weight cannot both be 0")
        return self


class RerankConfig(_Section):
    """A reranking stage after fusion (haiku.rag.search.rerank). Off by default."""

    # none | http (llama.cpp, vLLM, OpenAI-compatible /rerank) | cohere | jina
    provider: Literal["none", "http", "cohere", "jina"] = "none"
    # None: the provider's default (cohere: rerank-v3.5, jina: jina-reranker-v2-base-multilingual);
    # llama.cpp ignores it
    model: str | None = None
    # Everything before /rerank, e.g. http://localhost:8080/v1; None: the provider's (cohere, jina)
    base_url: str | None = None
    # Fused candidates sent to the reranker; the first ``limit`` of its order are returned.
    pool: int = Field(default=30, ge=1, le=1000)
    timeout_seconds: float = Field(default=30, gt=0)


class SearchConfig(_Section):
    limit: int = Field(default=5, ge=1, le=1000)
    max_context_chars: int = Field(default=5000, ge=0)
    rrf_k: int = Field(default=60, ge=1)
    # How many candidates each arm of a hybrid search contributes before fusion, per result.
    candidate_factor: int = Field(default=4, ge=1, le=100)
    # Memory (MiB) the vectors may take in memory for exact search; a library whose vectors
    # need more is searched through LanceDB's ANN index instead (0: always the index).
    exact_search_budget_mb: int = Field(default=160, ge=0, le=65_536)
    # Paged documents: one result per page, a page scored by its best chunk plus this share of
    # its next ones, then share² … (haiku.rag.search.pages); None: one result per chunk.
    # 0 (each page once, by its best chunk) was best on FinanceBench's tune half (docs/benchmarks.md).
    page_share: float | None = Field(default=0.0, ge=0, le=1)
    # A page's result also carries the page's chunks scoring at least this share of its best
    # (at most 2; haiku.rag.search.pages.page_companions): the Florida row beside the Totals row
    # of a one-page table. 0: off. Same pages, same ranking: page-hit figures cannot change.
    page_companion_ratio: float = Field(default=0.9, ge=0, le=1)
    # Documents the query names by file name rank higher by this much × how fully they are
    # named (haiku.rag.search.naming); 0: off. 1 (a fully named document gains one arm's best)
    # tied 2 on FinanceBench's tune half; the smaller was kept.
    name_weight: float = Field(default=1.0, ge=0, le=10)
    # Chunks of a reference list (a section named References, Bibliography, Références,
    # Literaturverzeichnis …, or text that is mostly reference entries) keep this share of
    # their score, unless the query asks for references or nothing else matches its words
    # (haiku.rag.search.references); 1: off. Chosen on the real papers of the shared PDF set
    # (tests/bench/eval_reference_demotion.py, docs/benchmarks.md "Reference lists").
    reference_weight: float = Field(default=0.5, ge=0, le=1)
    fusion: FusionConfig = Field(default_factory=FusionConfig)
    rerank: RerankConfig = Field(default_factory=RerankConfig)

    @field_validator("page_share", mode="before")
    @classmethod
    def _page_share_off(cls, value: Any) -> Any:
        # YAML can say null; an environment variable is a string: "off" (or "none"/"null") too
        if isinstance(value, str) and value.strip().lower() in {"off", "none", "null"}:
            return None
        return value


class ModelConfig(_Section):
    # ollama | openai-compatible | openai | anthropic | google | model-file (name: a GGUF file's
    # path, run by the built-in llama.cpp); None: no model configured
    provider: str | None = None
    name: str | None = None
    base_url: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    vision: bool = False
    # None: assume the model can call tools; False: use the retrieve-then-read fallback
    supports_tools: bool | None = None
    # The model's context window in tokens; None: unknown (assumed large). Below 8,192 the
    # answer path uses the small-model profile (haiku.rag.answering.fallback.profile_for).
    context_tokens: int | None = Field(default=None, ge=256)


class QAConfig(_Section):
    model: ModelConfig = Field(default_factory=ModelConfig)
    max_searches: int = Field(default=5, ge=1)


class AnalysisConfig(_Section):
    # None: the qa model answers analysis questions too
    model: ModelConfig | None = None
    # Seconds one analysis_execute_code call may run (compute and corpus reads alike).
    code_timeout: float = Field(default=60, gt=0)
    # Seconds all code of one question may run together; None: code_timeout × max_executions.
    total_timeout: float | None = Field(default=None, gt=0)
    # Printed output kept per call; the rest is cut with a marker.
    max_output_chars: int = Field(default=50_000, ge=100)
    # analysis_execute_code calls per question.
    max_executions: int = Field(default=15, ge=1)
    # Heap of the sandboxed interpreter, in MiB.
    max_memory_mb: int = Field(default=512, ge=16, le=65_536)


class OllamaProviderConfig(_Section):
    base_url: str = "http://localhost:11434"


class ProvidersConfig(_Section):
    ollama: OllamaProviderConfig = Field(default_factory=OllamaProviderConfig)


class PromptsConfig(_Section):
    domain_preamble: str = ""


_yaml_file: ContextVar[Path | None] = ContextVar("_yaml_file", default=None)


class _YamlSource(PydanticBaseSettingsSource):
    """Reads the YAML file chosen by ``load_config`` (if any)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = _yaml_file.get()
        return read_yaml(path) if path is not None else {}


class LookupServiceConfig(_Section):
    base_url: str


class BibliographyConfig(_Section):
    # Look a PDF's DOI / arXiv id up online (Crossref, arXiv) at ingest, to confirm the record
    # read from the page and fill what the page does not say. Off: nothing leaves the machine.
    lookup: bool = False
    crossref: LookupServiceConfig = Field(
        default_factory=lambda: LookupServiceConfig(base_url="https://api.crossref.org")
    )
    arxiv: LookupServiceConfig = Field(
        default_factory=lambda: LookupServiceConfig(base_url="https://export.arxiv.org/api")
    )
    timeout_seconds: float = Field(default=10, gt=0, le=120)


class AppConfig(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        validate_assignment=True,
    )

    version: int = CONFIG_VERSION
    storage: StorageConfig = Field(default_factory=StorageConfig)
    lancedb: LanceDBConfig = Field(default_factory=LanceDBConfig)
    embeddings: EmbeddingsConfig = Field(default_factory=EmbeddingsConfig)
    processing: ProcessingConfig = Field(default_factory=ProcessingConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    qa: QAConfig = Field(default_factory=QAConfig)
    analysis: AnalysisConfig = Field(default_factory=AnalysisConfig)
    providers: ProvidersConfig = Field(default_factory=ProvidersConfig)
    prompts: PromptsConfig = Field(default_factory=PromptsConfig)
    bibliography: BibliographyConfig = Field(default_factory=BibliographyConfig)
    # the YAML file these settings were read from (None: defaults and environment only)
    _source_file: Path | None = PrivateAttr(default=None)
    # why a working-folder file was skipped (load_config(skip_untrusted=True)), if one was
    _refused: list[str] = PrivateAttr(default_factory=list)

    @property
    def source_file(self) -> Path | None:
        return self._source_file

    @property
    def refused(self) -> list[str]:
        return list(self._refused)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _YamlSource(settings_cls))


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from exc
    except RecursionError:
        raise ConfigError(f"config file {path} is nested too deeply to be a settings file") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of settings")
    return data


def find_config_file(
    explicit: str | os.PathLike[str] | None = None, *, refused: list[str] | None = None
) -> Path | None:
    """The YAML file to read, or None for built-in defaults.

    A working-folder file that sets an endpoint raises ``ConfigError``; with ``refused`` (a
    list) it is skipped instead and the reason appended, for a caller that cannot stop to ask
    (the app, started from a desktop with the home folder as its working folder)."""
    chosen = explicit or os.environ.get(f"{ENV_PREFIX}CONFIG_PATH")
    if chosen:
        path = Path(chosen).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        return path
    local = Path.cwd() / CONFIG_FILE_NAME
    if local.is_file():
        try:
            _check_local_file(local)
            return local
        except ConfigError as exc:
            if refused is None:
                raise
            log.warning("%s", exc)
            refused.append(str(exc))
    data_dir = os.environ.get(f"{ENV_PREFIX}STORAGE__DATA_DIR")
    in_data_dir = (Path(data_dir).expanduser() if data_dir else default_data_dir()) / CONFIG_FILE_NAME
    return in_data_dir if in_data_dir.is_file() else None


def is_working_folder_file(path: Path | None) -> bool:
    """Whether ``path`` is the ``./haiku.rag.yaml`` of the working folder (found, not named)."""
    return path is not None and path.name == CONFIG_FILE_NAME and path.parent == Path.cwd()


def endpoint_settings(data: Any, prefix: str = "") -> list[str]:
    """The dotted names of the settings in ``data`` that decide where requests (and the keys
    that go with them) are sent: every ``base_url`` and ``uri``, ``lancedb.storage_options``
    (an S3 ``endpoint`` there receives the object-storage credentials), and
    ``bibliography.lookup`` turned on (the library's DOIs and arXiv ids go online)."""
    found: list[str] = []
    if not isinstance(data, dict):
        return found
    for key, value in data.items():
        name = f"{prefix}{key}"
        if key in ("base_url", "uri", "endpoint", "url") or name == "lancedb.storage_options":
            found.append(name)
        elif name == "bibliography.lookup" and value:
            found.append(name)  # sends the library's DOIs and arXiv ids to Crossref / arXiv
        elif isinstance(value, dict):
            found += endpoint_settings(value, name + ".")
    return found


def _check_local_file(path: Path) -> None:
    if os.environ.get(TRUST_LOCAL_ENV, "").strip().lower() in ("1", "true", "yes"):
        return
    redirects = endpoint_settings(read_yaml(path))
    if redirects:
        raise ConfigError(
            f"{path} (a settings file in the current folder) sets {', '.join(redirects)}, which "
            "decides where your API keys and documents are sent; a file found in the working "
            "folder may not do that. If you trust it, name it: --config "
            f"{path} (or set {TRUST_LOCAL_ENV}=1); otherwise remove those settings or run "
            "from another folder."
        )


def _describe(error: ValidationError, source: Path | None) -> str:
    where = f" in {source}" if source else ""
    lines = []
    for item in error.errors():
        key = ".".join(str(p) for p in item["loc"])
        if item["type"] == "extra_forbidden":
            lines.append(f"unknown setting '{key}'{where}")
        else:
            lines.append(f"invalid setting '{key}'{where}: {item['msg']}")
    return "; ".join(lines)


def load_config(
    path: str | os.PathLike[str] | None = None, *, skip_untrusted: bool = False, **overrides: Any
) -> AppConfig:
    """Load the effective configuration; raise ``ConfigError`` with the offending key.

    ``skip_untrusted``: a working-folder file that may not be read is skipped (the next
    candidate is read) and ``AppConfig.refused`` says why, instead of an error."""
    refused: list[str] | None = [] if skip_untrusted else None
    source = find_config_file(path, refused=refused)
    token = _yaml_file.set(source)
    try:
        config = AppConfig(**overrides)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source)) from None
    finally:
        _yaml_file.reset(token)
    if config.version > CONFIG_VERSION:
        raise ConfigError(
            f"config{' file ' + str(source) if source else ''} has version {config.version}; "
            f"this haiku.rag understands up to {CONFIG_VERSION}"
        )
    config.storage.data_dir = config.storage.data_dir.expanduser()
    config._source_file = source.resolve() if source is not None else None
    config._refused = list(refused or [])
    if source is not None:
        log.info("settings read from %s", config._source_file)
    _register_url_credentials(config)
    return config


def _register_url_credentials(config: AppConfig) -> None:
    """A password in a configured URL (``http://user:password@host/v1``) is masked in every
    message from now on, even where it appears without its URL (a server echoing it)."""
    from urllib.parse import unquote, urlsplit

    from haiku.rag.logs import register_secret

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, str) and "://" in value and "@" in value:
            try:
                parts = urlsplit(value)
            except ValueError:
                return
            if parts.password:
                register_secret(parts.password)
                register_secret(unquote(parts.password))
            if parts.username:
                register_secret(f"{parts.username}:{parts.password or ''}")

    walk(config.model_dump(mode="json"))


_SECRET_WORDS = ("key", "password", "token", "secret")


def redacted(config: AppConfig) -> dict[str, Any]:
    """The config as plain data with anything that looks like a secret masked."""
    from haiku.rag.logs import redact

    def mask(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: mask(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [mask(v) for v in value]
        if value and any(word in key.lower() for word in _SECRET_WORDS):
            return "***"
        return redact(value) if isinstance(value, str) else value  # user:password@ in a URL

    return mask(config.model_dump(mode="json"))


def resolve_db_path(db_path: str | os.PathLike[str] | None, config: AppConfig) -> str:
    """The store location: the ``db_path`` argument, then ``HAIKU_RAG_DB``, then
    ``<data_dir>/haiku.rag.lancedb``.

    Returned as a string because it may be an object-storage URI rather than a local path.
    (``lancedb.uri``, when set, is where the store connects instead: see ``store.connect``.)
    """
    if db_path is not None and str(db_path) != "":
        return _expand(str(db_path))
    from_env = os.environ.get("HAIKU_RAG_DB")
    if from_env:
        return _expand(from_env)
    return str(config.storage.data_dir / DB_FILE_NAME)


def is_remote_uri(location: str) -> bool:
    return "://" in location and not location.startswith("file://")


def _expand(location: str) -> str:
    if is_remote_uri(location):
        return location
    if location.startswith("file:///"):  # a URI made by Path.as_uri(), on any OS
        from haiku.rag.files import path_from_file_uri

        location = path_from_file_uri(location)  # escapes decoded; Windows drive letters kept
    elif location.startswith("file://"):  # written by hand: file://./data, file://C:/data
        location = location[len("file://") :]
    return str(Path(location).expanduser())
