"""A file-by-file copy of a store taken while it was written (issue 32) can hold a newest
manifest copied half-way: LanceDB cannot open the table at all, and ``doctor`` and
``restore-version`` said "no complete version found" although the older versions inside were
readable. They now look past the unreadable newest manifests and offer those versions."""

from __future__ import annotations

from pathlib import Path

from haiku.rag.cli import main


def _newest_manifest(table: Path) -> Path:
    def version(path: Path) -> int:
        number = int(path.stem)
        return (1 << 64) - 1 - number if number >= 1 << 63 else number

    return max((table / "_versions").glob("*.manifest"), key=version)


def test_a_half_copied_newest_manifest_does_not_hide_the_complete_versions(tmp_path, capsys):
    db = tmp_path / "copy.lancedb"
    for n in range(3):
        assert main(["--db", str(db), "add", f"Walrus herd {n} drifts on the floes", "--title", f"Walrus {n}"]) == 0
    manifest = _newest_manifest(db / "documents.lance")
    data = manifest.read_bytes()
    manifest.write_bytes(data[: len(data) // 2])  # the copy caught this file half-written
    capsys.readouterr()

    assert main(["--db", str(db), "list"]) == 1
    assert "is damaged" in capsys.readouterr().err

    assert main(["--db", str(db), "doctor"]) == 1
    out = capsys.readouterr().out
    assert "none found" not in out
    assert "ok   last complete version:" in out and "(2 documents;" in out
    assert "unreadable newest manifest" in out and manifest.name in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.lancedb"]  # doctor's scratch copy is gone
    assert manifest.read_bytes() == data[: len(data) // 2]  # and doctor changed nothing

    assert main(["--db", str(db), "restore-version"]) == 0
    out = capsys.readouterr().out
    assert "set aside 1 unreadable manifest" in out and "(2 documents;" in out
    assert (db / "documents.lance" / "_versions.unreadable" / manifest.name).is_file()

    assert main(["--db", str(db), "list"]) == 0
    listed = capsys.readouterr().out
    assert "Walrus 0" in listed and "Walrus 1" in listed and "Walrus 2" not in listed
    assert main(["--db", str(db), "doctor"]) == 0
