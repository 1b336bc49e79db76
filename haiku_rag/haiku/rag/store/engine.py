"""The store engine: connection, tables, atomic writes, recovery, compatibility checks.

Writes are serialised in-process by a lock and across processes by an advisory file lock
(local stores). A write that touches several tables runs in ``write_transaction``: every
table's version is noted first and, on any exception (cancellation included), each table that
moved is restored to it. A SIGKILL skips that rollback, which is why content rows carry a
``generation`` and the ``documents`` row (the commit point) is written last: recovery on the
next writable open deletes rows of generations no document points at, and reads ignore them
until then.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import logging
import math
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pyarrow as pa

from haiku.rag import __version__
from haiku.rag.config import is_remote_uri
from haiku.rag.errors import (
    EmbedderMismatchError,
    HaikuRAGError,
    ReadOnlyError,
    SchemaVersionError,
    StoreDamagedError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
    StoreWriteError,
)
from haiku.rag.store import schema as S
from haiku.rag.store.sql import sql_in, sql_quote

if TYPE_CHECKING:
    from haiku.rag.store.vectors import VectorMatrix

_BASE_SCHEMAS = {
    S.DOCUMENTS: S.DOCUMENTS_SCHEMA,
    S.DOCUMENT_BLOBS: S.DOCUMENT_BLOBS_SCHEMA,
    S.DOCUMENT_ITEMS: S.DOCUMENT_ITEMS_SCHEMA,
    S.CHUNKS: S.CHUNKS_SCHEMA,
    S.SETTINGS: S.SETTINGS_SCHEMA,
}
log = logging.getLogger("haiku.rag")
LOCK_FILE = ".haiku-rag-writer.lock"
# Index upkeep (``Store.maintain_indexes``): rows the indexes may lag behind before they are
# folded in (unindexed rows are scanned by every query), the library size from which vectors
# get an ANN index (built, and kept caught up, well before the library outgrows the exact
# in-memory search of store/vectors.py, so searches switch to it without a pause), and how
# long superseded versions stay readable for readers in other processes.
UNINDEXED_ROWS_BEFORE_MAINTENANCE = 1_000
# Every write appends a fragment (a data file) to each table it touches, and until upkeep
# compacts them every query opens each one: written one document at a time, 100 fragments made
# a lookup by URI 10-15x slower (~1.5 ms a fragment) long before 1,000 rows lagged. Upkeep also
# runs once a table holds this many small fragments; its cost grows with the library (it
# rewrites the small fragments), so the trigger grows with the square root of the chunk count,
# where the cost of upkeep per document and that of the fragments it removes balance.
SMALL_FRAGMENTS_BEFORE_MAINTENANCE = 64
VECTOR_INDEX_MIN_ROWS = 50_000
VECTOR_INDEX_NAME = "vector_idx"
KEEP_VERSIONS_FOR = timedelta(hours=1)
# Without a reader in another process (see ``READERS_FILE``), superseded versions only need to
# outlive the reads running in this process (``Store.reading``): upkeep removes them once this
# old, or once ``KEEP_RECENT_VERSIONS`` newer versions of their table exist, whichever comes
# first. By time alone a fast loop kept every version of the last minute (~430 per table at
# 8 writes/s, each compaction's full copy of the table among them: 405 MB on disk for 7 MB of
# text); by count the store stays proportional to its content at any speed.
KEEP_VERSIONS_WITHOUT_READERS = timedelta(minutes=1)
# The newest versions of each table kept without readers: what ``last_complete_cut`` and
# ``haiku-rag restore-version`` can still go back to after upkeep (writes between upkeeps all
# stay until the next one).
KEEP_RECENT_VERSIONS = 8
# Read-only stores and backups hold a shared lock on this file while they are open; the writer
# probes it before cleaning up versions and keeps them for ``KEEP_VERSIONS_FOR`` while any do.
READERS_FILE = ".haiku-rag-readers.lock"
# LanceDB's cleanup takes an age, and computes its cutoff after compacting: later than ours by
# the compaction's duration. Versions committed less than this before the oldest one kept by
# count stay too (see ``Store._cleanup_age``).
VERSION_CLEANUP_MARGIN_SECONDS = 2.0
# LanceDB's per-connection caches (lance's defaults: 1 GiB of metadata, 6 GiB of index data).
# Every table version gets its own manifest and fragment metadata entries, so a store written
# one document at a time filled the metadata cache by ~0.7 MB per document (RSS 1.5 GB after
# 500 ``create_document`` calls) although only the latest version is ever read again. A reader
# needs the current version's metadata (a few MB for a large library) and the index pages its
# queries touch; past these sizes the least recently used entries are dropped, not kept.
METADATA_CACHE_BYTES = 32 * 1024 * 1024
INDEX_CACHE_BYTES = 1024 * 1024 * 1024
# Beyond the exact-search budget, searches go through the ANN and full-text indexes, whose parts
# lance reads into the index cache on first touch: a fresh handle's first searches at 1M chunks
# read ~40 of the 244 IVF partitions each (p95 of the first 60 hybrid searches 290 ms against
# 76-94 ms once warm, same process, session 9). Opening such a store loads them in the
# background (``Store.prewarm``) when the whole index fits this share of the cache; what one
# vector costs there (IVF-HNSW-SQ: a byte per dimension plus the graph, ~520 bytes at 384).
PREWARM_CACHE_SHARE = 0.75
PREWARM_BYTES_PER_VECTOR_BEYOND_DIM = 160
FTS_INDEX_NAME = "content_fts_idx"
STABLE_ROW_IDS_OPTION = "new_table_enable_stable_row_ids"  # LanceDB's create option, see ``Store._stable_row_ids``
# What the page map (``Store.page_map``) may take per chunk, to decide before reading it.
PAGE_MAP_BYTES_PER_CHUNK = 40
# (table, column) with a BTree index; ``haiku-rag doctor`` checks they exist.
SCALAR_INDEXES = (
    (S.CHUNKS, "id"),
    (S.CHUNKS, "document_id"),
    (S.DOCUMENTS, "id"),
    (S.DOCUMENTS, "uri"),
    (S.DOCUMENT_ITEMS, "document_id"),
    (S.DOCUMENT_BLOBS, "document_id"),
)


# On object storage no lock keeps other machines out, so a writable open must not take a
# write still in flight elsewhere for a leftover: there, recovery only removes leftovers
# older than this (a write of one document takes seconds, not an hour).
REMOTE_RECOVERY_GRACE_SECONDS = 3600.0


@dataclass(frozen=True, slots=True)
class UpkeepBound:
    """What upkeep's trigger counts, at most, since it was last read from the tables: the most
    small fragments and unindexed rows of any table, and the vector rows before the vector
    index is due. Writes that note what they append (``Store.note_append``) raise it; any
    other write forgets it, so the next check reads the tables again."""

    small_fragments: int
    unindexed_rows: int
    chunks: int  # at the last read: the fragment trigger grows with it, so this is conservative
    vector_rows_left: int

    def after(self, rows: int, fragments: int) -> UpkeepBound:
        return replace(
            self,
            small_fragments=self.small_fragments + fragments,
            unindexed_rows=self.unindexed_rows + rows,
            vector_rows_left=self.vector_rows_left - rows,
        )

    def due(self) -> bool:
        return (
            self.small_fragments >= fragment_trigger(self.chunks)
            or self.unindexed_rows >= UNINDEXED_ROWS_BEFORE_MAINTENANCE
            or self.vector_rows_left <= 0
        )


NEVER = 2**62


def fragment_trigger(chunks: int) -> int:
    """Small fragments that make upkeep due in a library of ``chunks`` chunks."""
    return max(SMALL_FRAGMENTS_BEFORE_MAINTENANCE, math.isqrt(chunks) // 2)


def new_generation() -> str:
    """A fresh generation id that records when it was made (see ``generation_age``)."""
    return f"g{time.time_ns():x}-{uuid.uuid4().hex[:16]}"


def generation_age(generation: str, now_ns: int | None = None) -> float | None:
    """Seconds since ``generation`` was made, or None for ids without a time (older stores)."""
    if not generation.startswith("g") or "-" not in generation:
        return None
    try:
        made = int(generation[1:].split("-", 1)[0], 16)
    except ValueError:
        return None
    return ((now_ns if now_ns is not None else time.time_ns()) - made) / 1e9


def short_error(exc: BaseException) -> str:
    """The first line of an error, without the Rust source location lance appends."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return re.sub(r",\s*/\S+\.rs:\d+:\d+\s*$", "", text)


