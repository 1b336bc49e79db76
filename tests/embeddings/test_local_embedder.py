"""The default offline embedder, run on the real int8 MiniLM model shipped on PyPI."""

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing here may reach a model hub

import subprocess
import sys
import threading

import numpy as np
import pytest

from haiku.rag.embeddings import EmbedderIdentity, create_embedder
from haiku.rag.embeddings.local import MAX_TOKENS, LocalEmbedder, default_tokenizer
from haiku.rag.errors import OperationCancelled
from haiku.rag.operations import CancelToken, Progress, Stage

MIXED_LENGTHS = [
    "Cats sleep a lot.",
    "The mitochondria is the powerhouse of the cell, producing most of the chemical energy "
    "needed to power the cell's biochemical reactions, stored in adenosine triphosphate.",
    "Rain.",
    "Quarterly revenue grew by twelve percent, driven by strong demand in the enterprise "
    "segment and a favourable currency effect, while operating costs stayed flat.",
    "How do I reset my password?",
    "Glaciers retreat when summer melting exceeds winter snowfall over several years.",
]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder(batch_size=4, threads=2)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_importing_the_module_loads_neither_onnxruntime_nor_tokenizers() -> None:
    code = (
        "import sys, haiku.rag.embeddings.local\n"
        "assert 'onnxruntime' not in sys.modules and 'tokenizers' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy())


def test_identity_is_known_without_loading_the_model() -> None:
    fresh = LocalEmbedder()
    assert fresh.identity == EmbedderIdentity("local", "all-MiniLM-L6-v2", 384)


def test_query_vector_is_normalised_float32(embedder: LocalEmbedder) -> None:
    vector = embedder.embed_query("What is the boiling point of water?")
    assert vector.shape == (384,)
    assert vector.dtype == np.float32
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_documents_give_one_normalised_row_per_text(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed_documents(MIXED_LENGTHS)
    assert vectors.shape == (len(MIXED_LENGTHS), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed_documents([]).shape == (0, 384)


def test_a_paraphrase_scores_higher_than_an_unrelated_sentence(embedder: LocalEmbedder) -> None:
    query = embedder.embed_query("How do I change my login password?")
    paraphrase, unrelated = embedder.embed_documents(
        ["Steps to reset the password of your account.", "The volcano erupted in 1883."]
    )
    assert cosine(query, paraphrase) > cosine(query, unrelated) + 0.3


def test_vectors_match_sentence_transformers(embedder: LocalEmbedder) -> None:
    # the published all-MiniLM-L6-v2 similarity of this pair is 0.7553 (fp32)
    a, b = embedder.embed_documents(["A man is eating food.", "A man is eating a piece of bread."])
    assert cosine(a, b) == pytest.approx(0.7553, abs=0.005)


def test_embedding_is_deterministic(embedder: LocalEmbedder) -> None:
    first = embedder.embed_documents(MIXED_LENGTHS)
    again = LocalEmbedder(batch_size=4, threads=2).embed_documents(MIXED_LENGTHS)
    np.testing.assert_allclose(first, again, atol=1e-6)


def test_a_text_gets_the_same_vector_alone_or_in_a_mixed_batch(embedder: LocalEmbedder) -> None:
    together = LocalEmbedder(batch_size=len(MIXED_LENGTHS), threads=2).embed_documents(
        MIXED_LENGTHS
    )
    for text, row in zip(MIXED_LENGTHS, together, strict=True):
        alone = embedder.embed_documents([text])[0]
        assert cosine(alone, row) > 0.999, text


def test_long_text_is_truncated_to_256_tokens(embedder: LocalEmbedder) -> None:
    words = " ".join(f"topic{i % 50} measurement" for i in range(600))
    content = default_tokenizer().encode(words, add_special_tokens=False)
    assert len(content.ids) > 3 * MAX_TOKENS
    # what the model can read: 254 content tokens plus [CLS] and [SEP]
    readable = words[: content.offsets[MAX_TOKENS - 3][1]]
    long_vector, readable_vector = embedder.embed_documents([words, readable])
    assert cosine(long_vector, readable_vector) > 0.9999


def test_progress_is_reported_per_batch(embedder: LocalEmbedder) -> None:
    reports: list[Progress] = []
    embedder.embed_documents(MIXED_LENGTHS, progress=reports.append)
    assert [(p.stage, p.done, p.total) for p in reports] == [
        (Stage.EMBEDDING, 4, 6),
        (Stage.EMBEDDING, 6, 6),
    ]


def test_cancellation_stops_between_batches(embedder: LocalEmbedder) -> None:
    token = CancelToken()
    reports: list[Progress] = []

    def cancel_after_first_batch(progress: Progress) -> None:
        reports.append(progress)
        token.cancel()

    with pytest.raises(OperationCancelled):
        embedder.embed_documents(MIXED_LENGTHS, progress=cancel_after_first_batch, cancel=token)
    assert [p.done for p in reports] == [4]


def test_query_embeddings_are_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    cached = LocalEmbedder(threads=1)
    first = cached.embed_query("cache me")

    def no_more_model_calls(*args: object, **kwargs: object) -> np.ndarray:
        raise AssertionError("the model ran again for a cached query")

    monkeypatch.setattr(cached, "embed_documents", no_more_model_calls)
    second = cached.embed_query("cache me")
    np.testing.assert_array_equal(first, second)
    second[:] = 0  # callers get copies: the cache stays intact
    np.testing.assert_array_equal(cached.embed_query("cache me"), first)


def test_concurrent_callers_get_the_same_vectors(embedder: LocalEmbedder) -> None:
    expected = embedder.embed_documents(MIXED_LENGTHS)
    results: dict[int, np.ndarray] = {}

    def work(index: int) -> None:
        results[index] = embedder.embed_documents(MIXED_LENGTHS)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for vectors in results.values():
        np.testing.assert_allclose(vectors, expected, atol=1e-6)


def test_default_tokenizer_counts_special_tokens_and_never_truncates() -> None:
    tokenizer = default_tokenizer()
    assert tokenizer.encode("hello").ids == [101, 7592, 102]  # [CLS] hello [SEP]
    assert len(tokenizer.encode("word " * 1000).ids) == 1002
    assert default_tokenizer() is tokenizer


def test_create_embedder_defaults_to_the_local_model() -> None:
    embedder = create_embedder(threads=1)
    assert isinstance(embedder, LocalEmbedder)
    assert embedder.identity == EmbedderIdentity("local", "all-MiniLM-L6-v2", 384)


def test_create_embedder_rejects_unknown_providers_and_models() -> None:
    with pytest.raises(ValueError, match="'local', 'ollama', 'openai-compatible', 'openai'"):
        create_embedder("huggingface")
    with pytest.raises(ValueError, match="only provides 'all-MiniLM-L6-v2'"):
        create_embedder("local", "bge-small-en")
    with pytest.raises(ValueError, match="384 dimensions"):
        create_embedder("local", vector_dim=768)


def test_invalid_local_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        create_embedder("local", batch_size=0)
    with pytest.raises(ValueError, match="threads must be at least 1"):
        create_embedder("local", threads=0)


def test_batches_are_shaped_by_padded_tokens_long_texts_few_short_texts_many() -> None:
    """Long chunks go 4 at a time (1,024 padded tokens), short ones up to 32 at a time; the
    vectors do not depend on the batch shape."""
    long_text = " ".join(f"token{i}" for i in range(400))  # truncated to 256 tokens
    texts = [long_text] * 8 + ["A short sentence about rain."] * 64
    reports: list[Progress] = []
    embedder = LocalEmbedder(threads=2)
    vectors = embedder.embed_documents(texts, progress=reports.append)
    done = [p.done for p in reports]
    sizes = [b - a for a, b in zip([0, *done], done, strict=False)]
    assert sizes == [4, 4, 32, 32]
    one_by_one = LocalEmbedder(batch_size=1, threads=2).embed_documents([long_text, texts[-1]])
    assert cosine(vectors[0], one_by_one[0]) > 0.9999
    assert cosine(vectors[-1], one_by_one[1]) > 0.9999
