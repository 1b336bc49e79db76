"""Complete versions of a store: finding the last one, rolling back to it, consistent backups.

Every table keeps its earlier versions (LanceDB versioning) for ``KEEP_VERSIONS_FOR`` while a
reader in another process (a read-only store, a backup) holds a lease; otherwise upkeep keeps
the newest ``KEEP_RECENT_VERSIONS`` of each table, none over a minute old, and any a read in this
process uses (``engine.Store._cleanup_age``). The
tables are written in an order that makes the store consistent at every instant (content
rows first, the ``documents`` row last, see ``engine``), so the tables *as they were at one
moment* — each at its newest version committed by then — form a complete store: a cut.

- A file-by-file copy taken while the store was written (a backup tool, a sync client) may
  hold the newest manifests without all their data files. ``last_complete_cut`` walks back
  through the moments at which any table changed and returns the newest cut whose every data
  file reads and whose documents have their content; ``restore_cut`` rolls back to it.
- Such a copy may also hold a newest manifest copied half-way: LanceDB then cannot open the
  table at all, and no version looked readable although older ones were. ``find_complete_cut``
  looks again with the unreadable newest manifests set aside (in a hard-linked scratch copy,
  so looking changes nothing); ``set_aside_unreadable`` does the same in place before
  ``restore-version`` rolls back (the manifests go to ``<table>.lance/_versions.unreadable/``).
- ``backup`` copies a store that another process may be writing: it fixes the cut at the
  moment it starts, copies the folder and, in the copy, restores that cut and deletes every
  file it does not need. The copy is as the store was at that moment.
"""

from __future__ import annotations

import contextlib
import shutil
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from haiku.rag.errors import StoreError, StoreLockedError, StoreWriteError
from haiku.rag.store import schema as S

MAX_MOMENTS_CHECKED = 200  # how far back ``last_complete_cut`` looks


@dataclass(frozen=True, slots=True)
class Cut:
    """Each table at its newest version committed by ``at`` (None: the table came later)."""

    at: datetime
    versions: dict[str, int | None]
    documents: int = 0

    def describe(self) -> str:
        tables = ", ".join(f"{name} v{v}" for name, v in self.versions.items() if v is not None)
        return f"{self.at.isoformat(sep=' ', timespec='seconds')} UTC ({self.documents} documents; {tables})"


def _tables(location: str) -> dict[str, Any]:
    import lancedb

    db = lancedb.connect(location)
    names = getattr(db.list_tables(), "tables", None) or db.table_names()
    return {name: db.open_table(name) for name in names if name in S.TABLES}


def _history(table: Any) -> list[tuple[int, datetime]]:
    return sorted((v["version"], v["timestamp"]) for v in table.list_versions())


def _cut_at(moment: datetime, histories: dict[str, list[tuple[int, datetime]]]) -> dict[str, int | None]:
    return {name: max((v for v, t in history if t <= moment), default=None) for name, history in histories.items()}


def _read(table: Any, version: int, columns: list[str]) -> Any:
    table.checkout(version)
    try:
        return table.search().select(columns).limit(None).to_arrow()
    finally:
        table.checkout_latest()


_PROBE = {S.DOCUMENTS: ["id", "generation", "chunk_count"], S.SETTINGS: ["key"]}


def _complete(tables: dict[str, Any], cut: dict[str, int | None], seen: dict[tuple[str, int], Any]) -> int | None:
    """Number of documents if every table at ``cut`` reads and every document has its
    chunks and stored file; None otherwise. ``seen`` caches reads per (table, version)."""
    if cut.get(S.DOCUMENTS) is None or cut.get(S.SETTINGS) is None:
        return None
    data: dict[str, Any] = {}
    for name, version in cut.items():
        if version is None:
            continue
        key = (name, version)
        if key not in seen:
            try:  # a missing or truncated data file fails here
                seen[key] = _read(tables[name], version, _PROBE.get(name, ["generation"]))
            except Exception:  # noqa: BLE001 - lance reports unreadable files as plain errors
                seen[key] = None
        if seen[key] is None:
            return None
        data[name] = seen[key]
    documents = data[S.DOCUMENTS]
    live = documents["generation"].to_pylist()
    if live and any(name not in data for name in (S.DOCUMENT_BLOBS, S.DOCUMENT_ITEMS, S.CHUNKS)):
        return None
    for name in (S.DOCUMENT_BLOBS, S.DOCUMENT_ITEMS):
        if name in data and not set(live) <= set(data[name]["generation"].to_pylist()):
            return None
    if S.CHUNKS in data:
        from collections import Counter

        have = Counter(data[S.CHUNKS]["generation"].to_pylist())
        if any(have.get(g, 0) != n for g, n in zip(live, documents["chunk_count"].to_pylist(), strict=True)):
            return None
    return len(live)


