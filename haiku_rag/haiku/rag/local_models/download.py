"""Download a GGUF model file the user chose (a catalog entry or a URL) into a models folder.

The bytes go to ``<folder>/<name>.part`` and only a file whose SHA-256 matches and whose header
is GGUF is renamed (atomically) to ``<folder>/<name>``. An interrupted or cancelled download
keeps its ``.part``; the next call resumes it with an HTTP ``Range`` request, and starts over
cleanly when the server ignores the range (``200`` instead of ``206``). Free disk space is
checked against the bytes still to come plus a margin before any byte is written. Progress is
reported as ``Stage.DOWNLOADING`` with bytes done/total; a ``CancelToken`` stops it between
chunks. httpx is imported on first use. ``download_entry`` fetches an entry of ``catalog``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haiku.rag.errors import HaikuRAGError
from haiku.rag.operations import (
    CancelToken,
    Progress,
    ProgressCallback,
    Stage,
    check_cancelled,
    report,
)

if TYPE_CHECKING:
    import httpx

    from haiku.rag.local_models.catalog import CatalogEntry

PART_SUFFIX = ".part"
# kept free beyond the file itself (other programs, the store's own writes)
DISK_MARGIN = 256 * 1024 * 1024
CHUNK_SIZE = 1024 * 1024
TIMEOUT_SECONDS = 30.0
_SHA256 = re.compile(r"[0-9a-f]{64}")
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")

DiskUsage = Callable[[str | Path], Any]  # shutil.disk_usage's shape: an object with ``.free``


class DownloadError(HaikuRAGError):
    """A model file could not be downloaded (bad URL or name, server error, a bad file)."""


class DownloadInterrupted(DownloadError):
    """The connection ended before the whole file arrived; the ``.part`` file is kept and the
    next call resumes it."""

    def __init__(self, message: str, *, part: Path, done: int, total: int | None) -> None:
        super().__init__(message)
        self.part = part
        self.done = done
        self.total = total


class NotEnoughDiskSpace(DownloadError):
    """The models folder's disk has less free space than the file needs (plus a margin)."""

    def __init__(self, message: str, *, needed: int, free: int) -> None:
        super().__init__(message)
        self.needed = needed
        self.free = free


class HashMismatch(DownloadError):
    """The downloaded bytes' SHA-256 is not the one expected: the file was refused and removed."""

    def __init__(self, message: str, *, expected: str, got: str) -> None:
        super().__init__(message)
        self.expected = expected
        self.got = got


class NotAModelFile(DownloadError):
    """The downloaded file is not GGUF (its header says otherwise): refused and removed."""


def part_path(folder: str | Path, name: str) -> Path:
    """Where ``name``'s bytes are kept until the download is complete and checked."""
    return Path(folder) / (name + PART_SUFFIX)


def download(
    url: str,
    folder: str | Path,
    name: str,
    *,
    sha256: str,
    size: int | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    disk_usage: DiskUsage = shutil.disk_usage,
    margin: int = DISK_MARGIN,
    chunk_size: int = CHUNK_SIZE,
    client: httpx.Client | None = None,
) -> Path:
    """Download ``url`` to ``folder/name`` and return that path.

    ``sha256`` is required: a file is only put in place when its hash matches. ``size`` (bytes,
    when known in advance, as a catalog entry's) lets the disk-space check run before the
    request is made; otherwise it runs on the response's length, still before any byte is
    written. Raises ``NotEnoughDiskSpace``, ``DownloadInterrupted`` (``.part`` kept),
    ``OperationCancelled`` (``.part`` kept), ``HashMismatch`` / ``NotAModelFile`` (nothing
    left) or ``DownloadError``. A file already at ``folder/name`` with the right hash is
    returned as it is; one with another hash is never overwritten.
    """
    expected = sha256.strip().lower()
    if not _SHA256.fullmatch(expected):
        raise DownloadError(f"{name}: the expected SHA-256 must be 64 hexadecimal digits, not {sha256!r}")
    if not url.startswith(("https://", "http://")):
        raise DownloadError(f"{name}: only http(s) URLs can be downloaded, not {url!r}")
    _check_name(name)
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DownloadError(f"cannot create the models folder {folder} ({exc.strerror or exc})") from exc
    final = folder / name
    part = part_path(folder, name)
    if final.exists():
        got = _hash_file(final, cancel)
        if got == expected:
            return final
        raise DownloadError(
            f"{final} already exists and is another file (SHA-256 {got}, expected {expected}): "
            "move or delete it first"
        )

    offset = part.stat().st_size if part.exists() else 0
    if size is not None and offset > size:
        part.unlink()  # longer than the file: not a prefix of it
        offset = 0
    if size is not None and offset == size:
        # every byte already arrived (stopped before the check and rename): nothing to fetch
        return _finish(part, final, name, expected, _hash_file(part, cancel))
    if size is not None:
        _check_space(folder, name, size - offset, disk_usage, margin)
    check_cancelled(cancel)

    import httpx

    own_client = client is None
    http = client or httpx.Client(timeout=TIMEOUT_SECONDS, follow_redirects=True)
    try:
        return _fetch(
            http, url, folder, name, part, final, expected, size, offset,
            progress, cancel, disk_usage, margin, chunk_size,
        )  # fmt: skip
    finally:
        if own_client:
            http.close()


