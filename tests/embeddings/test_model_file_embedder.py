"""Embeddings from a GGUF embedding model file through the built-in llama.cpp runtime (a real
xllamacpp child process on 127.0.0.1), on a tiny BERT made in the test (random weights: the
vectors mean nothing; size, normalisation, determinism and the plumbing are what is checked):
the embedder, a real LanceDB library rebuilt with it and searched, and the child's end."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from gguf_factory import tiny_bert, tiny_llama
from pdf_factory import make_report_pdf, make_two_column_pdf
from processes import gone

from haiku.rag.client import HaikuRAG
from haiku.rag.config import EmbeddingsConfig
from haiku.rag.embeddings import create_embedder
from haiku.rag.errors import EmbedderMismatchError, EmbeddingError
from haiku.rag.local_models import provider
from haiku.rag.local_models.runtime import runtime_available
from haiku.rag.operations import Progress, Stage

pytestmark = pytest.mark.skipif(not runtime_available(), reason="xllamacpp is not installed")

TEXTS = ["the page", "energy cell model", "Harbour dues of the night convoys."]


@pytest.fixture(scope="module")
def embed_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # 2048 positions: a chunk of a few hundred words is a few thousand characters, and this
    # vocabulary is single characters
    return tiny_bert(tmp_path_factory.mktemp("emb") / "tiny-embed.gguf", embd=24, context=2048)


@pytest.fixture(autouse=True)
def stop_models() -> Iterator[None]:
    yield
    provider.stop_all()


def test_a_model_file_embeds_texts_normalised_deterministic_and_sized_from_its_header(embed_file: Path) -> None:
    embedder = create_embedder("model-file", str(embed_file), batch_size=2)
    runtime = embedder.runtime  # type: ignore[attr-defined]

    # the size is known from the header alone: the store's column is made before any request
    assert embedder.identity.provider == "model-file"
    assert embedder.identity.model == str(embed_file)
    assert embedder.identity.vector_dim == 24
    assert runtime.starts == 0 and not runtime.running

    seen: list[Progress] = []
    vectors = embedder.embed_documents(TEXTS, progress=seen.append)
    assert vectors.shape == (3, 24) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert np.abs(vectors[0] - vectors[1]).max() > 1e-3  # different texts, different vectors
    assert [(p.stage, p.done, p.total) for p in seen] == [(Stage.EMBEDDING, 2, 3), (Stage.EMBEDDING, 3, 3)]
    assert runtime.running and runtime.starts == 1 and runtime.settings.embedding
    pid = runtime.pid

    # a query is the same text's vector; the same texts again (in another batch) are the same
    np.testing.assert_allclose(embedder.embed_query(TEXTS[2]), vectors[2], atol=1e-5)
    np.testing.assert_allclose(embedder.embed_documents(list(reversed(TEXTS))), vectors[::-1], atol=1e-5)
    # and after the model was unloaded and loaded again
    runtime.stop()
    np.testing.assert_allclose(embedder.embed_documents(TEXTS[:1]), vectors[:1], atol=1e-5)
    assert runtime.starts == 2

    second_pid = runtime.pid
    assert pid is not None and second_pid is not None and gone(pid)
    embedder.close()
    assert gone(second_pid) and not runtime.running


def test_long_texts_are_embedded_whole_up_to_the_context_and_cut_beyond_it(embed_file: Path) -> None:
    embedder = create_embedder("model-file", str(embed_file))
    assert embedder.runtime.settings.context == 2048  # type: ignore[attr-defined]
    long = "ab cd " * 375  # 1,500 tokens ("\u2581a", "b", ...): more than llama.cpp's default batch
    too_long = "ab cd " * 600  # 2,400 tokens: more than the context

    vectors = embedder.embed_documents([TEXTS[0], long, too_long, too_long + "ef gh " * 50])

    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    # the short text in a batch that had to be cut is embedded as it is alone
    np.testing.assert_allclose(vectors[0], embedder.embed_documents([TEXTS[0]])[0], atol=1e-5)
    np.testing.assert_allclose(vectors[1], embedder.embed_documents([long])[0], atol=1e-5)
    # beyond the context only the first tokens count: what follows them changes nothing
    np.testing.assert_allclose(vectors[2], vectors[3], atol=1e-5)
    assert np.abs(vectors[1] - vectors[2]).max() > 1e-4


def test_a_chat_model_or_a_wrong_size_is_refused_before_any_process(tmp_path: Path, embed_file: Path) -> None:
    chat = tiny_llama(tmp_path / "chat.gguf", name="Tiny Chat")
    with pytest.raises(EmbeddingError, match=r"Tiny Chat \(chat.gguf\) is a llama chat model, not an embedding model"):
        create_embedder("model-file", str(chat))
    (tmp_path / "notes.gguf").write_text("not a model")
    with pytest.raises(EmbeddingError, match="notes.gguf is not a GGUF model file"):
        create_embedder("model-file", str(tmp_path / "notes.gguf"))
    with pytest.raises(ValueError, match="makes 24-dimensional vectors, not 384"):
        create_embedder("model-file", str(embed_file), vector_dim=384)
    with pytest.raises(ValueError, match="needs the path of a GGUF embedding model"):
        create_embedder("model-file", None)
    assert provider._embedding == {}


def test_a_library_is_rebuilt_with_a_model_file_and_searched_with_it(
    tmp_path: Path, db_path: Path, config, embed_file: Path
) -> None:
    from haiku.rag.store import documents as D

    for name, make in (("report.pdf", make_report_pdf), ("columns.pdf", make_two_column_pdf)):
        make(tmp_path / name)
    config.processing.parse_isolation = "none"  # the parse worker is not what is tested here
    client = HaikuRAG(db_path, config, create=True)
    try:
        for name in ("report.pdf", "columns.pdf"):
            outcome = asyncio.run(client.ingest_file(tmp_path / name, embed=False))
            assert outcome.document is not None
        chunks = D.chunks_missing_vectors(client.store, D.list_documents(client.store), include_embedded=True)
        assert len(chunks) >= 4

        seen: list[Progress] = []
        wanted = EmbeddingsConfig(provider="model-file", model=str(embed_file), batch_size=4)
        count = asyncio.run(client.rebuild(embeddings=wanted, progress=seen.append))

        assert count == len(chunks)
        assert seen and seen[-1].stage == Stage.EMBEDDING and seen[-1].done == seen[-1].total == len(chunks)
        assert [p.done for p in seen] == sorted(p.done for p in seen)  # progress moves forward
        # the library remembers which embedder built it
        assert client.store.embedder_identity == {"provider": "model-file", "model": str(embed_file), "vector_dim": 24}
        runtime = provider._embedding[embed_file]
        assert runtime.running and runtime.settings.embedding
        pid = runtime.pid

        # a vector search for a chunk's own text finds that chunk first: the query was embedded
        # by the same model file, through the same child
        _, chunk_id, text = chunks[len(chunks) // 2]
        results = asyncio.run(client.search(text, limit=3, search_type="vector"))
        assert results and results[0].chunk_id == chunk_id
        assert runtime.pid == pid
    finally:
        client.close()
    assert pid is not None and gone(pid)  # closing the library stopped the model's process

    # reopened with the same file: accepted; with another embedder: refused, nothing changed
    config.embeddings = EmbeddingsConfig(provider="model-file", model=str(embed_file))
    again = HaikuRAG(db_path, config)
    try:
        assert asyncio.run(again.search("ledger", limit=2, search_type="vector"))
    finally:
        again.close()
    other = tiny_bert(tmp_path / "other-embed.gguf", embd=24, context=2048, seed=3)
    config.embeddings = EmbeddingsConfig(provider="model-file", model=str(other))
    with pytest.raises(EmbedderMismatchError, match="model-file"):
        HaikuRAG(db_path, config)


def test_stop_all_ends_the_embedding_process_with_the_chat_model(embed_file: Path) -> None:
    embedder = create_embedder("model-file", str(embed_file))
    embedder.embed_query("the page")
    pid = embedder.runtime.pid  # type: ignore[attr-defined]
    assert pid is not None and not gone(pid)
    provider.stop_all()  # the app's quit
    assert gone(pid) and provider._embedding == {}


def test_a_killed_embedding_process_is_replaced_by_the_next_request(embed_file: Path) -> None:
    import signal

    embedder = create_embedder("model-file", str(embed_file))
    first = embedder.embed_query("energy cell model")
    runtime = embedder.runtime  # type: ignore[attr-defined]
    pid = runtime.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # as the system does when memory runs out
    runtime.wait_died(30)

    again = embedder.embed_documents(["energy cell model"])[0]  # not the query cache: a request
    np.testing.assert_allclose(again, first, atol=1e-5)
    assert runtime.starts == 2 and runtime.pid not in (None, pid)


def test_a_decoder_made_to_embed_is_served_too_and_long_texts_are_cut_to_its_context(tmp_path: Path) -> None:
    """A llama-architecture file whose header declares last-token pooling (as Qwen3-Embedding's
    does): an embedder, its vector size from the header; a text past its context (a decoder's
    server refuses it with another message than an encoder's) is cut, not refused."""
    path = tiny_llama(tmp_path / "decoder-embed.gguf", name="Decoder Embed", pooling=3, context=2048)
    embedder = create_embedder("model-file", str(path))
    assert embedder.identity.vector_dim == 16

    too_long = "x " * 1500  # 6,000 byte tokens
    vectors = embedder.embed_documents([TEXTS[1], too_long, too_long + "y " * 100])

    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(vectors[1], vectors[2], atol=1e-5)  # only the first tokens count
    np.testing.assert_allclose(vectors[0], embedder.embed_documents([TEXTS[1]])[0], atol=1e-5)


def test_the_command_line_rebuilds_a_library_with_a_model_file_and_searches_with_it(
    tmp_path: Path, db_path: Path, config, embed_file: Path
) -> None:
    """`haiku-rag rebuild` with the model file configured: the store, built with another
    embedder, is re-embedded (it used to refuse, naming the mismatch and itself as the fix)."""
    import subprocess
    import sys

    make_report_pdf(tmp_path / "report.pdf")
    config.processing.parse_isolation = "none"
    client = HaikuRAG(db_path, config, create=True)
    try:
        asyncio.run(client.ingest_file(tmp_path / "report.pdf"))  # embedded offline (MiniLM)
        chunks = len(D_chunks(client))
        assert client.store.embedder_identity["provider"] == "local"
    finally:
        client.close()
    env = {
        **os.environ,
        "HAIKU_RAG_STORAGE__DATA_DIR": str(tmp_path / "data"),
        "HAIKU_RAG_EMBEDDINGS__PROVIDER": "model-file",
        "HAIKU_RAG_EMBEDDINGS__MODEL": str(embed_file),
    }
    cli = [sys.executable, "-m", "haiku.rag.cli", "--db", str(db_path)]

    done = subprocess.run([*cli, "rebuild"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"re-embedded {chunks} chunks" in done.stdout
    found = subprocess.run([*cli, "search", "Results"], capture_output=True, text=True, env=env, timeout=300)
    assert found.returncode == 0 and "Quarterly Report on Zephyrine Logistics" in found.stdout, found.stderr
    client = HaikuRAG(db_path, config, skip_validation=True)
    try:
        assert client.store.embedder_identity == {"provider": "model-file", "model": str(embed_file), "vector_dim": 24}
    finally:
        client.close()


def D_chunks(client: HaikuRAG) -> list[object]:  # noqa: N802
    from haiku.rag.store import documents as D

    return list(D.chunks_missing_vectors(client.store, D.list_documents(client.store), include_embedded=True))
