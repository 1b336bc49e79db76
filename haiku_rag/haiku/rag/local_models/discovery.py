"""GGUF model files already on this computer, found without loading any of them.

Where other programs keep theirs:

- **Ollama**: ``~/.ollama/models`` (or ``$OLLAMA_MODELS``; the Linux service uses
  ``/usr/share/ollama/.ollama/models``). ``manifests/<registry>/<namespace>/<model>/<tag>`` is a
  JSON manifest whose layer of media type ``application/vnd.ollama.image.model`` names the
  weights by digest: ``blobs/sha256-<hex>`` is a plain GGUF file.
- **LM Studio**: ``~/.lmstudio/models/<publisher>/<repository>/*.gguf`` (older versions:
  ``~/.cache/lm-studio/models``).
- **GPT4All**: ``~/.local/share/nomic.ai/GPT4All/*.gguf`` (macOS: ``~/Library/Application
  Support/nomic.ai/GPT4All``).
- **Hugging Face cache**: ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``:
  ``models--<org>--<name>/snapshots/<revision>/*.gguf``.
- any file or folder the person picks.

Each file's header is read (``header.read_header``); a damaged one is listed with its error
rather than dropped, so the person sees why. The same file reached twice (a symlink, a
folder given that is also a store) is listed once.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from haiku.rag.local_models.header import GGUFError, GGUFInfo, read_header

log = logging.getLogger("haiku.rag")

OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
OLLAMA_DEFAULT_REGISTRY = "registry.ollama.ai"
MAX_FOLDER_DEPTH = 6
MAX_MANIFEST_BYTES = 1 << 20
_SHARD = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)


@dataclass(frozen=True)
class Roots:
    """Where to look; each list may be empty. ``Roots.default()`` is this computer's places."""

    ollama: tuple[Path, ...] = ()
    lm_studio: tuple[Path, ...] = ()
    gpt4all: tuple[Path, ...] = ()
    huggingface: tuple[Path, ...] = ()
    folders: tuple[Path, ...] = ()  # files or folders picked by the person
    downloaded: tuple[Path, ...] = ()  # where the app's catalog saves the models it downloads

    @classmethod
    def default(cls, home: Path | None = None, env: dict[str, str] | None = None) -> Roots:
        home = home or Path.home()
        env = dict(os.environ) if env is None else env
        ollama = [Path(env["OLLAMA_MODELS"])] if env.get("OLLAMA_MODELS") else []
        ollama += [home / ".ollama" / "models", Path("/usr/share/ollama/.ollama/models")]
        hf_home = Path(env["HF_HOME"]) if env.get("HF_HOME") else home / ".cache" / "huggingface"
        hub = [Path(env["HF_HUB_CACHE"])] if env.get("HF_HUB_CACHE") else [hf_home / "hub"]
        return cls(
            ollama=tuple(ollama),
            lm_studio=(home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"),
            gpt4all=(
                home / ".local" / "share" / "nomic.ai" / "GPT4All",
                home / "Library" / "Application Support" / "nomic.ai" / "GPT4All",
            ),
            huggingface=tuple(hub),
        )

    def with_folders(self, *paths: str | Path) -> Roots:
        return replace(self, folders=self.folders + tuple(Path(p) for p in paths))

    def with_downloads(self, folder: str | Path) -> Roots:
        """These roots and the catalog's download folder (its models listed as "downloaded")."""
        return replace(self, downloaded=(*self.downloaded, Path(folder)))


@dataclass(frozen=True)
class LocalModel:
    """One model file found: where, under which name, and its header (or why it has none)."""

    path: Path
    source: str  # ollama | lm-studio | gpt4all | huggingface | folder
    label: str  # how the source names it: "qwen2.5:1.5b", "bartowski/Qwen2.5-1.5B-Instruct-GGUF/…"
    size: int  # bytes on disk, every part of a split model
    info: GGUFInfo | None = None
    error: str | None = None
    extra_parts: tuple[Path, ...] = field(default=())

    @property
    def kind(self) -> str:
        return self.info.kind if self.info else "unknown"

    def summary(self) -> str:
        """One line: name · parameters · quantisation · size · context · tools."""
        if self.info is None:
            return f"{self.label} · {format_bytes(self.size)} · unreadable: {self.error}"
        info = self.info
        parts = [self.label]
        if info.parameters:
            parts.append(format_parameters(info.parameters))
        if info.quantization:
            parts.append(info.quantization)
        parts.append(format_bytes(self.size))
        if info.context_length:
            parts.append(f"{format_tokens(info.context_length)} context")
        if info.kind != "chat":
            parts.append(info.kind)
        elif info.template_mentions_tools:
            parts.append("tools in template")
        return " · ".join(parts)


def discover(roots: Roots | None = None) -> list[LocalModel]:
    """Every GGUF model under ``roots`` (default: this computer's usual places), by source then
    label; a file reached twice is listed once (the first source to find it wins)."""
    roots = roots or Roots.default()
    found: list[LocalModel] = []
    seen: set[Path] = set()

    def add(models: Iterable[LocalModel]) -> None:
        for model in models:
            key = _real(model.path)
            if key in seen:
                continue
            seen.add(key)
            found.append(model)

    for root in roots.ollama:
        add(_ollama(root))
    for root in roots.lm_studio:
        add(_folder(root, "lm-studio", label_from=root))
    for root in roots.gpt4all:
        add(_folder(root, "gpt4all", label_from=root))
    for root in roots.huggingface:
        add(_huggingface(root))
    for folder in roots.downloaded:
        add(_folder(folder, "downloaded", label_from=folder))
    for picked in roots.folders:
        add(_folder(picked, "folder", label_from=picked if picked.is_dir() else picked.parent))
    return found


def embedding_models(roots: Roots | None = None) -> list[LocalModel]:
    """The embedding models among ``discover(roots)`` (encoder architectures such as bert and
    nomic-bert, or a header declaring a pooling type): what an embedder choice lists."""
    return [model for model in discover(roots) if model.kind == "embedding"]


def describe(path: str | Path, source: str = "folder", label: str | None = None) -> LocalModel:
    """One file as a ``LocalModel`` (its header read; an unreadable one carries the error)."""
    path = Path(path)
    parts = _other_parts(path)
    try:
        size = path.stat().st_size + sum(p.stat().st_size for p in parts)
    except OSError as exc:
        return LocalModel(path, source, label or path.name, 0, error=exc.strerror or str(exc))
    try:
        info = read_header(path)
    except GGUFError as exc:
        return LocalModel(path, source, label or path.name, size, error=str(exc))
    return LocalModel(path, source, label or path.name, size, info=info, extra_parts=parts)


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


def _ollama(root: Path) -> Iterator[LocalModel]:
    manifests = root / "manifests"
    if not manifests.is_dir():
        return
    for manifest in sorted(_walk(manifests, depth=5)):
        relative = manifest.relative_to(manifests).parts
        if len(relative) != 4:  # registry/namespace/model/tag
            continue
        registry, namespace, model, tag = relative
        digest = _ollama_model_digest(manifest)
        if digest is None:
            continue
        blob = root / "blobs" / digest.replace(":", "-")
        if not blob.is_file():
            log.debug("ollama manifest %s names a missing blob %s", manifest, blob)
            continue
        if registry == OLLAMA_DEFAULT_REGISTRY:
            label = f"{model}:{tag}" if namespace == "library" else f"{namespace}/{model}:{tag}"
        else:
            label = f"{registry}/{namespace}/{model}:{tag}"
        yield describe(blob, "ollama", label)


def _ollama_model_digest(manifest: Path) -> str | None:
    try:
        if manifest.stat().st_size > MAX_MANIFEST_BYTES:
            return None
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        log.debug("unreadable ollama manifest %s", manifest, exc_info=True)
        return None
    layers = data.get("layers") if isinstance(data, dict) else None
    for layer in layers if isinstance(layers, list) else ():
        if isinstance(layer, dict) and layer.get("mediaType") == OLLAMA_MODEL_LAYER:
            digest = layer.get("digest")
            if isinstance(digest, str) and re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
                return digest
    return None


def _huggingface(root: Path) -> Iterator[LocalModel]:
    if not root.is_dir():
        return
    for repo in sorted(root.glob("models--*")):
        name = repo.name[len("models--") :].replace("--", "/")
        for snapshot in sorted((repo / "snapshots").glob("*")):
            for path in sorted(_walk(snapshot, depth=3)):
                if _is_model_file(path):
                    yield describe(
                        path, "huggingface", f"{name}/{path.relative_to(snapshot).as_posix()}"
                    )


def _folder(root: Path, source: str, label_from: Path) -> Iterator[LocalModel]:
    if root.is_file():
        if _is_model_file(root, picked=True):
            yield describe(root, source, root.name)
        return
    if not root.is_dir():
        return
    for path in sorted(_walk(root, depth=MAX_FOLDER_DEPTH)):
        if _is_model_file(path):
            yield describe(path, source, path.relative_to(label_from).as_posix())


def _is_model_file(path: Path, picked: bool = False) -> bool:
    """A ``.gguf`` (or, when picked by hand, any file: Ollama blobs have no suffix) that is
    not a later part of a split model (the first part stands for all of them)."""
    if not picked and not path.name.lower().endswith(".gguf"):
        return False
    shard = _SHARD.search(path.name)
    return shard is None or int(shard.group(1)) == 1


def _other_parts(first: Path) -> tuple[Path, ...]:
    shard = _SHARD.search(first.name)
    if shard is None or int(shard.group(1)) != 1:
        return ()
    total = int(shard.group(2))
    stem = first.name[: shard.start()]
    return tuple(
        part
        for i in range(2, total + 1)
        if (part := first.with_name(f"{stem}-{i:05d}-of-{total:05d}.gguf")).exists()
    )


def _walk(root: Path, depth: int) -> Iterator[Path]:
    """Files under ``root`` to ``depth`` levels, following no symlinked folders (loops), but
    symlinked files (the Hugging Face cache links snapshots to blobs)."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if depth > 0 and not entry.name.startswith("."):
                    yield from _walk(Path(entry.path), depth - 1)
            elif entry.is_file():
                yield Path(entry.path)
        except OSError:
            continue


def format_bytes(size: int) -> str:
    if size >= 1 << 30:
        return f"{size / (1 << 30):.1f} GB"
    if size >= 1 << 20:
        return f"{size / (1 << 20):.0f} MB"
    return f"{max(1, size // 1024)} KB"


def format_parameters(count: int) -> str:
    if count >= 1_000_000_000:
        return f"{count / 1e9:.1f}B"
    if count >= 1_000_000:
        return f"{count / 1e6:.0f}M"
    return f"{count / 1e3:.0f}K" if count >= 1000 else str(count)


def format_tokens(count: int) -> str:
    return f"{count // 1024}k" if count >= 1024 and count % 1024 == 0 else f"{count:,}"
