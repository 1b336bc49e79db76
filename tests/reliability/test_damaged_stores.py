"""Foreign or damaged stores: a damaged LanceDB folder, a store built with another vector size,
a store from a newer schema. Every command gives one clear line (no traceback) and exits
non-zero, and not one byte of the store changes, whatever the command."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pdf_factory
import pytest

from haiku.rag.cli import main
from haiku.rag.store import schema as S
from haiku.rag.store.engine import Store

COMMANDS = [["list"], ["search", "marmalade"], ["doctor"], ["add-src", "{new}"], ["delete", "{uri}"]]


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, Path]:
    """A store holding one ingested report, and a second PDF to try adding."""
    root = tmp_path_factory.mktemp("template")
    report = pdf_factory.make_report_pdf(root / "report.pdf").path
    other = pdf_factory.make_two_column_pdf(root / "other.pdf").path
    assert main(["--db", str(root / "lib.lancedb"), "add-src", str(report)]) == 0
    return root, other


def _tree(db: Path) -> dict[str, str]:
    return {str(p.relative_to(db)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(db.rglob("*")) if p.is_file()}


def _table_dir(db: Path, table: str) -> Path:
    return db / f"{table}.lance"


def _latest_manifest(db: Path, table: str) -> Path:
    return sorted((_table_dir(db, table) / "_versions").glob("*.manifest"))[0]  # lance: newest first


def _truncate_manifest(db: Path) -> None:
    manifest = _latest_manifest(db, S.DOCUMENTS)
    manifest.write_bytes(manifest.read_bytes()[:50])


def _garbage_manifest(db: Path) -> None:
    _latest_manifest(db, S.SETTINGS).write_bytes(b"not a manifest" * 8)


def _delete_chunk_data(db: Path) -> None:
    for data in (_table_dir(db, S.CHUNKS) / "data").iterdir():
        data.unlink()


def _zero_document_data(db: Path) -> None:
    for data in (_table_dir(db, S.DOCUMENTS) / "data").iterdir():
        data.write_bytes(bytes(data.stat().st_size))


def _drop_versions(db: Path) -> None:
    shutil.rmtree(_table_dir(db, S.CHUNKS) / "_versions")


def _newer_schema(db: Path) -> None:
    store = Store(str(db))
    store._put_setting("schema_version", S.SCHEMA_VERSION + 1)
    store.close()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated-manifest": _truncate_manifest,
    "garbage-manifest": _garbage_manifest,
    "chunk-data-deleted": _delete_chunk_data,
    "document-data-zeroed": _zero_document_data,
    "version-history-deleted": _drop_versions,
    "newer-schema": _newer_schema,
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_or_newer_store_is_refused_and_left_untouched(tmp_path, template, damage, capsys):
    root, other = template
    db = tmp_path / "lib.lancedb"
    shutil.copytree(root / "lib.lancedb", db)
    DAMAGE[damage](db)
    before = _tree(db)
    refused = 0
    for command in COMMANDS:
        args = [a.format(new=other, uri=(root / "report.pdf").resolve().as_uri()) for a in command]
        capsys.readouterr()
        code = main(["--db", str(db), *args])
        out, err = capsys.readouterr()
        if code != 0:
            refused += 1
            if command == ["doctor"] and not err:  # the report names the damage
                # opened: the unreadable table; not opened: why, and the last complete version
                assert "FAIL every table is readable" in out or (
                    "FAIL the store opens" in out and "complete" in out
                ), out
            else:
                assert len(err.strip().splitlines()) == 1 and err.startswith("haiku-rag: "), (command, err)
                if damage == "newer-schema":
                    assert "newer haiku.rag" in err
                else:
                    assert "damaged" in err or "could not be read" in err, (command, err)
        assert _tree(db) == before, f"`{' '.join(command)}` changed the store"
    # Writing is always refused; only a listing that never touches the damage may succeed.
    assert refused >= len(COMMANDS) - 1


def test_a_store_built_with_another_vector_size(tmp_path, template, capsys):
    root, other = template
    db = tmp_path / "lib.lancedb"
    shutil.copytree(root / "lib.lancedb", db)
    config = tmp_path / "haiku.rag.yaml"
    config.write_text(
        "embeddings:\n  provider: openai-compatible\n  model: another-model\n  vector_dim: 768\n"
        "  base_url: http://127.0.0.1:9/v1\n"
    )
    before = _tree(db)
    for command in (["add-src", str(other)], ["search", "marmalade"], ["embed"]):
        capsys.readouterr()
        assert main(["--db", str(db), "--config", str(config), *command]) == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "384-d" in err and "768-d" in err and "Nothing was changed" in err
        assert _tree(db) == before
    # A plain listing does not need the embedder and still works.
    assert main(["--db", str(db), "--config", str(config), "list"]) == 0
    assert _tree(db) == before


def test_a_folder_that_is_not_a_store_is_never_written(tmp_path, template, capsys):
    import lancedb
    import pyarrow as pa

    _, other = template
    foreign = tmp_path / "foreign.lancedb"
    lancedb.connect(str(foreign)).create_table("my_vectors", pa.table({"a": [1, 2]}))
    before = _tree(foreign)
    capsys.readouterr()
    assert main(["--db", str(foreign), "add-src", str(other)]) == 1
    assert "not a haiku.rag store" in capsys.readouterr().err
    assert _tree(foreign) == before
