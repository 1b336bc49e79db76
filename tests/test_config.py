from pathlib import Path

import pytest

from haiku.rag.config import (
    DB_FILE_NAME,
    find_config_file,
    load_config,
    redacted,
    resolve_db_path,
)
from haiku.rag.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_any_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config()
    assert config.embeddings.provider == "local"
    assert config.processing.chunk_size == 256
    assert config.search.rrf_k == 60
    assert config.qa.max_searches == 5


def test_explicit_file_then_env_then_cwd_then_data_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    monkeypatch.setenv("HAIKU_RAG_STORAGE__DATA_DIR", str(data_dir))
    in_data_dir = write(data_dir / "haiku.rag.yaml", "search:\n  limit: 4\n")
    assert find_config_file() == in_data_dir
    in_cwd = write(tmp_path / "haiku.rag.yaml", "search:\n  limit: 3\n")
    assert find_config_file() == in_cwd
    from_env = write(tmp_path / "env.yaml", "search:\n  limit: 2\n")
    monkeypatch.setenv("HAIKU_RAG_CONFIG_PATH", str(from_env))
    assert find_config_file() == from_env
    explicit = write(tmp_path / "explicit.yaml", "search:\n  limit: 1\n")
    assert find_config_file(explicit) == explicit
    assert load_config(explicit).search.limit == 1


def test_missing_explicit_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")


def test_environment_overrides_the_file(tmp_path, monkeypatch):
    path = write(tmp_path / "c.yaml", "embeddings:\n  provider: ollama\n  model: a\n")
    monkeypatch.setenv("HAIKU_RAG_EMBEDDINGS__MODEL", "b")
    config = load_config(path)
    assert (config.embeddings.provider, config.embeddings.model) == ("ollama", "b")


def test_unknown_key_is_rejected_with_its_dotted_name(tmp_path):
    path = write(tmp_path / "c.yaml", "search:\n  limitt: 3\n")
    with pytest.raises(ConfigError, match=r"unknown setting 'search\.limitt' in .*c\.yaml"):
        load_config(path)


def test_unknown_top_level_key_is_rejected(tmp_path):
    path = write(tmp_path / "c.yaml", "serch: {}\n")
    with pytest.raises(ConfigError, match="unknown setting 'serch'"):
        load_config(path)


def test_invalid_value_names_the_key(tmp_path):
    path = write(tmp_path / "c.yaml", "processing:\n  chunk_size: -1\n")
    with pytest.raises(ConfigError, match="invalid setting 'processing.chunk_size'"):
        load_config(path)


def test_invalid_yaml_and_non_mapping(tmp_path):
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(write(tmp_path / "a.yaml", "search: [\n"))
    with pytest.raises(ConfigError, match="mapping"):
        load_config(write(tmp_path / "b.yaml", "- 1\n- 2\n"))


def test_newer_config_version_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="version 99"):
        load_config(write(tmp_path / "c.yaml", "version: 99\n"))


def test_db_path_resolution_order(tmp_path, monkeypatch):
    config = load_config()
    config.storage.data_dir = tmp_path / "data"
    monkeypatch.delenv("HAIKU_RAG_DB", raising=False)
    assert resolve_db_path(None, config) == str(tmp_path / "data" / DB_FILE_NAME)
    monkeypatch.setenv("HAIKU_RAG_DB", str(tmp_path / "env.lancedb"))
    assert resolve_db_path(None, config) == str(tmp_path / "env.lancedb")
    assert resolve_db_path(tmp_path / "arg.lancedb", config) == str(tmp_path / "arg.lancedb")
    assert resolve_db_path("s3://bucket/lib", config) == "s3://bucket/lib"


def test_redaction_masks_secret_looking_keys(tmp_path):
    config = load_config()
    config.lancedb.storage_options = {"aws_secret_access_key": "hunter2", "region": "eu"}
    shown = redacted(config)
    assert shown["lancedb"]["storage_options"] == {"aws_secret_access_key": "***", "region": "eu"}


def test_page_grouping_can_be_turned_off_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_config().search.page_share == 0.0  # on by default
    monkeypatch.setenv("HAIKU_RAG_SEARCH__PAGE_SHARE", "off")
    assert load_config().search.page_share is None
    monkeypatch.setenv("HAIKU_RAG_SEARCH__PAGE_SHARE", "0.5")
    assert load_config().search.page_share == 0.5
    monkeypatch.setenv("HAIKU_RAG_SEARCH__PAGE_SHARE", "sometimes")
    with pytest.raises(ConfigError, match="search.page_share"):
        load_config()
