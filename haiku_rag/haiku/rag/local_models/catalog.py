"""A short curated list of model files the user may choose to download (never automatically).

Each entry is data: what the file is, how big, under which licence, where it is served and the
SHA-256 the download must match (``download`` refuses anything else). Only entries whose size
and hash were read from a public record are listed, and ``verified_from`` says where: nothing
here was downloaded or hashed by us (the machine this list was written on reaches no model
host). Both are served by Ollama's public registry, which addresses a file by its SHA-256, so
the URL and the hash cannot drift apart; a changed file would be another URL.

``load_catalog`` reads another list from a JSON file (a list of objects with the fields of
``CatalogEntry``), each entry validated as these are: how the app's tests and a person trying
the download against a server on this computer replace the list (plain http only to loopback).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from haiku.rag.errors import HaikuRAGError

Kind = Literal["chat", "embedding"]
_SHA256 = re.compile(r"[0-9a-f]{64}")
_LOOPBACK_HTTP = re.compile(r"http://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?/")


class CatalogError(HaikuRAGError):
    """A catalog entry is malformed (or no entry has the name asked for)."""


@dataclass(frozen=True)
class CatalogEntry:
    name: str  # shown to the user
    file_name: str  # what it is saved as in the models folder
    kind: Kind
    size: int  # bytes
    licence: str
    url: str
    sha256: str
    context_length: int  # tokens, as the file's header declares it
    verified_from: str  # where size and hash were read (public records)
    parameters: str = ""  # as the model card states it ("0.49B"); "" when not known

    def validate(self) -> None:
        """Raise ``CatalogError`` unless every field is usable as data for a download."""
        problems = []
        if self.kind not in ("chat", "embedding"):
            problems.append(f"kind {self.kind!r} is not chat or embedding")
        if not _SHA256.fullmatch(self.sha256):
            problems.append("sha256 is not 64 lower-case hexadecimal digits")
        if self.size <= 0:
            problems.append("size must be a positive number of bytes")
        if self.context_length <= 0:
            problems.append("context length must be positive")
        if not (self.url.startswith("https://") or _LOOPBACK_HTTP.match(self.url)):
            problems.append("the URL must be https (plain http only on this computer)")
        if Path(self.file_name).name != self.file_name or not self.file_name.endswith(".gguf"):
            problems.append(f"file name {self.file_name!r} is not a plain *.gguf name")
        if not self.licence or not self.verified_from or not self.name:
            problems.append("name, licence and verified_from must be given")
        if problems:
            raise CatalogError(f"catalog entry {self.name!r}: " + "; ".join(problems))


_OLLAMA_BLOB = "https://registry.ollama.ai/v2/library/{model}/blobs/sha256:{digest}"


def _ollama_layer(model: str, sha256: str, **details: Any) -> CatalogEntry:
    """An entry whose file is a layer of Ollama's registry: its address names its digest, so
    the digest is written once."""
    return CatalogEntry(url=_OLLAMA_BLOB.format(model=model, digest=sha256), sha256=sha256, **details)


CATALOG: tuple[CatalogEntry, ...] = (
    _ollama_layer(
        "qwen2.5",
        "c5396e06af294bd101b30dce59131a76d2b773e76950acc870eda801d3ab0515",
        name="Qwen2.5 0.5B Instruct (Q4_K_M)",
        file_name="qwen2.5-0.5b-instruct-q4_k_m.gguf",
        kind="chat",
        size=397_807_936,
        licence="Apache-2.0",
        context_length=32_768,
        parameters="0.49B",
        verified_from=(
            "the model layer of Ollama's qwen2.5:0.5b: digest and 'total': 397807936 in Ollama "
            "pull progress quoted in public GitHub code, and a public table of locally verified "
            "Ollama blobs (397,807,936 bytes); context 32,768 from the Qwen2.5-0.5B-Instruct "
            "model card (0.49B parameters from the same card)"
        ),
    ),
    _ollama_layer(
        "nomic-embed-text",
        "970aa74c0a90ef7482477cf803618e776e173c007bf957f635f1015bfcfef0e6",
        name="nomic-embed-text v1.5 (F16)",
        file_name="nomic-embed-text-v1.5.f16.gguf",
        kind="embedding",
        size=274_290_656,
        licence="Apache-2.0",
        context_length=2048,
        parameters="137M",
        verified_from=(
            "registry.ollama.ai's manifest for nomic-embed-text:latest, shown verbatim in "
            "github.com/moeru-ai/demodel's contributing guide (model layer digest and "
            "size 274290656); the same digest is pinned by public Nix fetchurl and lock files; "
            "context 2048 is nomic-bert.context_length as `ollama show` reports it; 137M "
            "parameters from the nomic-embed-text-v1.5 model card"
        ),
    ),
)


def entry(name: str) -> CatalogEntry:
    """The entry called ``name`` (or saved as ``name``)."""
    for item in CATALOG:
        if name in (item.name, item.file_name):
            return item
    raise CatalogError(f"no catalog entry named {name!r}")


_FIELDS = {f.name: f for f in fields(CatalogEntry)}
_REQUIRED = [f.name for f in fields(CatalogEntry) if f.name != "parameters"]


def load_catalog(path: str | Path) -> tuple[CatalogEntry, ...]:
    """The entries of a catalog JSON file: a list of objects, each with ``CatalogEntry``'s
    fields (``parameters`` optional). Raises ``CatalogError`` naming the file and what is
    wrong (unreadable, not JSON, a missing or unknown field, an invalid entry, a repeated name)."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CatalogError(f"cannot read the model catalog {path}: {exc.strerror or exc}") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise CatalogError(f"the model catalog {path} is not JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise CatalogError(f"the model catalog {path} must be a JSON list of entries")
    entries: list[CatalogEntry] = []
    for number, item in enumerate(raw, 1):
        where = f"the model catalog {path}, entry {number}"
        if not isinstance(item, dict):
            raise CatalogError(f"{where} is not an object")
        missing = [name for name in _REQUIRED if name not in item]
        unknown = sorted(set(item) - set(_FIELDS))
        if missing or unknown:
            said = [f"missing {', '.join(missing)}"] if missing else []
            said += [f"unknown {', '.join(unknown)}"] if unknown else []
            raise CatalogError(f"{where}: {'; '.join(said)}")
        wrong = [
            name
            for name, value in item.items()
            if not isinstance(value, int if name in ("size", "context_length") else str)
            or isinstance(value, bool)
        ]
        if wrong:
            raise CatalogError(f"{where}: wrong type for {', '.join(wrong)}")
        found = CatalogEntry(**item)
        try:
            found.validate()
        except CatalogError as exc:
            raise CatalogError(f"{where}: {exc}") from exc
        entries.append(found)
    for key in ("name", "file_name"):
        values = [getattr(e, key) for e in entries]
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise CatalogError(f"the model catalog {path} names {', '.join(map(repr, repeated))} twice")
    return tuple(entries)
