"""The curated catalog: every entry is usable data, a malformed one is refused, and an entry
downloads through ``download_entry`` (served here from 127.0.0.1, its size and hash checked)."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from types import SimpleNamespace

import pytest
from gguf_factory import tiny_bert
from range_server import file_server

from haiku.rag.local_models.catalog import CATALOG, CatalogEntry, CatalogError, entry
from haiku.rag.local_models.download import DownloadError, download_entry, part_path


def test_every_entry_is_valid_and_names_are_unique() -> None:
    for item in CATALOG:
        item.validate()
    assert len({i.name for i in CATALOG}) == len(CATALOG)
    assert len({i.file_name for i in CATALOG}) == len(CATALOG)
    assert {i.kind for i in CATALOG} <= {"chat", "embedding"}
    for item in CATALOG:
        assert entry(item.name) is item and entry(item.file_name) is item


def test_a_malformed_entry_is_refused_with_what_is_wrong(tmp_path: Path) -> None:
    good = CatalogEntry("x", "x.gguf", "chat", 10, "MIT", "https://example.org/x", "a" * 64, 512, "test")
    good.validate()
    bad = dataclasses.replace(good, sha256="abc", url="ftp://x", file_name="../x.gguf", kind="vision")  # type: ignore[arg-type]
    with pytest.raises(CatalogError) as info:
        bad.validate()
    for part in ("sha256", "https", "plain *.gguf", "kind"):
        assert part in str(info.value)
    with pytest.raises(CatalogError):
        download_entry(bad, tmp_path)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(CatalogError, match="no catalog entry"):
        entry("no such model")


def test_an_entry_downloads_with_its_size_and_hash_checked(tmp_path: Path) -> None:
    data = tiny_bert(tmp_path / "src" / "e.gguf").read_bytes()
    plenty = SimpleNamespace(free=1 << 40)
    with file_server(data) as server:
        local = CatalogEntry(
            "Tiny embed", "tiny-embed.gguf", "embedding", len(data), "MIT",
            server.url, hashlib.sha256(data).hexdigest(), 512, "made by the test",
        )  # fmt: skip
        with pytest.raises(CatalogError, match="https"):  # plain http only on loopback
            dataclasses.replace(local, url=server.url.replace("127.0.0.1", "example.org")).validate()
        # the entry's size disagrees with the server's file: refused before a byte is written
        with pytest.raises(DownloadError, match="the catalog says"):
            download_entry(dataclasses.replace(local, size=len(data) + 1), tmp_path / "m",
                           disk_usage=lambda _: plenty)  # fmt: skip
        assert not part_path(tmp_path / "m", local.file_name).exists()
        path = download_entry(local, tmp_path / "m", disk_usage=lambda _: plenty)
    assert path == tmp_path / "m" / "tiny-embed.gguf" and path.read_bytes() == data


def test_a_catalog_file_replaces_the_list_and_a_bad_one_says_what_is_wrong(tmp_path: Path) -> None:
    import json

    from haiku.rag.local_models.catalog import load_catalog

    item = {
        "name": "Tiny", "file_name": "tiny.gguf", "kind": "chat", "size": 10, "licence": "MIT",
        "url": "http://127.0.0.1:8000/tiny.gguf", "sha256": "a" * 64, "context_length": 512,
        "verified_from": "made by the test", "parameters": "9K",
    }  # fmt: skip
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps([item]), encoding="utf-8")
    (loaded,) = load_catalog(path)
    assert loaded == CatalogEntry(**item)

    def refused(content: str) -> str:
        path.write_text(content, encoding="utf-8")
        with pytest.raises(CatalogError) as info:
            load_catalog(path)
        assert str(path) in str(info.value)
        return str(info.value)

    assert "not JSON" in refused("[{")
    assert "JSON list" in refused(json.dumps(item))
    assert "missing sha256" in refused(json.dumps([{k: v for k, v in item.items() if k != "sha256"}]))
    assert "unknown mirror" in refused(json.dumps([{**item, "mirror": "x"}]))
    assert "wrong type for size" in refused(json.dumps([{**item, "size": "10"}]))
    assert "https" in refused(json.dumps([{**item, "url": "http://example.org/tiny.gguf"}]))
    assert "'Tiny' twice" in refused(json.dumps([item, {**item, "file_name": "other.gguf"}]))
    with pytest.raises(CatalogError, match="cannot read"):
        load_catalog(tmp_path / "missing.json")
    # the built-in entries state their parameters (the catalog dialog shows them)
    assert all(i.parameters for i in CATALOG)
