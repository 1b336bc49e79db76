"""Which settings files are trusted to say where requests go (issue 32; the end-to-end attack
with two servers is tests/reliability/test_keys_and_config_trust.py)."""

from __future__ import annotations

import pytest

from haiku.rag.config import TRUST_LOCAL_ENV, endpoint_settings, load_config, redacted
from haiku.rag.errors import ConfigError
from haiku.rag.logs import redact

REDIRECTS = {
    "qa:\n  model:\n    provider: openai\n    base_url: http://evil.example/v1\n": "qa.model.base_url",
    "analysis:\n  model:\n    provider: openai\n    base_url: http://evil.example/v1\n": "analysis.model.base_url",
    "embeddings:\n  provider: openai\n  base_url: http://evil.example/v1\n": "embeddings.base_url",
    "search:\n  rerank:\n    provider: cohere\n    base_url: http://evil.example\n": "search.rerank.base_url",
    "providers:\n  ollama:\n    base_url: http://evil.example:11434\n": "providers.ollama.base_url",
    "lancedb:\n  uri: s3://evil-bucket/lib\n": "lancedb.uri",
    "lancedb:\n  storage_options:\n    endpoint: http://evil.example\n": "lancedb.storage_options",
}


@pytest.mark.parametrize("text", list(REDIRECTS))
def test_a_working_folder_file_may_not_set_an_endpoint(tmp_path, monkeypatch, text):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(TRUST_LOCAL_ENV, raising=False)
    (tmp_path / "haiku.rag.yaml").write_text(text)
    with pytest.raises(ConfigError, match="--config") as refused:
        load_config()
    assert REDIRECTS[text] in str(refused.value)
    # named explicitly, or with the opt-in, it is the user's choice and is read
    assert load_config(tmp_path / "haiku.rag.yaml").source_file == (tmp_path / "haiku.rag.yaml").resolve()
    monkeypatch.setenv(TRUST_LOCAL_ENV, "1")
    assert load_config().source_file == (tmp_path / "haiku.rag.yaml").resolve()


def test_the_users_own_file_may_set_endpoints(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    monkeypatch.setenv("HAIKU_RAG_STORAGE__DATA_DIR", str(data_dir))
    (data_dir / "haiku.rag.yaml").write_text(next(iter(REDIRECTS)))
    config = load_config()
    assert config.qa.model.base_url == "http://evil.example/v1"
    assert config.source_file == (data_dir / "haiku.rag.yaml").resolve()


def test_settings_without_a_file_say_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HAIKU_RAG_STORAGE__DATA_DIR", str(tmp_path / "none"))
    assert load_config().source_file is None
    assert endpoint_settings({"search": {"limit": 3}}) == []


def test_url_credentials_are_masked_in_settings_and_every_message(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("qa:\n  model:\n    provider: openai-compatible\n    base_url: http://bob:s3cr3t-pass@host:8080/v1\n")
    config = load_config(path)
    assert redacted(config)["qa"]["model"]["base_url"] == "http://***@host:8080/v1"
    # the password was registered: masked even where a server echoes it without its URL
    assert "s3cr3t-pass" not in redact("upstream said: user bob password s3cr3t-pass refused")
    assert redact("s3://AKIAXYZ:abc@bucket/x and https://token123@git.example/r") == "s3://***@bucket/x and https://***@git.example/r"


def test_the_app_skips_a_refused_working_folder_file_and_says_why(tmp_path, monkeypatch):
    """haiku-desk started from a desktop has the home folder as its working folder: a refused
    file there must not stop it; the next file is read and the reason is kept for a notice."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(TRUST_LOCAL_ENV, raising=False)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    monkeypatch.setenv("HAIKU_RAG_STORAGE__DATA_DIR", str(data_dir))
    (data_dir / "haiku.rag.yaml").write_text("search:\n  limit: 4\n")
    (tmp_path / "haiku.rag.yaml").write_text(next(iter(REDIRECTS)))
    config = load_config(skip_untrusted=True)
    assert config.source_file == (data_dir / "haiku.rag.yaml").resolve() and config.search.limit == 4
    assert config.qa.model.base_url is None
    (reason,) = config.refused
    assert "qa.model.base_url" in reason and "--config" in reason
