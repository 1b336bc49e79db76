"""What a GGUF file holds, read from its header alone (never its weights).

The header is: the magic ``GGUF``, a version (2 or 3), the tensor and key/value counts, the
key/value pairs (metadata: architecture, name, context length, chat template, the
tokenizer's vocabulary...) and one record per tensor (name, shape, type, offset). Reading it
touches a few megabytes at most (a large vocabulary is skipped, not kept), so listing a
folder of multi-gigabyte models is quick. Standard library only: the ``gguf`` package maps
the whole file and is used by the tests to write files, not here to read them.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from haiku.rag.errors import HaikuRAGError

MAGIC = b"GGUF"
# Sanity bounds: a header past these is damaged (or not GGUF), never a model.
MAX_KV = 100_000
MAX_TENSORS = 1_000_000
MAX_DIMS = 8
KEEP_STRING = 1 << 20  # strings longer than this are skipped (none of the ones we read is)

# llama.cpp's ``general.file_type`` (enum llama_ftype), the quantisation a model was made with
FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
    17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS",
    23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S",
    29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0",
    38: "MXFP4_MOE",
}  # fmt: skip
# ggml tensor types, for files without general.file_type (the largest tensors' type is named)
TENSOR_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
    10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS",
    17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S",
    23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M",
    30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4",
}  # fmt: skip
# architectures that embed text rather than chat (llama.cpp's encoder-only families)
EMBEDDING_ARCHITECTURES = frozenset(
    {
        "bert",
        "nomic-bert",
        "nomic-bert-moe",
        "jina-bert-v2",
        "jina-bert-v3",
        "neo-bert",
        "modern-bert",
        "t5encoder",
    }
)
# pooling types that make a model an embedder (1 mean, 2 cls, 3 last); 0 none, 4 rank (a
# reranker scores pairs: no vectors), -1 unspecified
EMBEDDING_POOLING = frozenset({1, 2, 3})
PROJECTOR_ARCHITECTURES = frozenset({"clip", "mllama_vision"})
_TOOLS = re.compile(r"\btools\b")

# value types: struct format (little-endian) and size
_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9


class GGUFError(HaikuRAGError):
    """A file that is not GGUF, or whose header is damaged or cut short."""


@dataclass(frozen=True)
class GGUFInfo:
    """A model file's description, from its header."""

    path: Path
    file_size: int
    version: int
    architecture: str
    name: str
    parameters: int  # counted from the tensors' shapes
    quantization: str | None
    context_length: int | None  # what the model was trained for
    layers: int | None
    embedding_length: int | None
    head_count: int | None
    head_count_kv: int | None
    key_length: int | None  # per head; None: embedding_length / head_count
    value_length: int | None
    vocab_size: int | None
    chat_template: str | None
    split_count: int = 1  # a model split over several files (this is the first)
    # ``<arch>.pooling_type`` (llama.cpp's enum: 1 mean, 2 cls, 3 last, 4 rank): set by
    # converters on models made to embed, whatever their architecture (Qwen3-Embedding: qwen3)
    pooling_type: int | None = None

    @property
    def kind(self) -> str:
        """``chat``, ``embedding`` or ``projector`` (a vision model's image encoder)."""
        if self.architecture in PROJECTOR_ARCHITECTURES:
            return "projector"
        if self.architecture in EMBEDDING_ARCHITECTURES:
            return "embedding"
        if self.pooling_type in EMBEDDING_POOLING:
            return "embedding"
        return "chat"

    @property
    def template_mentions_tools(self) -> bool:
        """Whether the chat template declares tools (it renders a tool list when given one)."""
        return bool(self.chat_template and _TOOLS.search(self.chat_template))

    @property
    def kv_bytes_per_token(self) -> int | None:
        """The KV cache's size per token of context (f16 keys and values, every layer)."""
        if not (self.layers and self.embedding_length and self.head_count):
            return None
        kv_heads = self.head_count_kv or self.head_count
        key = self.key_length or self.embedding_length // self.head_count
        value = self.value_length or key
        return self.layers * kv_heads * (key + value) * 2