def last_complete_cut(location: str) -> Cut | None:
    """The newest moment at which the store was complete, as far as its files still show
    (None when none is, or when a table's version history itself is unreadable)."""
    try:
        tables = _tables(location)
        histories = {name: _history(table) for name, table in tables.items()}
    except Exception:  # noqa: BLE001 - lance: a table whose manifests are gone or garbage
        return None
    moments = sorted({t for history in histories.values() for _, t in history}, reverse=True)
    seen: dict[tuple[str, int], Any] = {}
    for moment in moments[:MAX_MOMENTS_CHECKED]:
        cut = _cut_at(moment, histories)
        documents = _complete(tables, cut, seen)
        if documents is not None:
            return Cut(moment, cut, documents)
    return None


def _manifest_version(path: Path) -> int:
    """A manifest file's version: ``N.manifest``, or ``(2**64 - 1 - N).manifest`` in the
    newer naming (which sorts the newest first)."""
    number = int(path.stem)
    return (1 << 64) - 1 - number if number >= 1 << 63 else number


def _table_reads(location: str, name: str) -> bool:
    import lancedb

    try:
        _history(lancedb.connect(location).open_table(name))
    except Exception:  # noqa: BLE001 - lance: a manifest cut short, garbage, or missing
        return False
    return True


def set_aside_unreadable(location: str) -> list[str]:
    """Move the newest manifests that stop a table from opening (copied half-way) into
    ``<table>.lance/_versions.unreadable/``, newest first, until every table opens; returns
    what was moved (``table/file``). Local stores only."""
    moved: list[str] = []
    for table_dir in sorted(Path(location).glob("*.lance")):
        name = table_dir.name[: -len(".lance")]
        if name not in S.TABLES:
            continue
        versions = table_dir / "_versions"
        for _ in range(MAX_MOMENTS_CHECKED):
            if _table_reads(location, name):
                break
            manifests = sorted(versions.glob("*.manifest"), key=_manifest_version, reverse=True)
            if len(manifests) <= 1:
                break  # nothing older to fall back on
            aside = table_dir / "_versions.unreadable"
            aside.mkdir(exist_ok=True)
            manifests[0].rename(aside / manifests[0].name)
            moved.append(f"{name}/{manifests[0].name}")
            hint = versions / "latest_version_hint.json"
            if hint.exists():  # names the version just set aside
                hint.replace(aside / hint.name)
    return moved


def find_complete_cut(location: str) -> tuple[Cut | None, list[str]]:
    """``last_complete_cut``, and when there is none, the same search with the unreadable
    newest manifests set aside, in a scratch copy made of hard links (so the store itself is
    not changed). Returns the cut and the manifests ``set_aside_unreadable`` would move."""
    cut = last_complete_cut(location)
    if cut is not None:
        return cut, []
    import os
    import tempfile

    source = Path(location)
    with tempfile.TemporaryDirectory(dir=source.parent, prefix=".haiku-rag-salvage-") as scratch:
        farm = Path(scratch) / source.name

        def link(src: str, dst: str) -> None:
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)

        shutil.copytree(source, farm, copy_function=link, ignore=shutil.ignore_patterns(".haiku-rag-*.lock"))
        moved = set_aside_unreadable(str(farm))
        return (last_complete_cut(str(farm)) if moved else None), moved


def latest_cut(location: str) -> Cut:
    """The store as it is now, while another process may be writing it.

    The moment is the newest commit seen by a first look at every table; the versions come
    from a second look, which has every commit made up to that moment (one writer commits
    in order). Taking both from one look could pair a table listed early with one listed
    after a later commit: a documents row whose content the cut lacks."""
    tables = _tables(location)
    moment = max(t for table in tables.values() for _, t in _history(table))
    histories = {name: _history(table) for name, table in tables.items()}
    return Cut(moment, _cut_at(moment, histories))


def restore_cut(location: str, cut: Cut, *, drop_unneeded: bool = False) -> None:
    """Make ``cut`` the newest version of every table (a new version each: the versions
    after it stay in the history until cleaned up). Tables created after the cut are dropped.
    With ``drop_unneeded``, every file the cut does not need is deleted (a fresh copy).

    Refused (``StoreLockedError``) while another handle writes the store: a writer holding
    the lock does not look for versions made elsewhere (``Store._pin_tables``)."""
    with _writer_lock(location):
        _restore_cut(location, cut, drop_unneeded=drop_unneeded)


@contextlib.contextmanager
def _writer_lock(location: str) -> Iterator[None]:
    """The store's writer lock (``engine.LOCK_FILE``), held for the block; local stores only."""
    from haiku.rag.config import is_remote_uri
    from haiku.rag.store.engine import LOCK_FILE

    if is_remote_uri(location):
        yield
        return
    from haiku.rag.store import locks

    with open(Path(location) / LOCK_FILE, "a+") as handle:
        try:
            locks.lock_exclusive_nb(handle)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise StoreLockedError(
                f"the store at {location} is being written by {holder}; close it before restoring a version"
            ) from None
        yield


def _restore_cut(location: str, cut: Cut, *, drop_unneeded: bool) -> None:
    import lancedb

    db = lancedb.connect(location)
    tables = _tables(location)
    for name in S.TABLES:  # the commit point (documents) last
        if name not in tables:
            continue
        version = cut.versions.get(name)
        if version is None:
            db.drop_table(name)
            continue
        table = tables[name]
        if version != table.version:
            table.restore(version)
        if drop_unneeded:  # a fresh copy nobody else has open: LanceDB's warning does not apply
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)


def backup(location: str, destination: Path) -> Cut:
    """Copy the store at ``location`` (maybe being written by another process) to a new
    folder ``destination``, as it was when the backup started.

    The copy is made under a hidden name next to ``destination`` and renamed only when it is
    complete and opens as a store: a full disk or any other failure removes the partial copy
    and raises ``StoreWriteError`` (``destination`` never holds half a store)."""
    if destination.exists():
        raise StoreError(f"{destination} already exists; give a new folder for the backup")
    if not destination.parent.is_dir():
        raise StoreError(f"{destination.parent} does not exist; give a folder inside an existing one")
    import os

    from haiku.rag.store.engine import Store, reader_lease

    partial = destination.with_name(f".{destination.name}.partial-{os.getpid()}")
    try:
        lease = reader_lease(location)  # the writer keeps every version while the copy runs
        try:
            cut = latest_cut(location)
            source = Path(location)
            # Files that vanish while copying are not needed by the cut: versions it needs are
            # newer than any the writer cleans up.
            shutil.copytree(source, partial, ignore=shutil.ignore_patterns(".haiku-rag-writer.lock", ".haiku-rag-readers.lock"), copy_function=_copy_if_there)
        finally:
            if lease is not None:
                lease.close()
        restore_cut(str(partial), cut, drop_unneeded=True)
        Store(str(partial)).close()  # recovery: a write in flight at the cut leaves leftovers
        partial.rename(destination)
    except BaseException as exc:
        shutil.rmtree(partial, ignore_errors=True)
        if isinstance(exc, OSError | RuntimeError) and not isinstance(exc, StoreError):
            raise StoreWriteError(f"the backup to {destination} failed ({_os_reason(exc)}); nothing was left there") from exc
        if isinstance(exc, StoreError) and not isinstance(exc, StoreWriteError) and _os_reason(exc) == "the disk is full":
            raise StoreWriteError(f"the backup to {destination} failed (the disk is full); nothing was left there") from exc
        raise
    return cut


def _os_reason(exc: BaseException) -> str:
    """A short reason for a failed copy: full disk, permissions, or the error's first line."""
    from haiku.rag.errors import IngestCategory, categorize
    from haiku.rag.store.engine import short_error

    category = categorize(exc)
    text = str(exc)
    if category == IngestCategory.DISK_FULL or "No space left" in text or "os error 28" in text:
        return "the disk is full"
    if category == IngestCategory.PERMISSION_DENIED:
        return "permission denied"
    return short_error(exc)[:200]


def _copy_if_there(src: str, dst: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        shutil.copy2(src, dst)
