"""The one non-blocking place where errors and notices are reported."""

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


class Notifications(QObject):
    """Collects notices from every service; the notification area subscribes to ``posted``."""

    posted = Signal(object)  # Notice

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.history: list[Notice] = []

    def post(self, level: Level, message: str, detail: str = "") -> Notice:
        notice = Notice(level, message, detail)
        self.history.append(notice)
        log.log(logging.ERROR if level is Level.ERROR else logging.INFO, "%s", message)
        self.posted.emit(notice)
        return notice

    def error(self, message: str, detail: str = "") -> Notice:
        return self.post(Level.ERROR, message, detail)

    def info(self, message: str, detail: str = "") -> Notice:
        return self.post(Level.INFO, message, detail)

    def report_failure(self, title: str, exc: BaseException) -> Notice:
        """An operation's failure, worded for a person: ``title`` says what was being done."""
        return self.error(f"{title}: {exc}", type(exc).__name__)