def _fetch(
    http: httpx.Client,
    url: str,
    folder: Path,
    name: str,
    part: Path,
    final: Path,
    expected: str,
    size: int | None,
    offset: int,
    progress: ProgressCallback | None,
    cancel: CancelToken | None,
    disk_usage: DiskUsage,
    margin: int,
    chunk_size: int,
) -> Path:
    import httpx

    # the bytes as stored (no compression): what the hash and a Range count
    headers = {"Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        with http.stream("GET", url, headers=headers) as response:
            if offset and response.status_code == 416 and _unsatisfied_length(response) == offset:
                # the .part already holds the whole file: check it and put it in place
                response.close()
                return _finish(part, final, name, expected, _hash_file(part, cancel))
            if offset and (
                response.status_code == 416
                or (response.status_code == 206 and not _resumes_at(response, offset))
            ):
                # the range starts past the server's file (416), or the server sent another
                # range than asked: the .part cannot be continued, so start over
                part.unlink(missing_ok=True)
                response.close()
                return _fetch(
                    http, url, folder, name, part, final, expected, size, 0,
                    progress, cancel, disk_usage, margin, chunk_size,
                )  # fmt: skip
            if response.status_code not in (200, 206):
                raise DownloadError(f"{name}: the server answered HTTP {response.status_code} for {url}")
            total = _total(response, offset)
            if response.status_code == 200:
                offset = 0  # the server ignored the range and sent the whole file: start over
            if size is not None and total is not None and total != size:
                raise DownloadError(
                    f"{name}: the server's file has {total} bytes, the catalog says {size}"
                )
            total = total if total is not None else size
            if total is not None:
                _check_space(folder, name, total - offset, disk_usage, margin)
            hasher = hashlib.sha256()
            if offset:
                _hash_into(hasher, part, cancel)
            done = offset
            report(progress, Progress(Stage.DOWNLOADING, name, done, total or 0))
            with part.open("ab" if offset else "wb") as out:
                try:
                    # as the bytes arrive (httpx's own chunking would drop a partial chunk
                    # when the connection breaks), written in pieces of at most chunk_size
                    for received in response.iter_raw():
                        for start in range(0, len(received), chunk_size):
                            check_cancelled(cancel)
                            chunk = received[start : start + chunk_size]
                            out.write(chunk)
                            hasher.update(chunk)
                            done += len(chunk)
                            report(progress, Progress(Stage.DOWNLOADING, name, done, total or 0))
                finally:
                    out.flush()
                    os.fsync(out.fileno())
    except httpx.HTTPError as exc:
        kept = part.stat().st_size if part.exists() else 0
        raise DownloadInterrupted(
            f"{name}: the download stopped after {kept} bytes ({type(exc).__name__}: {exc}); "
            "start it again to resume",
            part=part,
            done=kept,
            total=size,
        ) from exc
    if total is not None and done != total:
        raise DownloadInterrupted(
            f"{name}: the server sent {done} of {total} bytes; start it again to resume",
            part=part,
            done=done,
            total=total,
        )
    return _finish(part, final, name, expected, hasher.hexdigest())


def _finish(part: Path, final: Path, name: str, expected: str, got: str) -> Path:
    from haiku.rag.local_models.header import GGUFError, read_header

    if got != expected:
        part.unlink(missing_ok=True)
        raise HashMismatch(
            f"{name}: the downloaded file's SHA-256 is {got}, expected {expected}; it was removed",
            expected=expected,
            got=got,
        )
    try:
        read_header(part)
    except GGUFError as exc:
        part.unlink(missing_ok=True)
        raise NotAModelFile(f"{name}: the downloaded file is not a GGUF model ({exc}); it was removed") from exc
    os.replace(part, final)
    _fsync_folder(final.parent)
    return final


def _check_name(name: str) -> None:
    if (
        not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\0" in name
        or name.endswith(PART_SUFFIX)
    ):
        raise DownloadError(f"{name!r} is not a usable file name for a model")


def _check_space(folder: Path, name: str, remaining: int, disk_usage: DiskUsage, margin: int) -> None:
    free = int(disk_usage(folder).free)
    needed = max(remaining, 0) + margin
    if free < needed:
        raise NotEnoughDiskSpace(
            f"{name}: needs {_size(needed)} free in {folder} ({_size(max(remaining, 0))} to download "
            f"plus {_size(margin)} spare), only {_size(free)} is free",
            needed=needed,
            free=free,
        )


def _size(n: int) -> str:
    value = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{n} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} bytes"  # pragma: no cover


def _total(response: httpx.Response, offset: int) -> int | None:
    """The whole file's length, from ``Content-Range`` (206) or ``Content-Length`` (200)."""
    if response.status_code == 206:
        match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
        if match and match.group(3) != "*":
            return int(match.group(3))
        length = response.headers.get("Content-Length")
        return offset + int(length) if length and length.isdigit() else None
    length = response.headers.get("Content-Length")
    return int(length) if length and length.isdigit() else None


def _unsatisfied_length(response: httpx.Response) -> int | None:
    """The file's length a 416 answer names (``Content-Range: bytes */N``)."""
    match = re.fullmatch(r"bytes \*/(\d+)", response.headers.get("Content-Range", "").strip())
    return int(match.group(1)) if match else None


def _resumes_at(response: httpx.Response, offset: int) -> bool:
    match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
    return match is not None and int(match.group(1)) == offset


def _hash_into(hasher: Any, path: Path, cancel: CancelToken | None) -> None:
    with path.open("rb") as f:
        while block := f.read(CHUNK_SIZE):
            check_cancelled(cancel)
            hasher.update(block)


def _hash_file(path: Path, cancel: CancelToken | None) -> str:
    hasher = hashlib.sha256()
    _hash_into(hasher, path, cancel)
    return hasher.hexdigest()


def _fsync_folder(folder: Path) -> None:
    if os.name == "nt":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def download_entry(item: CatalogEntry, folder: str | Path, **options: Any) -> Path:
    """Download a catalog entry into ``folder`` (its size checked against the disk before the
    request, its hash and length against the entry's); ``options`` as for ``download``."""
    item.validate()
    return download(item.url, folder, item.file_name, sha256=item.sha256, size=item.size, **options)
