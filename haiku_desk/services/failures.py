"""Files that failed to come in: their category, a plain reason, what can be done about it,
and the record that keeps their rows across restarts (``<library>/haiku-desk/failed.json``).

The category is typed end to end (``haiku.rag.errors.IngestCategory``): the library's ingest
errors keep theirs, store errors get their own (a locked library is never a damaged file) and
an exception nobody classified is "unexpected error: <type>", with its traceback in the log.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from haiku.rag.errors import IngestCategory, StoreLockedError, categorize
from haiku_desk.services.app_folder import AppFile

log = logging.getLogger("haiku_desk.library")

FAILED_FILE = "failed.json"
VERSION = 1


class NextStep(StrEnum):
    """What the person can do about a failed file (the library pane shows one button each)."""

    REINGEST = "Re-ingest"
    PASSWORD = "Password…"
    REMOVE = "Remove"


C = IngestCategory

# What a person can do about each failure category, in words (the buttons are NEXT_STEPS).
FAILURE_HINTS: dict[IngestCategory, str] = {
    C.PASSWORD_REQUIRED: "Enter its password to index it.",
    C.WRONG_PASSWORD: "That password did not open it; try again.",
    C.NEEDS_OCR: "It has no readable text and OCR did not recover any: turn on processing.ocr if it is off, or check that the scan is legible, then Re-ingest.",
    C.DAMAGED: "The file is damaged or not what its name says. Re-download or re-export it.",
    C.EMPTY: "There is no text in it to index.",
    C.UNSUPPORTED_TYPE: "This file type isn't supported yet — save it as PDF (or Word, EPUB, Markdown) and add it again.",
    # no format needs an extra any more (Office, ODT, EPUB and HTML are read natively); kept for
    # failures recorded by older versions: re-ingesting them now works
    C.EXTRA_MISSING: "This version reads the file without extras: Re-ingest it.",
    C.TOO_LARGE: "Raise processing.max_file_mb in the configuration (haiku.rag.yaml) to let it in, then Re-ingest.",
    C.TIMEOUT: "Parsing made no progress for too long. Raise processing.parse_timeout_seconds, or Re-ingest to try again.",
    C.NOT_FOUND: "The file is gone or unreadable. Remove the row, or put the file back and Re-ingest.",
    C.PARSER_FAILED: "The parser crashed on this file; the rest of the library is unaffected. Re-export the file and add it again.",
    C.CANCELLED: "Ingestion was cancelled; Re-ingest to try again.",
    C.SYMLINK_LOOP: "The link leads back to itself, so there is no file to read; fix or remove the link.",
    C.STORE_LOCKED: "Another program is writing to this library. Quit it (another haiku-desk?), then Re-ingest.",
    C.PERMISSION_DENIED: "Check that you may read the file and write the library's folder, then Re-ingest.",
    C.DISK_FULL: "Free some disk space, then Re-ingest. Nothing stored was changed.",
    C.STORE_UNAVAILABLE: "The library could not take the file; nothing stored was changed. Re-ingest to try again.",
    C.UNEXPECTED: "This is a bug: the details are in the log (Help › Open log folder). Re-ingest to try again.",
}

_RETRY = (NextStep.REINGEST, NextStep.REMOVE)
NEXT_STEPS: dict[IngestCategory, tuple[NextStep, ...]] = {
    C.PASSWORD_REQUIRED: (NextStep.PASSWORD, NextStep.REMOVE),
    C.WRONG_PASSWORD: (NextStep.PASSWORD, NextStep.REMOVE),
    C.NEEDS_OCR: _RETRY,
    C.DAMAGED: _RETRY,
    C.EMPTY: (NextStep.REMOVE,),
    C.UNSUPPORTED_TYPE: (NextStep.REMOVE,),
}


def next_steps(category: IngestCategory | None) -> tuple[NextStep, ...]:
    return NEXT_STEPS.get(category, _RETRY) if category is not None else _RETRY


def hint(category: IngestCategory | None) -> str:
    return FAILURE_HINTS.get(category, "") if category is not None else ""


def as_category(value: Any) -> IngestCategory:
    """A category read back from a file or an older caller (an unknown one is "unexpected")."""
    try:
        return IngestCategory(value)
    except ValueError:
        return IngestCategory.UNEXPECTED


_SINGULAR = re.compile(r"\b1 (page|chunk|file|row|second)s\b")


def plain_reason(reason: str, name: str) -> str:
    """A reason as the row shows it: without the file name in front (the row names the file),
    and "1 page", not "1 pages"."""
    text = reason.strip()
    for prefix in {name, Path(name).name}:
        if prefix and text.startswith(prefix + ": "):
            text = text[len(prefix) + 2 :]
    return _SINGULAR.sub(lambda m: f"1 {m.group(1)}", text)


def describe_exception(exc: BaseException, name: str) -> tuple[IngestCategory, str]:
    """(category, plain reason) for an exception met while ingesting the file ``name``."""
    category = categorize(exc)
    if category is C.UNEXPECTED:
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        reason = f"unexpected error: {type(exc).__name__}" + (f" ({detail})" if detail else "")
        return category, reason
    if category is C.STORE_LOCKED:
        holder = getattr(exc, "holder_pid", None) if isinstance(exc, StoreLockedError) else None
        who = f"another program (pid {holder})" if holder else "another program"
        return category, f"the library is locked: {who} is writing to it; the file was not added"
    if category is C.DISK_FULL:
        return category, "the disk holding the library is full; the file was not added"
    if category is C.PERMISSION_DENIED:
        return category, f"permission denied ({plain_reason(str(exc), name)})"
    return category, plain_reason(str(exc), name)


@dataclass(frozen=True)
class FailedFile:
    key: str
    name: str
    path: str | None
    category: IngestCategory
    reason: str


class FailedFiles:
    """The failed rows of a library, kept in its app folder."""

    def __init__(self, folder: Path | None, on_error: Callable[[str], object]) -> None:
        self._file = AppFile(folder, FAILED_FILE, on_error, reading="the list of files that failed")
        self._files: dict[str, FailedFile] = {}

    def load(self) -> list[FailedFile]:
        data = self._file.read()
        if data is None:
            return []
        self._files = {}
        for item in data.get("files", []):
            if isinstance(item, dict) and item.get("key"):
                file = FailedFile(
                    item["key"], item.get("name") or item["key"], item.get("path"),
                    as_category(item.get("category")), item.get("reason") or "",
                )
                self._files[file.key] = file
        return list(self._files.values())

    def record(self, file: FailedFile) -> None:
        if self._files.get(file.key) != file:
            self._files[file.key] = file
            self._save()

    def forget(self, key: str) -> None:
        if self._files.pop(key, None) is not None:
            self._save()

    def _save(self) -> None:
        if self._file.path is None:
            return
        files = [
            {"key": f.key, "name": f.name, "path": f.path, "category": f.category.value, "reason": f.reason}
            for f in self._files.values()
        ]
        self._file.write({"version": VERSION, "files": files})
