"""The library's write queue: ingests (re-ingests are ingests) and deletes, one at a time,
kept in the library's app folder until each is done.

A job leaves the file only when it has run to its end; the running one stays in it. So
whatever stops the app (Quit with work pending, a crash, a power cut) leaves the work that
was not done in the file, and the next start runs it. Every job is idempotent: an ingest of a
file already stored unchanged does nothing (a forced one, the person's Re-ingest, reads it
again and replaces the document in place, same id), a delete of a document already gone does
nothing.
A PDF's password is never written down: a resumed password retry asks for it again.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haiku_desk.services.app_folder import AppFile

log = logging.getLogger("haiku_desk.library")

QUEUE_FILE = "queue.json"
VERSION = 1


@dataclass
class IngestJob:
    key: str
    path: Path
    password: str | None = None
    watched: str | None = None
    force: bool = False  # an explicit Re-ingest: read again even when the file is unchanged
    # added by hand (Add files, a drop): an unchanged file says so; not kept across starts
    by_hand: bool = False

    @property
    def kind(self) -> str:
        return "ingest"


@dataclass
class DeleteJob:
    key: str
    document_id: str

    @property
    def kind(self) -> str:
        return "delete"


Job = IngestJob | DeleteJob


def _to_dict(job: Job) -> dict[str, str | bool | None]:
    if isinstance(job, IngestJob):
        entry: dict[str, str | bool | None] = {
            "kind": "ingest", "key": job.key, "path": str(job.path), "watched": job.watched,
        }
        if job.force:
            entry["force"] = True
        return entry
    return {"kind": "delete", "key": job.key, "document_id": job.document_id}


def _from_dict(data: dict[str, Any]) -> Job | None:
    kind = data.get("kind")
    if kind == "ingest" and data.get("key") and data.get("path"):
        force = data.get("force") is True
        return IngestJob(data["key"], Path(data["path"]), watched=data.get("watched") or None, force=force)
    if kind == "delete" and data.get("key") and data.get("document_id"):
        return DeleteJob(data["key"], data["document_id"])
    return None


class WorkQueue:
    """Jobs waiting or running, in order, mirrored to ``<folder>/queue.json``."""

    def __init__(self, folder: Path | None, on_error: Callable[[str], object]) -> None:
        self._file = AppFile(
            folder, QUEUE_FILE, on_error,
            reading="the unfinished work of this library", saving="the library's work queue",
        )
        self._jobs: deque[Job] = deque()
        self.current: Job | None = None

    # --- persistence -------------------------------------------------------------------------

    def load(self) -> list[Job]:
        """The jobs left by the last run (the one running then comes first)."""
        data = self._file.read()
        if data is None:
            return []
        jobs = [_from_dict(item) for item in data.get("jobs", []) if isinstance(item, dict)]
        return [job for job in jobs if job is not None]

    def save(self) -> None:
        if self._file.path is None:
            return
        jobs = ([self.current] if self.current is not None else []) + list(self._jobs)
        self._file.write({"version": VERSION, "jobs": [_to_dict(j) for j in jobs]})

    # --- the queue -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._jobs)

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __iter__(self) -> Iterator[Job]:
        return iter(list(self._jobs))

    def append(self, job: Job) -> None:
        self._jobs.append(job)
        self.save()

    def take(self) -> Job | None:
        """The next job, which becomes the running one (and stays in the file)."""
        if not self._jobs:
            return None
        self.current = self._jobs.popleft()
        return self.current

    def finish(self, job: Job) -> None:
        """``job`` ran to its end: it leaves the file."""
        if self.current is job:
            self.current = None
        self.save()

    def remove(self, key: str) -> list[Job]:
        """Drop the waiting jobs for ``key`` (not the running one); returns them."""
        removed = [job for job in self._jobs if job.key == key]
        if removed:
            self._jobs = deque(job for job in self._jobs if job.key != key)
            self.save()
        return removed

    def force(self, key: str) -> bool:
        """Make the waiting ingest of ``key`` a forced one (a Re-ingest asked while a plain add
        of the file waits); False when none waits."""
        for job in self._jobs:
            if isinstance(job, IngestJob) and job.key == key:
                if not job.force:
                    job.force = True
                    self.save()
                return True
        return False

    def has(self, key: str, kind: str | None = None) -> bool:
        jobs = ([self.current] if self.current is not None else []) + list(self._jobs)
        return any(job.key == key and (kind is None or job.kind == kind) for job in jobs)

    def counts(self) -> dict[str, int]:
        """Waiting jobs by kind ("ingest", "delete"), the running one excluded."""
        counts = {"ingest": 0, "delete": 0}
        for job in self._jobs:
            counts[job.kind] += 1
        return counts

    def clear(self) -> None:
        """Forget the jobs in memory only: the file keeps them for the next start."""
        self._jobs.clear()
        self.current = None
