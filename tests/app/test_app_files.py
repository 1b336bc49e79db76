"""What the app keeps in a library's app folder (failed.json, order.json, queue.json,
rows.json): each file round-trips, a library without a folder keeps nothing, and a file that
cannot be read or saved is said once, in its own words, and never raised (a damaged row
snapshot is a cache: no news)."""

from __future__ import annotations

from pathlib import Path

import pytest

from haiku.rag.errors import IngestCategory
from haiku_desk.services.app_folder import AppFile
from haiku_desk.services.failures import FAILED_FILE, FailedFile, FailedFiles
from haiku_desk.services.row_order import ORDER_FILE, RowOrder
from haiku_desk.services.row_snapshot import SNAPSHOT_FILE, RowSnapshot
from haiku_desk.services.work_queue import QUEUE_FILE, DeleteJob, WorkQueue

FAILED = FailedFile("k1", "a.pdf", "/papers/a.pdf", IngestCategory.DAMAGED, "damaged")


def _save(owner: object) -> None:
    if isinstance(owner, FailedFiles):
        owner.record(FAILED)
    elif isinstance(owner, RowOrder):
        owner.save(["k2", "k1"])
    elif isinstance(owner, WorkQueue):
        owner.append(DeleteJob(key="k1", document_id="d1"))
    else:
        assert isinstance(owner, RowSnapshot)
        owner.save([])


OWNERS = [
    (FailedFiles, FAILED_FILE, "the list of files that failed", "the list of files that failed"),
    (RowOrder, ORDER_FILE, "the library's row order", "the library's row order"),
    (WorkQueue, QUEUE_FILE, "the unfinished work of this library", "the library's work queue"),
    (RowSnapshot, SNAPSHOT_FILE, None, "the library's list of documents"),
]


@pytest.mark.parametrize(("owner", "name", "reading", "saving"), OWNERS)
def test_a_damaged_or_unwritable_file_is_said_in_its_own_words_and_never_raised(
    tmp_path: Path, owner, name: str, reading: str | None, saving: str
) -> None:
    said: list[str] = []
    (tmp_path / name).write_text("{not json", encoding="utf-8")
    assert owner(tmp_path, said.append).load() == []
    if reading is None:
        assert said == []  # the row snapshot: a cache
    else:
        assert len(said) == 1 and said[0].startswith(f"Cannot read {reading} ({tmp_path / name}): ")
    said.clear()
    (tmp_path / name).unlink()
    (tmp_path / name).mkdir()  # a folder where the file goes: the rename over it fails
    _save(owner(tmp_path, said.append))
    assert len(said) == 1 and said[0].startswith(f"Cannot save {saving} ({tmp_path / name}): ")


@pytest.mark.parametrize(("owner", "name", "reading", "saving"), OWNERS)
def test_each_file_round_trips_and_a_library_without_a_folder_keeps_nothing(
    tmp_path: Path, owner, name: str, reading: str | None, saving: str
) -> None:
    said: list[str] = []
    _save(owner(tmp_path, said.append))
    assert (tmp_path / name).is_file() and said == []
    loaded = owner(tmp_path, said.append).load()
    if owner is not RowSnapshot:  # the snapshot keeps stored rows only: none were given
        assert loaded
    nowhere = owner(None, said.append)
    _save(nowhere)
    assert nowhere.load() == [] and said == []


def test_app_file_reads_nothing_yet_as_empty_and_without_a_folder_as_none(tmp_path: Path) -> None:
    said: list[str] = []
    file = AppFile(tmp_path, "x.json", said.append, reading="x")
    assert file.read() == {}
    assert file.write({"a": 1}) and file.read() == {"a": 1}
    nowhere = AppFile(None, "x.json", said.append, reading="x")
    assert nowhere.read() is None and not nowhere.write({"a": 1}) and said == []
