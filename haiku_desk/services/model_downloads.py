"""Settings › Chat model › "Download a recommended model…": the curated catalog
(``haiku.rag.local_models.catalog``) and its downloads, for the catalog dialog.

The widgets get plain values (``CatalogRow``, ``DownloadProgress``, ``DownloadFailure``) and Qt
signals; every byte is fetched by ``haiku.rag.local_models.download`` in a worker thread, run
as an :class:`~haiku_desk.bridge.Operation`. Files go to one models folder
(``<data dir>/haiku-desk/models``), which the model-file discovery also searches, so a finished
download is listed with the other model files.

- **Pause** stops at the next chunk and keeps ``<name>.part``; **Resume** (or opening the
  dialog after a restart: the row says "paused at …") continues it with an HTTP Range request.
- **Cancel** stops and removes the ``.part``: it is an abandoned download (hundreds of MB the
  model list never shows), and Pause is there for keeping one.
- A dropped connection keeps the ``.part`` too (the failure offers Retry, which resumes); a
  file whose SHA-256 differs from the catalog's is removed by the download (nothing half-made
  is ever left under the model's name); too little disk space is refused before any byte.

The catalog is the built-in list unless ``HAIKU_DESK_MODEL_CATALOG`` names a JSON file (a list
of ``CatalogEntry`` objects; plain http only to 127.0.0.1/localhost): how the tests and a
person trying the download against a server on this computer replace it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from PySide6.QtCore import QObject, Signal

from haiku_desk.bridge import Operation

if TYPE_CHECKING:
    from haiku.rag.local_models.catalog import CatalogEntry

__all__ = [
    "CATALOG_ENV",
    "CatalogRow",
    "DownloadFailure",
    "DownloadProgress",
    "ModelDownloads",
    "format_size",
]

CATALOG_ENV = "HAIKU_DESK_MODEL_CATALOG"
MODELS_FOLDER_NAME = "models"
SPEED_WINDOW_S = 3.0  # the speed shown is the average over the last few seconds

State = Literal["available", "partial", "downloading", "pausing", "installed"]
FailureKind = Literal["space", "hash", "network", "not-a-model", "other"]


@dataclass(frozen=True)
class CatalogRow:
    """One catalog entry as the dialog shows it, with where its download stands."""

    name: str
    file_name: str
    kind: str  # chat | embedding
    parameters: str
    size: int
    licence: str
    url: str
    sha256: str
    verified_from: str
    state: State
    done: int = 0  # bytes already on disk (a paused or interrupted download's .part)
    path: str = ""  # the installed file


@dataclass(frozen=True)
class DownloadProgress:
    done: int
    total: int
    bytes_per_second: float | None  # None until two reports a moment apart

    @property
    def percent(self) -> int:
        return int(self.done * 100 / self.total) if self.total else 0

    def describe(self) -> str:
        """"12.3 MB of 397.8 MB (3%) · 2.1 MB/s"."""
        text = f"{format_size(self.done)} of {format_size(self.total)} ({self.percent}%)"
        if self.bytes_per_second is not None:
            text += f" · {format_size(int(self.bytes_per_second))}/s"
        return text


@dataclass(frozen=True)
class DownloadFailure:
    """Why a download stopped, worded for the person, and whether Retry would resume it."""

    kind: FailureKind
    message: str
    can_retry: bool


@dataclass
class _Job:
    """What the worker thread shares with the service: plain values, no Qt object."""

    entry: CatalogEntry
    discard: bool = False  # Cancel (not Pause): the .part goes too
    samples: list[tuple[float, int]] = field(default_factory=list)  # (time, bytes) for the speed


def format_size(n: int) -> str:
    """Bytes in decimal units, as disks and the download's messages count them."""
    value = float(n)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{n} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} bytes"  # pragma: no cover


