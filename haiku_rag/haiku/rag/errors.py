"""Every error a user can cause or meet, each with a specific, readable message.

The CLI prints ``str(error)`` as one line; the app shows it in its notification area.
``IngestError.category`` is a stable machine-readable reason (used by ``--json`` output,
the app's per-document state and the reliability report).
"""

from __future__ import annotations

from enum import StrEnum

# API keys this process has used are registered in haiku.rag.logs and masked, with credentials
# in URLs and key-like strings, by its ``redact`` (the one masking function): every error
# message goes through it.
from haiku.rag.logs import MIN_SECRET_CHARS, register_secret  # noqa: F401 (public here too)
from haiku.rag.logs import redact as mask_secrets


class HaikuRAGError(Exception):
    """Base class of every error haiku.rag raises on purpose (its message never holds a
    registered key)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(mask_secrets(a) if isinstance(a, str) else a for a in args))


class ConfigError(HaikuRAGError):
    """The configuration file or environment holds an invalid or unknown setting."""


# --- store -------------------------------------------------------------------------------


class StoreError(HaikuRAGError):
    """The store cannot be opened or written."""


class StoreNotFoundError(StoreError):
    """No store exists at the given location (and creation was not requested)."""


class ReadOnlyError(StoreError):
    """A write was attempted on a store opened read-only."""


class EmbedderMismatchError(StoreError):
    """The store was built with another embedder or vector size."""


class SchemaVersionError(StoreError):
    """The store was written by a newer haiku.rag whose schema this version cannot read."""


class StoreDamagedError(StoreError):
    """The folder is not a readable haiku.rag store."""


class StoreLockedError(StoreError):
    """Another process is writing to this store; ``holder_pid`` is its process id when the
    lock file names it."""

    def __init__(self, message: str, *, holder_pid: int | None = None) -> None:
        super().__init__(message)
        self.holder_pid = holder_pid


class StoreWriteError(StoreError):
    """A write to the store failed (disk full, permissions, storage unreachable) and was
    undone; the documents already stored are intact."""


class DocumentNotFoundError(HaikuRAGError):
    """No document (or chunk) with that id or URI."""


# --- ingestion ---------------------------------------------------------------------------


class IngestCategory(StrEnum):
    PASSWORD_REQUIRED = "password_required"
    WRONG_PASSWORD = "wrong_password"
    NEEDS_OCR = "needs_ocr"
    DAMAGED = "damaged"
    EMPTY = "empty"
    UNSUPPORTED_TYPE = "unsupported_type"
    EXTRA_MISSING = "extra_missing"
    TOO_LARGE = "too_large"
    TIMEOUT = "timeout"
    NOT_FOUND = "not_found"
    CANCELLED = "cancelled"
    # a link that leads back to itself: skipped, the rest of its folder goes on
    SYMLINK_LOOP = "symlink_loop"
    # the parser crashed, was killed by the OS, or raised an unexpected error on this file
    PARSER_FAILED = "parser_failed"
    # Not the file's fault: the store could not take the result. Each has its own wording
    # (a locked store is never a "damaged" file).
    STORE_LOCKED = "store_locked"
    PERMISSION_DENIED = "permission_denied"
    DISK_FULL = "disk_full"
    STORE_UNAVAILABLE = "store_unavailable"
    # an exception nobody classified: reported with its type, its traceback logged
    UNEXPECTED = "unexpected"


class IngestError(HaikuRAGError):
    """A source could not be ingested. Nothing was written for it."""

    category: IngestCategory = IngestCategory.DAMAGED

    def __init__(self, message: str, *, source: str | None = None) -> None:
        super().__init__(message)
        self.source = source


class PasswordRequiredError(IngestError):
    category = IngestCategory.PASSWORD_REQUIRED


class WrongPasswordError(IngestError):
    category = IngestCategory.WRONG_PASSWORD


class NeedsOCRError(IngestError):
    category = IngestCategory.NEEDS_OCR


class DamagedDocumentError(IngestError):
    category = IngestCategory.DAMAGED


class EmptyDocumentError(IngestError):
    category = IngestCategory.EMPTY


class UnsupportedSourceError(IngestError):
    category = IngestCategory.UNSUPPORTED_TYPE


class ExtraMissingError(IngestError):
    """A format needs an optional extra that is not installed."""

    category = IngestCategory.EXTRA_MISSING


class SourceTooLargeError(IngestError):
    category = IngestCategory.TOO_LARGE


class IngestTimeoutError(IngestError):
    category = IngestCategory.TIMEOUT


class SourceNotFoundError(IngestError):
    category = IngestCategory.NOT_FOUND


class ParserFailedError(IngestError):
    """The parser process died or raised an unexpected error on this file."""

    category = IngestCategory.PARSER_FAILED


class OperationCancelled(HaikuRAGError):
    """Cooperative cancellation was requested; the operation stopped and rolled back."""


# --- embeddings / models -----------------------------------------------------------------


class EmbeddingError(HaikuRAGError):
    """The embedder failed (a provider unreachable, a bad response, a missing model)."""


class ModelNotConfiguredError(HaikuRAGError):
    """No chat model is configured."""


class ChatModelError(HaikuRAGError):
    """The chat model could not be reached, rejected the request, or gave no usable answer."""


class ChatModelUnreachable(ChatModelError):
    """The chat model's server could not be reached (not running, wrong URL, network down):
    the library's passages can still be shown without it."""