#: object storage: the most one request may take, retries included (lancedb.request_deadline_seconds)
REMOTE_DEADLINE_SECONDS = 60.0


def remote_storage_options(options: dict[str, str] | None, deadline: float | None) -> dict[str, str]:
    """Object-store client options bounding every request: half the deadline per attempt and
    retries only within the other half, so an endpoint that stops answering fails the operation
    within about ``deadline`` seconds (the object store's own defaults retry for 3 minutes,
    silently). Options the user set in ``lancedb.storage_options`` win."""
    half = max((deadline or REMOTE_DEADLINE_SECONDS) / 2, 1.0)
    defaults = {
        "timeout": f"{half:g}s",
        "connect_timeout": f"{min(half, 10.0):g}s",
        "client_max_retries": "3",
        "client_retry_timeout": str(max(int(half), 1)),
    }
    return {**defaults, **(options or {})}


def unanswered(exc: BaseException) -> bool:
    """Whether an object-store error means the endpoint did not answer (timeout, no connection)."""
    text = str(exc)
    return any(s in text for s in ("error sending request", "timed out", "operation timed out", "Timeout", "connection refused"))


def create_fts_index(chunks: Any) -> None:
    """The full-text index on ``chunks.content_fts`` (at creation, and when ``doctor
    --repair`` rebuilds a damaged one)."""
    from lancedb.index import FTS

    chunks.create_index("content_fts", config=FTS(with_position=False, remove_stop_words=False), replace=True)


class _DocumentsSnapshot(NamedTuple):
    """What every search reads from the documents table, cached per version of it."""

    generations: dict[str, str]  # document id -> current generation
    labels: dict[str, tuple[str, str | None, str]]  # document id -> (uri, title, metadata JSON)
    text_only: frozenset[str]  # documents whose vectors have not landed yet


