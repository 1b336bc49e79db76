"""The store's advisory locks behind one portable interface (issue 33, item 4: ``fcntl`` is
POSIX only; Windows gets ``LockFileEx`` through ``haiku.rag.store.locks``). These check the
semantics the writer lock and the reader leases rely on, on the OS the tests run on; the
Windows branch has not run here."""

from __future__ import annotations

import pytest

from haiku.rag.store import locks


def test_one_writer_at_a_time_and_the_refused_one_reads_who_holds_it(tmp_path):
    path = tmp_path / ".haiku-rag-writer.lock"
    with open(path, "a+") as first, open(path, "a+") as second:
        locks.lock_exclusive_nb(first)
        first.seek(0)
        first.truncate()
        first.write("pid 4242")
        first.flush()
        with pytest.raises(BlockingIOError):
            locks.lock_exclusive_nb(second)
        second.seek(0)
        assert second.read() == "pid 4242"  # the lock does not hide the holder's text
        locks.unlock(first)
        locks.lock_exclusive_nb(second)  # free again


def test_readers_share_and_keep_a_writer_probe_out(tmp_path):
    path = tmp_path / ".haiku-rag-readers"
    path.touch()
    with open(path) as reader, open(path) as another, open(path, "a+") as writer:
        locks.lock_shared(reader)
        locks.lock_shared(another)  # shared with the first
        with pytest.raises(BlockingIOError):
            locks.lock_exclusive_nb(writer)
        locks.unlock(reader)
        with pytest.raises(BlockingIOError):
            locks.lock_exclusive_nb(writer)
        locks.unlock(another)
        locks.lock_exclusive_nb(writer)
