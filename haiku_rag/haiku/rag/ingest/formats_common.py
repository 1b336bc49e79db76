"""What the native converters of packaged formats share (Word, PowerPoint, Excel, OpenDocument,
EPUB): opening their ZIP container safely, reading XML without entity tricks, and building
tables and lists in the document model the chunker reads.

No format library is imported here.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from haiku.rag.errors import DamagedDocumentError, SourceTooLargeError, UnsupportedSourceError

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

    from docling_core.types.doc import DoclingDocument, NodeItem

# A ZIP container whose members would unpack to more than this is refused before anything is
# decompressed (a "zip bomb" unpacks a few kB into gigabytes). Members are read through
# zipfile, which never yields more than a member's declared size, so the declared sizes bound
# the memory used. Real documents are far below it: a 300-page novel's EPUB unpacks to ~2 MB,
# a 100-slide deck with photos to ~100 MB.
MAX_UNPACKED_BYTES = 512 * 1024 * 1024
# Office files encrypted with a password, and the pre-2007 binary formats, are OLE compound
# files, not ZIP containers.
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ZIP_MAGIC = b"PK\x03\x04"


def open_package(data: bytes, *, source: str, kind: str) -> zipfile.ZipFile:
    """The ZIP container of an Office, OpenDocument or EPUB file, checked: a container that is
    encrypted, not a ZIP, or would unpack to more than ``MAX_UNPACKED_BYTES`` is refused with a
    message naming ``source`` and what to do."""
    if data.startswith(OLE_MAGIC):
        raise UnsupportedSourceError(
            f"{source}: this {kind} file is password-protected or in an old binary format, "
            "which isn't supported yet — remove the password or save it as PDF, then add it again",
            source=source,
        )
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
        members = package.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        hint = "" if data.startswith(ZIP_MAGIC) else " (it is not a ZIP container)"
        raise DamagedDocumentError(
            f"{source}: not a readable {kind} file{hint}: {exc}", source=source
        ) from exc
    unpacked = sum(member.file_size for member in members)
    if unpacked > MAX_UNPACKED_BYTES:
        raise SourceTooLargeError(
            f"{source}: this {kind} file would unpack to {unpacked // (1024 * 1024)} MB, more than "
            f"the {MAX_UNPACKED_BYTES // (1024 * 1024)} MB a document may hold",
            source=source,
        )
    return package


def read_member(package: zipfile.ZipFile, name: str, *, source: str, kind: str) -> bytes:
    """One member of a package; a missing or corrupt member is a damaged file."""
    found = read_optional(package, name, source=source, kind=kind)
    if found is None:
        raise DamagedDocumentError(f"{source}: not a readable {kind} file (it has no {name})", source=source)
    return found


def read_optional(package: zipfile.ZipFile, name: str, *, source: str, kind: str) -> bytes | None:
    """One member of a package, None when it has none by that name; a corrupt member (bad
    compressed data, a header that disagrees with the directory) is a damaged file."""
    try:
        return package.read(name)
    except KeyError:
        return None
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError, ValueError) as exc:
        raise DamagedDocumentError(f"{source}: {name} inside this {kind} file is damaged ({exc})", source=source) from exc


def parse_xml(data: bytes, *, source: str, what: str) -> Element:
    """XML parsed without entity expansion or external references (defusedxml)."""
    import defusedxml.ElementTree as SafeET
    from defusedxml.common import DefusedXmlException

    try:
        return SafeET.fromstring(data)
    except DefusedXmlException as exc:
        raise DamagedDocumentError(f"{source}: {what} declares XML entities, which are refused ({exc})", source=source) from exc
    except SafeET.ParseError as exc:
        raise DamagedDocumentError(f"{source}: {what} is not well-formed XML ({exc})", source=source) from exc


def clean(text: str) -> str:
    """Runs of whitespace (line breaks, tabs, non-breaking spaces) as one space."""
    return " ".join(text.split())


def add_table(
    doc: DoclingDocument,
    rows: Sequence[Sequence[str]],
    *,
    header_rows: int = 1,
    parent: NodeItem | None = None,
) -> None:
    """A table of ``rows`` (short rows padded), its first ``header_rows`` rows marked as column
    headers, so that the chunker writes it as PDF tables are written (a Markdown header line,
    one line per body row) and cuts a long table between whole rows under its header."""
    from docling_core.types.doc import TableCell, TableData

    rows = [list(row) for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        return
    width = max(len(row) for row in rows)
    while width and all(len(row) < width or not row[width - 1].strip() for row in rows):
        width -= 1  # trailing columns that hold nothing
    if not width:
        return
    cells = [
        TableCell(
            text=row[col] if col < len(row) else "",
            start_row_offset_idx=r,
            end_row_offset_idx=r + 1,
            start_col_offset_idx=col,
            end_col_offset_idx=col + 1,
            column_header=r < header_rows,
        )
        for r, row in enumerate(rows)
        for col in range(width)
    ]
    doc.add_table(data=TableData(num_rows=len(rows), num_cols=width, table_cells=cells), parent=parent)


class ListBuilder:
    """Consecutive list items gathered in one list group (the document model's lists), a new
    group when a paragraph or another kind of list comes between."""

    def __init__(self, doc: DoclingDocument) -> None:
        self.doc = doc
        self._group: NodeItem | None = None
        self._ordered = False

    def add(self, text: str, *, ordered: bool) -> None:
        if self._group is None or self._ordered != ordered:
            self._group = self.doc.add_list_group()
            self._ordered = ordered
        self.doc.add_list_item(text=text, enumerated=ordered, parent=self._group)

    def end(self) -> None:
        self._group = None
