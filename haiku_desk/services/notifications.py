"""The one non-blocking place where errors and notices are reported.

Every notice also goes to the log file (``haiku.rag.logs``), a failure with its traceback. A
notice about one thing (a failed file) carries its ``key``; when that thing is dealt with
(the row is re-ingested, removed, stored), ``withdraw(key)`` takes its banners away.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import StrEnum

from PySide6.QtCore import QObject, Signal

log = logging.getLogger("haiku_desk")


class Level(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True)
class Notice:
    level: Level
    message: str
    detail: str = ""
    key: str | None = None  # what the notice is about (a library entry's key), if one thing
    lasting: bool = False  # an info notice that stays until closed (e.g. where an export went)
    # notices of one kind shown as one banner while several are live (FAILED_FILES)
    group: str | None = None


# where the last export went (a chat's, a table's): one notice, the newest replacing the older
# (two exports in a row stacked two banners that stayed until closed: tester 17:20)
EXPORTED_KEY = "export-written"
# files that could not be added: one banner for them all, however many (two broken files
# stacked two red banners that stayed until closed one by one: tester 20:01)
FAILED_FILES = "failed-files"


class Notifications(QObject):
    """Collects notices from every service; the notification area subscribes to ``posted``
    and ``withdrawn``."""

    posted = Signal(object)  # Notice
    withdrawn = Signal(str)  # key: its notices are stale

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.history: list[Notice] = []
        self._live_keys: set[str] = set()

    def post(
        self,
        level: Level,
        message: str,
        detail: str = "",
        *,
        key: str | None = None,
        exc: BaseException | None = None,
        lasting: bool = False,
        group: str | None = None,
    ) -> Notice:
        from haiku.rag.logs import redact  # no credential reaches the window (issue 32)

        notice = Notice(level, redact(message), redact(detail), key, lasting, group)
        self.history.append(notice)
        log_level = {Level.ERROR: logging.ERROR, Level.WARNING: logging.WARNING}.get(level, logging.INFO)
        log.log(log_level, "%s", notice.message, exc_info=exc)
        if key is not None:
            self._live_keys.add(key)
        self.posted.emit(notice)
        return notice

    def error(self, message: str, detail: str = "", *, key: str | None = None, group: str | None = None) -> Notice:
        return self.post(Level.ERROR, message, detail, key=key, group=group)

    def info(self, message: str, detail: str = "", *, key: str | None = None, lasting: bool = False) -> Notice:
        """An info notice: gone after a few seconds, unless ``lasting`` (then until closed)."""
        return self.post(Level.INFO, message, detail, key=key, lasting=lasting)

    def report_failure(self, title: str, exc: BaseException, *, key: str | None = None) -> Notice:
        """An operation's failure, worded for a person: ``title`` says what was being done.
        The traceback goes to the log file."""
        return self.post(Level.ERROR, f"{title}: {exc}", type(exc).__name__, key=key, exc=exc)

    def withdraw(self, key: str) -> None:
        """The notices about ``key`` no longer apply (the row was dealt with)."""
        if key in self._live_keys:
            self._live_keys.discard(key)
            self.withdrawn.emit(key)

    def is_live(self, key: str) -> bool:
        return key in self._live_keys