class ChatAnswerCutOff(ChatModelUnreachable):
    """The model's streamed answer ended before it was finished (its server died or the
    connection broke mid-answer): the part received is no answer to badge or keep."""


class ChatContextTooSmall(ChatModelError):
    """The request (question, passages, history) is larger than the model's context window:
    the server refused it. ``context_tokens`` / ``request_tokens`` when the server said them.
    The passages can still be shown; a model with a larger context can answer."""

    def __init__(self, context_tokens: int | None = None, request_tokens: int | None = None) -> None:
        self.context_tokens = context_tokens
        self.request_tokens = request_tokens
        context = f" ({context_tokens:,} tokens)" if context_tokens else ""
        request = f" ({request_tokens:,} tokens)" if request_tokens else ""
        super().__init__(
            f"This model's context{context} is too small for the question and its passages{request}. "
            "Choose a model with a larger context, or show the passages."
        )

    def __reduce__(self) -> tuple[object, ...]:  # pickles (the model runtime's child) keep the sizes
        return (type(self), (self.context_tokens, self.request_tokens))


# --- classifying any exception -----------------------------------------------------------

_ERRNO_CATEGORIES = {13: IngestCategory.PERMISSION_DENIED, 1: IngestCategory.PERMISSION_DENIED,
                     28: IngestCategory.DISK_FULL, 122: IngestCategory.DISK_FULL}


def categorize(exc: BaseException) -> IngestCategory:
    """The category of any exception met while ingesting one source.

    Errors raised on purpose keep theirs; store errors get the store's own categories (lock,
    permission, disk), read from the error or the OS error that caused it; anything else is
    ``UNEXPECTED``: never guessed to be a damaged file.
    """
    if isinstance(exc, IngestError):
        return exc.category
    if isinstance(exc, OperationCancelled):
        return IngestCategory.CANCELLED
    if isinstance(exc, StoreLockedError):
        return IngestCategory.STORE_LOCKED
    for cause in _causes(exc):
        errno = getattr(cause, "errno", None)
        if errno in _ERRNO_CATEGORIES:
            return _ERRNO_CATEGORIES[errno]
        text = str(cause)
        if "No space left" in text or "os error 28" in text or "the disk is full" in text:
            return IngestCategory.DISK_FULL
        if "Permission denied" in text or "os error 13" in text or "permission denied" in text:
            return IngestCategory.PERMISSION_DENIED
    if isinstance(exc, StoreError):
        return IngestCategory.STORE_UNAVAILABLE
    return IngestCategory.UNEXPECTED


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 8:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain
