"""Watch folders: folders whose files the library keeps in sync with.

A rescan queues new and changed files, and deletes the documents of files that are gone. A
file the user deleted from the library stays out of it (excluded), even when it changes,
until the user adds it again by hand. The list lives in the library's app folder
(``<library>/haiku-desk/watched.json``), so switching libraries switches watch folders.
Rescans come from a file-system watcher (debounced: a copy fires many events) and a slow
poll (edits the watcher cannot see).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal, Slot

from haiku_desk.services.app_folder import read_json, write_json
from haiku_desk.services.entries import DocumentState, LibraryEntry, path_from_uri, uri_for
from haiku_desk.services.notifications import Notifications

log = logging.getLogger("haiku_desk.library")

WATCH_FILE = "watched.json"
LEGACY_WATCH_FILE_NAME = "haiku-desk-watched.json"  # before the app folder: <library>/<this>
WATCH_DEBOUNCE_MS = 1500  # a copy into a watched folder fires many change events
WATCH_POLL_MS = 5 * 60 * 1000  # catches edits the file-system watcher cannot see
MAX_WATCHED_PATHS = 4000  # inotify watches are a shared, limited resource


class Rows(Protocol):
    """What a rescan reads and marks of the library's rows."""

    @property
    def entries(self) -> list[LibraryEntry]: ...

    def update(self, key: str, **changes: Any) -> LibraryEntry | None: ...


class Queue(Protocol):
    """What a rescan asks of the library's write queue."""

    def enqueue_ingest(self, path: Path, password: str | None = None, watched: str | None = None) -> None: ...

    def remove_documents(self, keys: list[str]) -> None: ...

    def kick(self) -> None: ...


