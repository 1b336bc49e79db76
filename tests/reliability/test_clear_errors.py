"""Failures at the edges get one clear line, never a traceback (issue 32): a closed output
pipe, settings files that are not UTF-8 or nested absurdly deep, a store on a read-only file
system, a store folder recreated empty under a reader, and a backup to a full disk (which
must not leave a partial copy behind)."""

from __future__ import annotations

import os
import random
import shutil
import string
import subprocess
import sys
from pathlib import Path

import pytest

from haiku.rag.cli import main
from haiku.rag.client import HaikuRAG
from haiku.rag.errors import StoreNotFoundError


def _cli(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "haiku.rag.cli", *args], stdout=stdout, stderr=subprocess.PIPE, text=True, env=env, timeout=300
    )


@pytest.fixture
def library(tmp_path) -> Path:
    db = tmp_path / "lib.lancedb"
    for n in range(3):
        assert main(["--db", str(db), "add", f"Walrus herd number {n} drifts on the floes", "--title", f"Walrus {n}"]) == 0
    return db


def _mount_tmpfs(mount_point: Path, size: str) -> None:
    mount_point.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({result.stderr.strip() or 'not permitted'})")


def test_list_into_a_closed_pipe_is_not_an_error(library):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written (`| head -0`)
    try:
        result = _cli("--db", str(library), "list", stdout=write_end)
    finally:
        os.close(write_end)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"search:\n  limit: 3\ntitle: \xff\xfe caf\xe9\n", "is not UTF-8 text (byte 0xff at offset 26)"),
        (b"a: " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "is nested too deeply"),
    ],
    ids=["latin-1", "deep"],
)
def test_settings_files_that_cannot_be_read_are_one_line(tmp_path, capsys, content, message):
    config = tmp_path / "haiku.rag.yaml"
    config.write_bytes(content)
    assert main(["--config", str(config), "settings"]) == 1
    err = capsys.readouterr().err
    assert message in err and str(config) in err
    assert len(err.strip().splitlines()) == 1


def test_write_commands_on_a_read_only_store_are_one_line(tmp_path, capsys):
    disk = tmp_path / "disk"
    _mount_tmpfs(disk, "16m")
    try:
        db = disk / "lib.lancedb"
        assert main(["--db", str(db), "add", "Walrus herds drift on the floes", "--title", "Walrus"]) == 0
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        capsys.readouterr()
        for args in (["add", "more text"], ["delete", "Walrus"], ["rebuild"]):
            assert main(["--db", str(db), *args]) == 1, args
            err = capsys.readouterr().err
            assert "is on a read-only file system" in err and "Traceback" not in err, (args, err)
            assert len(err.strip().splitlines()) == 1
        # reading still works
        assert main(["--db", str(db), "list"]) == 0
        assert "Walrus" in capsys.readouterr().out
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


async def test_a_store_folder_recreated_empty_under_a_reader(library, config):
    async with HaikuRAG(library, config, read_only=True, skip_validation=True) as client:
        assert await client.list_documents()
        shutil.rmtree(library)
        library.mkdir()  # a sync tool or a script recreated the folder, empty
        for call in (client.list_documents(), client.search("walrus", search_type="fts"), client.get_document_by_uri("x")):
            with pytest.raises(StoreNotFoundError, match=r"replaced by an empty folder") as info:
                await call
            assert ".cargo" not in str(info.value) and "commit.rs" not in str(info.value)


def test_a_backup_to_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, capsys):
    db = tmp_path / "big.lancedb"
    source = tmp_path / "big.txt"
    rng = random.Random(7)  # incompressible words: the store is several MB
    source.write_text(
        "\n\n".join(" ".join("".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(60)) for _ in range(3000))
    )
    assert main(["--db", str(db), "add-src", "--no-embed", str(source)]) == 0
    disk = tmp_path / "disk"
    _mount_tmpfs(disk, "1m")
    try:
        capsys.readouterr()
        assert main(["--db", str(db), "backup", str(disk / "copy")]) == 1
        err = capsys.readouterr().err
        assert "the disk is full" in err and "nothing was left there" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1
        assert list(disk.iterdir()) == []  # no partial copy, not even a hidden one
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
    # the same backup on a disk with room is a complete store
    assert main(["--db", str(db), "backup", str(tmp_path / "copy")]) == 0
    assert main(["--db", str(tmp_path / "copy"), "doctor"]) == 0