def read_header(path: str | Path) -> GGUFInfo:
    """``path``'s header (raises ``GGUFError`` for a file that is not GGUF or is damaged)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            return _read(f, path, size)
    except GGUFError:
        raise
    except struct.error as exc:
        raise GGUFError(
            f"{path.name}: the GGUF header is cut short (damaged or incomplete download)"
        ) from exc
    except OSError as exc:
        raise GGUFError(f"{path.name}: cannot read the file ({exc.strerror or exc})") from exc


def _read(f: IO[bytes], path: Path, size: int) -> GGUFInfo:
    reader = _Reader(f, size, path.name)
    if reader.raw(4) != MAGIC:
        raise GGUFError(f"{path.name} is not a GGUF model file")
    version = reader.scalar("<I")
    if version not in (2, 3):
        raise GGUFError(f"{path.name}: GGUF version {version} is not supported (2 and 3 are)")
    tensor_count, kv_count = reader.scalar("<Q"), reader.scalar("<Q")
    if kv_count > MAX_KV or tensor_count > MAX_TENSORS:
        raise GGUFError(
            f"{path.name}: the GGUF header is damaged ({kv_count} keys, {tensor_count} tensors)"
        )
    meta: dict[str, Any] = {}
    for _ in range(kv_count):
        key = reader.string()
        meta[key] = reader.value(reader.scalar("<I"))
    parameters = 0
    by_type: dict[int, int] = {}
    for _ in range(tensor_count):
        reader.string()  # name
        dims = reader.scalar("<I")
        if dims > MAX_DIMS:
            raise GGUFError(
                f"{path.name}: the GGUF header is damaged (a tensor with {dims} dimensions)"
            )
        count = 1
        for _ in range(dims):
            count *= reader.scalar("<Q")
        kind = reader.scalar("<I")
        reader.scalar("<Q")  # offset
        parameters += count
        by_type[kind] = by_type.get(kind, 0) + count

    arch = str(meta.get("general.architecture") or "unknown")

    def num(key: str) -> int | None:
        value = meta.get(f"{arch}.{key}")
        return (
            int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        )

    file_type = meta.get("general.file_type")
    quant = FILE_TYPES.get(file_type) if isinstance(file_type, int) else None
    if quant is None and by_type:
        quant = TENSOR_TYPES.get(max(by_type, key=lambda t: by_type[t]))
    template = meta.get("tokenizer.chat_template")
    vocab = meta.get("tokenizer.ggml.tokens")
    name = meta.get("general.name")
    split = meta.get("split.count")
    return GGUFInfo(
        path=path,
        file_size=size,
        version=version,
        architecture=arch,
        name=str(name).strip() if isinstance(name, str) and name.strip() else _stem(path),
        parameters=parameters,
        quantization=quant,
        context_length=num("context_length"),
        layers=num("block_count"),
        embedding_length=num("embedding_length"),
        head_count=num("attention.head_count"),
        head_count_kv=num("attention.head_count_kv"),
        key_length=num("attention.key_length"),
        value_length=num("attention.value_length"),
        vocab_size=vocab.length if isinstance(vocab, _Skipped) else None,
        chat_template=template if isinstance(template, str) else None,
        split_count=int(split) if isinstance(split, int) and split > 1 else 1,
        pooling_type=num("pooling_type"),
    )


def _stem(path: Path) -> str:
    return path.name[:-5] if path.name.lower().endswith(".gguf") else path.name


@dataclass(frozen=True)
class _Skipped:
    """An array (or a long string) read past, not kept: its length only."""

    length: int


class _Reader:
    def __init__(self, f: IO[bytes], size: int, name: str) -> None:
        self.f, self.size, self.name = f, size, name

    def raw(self, n: int) -> bytes:
        data = self.f.read(n)
        if len(data) != n:
            raise GGUFError(
                f"{self.name}: the GGUF header is cut short (damaged or incomplete download)"
            )
        return data

    def scalar(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.raw(struct.calcsize(fmt)))[0]

    def _length(self, n: int) -> int:
        if n > self.size - self.f.tell():
            raise GGUFError(
                f"{self.name}: the GGUF header is cut short or damaged (a length past the end of the file)"
            )
        return n

    def string(self) -> str:
        n = self._length(self.scalar("<Q"))
        if n > KEEP_STRING:
            self.f.seek(n, 1)
            return ""
        return self.raw(n).decode("utf-8", errors="replace")

    def value(self, kind: int) -> Any:
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item, count = self.scalar("<I"), self.scalar("<Q")
            self._length(count)  # every item takes at least one byte
            if item in _SCALARS:
                self.f.seek(count * struct.calcsize(_SCALARS[item]), 1)
            elif item == _STRING:
                for _ in range(count):
                    self.f.seek(self._length(self.scalar("<Q")), 1)
            else:  # arrays of arrays: read through
                for _ in range(count):
                    self.value(item)
            return _Skipped(count)
        raise GGUFError(f"{self.name}: the GGUF header is damaged (unknown value type {kind})")
