"""The log file both commands write: ``<data dir>/logs/<name>.log``, rotating, with tracebacks.

A person reads the one-line error; the log keeps the story (the traceback, the category, the
source) for a bug report. Nothing secret goes in: API keys, bearer tokens and passwords are
masked by a filter on the handler, whatever the message that carried them.
"""

from __future__ import annotations

import logging
import logging.handlers
import re
from pathlib import Path

LOG_FOLDER = "logs"
MAX_BYTES = 2 * 1024 * 1024
BACKUPS = 4
FORMAT = "%(asctime)s %(process)d %(threadName)s %(levelname)s %(name)s: %(message)s"

_SECRETS = (
    # credentials in a URL (http://user:password@host/v1, s3://KEY:SECRET@…): the userinfo
    re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://)[^\s/?#@\"'<>]+@"),
    # provider keys: OpenAI/Anthropic style, Google style, generic long tokens after a label
    re.compile(r"\b(sk-(?:ant-)?[A-Za-z0-9_\-]{8})[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\b(AIza[0-9A-Za-z_\-]{4})[0-9A-Za-z_\-]{20,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-~+/]{8,}=*"),
    re.compile(r"(?i)((?:api[_-]?key|password|passwd|secret|token)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]+"),
)
# Keys this process has used (``register_secret``): masked wherever they appear, whatever their
# shape, since a provider's reply may echo the key it refused ("Incorrect API key: sk-…").
_REGISTERED: set[str] = set()
MIN_SECRET_CHARS = 8  # shorter values ("none", "local") would mask ordinary words


def register_secret(value: str | None) -> None:
    """Mask ``value`` in every error message, log record and settings output from now on."""
    if value and len(value) >= MIN_SECRET_CHARS:
        _REGISTERED.add(value)


def redact(text: str) -> str:
    """``text`` with every credential masked: registered keys as ``***`` plus their last four
    characters, a URL's user and password as ``***@``, anything else that looks like a key
    after its first characters. The one masking function: error messages
    (``errors.HaikuRAGError``), the log, ``haiku-rag settings`` and crash reports use it."""
    for secret in sorted(_REGISTERED, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, f"***{secret[-4:]}")
    text = _SECRETS[0].sub(lambda m: m.group(1) + "***@", text)
    for pattern in _SECRETS[1:]:
        text = pattern.sub(lambda m: m.group(1) + "…", text)
    return text


class RedactingFormatter(logging.Formatter):
    """Formats as usual (traceback included), then masks credentials in the whole record."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def log_folder(data_dir: Path) -> Path:
    return Path(data_dir) / LOG_FOLDER


def configure_logging(name: str, data_dir: Path, *, debug: bool = False) -> Path | None:
    """Send the ``haiku`` loggers (library and app) to ``<data_dir>/logs/<name>.log``.

    INFO and above go to the file (DEBUG with ``debug``), and with ``debug`` everything is
    also printed to stderr. Returns the log file, or None when its folder cannot be written
    (logging must never stop the program). Calling it again replaces the handlers.
    """
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "_haiku_log", False)]:
        root.removeHandler(handler)
        handler.close()
    level = logging.DEBUG if debug else logging.INFO
    formatter = RedactingFormatter(FORMAT)
    path: Path | None = log_folder(data_dir) / f"{name}.log"
    try:
        assert path is not None
        path.parent.mkdir(parents=True, exist_ok=True)
        file_handler: logging.Handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8"
        )
    except OSError:
        path = None
    else:
        file_handler.setLevel(level)
        file_handler.setFormatter(formatter)
        file_handler._haiku_log = True  # type: ignore[attr-defined]
        root.addHandler(file_handler)
    if debug:
        console = logging.StreamHandler()
        console.setLevel(logging.DEBUG)
        console.setFormatter(formatter)
        console._haiku_log = True  # type: ignore[attr-defined]
        root.addHandler(console)
    # Our loggers at the chosen level; third-party ones stay at WARNING unless debugging.
    root.setLevel(logging.DEBUG if debug else logging.WARNING)
    for logger in ("haiku", "haiku.rag", "haiku_desk"):
        logging.getLogger(logger).setLevel(level)
    return path