class ModelDownloads(QObject):
    """The catalog and the downloads started from it (one at a time per entry)."""

    progressed = Signal(str, object)  # file name, DownloadProgress
    state_changed = Signal(str)  # file name: its row changed (started, paused, cancelled…)
    finished = Signal(str, str)  # file name, the installed file's path
    failed = Signal(str, object)  # file name, DownloadFailure

    def __init__(
        self,
        folder: str | os.PathLike[str],
        parent: QObject | None = None,
        *,
        catalog_path: str | os.PathLike[str] | None = None,
        disk_usage: Callable[[str | Path], Any] = shutil.disk_usage,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(parent)
        self.folder = Path(folder)
        # the override: an explicit path (tests), else the environment variable
        source = catalog_path if catalog_path is not None else os.environ.get(CATALOG_ENV) or None
        self.catalog_path = Path(source) if source else None
        self.disk_usage = disk_usage
        self.clock = clock
        self._jobs: dict[str, _Job] = {}
        self._operations: dict[str, Operation] = {}
        self._entries: tuple[CatalogEntry, ...] | None = None
        self.catalog_error: str | None = None

    # --- the catalog ----------------------------------------------------------------------

    def entries(self) -> tuple[CatalogEntry, ...]:
        """The catalog's entries (read once; a bad override file gives none and
        ``catalog_error`` says why)."""
        if self._entries is None:
            from haiku.rag.local_models.catalog import CATALOG, CatalogError, load_catalog

            if self.catalog_path is None:
                self._entries = CATALOG
            else:
                try:
                    self._entries = load_catalog(self.catalog_path)
                except CatalogError as exc:
                    self.catalog_error = str(exc)
                    self._entries = ()
        return self._entries

    @property
    def source_description(self) -> str:
        if self.catalog_path is None:
            return "the built-in list"
        return f"{self.catalog_path} (from {CATALOG_ENV})"

    def rows(self) -> list[CatalogRow]:
        return [self.row(entry.file_name) for entry in self.entries()]

    def row(self, file_name: str) -> CatalogRow:
        from haiku.rag.local_models.download import part_path

        entry = self._entry(file_name)
        final = self.folder / entry.file_name
        part = part_path(self.folder, entry.file_name)
        operation = self.running(file_name)
        state: State
        done = 0
        if operation is not None:
            state = "pausing" if operation.token.cancelled else "downloading"
            progress = operation.last_progress
            done = progress.done if progress is not None else 0
        elif final.is_file():
            state = "installed"
        elif part.is_file():
            state, done = "partial", part.stat().st_size
        else:
            state = "available"
        return CatalogRow(
            name=entry.name,
            file_name=entry.file_name,
            kind=entry.kind,
            parameters=entry.parameters,
            size=entry.size,
            licence=entry.licence,
            url=entry.url,
            sha256=entry.sha256,
            verified_from=entry.verified_from,
            state=state,
            done=done,
            path=str(final) if state == "installed" else "",
        )

    def free_space(self) -> int | None:
        """Free bytes on the models folder's disk (its nearest existing parent's)."""
        folder = self.folder
        while not folder.exists() and folder.parent != folder:
            folder = folder.parent
        try:
            return int(self.disk_usage(folder).free)
        except OSError:
            return None

    def _entry(self, file_name: str) -> CatalogEntry:
        for entry in self.entries():
            if entry.file_name == file_name:
                return entry
        raise KeyError(file_name)

    # --- downloads ------------------------------------------------------------------------

    def running(self, file_name: str) -> Operation | None:
        operation = self._operations.get(file_name)
        return operation if operation is not None and operation.running else None

    @property
    def busy(self) -> bool:
        return any(self.running(name) is not None for name in self._operations)

    def start(self, file_name: str) -> Operation:
        """Download ``file_name``'s entry (resuming its ``.part`` when there is one)."""
        from haiku.rag.local_models.download import download_entry

        current = self.running(file_name)
        if current is not None:
            return current
        entry = self._entry(file_name)
        job = _Job(entry)
        folder, disk_usage = self.folder, self.disk_usage

        def work(token: Any, report: Any) -> Path:  # in a worker thread: holds no Qt object
            from haiku.rag.errors import OperationCancelled
            from haiku.rag.local_models.download import DownloadInterrupted, part_path

            try:
                return download_entry(entry, folder, progress=report, cancel=token, disk_usage=disk_usage)
            except (OperationCancelled, DownloadInterrupted) as exc:
                if isinstance(exc, DownloadInterrupted) and not token.cancelled:
                    raise  # the connection was lost: said as such, the .part kept for Retry
                # paused or cancelled (also when the connection ended while it was stopping)
                if job.discard:
                    part_path(folder, entry.file_name).unlink(missing_ok=True)
                raise OperationCancelled("download stopped") from exc

        async def body(token: Any, report: Any) -> Path:
            future = asyncio.get_running_loop().run_in_executor(None, work, token, report)
            while True:
                try:
                    # shielded: a cancelled task still waits for the thread to stop writing,
                    # so a Resume never appends to a .part that is still being written
                    return await asyncio.shield(future)
                except asyncio.CancelledError:
                    token.cancel()
                    if future.done():
                        raise

        operation = Operation(f"Downloading {entry.name}", body, self)
        self._jobs[file_name] = job
        self._operations[file_name] = operation
        operation.progressed.connect(lambda progress: self._progressed(job, progress))

        # the outcome is emitted while the operation's task is still finishing: it is taken
        # off first, so the rows read then already say where the download ended
        def succeeded(path: object) -> None:
            self._forget(file_name, operation)
            self.finished.emit(file_name, str(path))

        def failed(exc: BaseException) -> None:
            self._forget(file_name, operation)
            self.failed.emit(file_name, self._failure(exc))

        operation.succeeded.connect(succeeded)
        operation.failed.connect(failed)
        operation.cancelled.connect(lambda: self._forget(file_name, operation))
        operation.ended.connect(lambda: self.state_changed.emit(file_name))
        operation.start()
        self.state_changed.emit(file_name)
        return operation

    def _forget(self, file_name: str, operation: Operation) -> None:
        if self._operations.get(file_name) is operation:
            del self._operations[file_name]

    def pause(self, file_name: str) -> None:
        """Stop at the next chunk and keep what arrived (``resume`` continues it)."""
        operation = self.running(file_name)
        if operation is not None:
            operation.token.cancel()
            self.state_changed.emit(file_name)

    def resume(self, file_name: str) -> Operation:
        return self.start(file_name)

    def cancel(self, file_name: str) -> None:
        """Stop and remove the partial file (a paused one too)."""
        from haiku.rag.local_models.download import part_path

        job = self._jobs.get(file_name)
        operation = self.running(file_name)
        if job is not None and operation is not None:
            job.discard = True  # the worker removes the .part once it has stopped writing
            operation.token.cancel()
            self.state_changed.emit(file_name)
            return
        part_path(self.folder, self._entry(file_name).file_name).unlink(missing_ok=True)
        self.state_changed.emit(file_name)

    def stop_all(self) -> None:
        """Pause every download (quitting: the ``.part`` files are resumed next time)."""
        for name in list(self._operations):
            self.pause(name)

    def _progressed(self, job: _Job, progress: Any) -> None:
        now = self.clock()
        samples = job.samples
        samples.append((now, progress.done))
        while len(samples) > 2 and now - samples[0][0] > SPEED_WINDOW_S:
            samples.pop(0)
        first_time, first_done = samples[0]
        speed = (progress.done - first_done) / (now - first_time) if now > first_time else None
        total = progress.total or job.entry.size
        self.progressed.emit(job.entry.file_name, DownloadProgress(progress.done, total, speed))

    def _failure(self, exc: BaseException) -> DownloadFailure:
        from haiku.rag.local_models.catalog import CatalogError
        from haiku.rag.local_models.download import (
            DownloadInterrupted,
            HashMismatch,
            NotAModelFile,
            NotEnoughDiskSpace,
        )

        if isinstance(exc, NotEnoughDiskSpace):
            return DownloadFailure(
                "space",
                f"Not enough disk space: {format_size(exc.needed)} must be free in {self.folder} "
                f"(the file plus a margin), only {format_size(exc.free)} is. Free some space, "
                "then download again.",
                can_retry=True,
            )
        if isinstance(exc, HashMismatch):
            return DownloadFailure(
                "hash",
                "The downloaded file is not the one the catalog names (its SHA-256 differs), so it "
                f"was discarded. Expected {exc.expected}, got {exc.got}.",
                can_retry=True,
            )
        if isinstance(exc, DownloadInterrupted):
            cause = exc.__cause__
            why = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
            if exc.done:
                return DownloadFailure(
                    "network",
                    f"The connection was lost after {format_size(exc.done)}, which are kept{why}. "
                    "Check the network, then Retry: the download continues from there.",
                    can_retry=True,
                )
            return DownloadFailure(
                "network",
                f"The server could not be reached{why}. Check the network, then Retry.",
                can_retry=True,
            )
        if isinstance(exc, NotAModelFile):
            return DownloadFailure("not-a-model", f"{exc}.", can_retry=False)
        if isinstance(exc, CatalogError):
            return DownloadFailure("other", f"This catalog entry cannot be downloaded: {exc}", can_retry=False)
        return DownloadFailure("other", str(exc) or type(exc).__name__, can_retry=True)