class WatchFolders(QObject):
    """The watched folders of one library at a time (:meth:`attach`), and their rescans."""

    changed = Signal(list)  # folder paths (str)
    rescanned = Signal(str)  # a watched folder finished a scan

    def __init__(
        self,
        rows: Rows,
        queue: Queue,
        ready: Callable[[], Awaitable[object]],
        notifications: Notifications,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._rows = rows
        self._queue = queue
        self._ready = ready  # the library is open (a scan waits for it)
        self._notifications = notifications
        self._file: Path | None = None
        self._legacy_file: Path | None = None
        self._closed = True
        self._watch: dict[str, dict[str, list[int]]] = {}  # folder -> {uri: [mtime_ns, size]}
        # folder -> URIs the user deleted from the library: a rescan leaves them out, even when
        # they change, until the user adds them again by hand
        self._excluded: dict[str, set[str]] = {}
        self._scans: dict[str, asyncio.Task[None]] = {}
        self._fs_watcher: QFileSystemWatcher | None = None
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(WATCH_DEBOUNCE_MS)
        self._debounce.timeout.connect(self._rescan_all)
        self._poll = QTimer(self)
        self._poll.setInterval(WATCH_POLL_MS)
        self._poll.timeout.connect(self._rescan_all)

    def attach(self, folder: Path, legacy_file: Path | None = None) -> None:
        """Start over for the library whose app folder is ``folder`` (nothing watched until
        :meth:`load`); ``legacy_file`` is where the list was kept before the app folder."""
        self.close()
        self._file = folder / WATCH_FILE
        self._legacy_file = legacy_file
        self._watch = {}
        self._excluded = {}
        self._scans = {}
        self._closed = False

    @property
    def folders(self) -> list[str]:
        return sorted(self._watch)

    def __bool__(self) -> bool:
        return bool(self._watch)

    # --- the list ----------------------------------------------------------------------------

    def load(self) -> None:
        assert self._file is not None, "attach() first"
        path = self._file
        if not path.is_file() and self._legacy_file is not None and self._legacy_file.is_file():
            path = self._legacy_file  # moved into the app folder at the next save
        try:
            data = read_json(path) or {}
        except (OSError, ValueError) as exc:
            self._notifications.error(f"Cannot read the watched folders list {path}: {exc}")
            data = {}
        folders = data.get("folders", {})
        self._watch = {folder: dict(info.get("files", {})) for folder, info in folders.items()}
        self._excluded = {
            folder: set(info.get("excluded", [])) for folder, info in folders.items() if info.get("excluded")
        }
        if path != self._file and self._watch:
            self.save()
            if self._file.is_file():
                self._legacy_file.unlink(missing_ok=True)  # type: ignore[union-attr]
        self._rewatch()
        self.changed.emit(self.folders)

    def save(self) -> None:
        if self._file is None:
            return
        folders: dict[str, dict[str, Any]] = {}
        for folder, files in self._watch.items():
            folders[folder] = {"files": files}
            if self._excluded.get(folder):
                folders[folder]["excluded"] = sorted(self._excluded[folder])
        data = {"version": 1, "folders": folders}  # "excluded" is optional: still version 1
        try:
            write_json(self._file, data)
        except OSError as exc:
            self._notifications.error(f"Cannot save the watched folders list {self._file}: {exc}")

    def excluded_files(self, folder: str) -> list[str]:
        """URIs in ``folder`` the user deleted from the library, which rescans leave out."""
        return sorted(self._excluded.get(str(Path(folder).expanduser().resolve()), ()))

    def include(self, uri: str) -> None:
        """The user added ``uri`` by hand: it is no longer excluded from its watched folder."""
        changed = False
        for uris in self._excluded.values():
            if uri in uris:
                uris.discard(uri)
                changed = True
        if changed:
            self.save()

    def exclude(self, keys: list[str]) -> None:
        """The user deleted these documents: rescans of their watched folder leave them out."""
        excluded = False
        for key in keys:
            folder = self.folder_of(key)
            if folder is not None and key not in self._excluded.setdefault(folder, set()):
                self._excluded[folder].add(key)
                excluded = True
        if excluded:
            self.save()

    def add(self, folder: str | os.PathLike[str]) -> asyncio.Task[None] | None:
        """Watch ``folder``: its files are added now and kept in sync on every rescan."""
        path = Path(folder).expanduser().resolve()
        if not path.is_dir():
            self._notifications.error(f"{path} is not a folder")
            return None
        key = str(path)
        if key not in self._watch:
            self._watch[key] = {}
            self.save()
            self._rewatch()
            self.changed.emit(self.folders)
        return self.rescan(key)

    def remove(self, folder: str) -> None:
        """Stop watching ``folder``; its documents stay in the library (as the user's own)."""
        key = str(Path(folder).expanduser().resolve())
        if self._watch.pop(key, None) is None:
            return
        self._excluded.pop(key, None)  # its exclusions meant "not from this folder"
        self.save()
        self._rewatch()
        self.changed.emit(self.folders)
        for entry in [e for e in self._rows.entries if e.watched_folder == key]:
            self._rows.update(entry.key, watched_folder=None)

    def folder_of(self, uri: str) -> str | None:
        path = path_from_uri(uri)
        if path is None:
            return None
        for folder in self._watch:
            if path.startswith(folder.rstrip("/") + "/"):
                return folder
        return None

    # --- scanning ----------------------------------------------------------------------------

    def rescan(self, folder: str | None = None) -> asyncio.Task[None] | None:
        """Re-scan one watched folder (or all): new and changed files are queued, documents of
        removed files deleted. Returns the scan task (the last one when scanning all)."""
        task = None
        for key in [folder] if folder else list(self._watch):
            if key not in self._watch:
                continue
            running = self._scans.get(key)
            if running is not None and not running.done():
                task = running
                continue
            task = asyncio.ensure_future(self._scan(key))
            self._scans[key] = task
        return task

    @Slot()
    def _rescan_all(self) -> None:
        if not self._closed:
            self.rescan()

    async def _scan(self, folder: str) -> None:
        from haiku.rag.formats import source_files

        root = Path(folder)

        def walk() -> dict[str, tuple[Path, list[int]]] | None:
            if not root.is_dir():
                return None
            found = {}
            for file in source_files(root):
                try:
                    st = file.stat()
                except OSError:
                    continue
                found[uri_for(file)] = (file, [st.st_mtime_ns, st.st_size])
            return found

        try:
            await self._ready()
            found = await asyncio.to_thread(walk)
        except Exception as exc:
            self._notifications.report_failure(f"Scanning {folder}", exc)
            return
        if folder not in self._watch or self._closed:
            return
        if found is None:
            self._notifications.error(f"The watched folder {folder} is missing; its documents are kept")
            self.rescanned.emit(folder)
            return
        known = self._watch[folder]
        excluded = self._excluded.get(folder, set())
        prefix = folder.rstrip("/") + "/"
        entries = {e.key: e for e in self._rows.entries}
        stored_here = {k for k, e in entries.items() if e.path and e.path.startswith(prefix) and e.document_id}
        for uri, (file, stat) in found.items():
            if uri in excluded:  # deleted by the user: stays out, changed or not
                continue
            entry = entries.get(uri)
            is_new = entry is None or (entry.document_id is None and entry.state is DocumentState.CANCELLED)
            if is_new or known.get(uri) != stat:
                self._queue.enqueue_ingest(file, watched=folder)
            elif entry is not None and entry.watched_folder != folder:
                self._rows.update(uri, watched_folder=folder)
        removed = (set(known) | stored_here) - set(found)
        to_delete = [k for k in removed if k in entries]
        if to_delete:
            self._queue.remove_documents(to_delete)  # the file is gone: not an exclusion
        self._watch[folder] = {uri: stat for uri, (_, stat) in found.items()}
        self.save()
        self._rewatch()
        self._queue.kick()
        self.rescanned.emit(folder)

    def _rewatch(self) -> None:
        """Point the file-system watcher at the watched folders, their subfolders and files."""
        if self._closed:
            return
        if self._fs_watcher is None:
            self._fs_watcher = QFileSystemWatcher(self)
            self._fs_watcher.directoryChanged.connect(self._on_fs_change)
            self._fs_watcher.fileChanged.connect(self._on_fs_change)
        watcher = self._fs_watcher
        wanted: list[str] = []
        for folder, files in self._watch.items():
            wanted.append(folder)
            for dirpath, dirnames, _ in os.walk(folder):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                wanted.extend(os.path.join(dirpath, d) for d in dirnames)
                if len(wanted) > MAX_WATCHED_PATHS:
                    break
            wanted.extend(p for p in (path_from_uri(u) for u in files) if p)
        wanted = wanted[:MAX_WATCHED_PATHS]
        current = set(watcher.directories()) | set(watcher.files())
        stale = [p for p in current if p not in set(wanted)]
        if stale:
            watcher.removePaths(stale)
        new = [p for p in wanted if p not in current and os.path.exists(p)]
        if new:
            watcher.addPaths(new)
        if self._watch:
            self._poll.start()
        else:
            self._poll.stop()

    @Slot(str)
    def _on_fs_change(self, _path: str) -> None:
        self._debounce.start()

    def close(self) -> None:
        """Stop watching (timers, scans and the file-system watcher); the list stays saved."""
        self._closed = True
        self._debounce.stop()
        self._poll.stop()
        for task in self._scans.values():
            task.cancel()
        # Delete the watcher now, on this (the GUI) thread: it owns an inotify descriptor
        # registered with the GUI event loop, which must not be left to whichever thread later
        # frees this object.
        watcher, self._fs_watcher = self._fs_watcher, None
        if watcher is not None:
            import shiboken6

            shiboken6.delete(watcher)  # also drops its connections
