"""A short curated list of model files the user may choose to download (never automatically).

Each entry is data: what the file is, how big, under which licence, where it is served and the
SHA-256 the download must match (``download`` refuses anything else). Only entries whose size
and hash were read from a public record are listed, and ``verified_from`` says where: nothing
here was downloaded or hashed by us (the machine this list was written on reaches no model
host). Both are served by Ollama's public registry, which addresses a file by its SHA-256, so
the URL and the hash cannot drift apart; a changed file would be another URL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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

CATALOG: tuple[CatalogEntry, ...] = (
    CatalogEntry(
        name="Qwen2.5 0.5B Instruct (Q4_K_M)",
        file_name="qwen2.5-0.5b-instruct-q4_k_m.gguf",
        kind="chat",
        size=397_807_936,
        licence="Apache-2.0",
        url=_OLLAMA_BLOB.format(
            model="qwen2.5", digest="c5396e06af294bd101b30dce59131a76d2b773e76950acc870eda801d3ab0515"
        ),
        sha256="c5396e06af294bd101b30dce59131a76d2b773e76950acc870eda801d3ab0515",
        context_length=32_768,
        verified_from=(
            "the model layer of Ollama's qwen2.5:0.5b: digest and 'total': 397807936 in Ollama "
            "pull progress quoted in public GitHub code, and a public table of locally verified "
            "Ollama blobs (397,807,936 bytes); context 32,768 from the Qwen2.5-0.5B-Instruct "
            "model card"
        ),
    ),
    CatalogEntry(
        name="nomic-embed-text v1.5 (F16)",
        file_name="nomic-embed-text-v1.5.f16.gguf",
        kind="embedding",
        size=274_290_656,
        licence="Apache-2.0",
        url=_OLLAMA_BLOB.format(
            model="nomic-embed-text",
            digest="970aa74c0a90ef7482477cf803618e776e173c007bf957f635f1015bfcfef0e6",
        ),
        sha256="970aa74c0a90ef7482477cf803618e776e173c007bf957f635f1015bfcfef0e6",
        context_length=2048,
        verified_from=(
            "registry.ollama.ai's manifest for nomic-embed-text:latest, shown verbatim in "
            "github.com/moeru-ai/demodel's contributing guide (model layer digest and "
            "size 274290656); the same digest is pinned by public Nix fetchurl and lock files; "
            "context 2048 is nomic-bert.context_length as `ollama show` reports it"
        ),
    ),
)


def entry(name: str) -> CatalogEntry:
    """The entry called ``name`` (or saved as ``name``)."""
    for item in CATALOG:
        if name in (item.name, item.file_name):
            return item
    raise CatalogError(f"no catalog entry named {name!r}")
