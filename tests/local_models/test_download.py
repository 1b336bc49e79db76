"""Downloading a model file from a small HTTP server on 127.0.0.1 (started here, with Range
support, able to drop the connection or ignore Range): resume, restart, hash and disk-space
refusals, cancel. The file served is a tiny GGUF made by the test; nothing leaves loopback."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from gguf_factory import tiny_llama
from range_server import NAME, file_server

from haiku.rag.errors import OperationCancelled
from haiku.rag.local_models.download import (
    DownloadError,
    DownloadInterrupted,
    HashMismatch,
    NotAModelFile,
    NotEnoughDiskSpace,
    download,
    part_path,
)
from haiku.rag.operations import CancelToken, Progress, Stage


@pytest.fixture(scope="module")
def model_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return tiny_llama(tmp_path_factory.mktemp("src") / NAME).read_bytes()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def plenty(_: Any) -> SimpleNamespace:
    return SimpleNamespace(free=1 << 40)


def test_a_full_download_is_checked_reported_and_put_in_place(model_bytes: bytes, tmp_path: Path) -> None:
    reports: list[Progress] = []
    with file_server(model_bytes) as server:
        path = download(
            server.url, tmp_path, NAME, sha256=sha(model_bytes), progress=reports.append,
            chunk_size=4096, disk_usage=plenty,
        )  # fmt: skip
    assert path == tmp_path / NAME
    assert path.read_bytes() == model_bytes
    assert not part_path(tmp_path, NAME).exists()
    assert server.ranges == [None]
    assert {r.stage for r in reports} == {Stage.DOWNLOADING}
    assert all(r.total == len(model_bytes) for r in reports)
    dones = [r.done for r in reports]
    assert dones == sorted(dones) and dones[-1] == len(model_bytes) and len(dones) > 2
    # already there with the right hash: returned as it is, nothing fetched
    assert download(server.url, tmp_path, NAME, sha256=sha(model_bytes), disk_usage=plenty) == path


def test_a_dropped_connection_keeps_the_part_and_the_next_call_resumes_with_range(
    model_bytes: bytes, tmp_path: Path
) -> None:
    cut = len(model_bytes) // 3
    with file_server(model_bytes) as server:
        server.drop_after = cut
        with pytest.raises(DownloadInterrupted) as info:
            download(server.url, tmp_path, NAME, sha256=sha(model_bytes), disk_usage=plenty, chunk_size=1024)
        assert info.value.done == cut
        assert part_path(tmp_path, NAME).read_bytes() == model_bytes[:cut]
        assert not (tmp_path / NAME).exists()

        reports: list[Progress] = []
        path = download(
            server.url, tmp_path, NAME, sha256=sha(model_bytes), disk_usage=plenty, progress=reports.append
        )
    assert server.ranges == [None, f"bytes={cut}-"]
    assert path.read_bytes() == model_bytes
    assert not part_path(tmp_path, NAME).exists()
    assert reports[0].done == cut and reports[-1].done == len(model_bytes)


def test_a_server_ignoring_range_makes_it_start_over_cleanly(model_bytes: bytes, tmp_path: Path) -> None:
    # a .part that is not a prefix of the file: appending the 200's body to it would be wrong
    part_path(tmp_path, NAME).write_bytes(b"\xff" * 100)
    with file_server(model_bytes) as server:
        server.ignore_range = True
        path = download(server.url, tmp_path, NAME, sha256=sha(model_bytes), disk_usage=plenty)
    assert server.ranges == ["bytes=100-"]
    assert path.read_bytes() == model_bytes
    assert not part_path(tmp_path, NAME).exists()


def test_a_complete_part_is_checked_and_put_in_place_without_fetching_it_again(
    model_bytes: bytes, tmp_path: Path
) -> None:
    with file_server(model_bytes) as server:
        # size known: no request at all
        part_path(tmp_path / "a", NAME).parent.mkdir()
        part_path(tmp_path / "a", NAME).write_bytes(model_bytes)
        path = download(server.url, tmp_path / "a", NAME, sha256=sha(model_bytes), size=len(model_bytes),
                        disk_usage=plenty)  # fmt: skip
        assert path.read_bytes() == model_bytes and server.ranges == []
        # size unknown: the server's 416 names the length the .part already has
        part_path(tmp_path / "b", NAME).parent.mkdir()
        part_path(tmp_path / "b", NAME).write_bytes(model_bytes)
        path = download(server.url, tmp_path / "b", NAME, sha256=sha(model_bytes), disk_usage=plenty)
        assert path.read_bytes() == model_bytes
    assert server.ranges == [f"bytes={len(model_bytes)}-"]
    assert not part_path(tmp_path / "b", NAME).exists()


def test_a_file_whose_hash_differs_is_refused_and_nothing_is_left(model_bytes: bytes, tmp_path: Path) -> None:
    wrong = "0" * 64
    with file_server(model_bytes) as server, pytest.raises(HashMismatch) as info:
        download(server.url, tmp_path, NAME, sha256=wrong, disk_usage=plenty)
    assert info.value.expected == wrong and info.value.got == sha(model_bytes)
    assert wrong in str(info.value) and sha(model_bytes) in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_is_not_gguf_is_refused_and_nothing_is_left(tmp_path: Path) -> None:
    junk = b"<html>not a model</html>" * 50
    with file_server(junk) as server, pytest.raises(NotAModelFile):
        download(server.url, tmp_path, NAME, sha256=sha(junk), disk_usage=plenty)
    assert list(tmp_path.iterdir()) == []


def test_too_little_disk_space_is_refused_before_any_byte(model_bytes: bytes, tmp_path: Path) -> None:
    margin = 1000
    short = SimpleNamespace(free=len(model_bytes) + margin - 1)
    with file_server(model_bytes) as server:
        # size known in advance (a catalog entry): refused before the request is made
        with pytest.raises(NotEnoughDiskSpace) as info:
            download(server.url, tmp_path, NAME, sha256=sha(model_bytes), size=len(model_bytes),
                     disk_usage=lambda _: short, margin=margin)  # fmt: skip
        assert info.value.needed == len(model_bytes) + margin and info.value.free == short.free
        assert server.ranges == []
        # size from the response: refused after the headers, before a byte is written
        with pytest.raises(NotEnoughDiskSpace):
            download(server.url, tmp_path, NAME, sha256=sha(model_bytes), disk_usage=lambda _: short, margin=margin)
        assert server.ranges == [None]
        assert list(tmp_path.iterdir()) == []
        # resuming needs room for the bytes still to come only
        half = len(model_bytes) // 2
        part_path(tmp_path, NAME).write_bytes(model_bytes[:half])
        exact = SimpleNamespace(free=len(model_bytes) - half + margin)
        path = download(server.url, tmp_path, NAME, sha256=sha(model_bytes), size=len(model_bytes),
                        disk_usage=lambda _: exact, margin=margin)  # fmt: skip
    assert path.read_bytes() == model_bytes


def test_cancel_midway_leaves_a_part_the_next_call_resumes(model_bytes: bytes, tmp_path: Path) -> None:
    token = CancelToken()

    def cancel_after_some(p: Progress) -> None:
        if p.done >= 2048:
            token.cancel()

    with file_server(model_bytes) as server:
        with pytest.raises(OperationCancelled):
            download(server.url, tmp_path, NAME, sha256=sha(model_bytes), disk_usage=plenty,
                     progress=cancel_after_some, cancel=token, chunk_size=1024)  # fmt: skip
        kept = part_path(tmp_path, NAME).read_bytes()
        assert 0 < len(kept) < len(model_bytes) and model_bytes.startswith(kept)
        assert not (tmp_path / NAME).exists()

        path = download(server.url, tmp_path, NAME, sha256=sha(model_bytes), disk_usage=plenty)
    assert server.ranges == [None, f"bytes={len(kept)}-"]
    assert path.read_bytes() == model_bytes


def test_another_file_in_place_is_never_overwritten(model_bytes: bytes, tmp_path: Path) -> None:
    (tmp_path / NAME).write_bytes(b"the user's own file")
    with file_server(model_bytes) as server, pytest.raises(DownloadError, match="already exists"):
        download(server.url, tmp_path, NAME, sha256=sha(model_bytes), disk_usage=plenty)
    assert (tmp_path / NAME).read_bytes() == b"the user's own file"
    assert server.ranges == []


@pytest.mark.parametrize("name", ["../escape.gguf", "a/b.gguf", "", "x.gguf.part"])
def test_a_name_that_is_not_a_plain_file_name_is_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match="not a usable file name"):
        download("http://127.0.0.1:9/x", tmp_path / "models", name, sha256="0" * 64)
    assert not (tmp_path / "models").exists() or list((tmp_path / "models").iterdir()) == []