class Store:
    """An opened haiku.rag store (local folder or object-storage URI)."""

    def __init__(
        self,
        location: str,
        *,
        create: bool = False,
        read_only: bool = False,
        storage_options: dict[str, str] | None = None,
        read_consistency_interval: float | None = None,
        region: str | None = None,
        exact_search_budget_bytes: int | None = None,
        remote_deadline: float | None = None,
    ) -> None:
        from haiku.rag.memory import limit_heap_fragmentation

        limit_heap_fragmentation()  # LanceDB's buffers otherwise fragment the heap, see there

        import lancedb  # heavy: keep `import haiku.rag` cheap; after the above: its threads start

        from haiku.rag.store.vectors import EXACT_SEARCH_BUDGET_BYTES

        self.location = location
        self.read_only = read_only
        self.is_remote = is_remote_uri(location)
        self._write_lock = threading.RLock()
        self._vector_matrix: tuple[int, Any] | None = None
        # Memory the exact-search matrix may take (store/vectors.py); 0: always LanceDB.
        self.exact_search_budget_bytes = (
            EXACT_SEARCH_BUDGET_BYTES if exact_search_budget_bytes is None else exact_search_budget_bytes
        )
        self._lock_file: Any = None
        self._settings: tuple[int, dict[str, str]] | None = None  # (table version, key -> JSON)
        self._session: Any = None  # LanceDB's caches (local stores), bounded: see METADATA_CACHE_BYTES
        self._tables: dict[str, Any] = {}
        self._generations: tuple[int, _DocumentsSnapshot] | None = None
        # Upkeep's trigger without reading every table's stats after each write (see
        # ``maintain_indexes``): valid only while this handle holds the writer lock.
        self._upkeep_bound: UpkeepBound | None = None
        self._noted: tuple[int, int] | None = None  # what the running transaction appends
        self._transaction_depth = 0
        self._warm = threading.Event()  # set once no prewarm is running (see ``prewarm``)
        self._warm.set()
        self._page_map: Any = None  # store.vectors.PageMap, loaded by ``prewarm``
        # True once something asked for ``prewarm``: this handle serves searches, so upkeep warms
        # the rebuilt indexes again. A handle that only writes (a CLI add, a script's loop)
        # never pays for it.
        self._serves_searches = False
        # Reads running in this process (``reading``): token -> (thread, wall-clock start).
        self._reads: dict[int, tuple[int, float]] = {}
        self._reads_lock = threading.Lock()
        self._read_tokens = itertools.count()

        if not self.is_remote:
            path = Path(location)
            if not path.exists():
                if not create or read_only:
                    raise StoreNotFoundError(
                        f"no haiku.rag store at {path}; add documents first "
                        "(haiku-rag add-src PATH) or run `haiku-rag init`"
                    )
                path.mkdir(parents=True)
            elif not path.is_dir():
                raise StoreDamagedError(f"{path} is a file, not a haiku.rag store folder")

        interval = read_consistency_interval
        if interval is None and not self.is_remote:
            # Local stores are cheap to re-check: always see other handles' writes.
            interval = 0.0
        try:
            options: dict[str, Any] = {}
            if location.startswith("db://"):  # LanceDB Cloud: its caches are server-side
                options = {"region": region} if region else {}
            else:
                self._session = lancedb.Session(
                    index_cache_size_bytes=INDEX_CACHE_BYTES, metadata_cache_size_bytes=METADATA_CACHE_BYTES
                )
                options = {"session": self._session}
                if is_remote_uri(location):
                    storage_options = remote_storage_options(storage_options, remote_deadline)
            self.remote_deadline = remote_deadline or REMOTE_DEADLINE_SECONDS
            self._connect_options: dict[str, Any] = {"storage_options": storage_options or None, **options}
            self._db = lancedb.connect(
                location,
                read_consistency_interval=None if interval is None else timedelta(seconds=interval),
                **self._connect_options,
            )
            self._pinned = interval is None  # see ``_pin_tables``
            existing = set(self._list_tables())
        except Exception as exc:  # lance raises plain errors for unreadable folders
            raise StoreDamagedError(f"cannot open the store at {location}: {short_error(exc)}") from exc

        missing = [name for name in _BASE_SCHEMAS if name not in existing]
        if existing and missing and S.SETTINGS not in existing:
            raise StoreDamagedError(
                f"{location} is not a haiku.rag store (tables found: {', '.join(sorted(existing))})"
            )
        self._open_tables(existing, missing, create=create)
        self._reader_lease = reader_lease(location) if read_only and not self.is_remote else None
        if not read_only and not self.is_remote:
            readers_present(location)  # creates the readers file, so later readers can lease
        try:
            self._check_schema_version()
            self.current_generations()  # reads every documents data file: damage shows now
            if not read_only:
                try:
                    self.recover()  # reads the generation column of every content table
                except StoreWriteError as exc:  # e.g. a full disk: leftovers stay invisible
                    log.warning("could not remove leftovers of interrupted writes: %s", exc)
        except (OSError, RuntimeError, ValueError) as exc:  # lance: unreadable data files
            raise self.damaged(exc) from exc

    def damaged(self, exc: BaseException) -> StoreDamagedError:
        """The error for a store whose files cannot be read (nothing is written to it)."""
        return StoreDamagedError(
            f"the store at {self.location} is damaged and cannot be read ({short_error(exc)}); "
            "nothing was changed. Run `haiku-rag doctor` to find its last complete version "
            "(`haiku-rag restore-version` rolls back to it), or restore the folder from a backup"
        )

    # --- opening --------------------------------------------------------------------------

    def _list_tables(self) -> list[str]:
        result = self._db.list_tables()
        names = getattr(result, "tables", result)
        return list(names)

    def _open_tables(self, existing: set[str], missing: list[str], *, create: bool) -> None:
        try:
            for name in existing:
                if name in _BASE_SCHEMAS or name == S.CHUNK_VECTORS:
                    self._tables[name] = self._db.open_table(name)
        except Exception as exc:
            raise StoreDamagedError(
                f"the store at {self.location} is damaged: table {name} cannot be opened "
                f"({short_error(exc)}); nothing was changed"
            ) from exc
        if not missing:
            return
        if existing:
            raise StoreDamagedError(
                f"the store at {self.location} is damaged: missing table(s) {', '.join(missing)}; "
                "run `haiku-rag doctor` for details"
            )
        if self.read_only or not create:
            raise StoreNotFoundError(
                f"no haiku.rag store at {self.location}; add documents first "
                "(haiku-rag add-src PATH) or run `haiku-rag init`"
            )
        # Settings last: its presence marks a completely created store.
        for name in (S.DOCUMENTS, S.DOCUMENT_BLOBS, S.DOCUMENT_ITEMS, S.CHUNKS):
            self._tables[name] = self._db.create_table(name, schema=_BASE_SCHEMAS[name], **self._stable_row_ids())
        self._create_indexes()
        settings = self._db.create_table(S.SETTINGS, schema=S.SETTINGS_SCHEMA)
        settings.add(
            pa.Table.from_pylist(
                [
                    {"key": "schema_version", "value": json.dumps(S.SCHEMA_VERSION)},
                    {"key": "created_by", "value": json.dumps(f"haiku.rag {__version__}")},
                ],
                schema=S.SETTINGS_SCHEMA,
            )
        )
        self._tables[S.SETTINGS] = settings

    def _create_indexes(self) -> None:
        chunks = self._tables[S.CHUNKS]
        # No positions: no query sends a phrase (``search.hybrid.fts_hits`` strips quotes), BM25
        # ranks the same without them (200 of 200 SciFact queries, top 40 ids and scores), and
        # every upkeep merges the new rows into the whole index: with positions that merge took
        # ~1.5 s at 100k chunks after 64 small appends, without ~0.5 s (a whole build ~2 s);
        # it was most of a growing library's upkeep (session 13). Stop words stay indexed, so
        # ranking is unchanged.
        create_fts_index(chunks)
        for table, column in SCALAR_INDEXES:
            with contextlib.suppress(Exception):  # scalar indexes on empty tables are optional
                self._tables[table].create_scalar_index(column)

    def _check_schema_version(self) -> None:
        version = self.get_setting("schema_version")
        if version is None:
            raise StoreDamagedError(f"the store at {self.location} has no schema version record")
        if int(version) > S.SCHEMA_VERSION:
            raise SchemaVersionError(
                f"the store at {self.location} was written by a newer haiku.rag "
                f"(schema {version}; this version reads up to {S.SCHEMA_VERSION}); "
                "upgrade haiku.rag to open it. Nothing was changed."
            )

    # --- tables and settings --------------------------------------------------------------

    def table(self, name: str) -> Any:
        try:
            return self._tables[name]
        except KeyError:
            raise StoreError(f"table {name} does not exist yet") from None

    def has_table(self, name: str) -> bool:
        return name in self._tables

    def get_setting(self, key: str) -> Any:
        """A stored setting (None when absent). Every write checks the embedder identity, so
        the few settings rows are read once per version of their table, not once per call."""
        table = self._tables[S.SETTINGS]
        version = table.version
        cached = self._settings
        if cached is None or cached[0] != version:
            rows = table.search().select(["key", "value"]).limit(None).to_list()
            cached = self._settings = (version, {row["key"]: row["value"] for row in rows})
        value = cached[1].get(key)
        return json.loads(value) if value is not None else None

    def _put_setting(self, key: str, value: Any) -> None:
        table = self._tables[S.SETTINGS]
        table.delete(f"key = {sql_quote(key)}")
        table.add(
            pa.Table.from_pylist([{"key": key, "value": json.dumps(value)}], schema=S.SETTINGS_SCHEMA)
        )

    # --- embedder identity ----------------------------------------------------------------

    @property
    def embedder_identity(self) -> dict[str, Any] | None:
        return self.get_setting("embedder")

    def check_embedder(self, provider: str, model: str, vector_dim: int | None) -> None:
        """Fail, changing nothing, when the store was embedded with another model or size."""
        stored = self.embedder_identity
        if stored is None:
            return
        same_model = stored["provider"] == provider and stored["model"] == model
        same_dim = vector_dim is None or stored["vector_dim"] == vector_dim
        if same_model and same_dim:
            return
        wanted = f"{provider}:{model}" + (f" ({vector_dim}-d)" if vector_dim else "")
        raise EmbedderMismatchError(
            f"the store at {self.location} was built with embeddings "
            f"{stored['provider']}:{stored['model']} ({stored['vector_dim']}-d) but the "
            f"configuration asks for {wanted}. Configure the same embedder, or re-embed the "
            "library with `haiku-rag rebuild`. Nothing was changed."
        )

    def _stable_row_ids(self) -> dict[str, Any]:
        """Create options for a table whose row ids survive compaction.

        An index names rows by row id; by default a row id is the row's address (fragment,
        offset), which compaction changes, so every upkeep also rewrote every index of the
        tables it compacted (the full-text index whole: half of the chunks table's upkeep,
        growing with the library). With stable row ids compaction leaves the indexes as they
        are. New tables only: a table keeps the row ids it was created with. Not for the
        vectors table, whose ``VectorMatrix.extended`` reads new rows by address, nor LanceDB
        Cloud (its tables are the server's)."""
        if self.is_remote and self.location.startswith("db://"):
            return {}
        return {"storage_options": {**(self._connect_options.get("storage_options") or {}), STABLE_ROW_IDS_OPTION: "true"}}

    def ensure_vector_table(self, provider: str, model: str, vector_dim: int) -> Any:
        """The vectors table, created (with the embedder identity recorded) on first use."""
        self.check_embedder(provider, model, vector_dim)
        if S.CHUNK_VECTORS in self._tables:
            return self._tables[S.CHUNK_VECTORS]
        with self.write_transaction():
            table = self._db.create_table(S.CHUNK_VECTORS, schema=S.chunk_vectors_schema(vector_dim))
            self._tables[S.CHUNK_VECTORS] = table
            self._put_setting(
                "embedder", {"provider": provider, "model": model, "vector_dim": vector_dim}
            )
        return table

    def drop_vectors(self) -> None:
        """Forget every vector and the embedder identity (re-embedding with another model)."""
        self._vector_matrix = None
        with self.write_transaction():
            if S.CHUNK_VECTORS in self._tables:
                self._db.drop_table(S.CHUNK_VECTORS)
                del self._tables[S.CHUNK_VECTORS]
            self._tables[S.SETTINGS].delete("key = 'embedder'")
            self._tables[S.DOCUMENTS].update(where="true", values={"index_state": "text"})

    # --- writing --------------------------------------------------------------------------

    def _ensure_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(f"the store at {self.location} is open read-only")

    def _acquire_process_lock(self) -> None:
        """Advisory lock so a second writer process is refused instead of interleaving."""
        if self._lock_file is not None or self.is_remote:
            return
        from haiku.rag.store import locks

        lock_path = Path(self.location) / LOCK_FILE
        try:
            handle = open(lock_path, "a+")  # noqa: SIM115 - held for the store's lifetime
        except OSError as exc:
            if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                why = "is on a read-only file system" if exc.errno == errno.EROFS else "cannot be written by this user"
                raise ReadOnlyError(
                    f"the store at {self.location} {why}: it can be read (list, search, ask, "
                    "--read-only) but not changed"
                ) from exc
            raise StoreError(f"cannot open the store at {self.location} for writing: {exc.strerror or exc}") from exc
        try:
            locks.lock_exclusive_nb(handle)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            pid = holder.split()[-1]
            raise StoreLockedError(
                f"the store at {self.location} is being written by {holder}; "
                "close it (e.g. quit haiku-desk) or open this one read-only",
                holder_pid=int(pid) if pid.isdigit() else None,
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        self._lock_file = handle
        self._pin_tables()

    def _pin_tables(self) -> None:
        """Holding the writer lock, this handle is the store's only writer until it closes: its
        tables stop looking for versions written elsewhere before every operation (a listing
        of each table's versions folder and a manifest read: ~0.5 ms per call, 6-8 % of a
        ``create_document`` at steady state). Its own writes still advance them; read-only
        handles and other processes keep checking. ``versions.restore_cut`` takes the writer
        lock too, so nothing else moves the tables under a pinned handle."""
        if self._pinned:
            return
        import lancedb

        db = lancedb.connect(self.location, read_consistency_interval=None, **self._connect_options)
        self._tables = {name: db.open_table(name) for name in self._tables}
        self._db = db
        self._pinned = True

    def acquire_writer_lock(self) -> None:
        """Take the writer lock now rather than at the first write, so a second writer learns
        at open that the store is taken (``StoreLockedError``, with the holder's pid)."""
        self._ensure_writable()
        with self._write_lock:
            self._acquire_process_lock()

    @contextlib.contextmanager
    def write_transaction(self) -> Iterator[None]:
        """Run a multi-table write atomically within this process (see module docstring)."""
        self._ensure_writable()
        with self._write_lock:
            self._acquire_process_lock()
            versions = {name: table.version for name, table in self._tables.items()}
            outermost = self._transaction_depth == 0
            if outermost:
                self._noted = None
            self._transaction_depth += 1
            try:
                yield
            except BaseException as exc:
                self._upkeep_bound = None
                undo_failed = self._rollback(versions)
                if isinstance(exc, OSError | RuntimeError) and not isinstance(exc, HaikuRAGError):
                    raise StoreWriteError(self._describe_write_failure(exc, undo_failed)) from exc
                if undo_failed:
                    raise StoreError("rollback failed for " + undo_failed) from exc
                raise
            else:
                if outermost:
                    noted, bound = self._noted, self._upkeep_bound
                    self._upkeep_bound = None if noted is None or bound is None else bound.after(*noted)
            finally:
                self._transaction_depth -= 1

    def note_append(self, *, rows: int, fragments: int = 1) -> None:
        """Inside ``write_transaction``: the write adds at most ``rows`` rows and ``fragments``
        fragments to any one table (an append is one fragment; an update one more). Lets
        ``maintain_indexes`` count instead of reading every table's stats after each write."""
        rows_so_far, fragments_so_far = self._noted or (0, 0)
        self._noted = (rows_so_far + rows, fragments_so_far + fragments)

    def _rollback(self, versions: dict[str, int]) -> str:
        """Restore every table to ``versions``; returns what could not be restored ("" if all)."""
        errors = []
        for name in S.TABLES:
            table = self._tables.get(name)
            if table is None or name not in versions:
                continue
            try:
                if table.version != versions[name]:
                    table.restore(versions[name])
            except Exception as exc:  # keep restoring the others; report below
                errors.append(f"{name}: {short_error(exc)}")
        return "; ".join(errors)

    def _describe_write_failure(self, exc: BaseException, undo_failed: str) -> str:
        text = short_error(exc)
        if "No space left" in text or "os error 28" in text or getattr(exc, "errno", None) == 28:
            reason = "the disk is full"
        elif self.is_remote and unanswered(exc):
            reason = f"the object store did not answer within the deadline ({self.remote_deadline:g} s, lancedb.request_deadline_seconds)"
        elif "Permission denied" in text or "os error 13" in text:
            reason = "permission denied"
        else:
            reason = text
        message = f"could not write to the store at {self.location}: {reason}. "
        if undo_failed:
            # The documents row is written last: an unfinished write is invisible to reads and
            # removed by the next writable open, so nothing stored before is lost.
            return message + (
                "The unfinished write could not be undone yet; it stays invisible and is "
                "removed the next time the store is opened for writing. Stored documents are intact."
            )
        return message + "Nothing was changed."

    # --- recovery -------------------------------------------------------------------------

    def current_generations(self) -> dict[str, str]:
        """Document id -> current generation; every search needs it, so it is cached per
        version of the documents table (any write, from any process, makes a new version)."""
        return self._documents_snapshot().generations

    def document_labels(self) -> dict[str, tuple[str, str | None, str]]:
        """Document id -> (uri, title, metadata JSON): what a search result names its document
        by, cached like ``current_generations`` so results need no documents query."""
        return self._documents_snapshot().labels

    def documents_without_vectors(self) -> frozenset[str]:
        """Ids of the documents whose vectors have not landed yet (index state "text"): hybrid
        search counts their full-text hits whole, as the vector arm could not rank them."""
        return self._documents_snapshot().text_only

    def _documents_snapshot(self) -> _DocumentsSnapshot:
        table = self._tables[S.DOCUMENTS]
        version = table.version
        cached = self._generations
        if cached is not None and cached[0] == version:
            return cached[1]
        rows = table.search().select(["id", "generation", "uri", "title", "metadata", "index_state"]).limit(None).to_arrow()
        ids = rows["id"].to_pylist()
        generations = dict(zip(ids, rows["generation"].to_pylist(), strict=True))
        labels = dict(
            zip(
                ids,
                zip(rows["uri"].to_pylist(), rows["title"].to_pylist(), rows["metadata"].to_pylist(), strict=True),
                strict=True,
            )
        )
        states = rows["index_state"].to_pylist()
        text_only = frozenset(i for i, state in zip(ids, states, strict=True) if state == "text")
        snapshot = _DocumentsSnapshot(generations, labels, text_only)
        self._generations = (version, snapshot)
        return snapshot

    def vector_matrix(self) -> VectorMatrix | None:
        """The vectors in memory for exact search (``store.vectors.VectorMatrix``), cached per
        version of the vectors table; None when there is no vectors table or its vectors do
        not fit ``exact_search_budget_bytes`` (searches then use LanceDB's ANN index). Exact
        search wins over the index whenever the matrix fits: it loses no recall."""
        from haiku.rag.store.vectors import VectorMatrix, fits_exact_budget

        table = self._tables.get(S.CHUNK_VECTORS)
        if table is None:
            return None
        version = table.version
        cached = self._vector_matrix
        if cached is not None and cached[0] == version:
            return cached[1]
        previous = cached[1] if cached is not None else None
        self._vector_matrix = None
        dim = table.schema.field("vector").type.list_size
        matrix = None
        if fits_exact_budget(table.count_rows(), dim, self.exact_search_budget_bytes):
            # after an append (ingestion), only the new rows are read; the chunks table gives
            # each vector its chunk's first page, for page grouping without a query
            chunks = self._tables.get(S.CHUNKS)
            matrix = previous.extended(table, chunks) if previous is not None else None
            if matrix is None:
                previous = None  # not kept alive while the whole table loads again
                matrix = VectorMatrix.load(table, chunks)
        self._vector_matrix = (version, matrix)
        return matrix

    def prewarm(self) -> bool:
        """Beyond the exact-search budget (vector searches go through LanceDB), load on a
        background thread what those searches read: the ANN and full-text indexes into LanceDB's
        index cache, when the vector index fits ``PREWARM_CACHE_SHARE`` of it, and each chunk's
        first page by id (``page_map``). Returns whether it started.

        Without it every search of a fresh handle read the index partitions it probed that no
        search had read before, so the first tens of searches after opening a large library
        were 2-3x slower than later ones; and page grouping read the rows of every pooled ANN
        hit. Searches never wait for it (``wait_warm`` does, for benchmarks and tests). Started
        by ``HaikuRAG.warm_up_search`` (the app, once a library is open, before the first
        question) or by the first search through the ANN index; from then on upkeep starts it
        again once it has rebuilt the indexes. A handle that never searches never starts it.
        """
        from haiku.rag.store.vectors import PAGE_MAP_BUDGET_BYTES, fits_exact_budget

        self._serves_searches = True
        table = self._tables.get(S.CHUNK_VECTORS)
        chunks = self._tables.get(S.CHUNKS)
        if table is None or not self._warm.is_set():
            return False
        jobs = []
        try:
            rows = table.count_rows()
            dim = table.schema.field("vector").type.list_size
            if fits_exact_budget(rows, dim, self.exact_search_budget_bytes):
                return False  # exact in-memory search: neither is read
            fits_cache = rows * (dim + PREWARM_BYTES_PER_VECTOR_BEYOND_DIM) <= PREWARM_CACHE_SHARE * INDEX_CACHE_BYTES
            if fits_cache and VECTOR_INDEX_NAME in {i.name for i in table.list_indices()}:
                jobs.append((table, VECTOR_INDEX_NAME))
                if chunks is not None:
                    jobs.append((chunks, FTS_INDEX_NAME))
            if chunks is not None and chunks.count_rows() * PAGE_MAP_BYTES_PER_CHUNK > PAGE_MAP_BUDGET_BYTES:
                chunks = None
        except Exception as exc:  # a damaged table shows in the search itself
            log.debug("no prewarm: %s", short_error(exc))
            return False
        if not jobs and chunks is None:
            return False
        self._warm.clear()
        threading.Thread(target=self._prewarm, args=(jobs, chunks), name="haiku-rag-prewarm", daemon=True).start()
        return True

    def _prewarm(self, jobs: list[tuple[Any, str]], chunks: Any) -> None:
        from haiku.rag.store.vectors import PageMap

        try:
            for table, name in jobs:
                started = time.perf_counter()
                try:
                    table.prewarm_index(name)
                except Exception as exc:  # an index being rebuilt, a closed store: searches load it
                    log.debug("index prewarm of %s skipped: %s", name, short_error(exc))
                else:
                    log.debug("index %s prewarmed in %.2f s", name, time.perf_counter() - started)
            if chunks is not None:
                try:
                    self._page_map = PageMap.load(chunks)
                except Exception as exc:  # searches read the hits' rows instead
                    log.debug("no page map: %s", short_error(exc))
        finally:
            self._warm.set()

    @property
    def serves_searches(self) -> bool:
        """Whether ``prewarm`` was asked for on this handle (see there)."""
        return self._serves_searches

    def page_map(self) -> Any:
        """Each chunk's first page by id (``store.vectors.PageMap``), once ``prewarm`` has read
        it; None before, and within the exact-search budget (the matrix carries the pages)."""
        return self._page_map

    def wait_warm(self, timeout: float | None = None) -> bool:
        """Wait for a running ``prewarm``; whether none is running any more."""
        return self._warm.wait(timeout)

    def release_caches(self) -> None:
        """Drop what searches keep in memory (the exact-search matrix, the documents
        snapshot); the next search loads them again. Called when the library is idle."""
        self._vector_matrix = None
        self._generations = None

    def stale_generations(self, min_age_seconds: float | None = None) -> dict[str, set[str]]:
        """Per content table, generations that no document row points at.

        With ``min_age_seconds``, generations younger than that (possibly a write still in
        progress in another process) are left out; ids without a time count as old."""
        live = set(self.current_generations().values())
        now = time.time_ns()
        stale: dict[str, set[str]] = {}
        for name in S.CONTENT_TABLES:
            table = self._tables.get(name)
            if table is None:
                continue
            column = table.search().select(["generation"]).limit(None).to_arrow()["generation"]
            found = set(column.to_pylist()) - live
            if min_age_seconds is not None:
                found = {g for g in found if (generation_age(g, now) or float("inf")) >= min_age_seconds}
            if found:
                stale[name] = found
        return stale

    @property
    def recovery_grace_seconds(self) -> float | None:
        """How old a leftover must be before recovery removes it (None: any age)."""
        return REMOTE_RECOVERY_GRACE_SECONDS if self.is_remote else None

    def recover(self) -> int:
        """Delete leftovers of interrupted writes; returns how many tables were cleaned.

        Locally the writer lock guarantees no other process is mid-write, so every leftover
        goes; on object storage only leftovers older than ``recovery_grace_seconds``.

        What is stale is decided only while holding the writer lock: a set computed before
        it may name another writer's generation that was committed in between. The first
        look, without the lock, only decides whether taking the lock is worth it. When
        another process holds the lock, its leftovers may be its write in progress: they
        stay (invisible to reads) for the next writer that opens the store.
        """
        if not self.stale_generations(self.recovery_grace_seconds):
            return 0
        self._ensure_writable()
        with self._write_lock:
            try:
                self._acquire_process_lock()
            except StoreLockedError:
                log.info("recovery skipped: %s is being written by another process", self.location)
                return 0
            with self.write_transaction():
                stale = self.stale_generations(self.recovery_grace_seconds)
                # Never a generation a documents row names, whatever the scan above saw.
                referenced = set(
                    self._tables[S.DOCUMENTS].search().select(["generation"]).limit(None).to_arrow()["generation"].to_pylist()
                )
                cleaned = 0
                for name, generations in stale.items():
                    doomed = generations - referenced
                    if doomed:
                        self._tables[name].delete(sql_in("generation", doomed))
                        cleaned += 1
        return cleaned

    # --- maintenance ----------------------------------------------------------------------

    def unindexed_rows(self) -> int:
        """Rows the indexes do not cover yet (every query scans them flat)."""
        lag = 0
        for table in self._tables.values():
            for index in table.list_indices():
                with contextlib.suppress(Exception):  # an index being rebuilt has no stats
                    stats = table.index_stats(index.name)
                    if stats is not None:
                        lag = max(lag, int(stats.num_unindexed_rows))
        return lag

    def maintain_indexes(self, *, force: bool = False) -> bool:
        """Fold rows added since the last maintenance into the indexes and compact fragments,
        once ``UNINDEXED_ROWS_BEFORE_MAINTENANCE`` rows or ``SMALL_FRAGMENTS_BEFORE_MAINTENANCE``
        small fragments (more in a large library) have piled up, or when ``force``;
        create the vector index once the library reaches ``VECTOR_INDEX_MIN_ROWS`` vectors.

        Returns whether anything was done. Superseded versions go once older than
        ``keep_versions_for()``: ``KEEP_VERSIONS_FOR`` while a reader in another process has
        the store open (it never loses the version it is reading); otherwise after a minute or
        once ``KEEP_RECENT_VERSIONS`` newer ones exist, except those a read running in this
        process may use (``_cleanup_age``).
        """
        if self.read_only:
            return False
        with self._write_lock:
            # Reading the trigger costs a stats read per table and index (~10 ms, after every
            # write of a create_document loop); while this handle is the only writer, the
            # writes since the last read are counted instead.
            bound = self._upkeep_bound if self._lock_file is not None else None
            if not force and bound is not None and not bound.due():
                return False
            bound = self._read_upkeep_bound()
            if not force and not bound.due():
                self._upkeep_bound = bound if self._lock_file is not None else None
                return False
            self._upkeep_bound = None  # read again at the next check
            keep = self.keep_versions_for()
            for table in self._tables.values():
                table.optimize(cleanup_older_than=self._cleanup_age(table, keep))
            if bound.vector_rows_left <= 0:
                self._create_vector_index()
            if self._serves_searches:
                self.prewarm()  # the rebuilt index parts are not in the cache yet
            else:
                self._renew_caches()
            return True

    def _renew_caches(self) -> None:
        """Reopen the tables on a new LanceDB session, so that its caches start empty.

        Each upkeep writes new index files and manifests, and LanceDB's caches keep the
        superseded ones (keyed by file) until their bounds: a ``create_document`` loop grew them
        by ~12 KB a document (33 -> 93 MB over 5,183, session 9), never read again. A handle that
        does not serve searches (``prewarm`` not asked for) only reads what the next lookups
        load again (the scalar indexes' pages, a few MB); one that does keeps its cache, which
        ``prewarm`` filled with what searches read."""
        if self._session is None or not self._pinned:
            return
        import lancedb

        session = lancedb.Session(index_cache_size_bytes=INDEX_CACHE_BYTES, metadata_cache_size_bytes=METADATA_CACHE_BYTES)
        options = {**self._connect_options, "session": session}
        db = lancedb.connect(self.location, read_consistency_interval=None, **options)
        self._tables = {name: db.open_table(name) for name in self._tables}
        self._db, self._session, self._connect_options = db, session, options

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Mark a read running in this process for the block (any thread).

        A LanceDB query reads the table version that was current when it started. Upkeep's
        cleanup keeps every version current since the oldest read of another thread began, so a
        search or a lookup running while this process writes never loses its files. The client
        runs all its store work inside this (``HaikuRAG._reading``); code that reads a ``Store``
        directly from several threads should too. Readers in other processes hold a lease
        instead (``reader_lease``)."""
        token = next(self._read_tokens)
        with self._reads_lock:
            self._reads[token] = (threading.get_ident(), time.time())
        try:
            yield
        finally:
            with self._reads_lock:
                del self._reads[token]

    def _oldest_read(self) -> float | None:
        """When the oldest read still running in another thread began (its own earlier reads
        are over when a thread runs upkeep)."""
        me = threading.get_ident()
        with self._reads_lock:
            return min((at for thread, at in self._reads.values() if thread != me), default=None)

    def _cleanup_age(self, table: Any, keep: timedelta) -> timedelta:
        """The age from which ``table``'s superseded versions go at this upkeep.

        With a reader in another process: ``keep`` (``KEEP_VERSIONS_FOR``). Otherwise a version
        goes once older than ``keep`` or once ``KEEP_RECENT_VERSIONS`` newer ones exist, unless
        a read running in this process may use it (``reading``). LanceDB's cleanup is by age,
        measured when its pass starts, after compaction: a cutoff placed at a version's commit
        time moves later by the compaction's duration, so the count keeps
        ``VERSION_CLEANUP_MARGIN_SECONDS`` more (a long compaction may still take a few more
        of the oldest), and the versions a read may use keep ``KEEP_VERSIONS_WITHOUT_READERS``
        more."""
        if keep >= KEEP_VERSIONS_FOR:
            return keep
        history = sorted((v["version"], v["timestamp"].timestamp()) for v in table.list_versions())
        now = time.time()
        age = keep
        if len(history) > KEEP_RECENT_VERSIONS:
            cutoff = history[-KEEP_RECENT_VERSIONS][1] - VERSION_CLEANUP_MARGIN_SECONDS
            age = min(age, timedelta(seconds=max(0.001, now - cutoff)))
        held_since = self._oldest_read()
        if held_since is not None and history:
            # the version current when the read began, and the one before: a commit made just
            # before it may not have been visible to it yet
            current_then = max((i for i, (_, at) in enumerate(history) if at <= held_since), default=0)
            cutoff = history[max(0, current_then - 1)][1] - KEEP_VERSIONS_WITHOUT_READERS.total_seconds()
            age = max(age, timedelta(seconds=max(0.0, now - cutoff)))
        return age

    def _read_upkeep_bound(self) -> UpkeepBound:
        chunks = self._tables.get(S.CHUNKS)
        vectors = self._tables.get(S.CHUNK_VECTORS)
        if vectors is None or any(i.name == VECTOR_INDEX_NAME for i in vectors.list_indices()):
            vector_rows_left = NEVER  # none yet (its creation is a write that forgets the bound), or built
        else:
            vector_rows_left = VECTOR_INDEX_MIN_ROWS - vectors.count_rows()
        return UpkeepBound(
            small_fragments=self.small_fragments(),
            unindexed_rows=self.unindexed_rows(),
            chunks=chunks.count_rows() if chunks is not None else 0,
            vector_rows_left=vector_rows_left,
        )

    def small_fragments(self) -> int:
        """The most fragments below lance's compaction target that any table holds."""
        return max(int(t.stats()["fragment_stats"]["num_small_fragments"]) for t in self._tables.values())

    def _create_vector_index(self) -> None:
        table = self._tables[S.CHUNK_VECTORS]
        rows = table.count_rows()
        # IVF partitions of ~4k vectors keep the partition lists short at these sizes;
        # HNSW over scalar-quantised vectors inside each partition gives near-exact recall.
        table.create_index(
            metric="cosine",
            vector_column_name="vector",
            index_type="IVF_HNSW_SQ",
            num_partitions=max(1, rows // 4096),
            name=VECTOR_INDEX_NAME,
        )

    def optimize(self) -> None:
        """Compact fragments, fold new rows into indexes, drop old versions."""
        self._ensure_writable()
        with self._write_lock:
            for table in self._tables.values():
                table.optimize(cleanup_older_than=timedelta(seconds=0))

    def readers_present(self) -> bool:
        """Whether a reader in another process (a read-only store, a backup) has this store
        open: it may be reading a version this writer has superseded."""
        if self.is_remote:
            return True  # no lease file on object storage: assume readers
        return readers_present(self.location)

    def keep_versions_for(self) -> timedelta:
        """How long superseded versions stay, decided now (the cleanup policy)."""
        return KEEP_VERSIONS_FOR if self.readers_present() else KEEP_VERSIONS_WITHOUT_READERS

    def folder_intact(self) -> bool:
        """False when this (local) store's folder or its documents table went away while it
        was open (deleted, moved, or recreated empty under a reader)."""
        if self.is_remote:
            return True
        return (Path(self.location) / f"{S.DOCUMENTS}.lance" / "_versions").is_dir()

    def close(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None
        self._page_map = None
        lease = getattr(self, "_reader_lease", None)
        if lease is not None:
            lease.close()
            self._reader_lease = None
        self._tables.clear()


def reader_lease(location: str) -> Any:
    """A shared lock on the store's readers file, held until the returned file is closed.

    Readers never create the file (a read-only open changes nothing in the folder); writers
    create it when they probe (``readers_present``), so None means no writer has run since
    the store was made by an older version, or a read-only medium: no writer there either."""
    from haiku.rag.store import locks

    try:
        handle = open(Path(location) / READERS_FILE)  # noqa: SIM115 - held while open
    except OSError:
        return None
    try:
        locks.lock_shared(handle)  # waits only for a writer's instant probe
    except OSError:
        handle.close()
        return None
    return handle


def readers_present(location: str) -> bool:
    """Whether any process holds a reader lease on the store at ``location``."""
    from haiku.rag.store import locks

    try:
        handle = open(Path(location) / READERS_FILE, "a+")
    except OSError:
        return True  # cannot tell: keep versions
    with handle:
        try:
            locks.lock_exclusive_nb(handle)
        except BlockingIOError:
            return True
        locks.unlock(handle)
        return False
