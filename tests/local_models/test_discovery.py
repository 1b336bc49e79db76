"""Model files on disk: the Ollama, LM Studio, GPT4All and Hugging Face layouts (made in a temp
dir), headers read without loading weights, and the memory estimate before a load."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from gguf_factory import TOOLS_TEMPLATE, parameter_count, tiny_llama

from haiku.rag.local_models import GGUFError, Roots, describe, discover, plan, read_header
from haiku.rag.local_models.fit import MIN_CONTEXT, choose_threads, estimate_bytes


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_llama(tmp_path_factory.mktemp("m") / "tiny.gguf", name="Tiny Chat", context=4096)


def ollama_store(root: Path, source: Path, name: str = "tiny", tag: str = "latest", namespace: str = "library") -> Path:
    """An Ollama store: the blob named by its digest, a manifest naming it."""
    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    blobs = root / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    (blobs / f"sha256-{digest}").write_bytes(data)
    config = b'{"model_format":"gguf"}'
    (blobs / f"sha256-{hashlib.sha256(config).hexdigest()}").write_bytes(config)
    manifest = root / "manifests" / "registry.ollama.ai" / namespace / name / tag
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                   "digest": f"sha256:{hashlib.sha256(config).hexdigest()}", "size": len(config)},
        "layers": [
            {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "0" * 64, "size": 10},
            {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}", "size": len(data)},
        ],
    }))  # fmt: skip
    return blobs / f"sha256-{digest}"


def test_header_gives_name_architecture_parameters_quantisation_context(model_file: Path) -> None:
    info = read_header(model_file)
    assert info.name == "Tiny Chat"
    assert info.architecture == "llama"
    assert info.parameters == parameter_count()
    assert info.quantization == "F32"
    assert info.context_length == 4096
    assert (info.layers, info.embedding_length, info.head_count, info.head_count_kv) == (2, 16, 2, 1)
    assert info.vocab_size == 262
    assert info.kind == "chat"
    assert info.file_size == model_file.stat().st_size
    assert not info.template_mentions_tools
    # keys + values, f16, per layer: 2 layers x 1 kv head x (8 + 8) x 2 bytes
    assert info.kv_bytes_per_token == 2 * 1 * 16 * 2


def test_header_agrees_with_the_gguf_package(model_file: Path) -> None:
    import gguf

    reader = gguf.GGUFReader(model_file)
    assert read_header(model_file).parameters == sum(int(t.n_elements) for t in reader.tensors)


def test_a_template_that_renders_tools_is_noticed(tmp_path: Path) -> None:
    path = tiny_llama(tmp_path / "t.gguf", chat_template=TOOLS_TEMPLATE)
    assert read_header(path).template_mentions_tools
    assert read_header(tiny_llama(tmp_path / "n.gguf", chat_template=None)).chat_template is None


def test_not_gguf_truncated_and_damaged_files_get_clear_errors(tmp_path: Path, model_file: Path) -> None:
    text = tmp_path / "notes.gguf"
    text.write_text("hello")
    with pytest.raises(GGUFError, match="not a GGUF model file"):
        read_header(text)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(model_file.read_bytes()[:200])
    with pytest.raises(GGUFError, match="cut short"):
        read_header(cut)
    damaged = bytearray(model_file.read_bytes())
    damaged[16:24] = (10**9).to_bytes(8, "little")  # the key/value count
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(bytes(damaged))
    with pytest.raises(GGUFError, match="damaged"):
        read_header(bad)
    with pytest.raises(GGUFError, match="cannot read"):
        read_header(tmp_path / "absent.gguf")


def test_discovers_ollama_lm_studio_gpt4all_and_huggingface_layouts(tmp_path: Path, model_file: Path) -> None:
    home = tmp_path / "home"
    blob = ollama_store(home / ".ollama" / "models", model_file, "tiny", "q4")
    ollama_store(home / ".ollama" / "models", tiny_llama(tmp_path / "other.gguf", seed=1), "helper", "1b", namespace="someone")
    lms = home / ".lmstudio" / "models" / "bartowski" / "Tiny-GGUF"
    lms.mkdir(parents=True)
    tiny_llama(lms / "Tiny-Q8_0.gguf", name="LMS Tiny", seed=2)
    (lms / "README.md").write_text("not a model")
    gpt4all = home / ".local" / "share" / "nomic.ai" / "GPT4All"
    tiny_llama(gpt4all / "tiny-chat.gguf", seed=3)
    snapshot = home / ".cache" / "huggingface" / "hub" / "models--org--Tiny-GGUF" / "snapshots" / "abc123"
    blob_dir = home / ".cache" / "huggingface" / "hub" / "models--org--Tiny-GGUF" / "blobs"
    tiny_llama(blob_dir / "deadbeef", seed=4)
    snapshot.mkdir(parents=True)
    (snapshot / "tiny.Q4_K_M.gguf").symlink_to(blob_dir / "deadbeef")

    models = discover(Roots.default(home=home, env={}))
    by_label = {m.label: m for m in models}
    assert set(by_label) == {
        "tiny:q4", "someone/helper:1b", "bartowski/Tiny-GGUF/Tiny-Q8_0.gguf", "tiny-chat.gguf",
        "org/Tiny-GGUF/tiny.Q4_K_M.gguf",
    }  # fmt: skip
    assert by_label["tiny:q4"].path == blob and by_label["tiny:q4"].source == "ollama"
    assert by_label["tiny:q4"].info is not None and by_label["tiny:q4"].info.name == "Tiny Chat"
    assert by_label["bartowski/Tiny-GGUF/Tiny-Q8_0.gguf"].source == "lm-studio"
    assert by_label["tiny-chat.gguf"].source == "gpt4all"
    assert by_label["org/Tiny-GGUF/tiny.Q4_K_M.gguf"].source == "huggingface"
    summary = by_label["tiny:q4"].summary()
    assert summary.startswith("tiny:q4 · ") and "F32" in summary and "4k context" in summary


def test_ollama_models_dir_from_the_environment_and_broken_manifests(tmp_path: Path, model_file: Path) -> None:
    store = tmp_path / "elsewhere"
    ollama_store(store, model_file)
    broken = store / "manifests" / "registry.ollama.ai" / "library" / "broken" / "latest"
    broken.parent.mkdir(parents=True)
    broken.write_text("{not json")
    missing = store / "manifests" / "registry.ollama.ai" / "library" / "gone" / "latest"
    missing.parent.mkdir(parents=True)
    missing.write_text(json.dumps({"layers": [{"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:" + "1" * 64}]}))
    roots = Roots.default(home=tmp_path / "nobody", env={"OLLAMA_MODELS": str(store)})
    assert [m.label for m in discover(roots)] == ["tiny:latest"]


def test_picked_files_and_folders_damaged_ones_listed_with_their_error_duplicates_once(tmp_path: Path, model_file: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "broken.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")
    linked = folder / "same.gguf"
    linked.symlink_to(model_file)
    roots = Roots().with_folders(folder, model_file)
    models = discover(roots)
    assert [m.label for m in models] == ["broken.gguf", "same.gguf"]  # model_file: same file once
    assert models[0].info is None and "cut short" in (models[0].error or "")
    assert "unreadable" in models[0].summary()
    assert models[1].info is not None


def test_split_models_are_listed_once_with_every_part_counted(tmp_path: Path, model_file: Path) -> None:
    first = tmp_path / "big-00001-of-00002.gguf"
    first.write_bytes(model_file.read_bytes())
    (tmp_path / "big-00002-of-00002.gguf").write_bytes(b"x" * 1000)
    models = discover(Roots().with_folders(tmp_path))
    assert [m.label for m in models] == ["big-00001-of-00002.gguf"]
    assert models[0].size == model_file.stat().st_size + 1000


def test_fit_says_what_a_model_needs_against_what_is_free(model_file: Path) -> None:
    info = read_header(model_file)
    fit = plan(info, available=9 * (1 << 30), cores=4)
    assert fit.fits and fit.context == 4096  # the trained context caps the default
    assert fit.threads == 3  # one core left for the GUI
    assert fit.message.startswith("needs ~") and fit.message.endswith("9.0 GB free")
    assert estimate_bytes(info, 4096) - estimate_bytes(info, 2048) == 2048 * info.kv_bytes_per_token  # type: ignore[operator]

    short = plan(info, available=fit.needs_bytes // 4, cores=1)
    assert not short.fits and short.context == MIN_CONTEXT and short.threads == 1
    assert "only" in short.message and "smaller" in short.message
    assert plan(info, context=2048, available=1 << 40).context == 2048


def test_fit_shrinks_the_context_before_giving_up(model_file: Path) -> None:
    from dataclasses import replace

    # a model with a large KV cache per token: 8k context does not fit, 4k does
    info = replace(read_header(model_file), layers=32, head_count_kv=32, key_length=128, value_length=128, context_length=32768)
    room = estimate_bytes(info, 4096) + 1
    assert plan(info, available=int(room / 0.9) + 1).context == 4096


def test_threads_default_leaves_a_core() -> None:
    assert choose_threads(1) == 1 and choose_threads(8) == 7


def test_describe_a_file_that_vanished(tmp_path: Path) -> None:
    model = describe(tmp_path / "gone.gguf")
    assert model.info is None and model.error


def test_embedding_models_are_told_from_chat_models_by_architecture_or_pooling(tmp_path: Path, model_file: Path) -> None:
    from gguf_factory import tiny_bert

    from haiku.rag.local_models import embedding_models

    home = tmp_path / "home"
    ollama_store(home / ".ollama" / "models", tiny_bert(tmp_path / "bert.gguf", name="Tiny Nomic"), "nomic-embed-text", "latest")
    ollama_store(home / ".ollama" / "models", model_file, "tiny", "q4")
    lms = home / ".lmstudio" / "models" / "someone" / "Embed-GGUF"
    tiny_llama(lms / "qwen3-embed.gguf", name="Decoder Embed", pooling=3, seed=5)  # last-token pooling
    tiny_llama(lms / "reranker.gguf", name="Ranker", pooling=4, seed=6)  # rank: scores, no vectors
    tiny_llama(lms / "plain.gguf", name="Plain", pooling=0, seed=7)
    roots = Roots.default(home=home, env={})

    kinds = {m.label: m.kind for m in discover(roots)}
    assert kinds == {
        "nomic-embed-text:latest": "embedding",
        "tiny:q4": "chat",
        "someone/Embed-GGUF/qwen3-embed.gguf": "embedding",
        "someone/Embed-GGUF/reranker.gguf": "chat",
        "someone/Embed-GGUF/plain.gguf": "chat",
    }
    listed = embedding_models(roots)
    assert [m.label for m in listed] == ["nomic-embed-text:latest", "someone/Embed-GGUF/qwen3-embed.gguf"]
    bert = listed[0]
    assert bert.info is not None and bert.info.architecture == "bert" and bert.info.embedding_length == 16
    assert bert.info.pooling_type == 1
    assert "embedding" in bert.summary()


def test_models_the_catalog_downloaded_are_listed_as_downloaded(tmp_path: Path, model_file: Path) -> None:
    downloads = tmp_path / "haiku-desk" / "models"
    downloads.mkdir(parents=True)
    (downloads / "tiny-chat.gguf").write_bytes(model_file.read_bytes())
    picked = tmp_path / "picked"
    picked.mkdir()
    (picked / "mine.gguf").write_bytes(model_file.read_bytes())
    models = discover(Roots().with_folders(picked).with_downloads(downloads))
    assert [(m.label, m.source) for m in models] == [("tiny-chat.gguf", "downloaded"), ("mine.gguf", "folder")]
