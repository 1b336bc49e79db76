"""Index upkeep off the caller's path (issue 16): ``create_document`` returns without waiting
for the upkeep it makes due, the next write waits for one table's compaction at most, and
closing the client waits for the upkeep in flight. Made deterministic with hooks that block,
never with timings."""

from __future__ import annotations

import asyncio
import logging
import threading

from haiku.rag.client import HaikuRAG
from haiku.rag.store import engine
from haiku.rag.store.engine import Store

TEXTS = [f"Note {n} on glacier melt rates and the albedo of fresh snow." for n in range(4)]


def _blocking_upkeep(monkeypatch):
    """``Store.maintain_indexes`` that waits for ``release`` before doing the real upkeep;
    ``entered`` is set when it starts."""
    entered, release, done = threading.Event(), threading.Event(), threading.Event()
    real = Store.maintain_indexes

    def maintain(self, *, force=False):
        entered.set()
        assert release.wait(60), "the test never released the upkeep"
        try:
            return real(self, force=True)  # forced: the real work runs, whatever the trigger
        finally:
            done.set()

    monkeypatch.setattr(Store, "maintain_indexes", maintain)
    return entered, release, done


def test_create_document_returns_while_the_upkeep_it_started_runs_and_close_waits_for_it(tmp_path, config, monkeypatch):
    entered, release, done = _blocking_upkeep(monkeypatch)

    async def scenario() -> HaikuRAG:
        client = HaikuRAG(tmp_path / "lib.lancedb", config, create=True)
        first = await client.create_document(TEXTS[0], uri="note://0")
        assert await asyncio.to_thread(entered.wait, 60)
        # the upkeep is blocked, and the caller goes on: another document, read back
        second = await client.create_document(TEXTS[1], uri="note://1")
        assert not done.is_set()
        assert {d.id for d in await client.list_documents()} == {first.id, second.id}
        return client

    client = asyncio.run(scenario())
    closed = threading.Event()
    closer = threading.Thread(target=lambda: (client.close(), closed.set()))
    closer.start()
    assert not closed.wait(0.2)  # close waits for the upkeep in flight ...
    release.set()
    closer.join(60)
    assert closed.is_set() and done.is_set()  # ... which then ran to the end
    reopened = Store(str(tmp_path / "lib.lancedb"), read_only=True)
    assert reopened.small_fragments() <= 2  # compacted: the first document's fragments merged


def test_a_failed_background_upkeep_is_logged_and_runs_again_after_the_next_write(tmp_path, config, monkeypatch, caplog):
    calls = []
    real = Store.maintain_indexes

    def flaky(self, *, force=False):
        calls.append(force)
        if len(calls) == 1:
            raise OSError("No space left on device")
        return real(self, force=force)

    monkeypatch.setattr(Store, "maintain_indexes", flaky)

    async def scenario() -> None:
        async with HaikuRAG(tmp_path / "lib.lancedb", config, create=True) as client:
            with caplog.at_level(logging.WARNING, logger="haiku.rag"):
                await client.create_document(TEXTS[0], uri="note://0")
                await client.finish_upkeep()  # the failure is not raised at the caller
            assert "index upkeep failed" in caplog.text and "No space left on device" in caplog.text
            await client.create_document(TEXTS[1], uri="note://1")
            await client.finish_upkeep()
            assert len(calls) == 2
            assert len(await client.list_documents()) == 2

    asyncio.run(scenario())


class _DepthLock:
    """The store's write lock (re-entrant), recording how deep its owner holds it."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.depth = 0
        self.events: list[str] = []

    def acquire(self, blocking=True, timeout=-1):
        got = self._lock.acquire(blocking, timeout)
        if got:
            self.depth += 1
        return got

    def release(self):
        self.depth -= 1
        if self.depth == 0:
            self.events.append("free")
        self._lock.release()

    __enter__ = acquire

    def __exit__(self, *exc):
        self.release()


def test_upkeep_holds_the_write_lock_for_one_table_at_a_time(db_path, monkeypatch):
    """Between two tables' compactions the write lock is free, so a write waits for one table's
    compaction at most, not for the whole upkeep."""
    store = Store(str(db_path), create=True)
    lock = _DepthLock()
    store._write_lock = lock
    for name, table in store._tables.items():
        real = table.optimize

        def optimize(*args, _name=name, _real=real, **kwargs):
            assert lock.depth >= 1  # each compaction itself runs under the lock
            lock.events.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(table, "optimize", optimize)
    assert store.maintain_indexes(force=True) is True
    tables = [event for event in lock.events if event != "free"]
    assert sorted(tables) == sorted(store._tables) and len(tables) >= 4
    # the lock was free between every two tables' compactions
    between = lock.events[lock.events.index(tables[0]) : lock.events.index(tables[-1]) + 1]
    assert between == [x for name in tables for x in (name, "free")][:-1], lock.events
    store.close()


def test_only_one_upkeep_runs_at_a_time_and_a_forced_one_waits_for_it(db_path):
    store = Store(str(db_path), create=True)
    store._upkeep_lock.acquire()  # as if an upkeep were running on another thread
    assert store.maintain_indexes() is False  # that one does what this would
    forced = []
    waiter = threading.Thread(target=lambda: forced.append(store.maintain_indexes(force=True)))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and not forced
    store._upkeep_lock.release()
    waiter.join(60)
    assert forced == [True]
    store.close()


def test_the_background_upkeep_is_the_stores_own_trigger_when_nothing_is_due(tmp_path, config, monkeypatch):
    """A loop's calls request upkeep after every write; while nothing is due, each request
    costs the counted check only and writes nothing."""
    monkeypatch.setattr(engine, "UNINDEXED_ROWS_BEFORE_MAINTENANCE", 10**9)
    monkeypatch.setattr(engine, "SMALL_FRAGMENTS_BEFORE_MAINTENANCE", 10**6)
    done = []
    real = Store.maintain_indexes
    monkeypatch.setattr(Store, "maintain_indexes", lambda self, force=False: done.append(real(self, force=force)))

    async def scenario() -> None:
        async with HaikuRAG(tmp_path / "lib.lancedb", config, create=True) as client:
            for n, text in enumerate(TEXTS):
                await client.create_document(text, uri=f"note://{n}")
                await client.finish_upkeep()
            assert done == [False] * len(TEXTS)

    asyncio.run(scenario())


def test_create_document_marks_its_store_reads_only_not_its_parse_and_embedding(tmp_path, config, monkeypatch):
    """Upkeep's cleanup keeps a minute of versions while another thread's read runs: a loop's
    call, nearly always running, must not count as a read while it parses and embeds (the
    store grew 31 MB against 12 at 500 calls when it did), only while it reads."""
    from haiku.rag.store import documents

    seen: dict[str, bool] = {}

    def mine(store) -> bool:
        me = threading.get_ident()
        return any(thread == me for thread, _ in store._reads.values())

    real_find = documents.find_document_by_uri

    def find(store, uri):
        seen["lookup"] = mine(store)
        return real_find(store, uri)

    monkeypatch.setattr(documents, "find_document_by_uri", find)

    async def scenario() -> None:
        async with HaikuRAG(tmp_path / "lib.lancedb", config, create=True) as client:
            embedder = client.embedder
            real_embed = embedder.embed_documents

            def embed(*args, **kwargs):
                seen["embedding"] = mine(client.store)
                return real_embed(*args, **kwargs)

            monkeypatch.setattr(embedder, "embed_documents", embed)
            await client.create_document(TEXTS[0], uri="note://0")

    asyncio.run(scenario())
    assert seen == {"lookup": True, "embedding": False}
