"""The OS handler behind the sandbox's ``open``, ``pathlib`` and ``os`` calls.

Everything the interpreter asks of the host's operating system arrives here, so this is where
the filesystem rules hold: the tree under ``/documents`` can be read; nothing can be written,
created, renamed or deleted anywhere; any other path is refused without saying whether it
exists on the host; the host environment is empty.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from pydantic_monty import AbstractOS, MontyFileHandle, StatResult
from pydantic_monty.os_access import path_from_arg

from haiku.rag.sandbox.corpus import DOCUMENTS_ROOT, FILE_NAMES

ReadFile = Callable[[str, str], str]  # (document id, file name) -> text; may raise TimeoutError


class ReadOnlyCorpusOS(AbstractOS):
    """Serves ``/documents/{id}/{file}`` for the documents in ``document_ids``."""

    def __init__(self, document_ids: list[str], read_file: ReadFile) -> None:
        self.document_ids = list(document_ids)
        self._known = set(document_ids)
        self._read_file = read_file

    # --- where a path points ------------------------------------------------------------

    def _locate(self, path: PurePosixPath | MontyFileHandle) -> tuple[str, str | None, str | None]:
        """``(kind, document_id, file_name)``; kind is root, documents, document, file or missing."""
        normal = posixpath.normpath(posixpath.join("/", str(path_from_arg(path))))
        if normal == "/":
            return "root", None, None
        parts = normal.strip("/").split("/")
        if parts[0] != DOCUMENTS_ROOT.strip("/"):
            raise PermissionError(
                f"Permission denied: {normal!r}. The sandbox can only read files under "
                f"{DOCUMENTS_ROOT}/."
            )
        if len(parts) == 1:
            return "documents", None, None
        if parts[1] not in self._known or len(parts) > 3:
            return "missing", None, None
        if len(parts) == 2:
            return "document", parts[1], None
        if parts[2] in FILE_NAMES:
            return "file", parts[1], parts[2]
        return "missing", None, None

    def _read(self, path: PurePosixPath | MontyFileHandle) -> str:
        kind, document_id, name = self._locate(path)
        if kind == "missing":
            raise FileNotFoundError(f"[Errno 2] No such file or directory: {str(path_from_arg(path))!r}")
        if kind != "file":
            raise IsADirectoryError(f"[Errno 21] Is a directory: {str(path_from_arg(path))!r}")
        assert document_id is not None and name is not None
        return self._read_file(document_id, name)

    @staticmethod
    def _refuse_write(path: PurePosixPath | MontyFileHandle) -> Any:
        raise PermissionError(
            f"Permission denied: {str(path_from_arg(path))!r}. The sandbox's files are read-only."
        )

    # --- queries ------------------------------------------------------------------------

    def path_exists(self, path: PurePosixPath) -> bool:
        return self._locate(path)[0] != "missing"

    def path_is_file(self, path: PurePosixPath) -> bool:
        return self._locate(path)[0] == "file"

    def path_is_dir(self, path: PurePosixPath) -> bool:
        return self._locate(path)[0] in ("root", "documents", "document")

    def path_is_symlink(self, path: PurePosixPath) -> bool:
        return False

    def path_iterdir(self, path: PurePosixPath) -> list[PurePosixPath]:
        kind, document_id, _ = self._locate(path)
        if kind == "root":
            return [PurePosixPath(DOCUMENTS_ROOT)]
        if kind == "documents":
            return [PurePosixPath(DOCUMENTS_ROOT) / d for d in self.document_ids]
        if kind == "document":
            return [PurePosixPath(DOCUMENTS_ROOT) / str(document_id) / n for n in FILE_NAMES]
        if kind == "file":
            raise NotADirectoryError(f"[Errno 20] Not a directory: {str(path)!r}")
        raise FileNotFoundError(f"[Errno 2] No such file or directory: {str(path)!r}")

    def path_stat(self, path: PurePosixPath) -> StatResult:
        kind = self._locate(path)[0]
        if kind == "file":
            return StatResult.file_stat(len(self._read(path).encode("utf-8")), mode=0o444)
        if kind == "missing":
            raise FileNotFoundError(f"[Errno 2] No such file or directory: {str(path)!r}")
        return StatResult.dir_stat(mode=0o555)

    def path_resolve(self, path: PurePosixPath) -> str:
        return posixpath.normpath(posixpath.join("/", str(path)))

    def path_absolute(self, path: PurePosixPath) -> str:
        return posixpath.join("/", str(path))

    # --- reads --------------------------------------------------------------------------

    def path_open(self, path: PurePosixPath, mode: str) -> MontyFileHandle:
        handle = MontyFileHandle(str(path), mode)
        if handle.writable:
            self._refuse_write(path)
        self._read(path)  # existence and kind, with the errors open() gives
        return handle

    def path_read_text(self, path: PurePosixPath | MontyFileHandle) -> str:
        return self._read(path)

    def path_read_bytes(self, path: PurePosixPath | MontyFileHandle) -> bytes:
        return self._read(path).encode("utf-8")

    # --- writes: all refused ------------------------------------------------------------

    def path_write_text(self, path: PurePosixPath | MontyFileHandle, data: str) -> int:
        return self._refuse_write(path)

    def path_write_bytes(self, path: PurePosixPath | MontyFileHandle, data: bytes) -> int:
        return self._refuse_write(path)

    def path_append_text(self, path: PurePosixPath | MontyFileHandle, data: str) -> int:
        return self._refuse_write(path)

    def path_append_bytes(self, path: PurePosixPath | MontyFileHandle, data: bytes) -> int:
        return self._refuse_write(path)

    def path_mkdir(self, path: PurePosixPath, parents: bool, exist_ok: bool) -> None:
        self._refuse_write(path)

    def path_unlink(self, path: PurePosixPath) -> None:
        self._refuse_write(path)

    def path_rmdir(self, path: PurePosixPath) -> None:
        self._refuse_write(path)

    def path_rename(self, path: PurePosixPath, target: PurePosixPath) -> None:
        self._refuse_write(path)

    # --- the host environment: not visible ----------------------------------------------

    def getenv(self, key: str, default: str | None = None) -> str | None:
        return default

    def get_environ(self) -> dict[str, str]:
        return {}
