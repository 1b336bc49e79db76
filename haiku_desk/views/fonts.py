"""A fallback font for Chinese, Japanese and Korean text in the window.

Ingestion reads CJK PDFs, so their titles and passages must draw as text, not as empty boxes
on a machine without CJK fonts (a bare Debian install has none). PyMuPDF, a dependency the app
and its bundle already carry, ships Droid Sans Fallback (Apache-2.0, Han, Hangul, Kana) inside
MuPDF: we register that copy with Qt after the interface font, so it is used only for glyphs
the interface font lacks. Nothing is added to the bundle and nothing is downloaded.

Two details make that hold (issue 34, the tester's font defect):
- The interface font goes first by its real family (``QFontInfo``: "DejaVu Sans" on a plain
  Linux), not by the generic name Qt's platform font carries ("Sans Serif"): in a family list
  Qt skips a generic name and drew the whole interface, Latin included, in the fallback face.
- The bundled copy is registered under a family of its own (FALLBACK_FAMILY). Debian's
  fonts-droid-fallback, pulled in by Ghostscript, is also "Droid Sans Fallback", without
  Hangul; Qt asks fontconfig by family name whether a fallback covers a character, got that
  file's coverage, and drew Korean as boxes.

The font bytes are read in a worker thread after the first paint (PyMuPDF is a heavy import);
registering it and changing the application font happen on the GUI thread.
"""

from __future__ import annotations

import logging
import struct

log = logging.getLogger("haiku_desk.fonts")

FALLBACK_FONT = "cjk"  # PyMuPDF's name for its bundled Droid Sans Fallback
FALLBACK_FAMILY = "Droid Sans Fallback (haiku-desk)"  # no system font shares it


def fallback_font_bytes() -> bytes:
    """The bundled CJK font's TrueType bytes, its family named FALLBACK_FAMILY (no Qt: safe in
    a worker thread)."""
    from haiku_desk.services.pages import font_bytes

    return with_family_name(font_bytes(FALLBACK_FONT), FALLBACK_FAMILY)


def with_family_name(data: bytes, family: str) -> bytes:
    """``data`` (a TrueType/OpenType font) with its family and full names (name ids 1, 4, 16)
    set to ``family``; the glyphs are untouched. The new ``name`` table is appended and the
    table directory points at it. Raises ValueError for bytes that are not such a font."""
    try:
        count = struct.unpack_from(">H", data, 4)[0]
        directory = [struct.unpack_from(">4sIII", data, 12 + 16 * i) for i in range(count)]
        index = [entry[0] for entry in directory].index(b"name")
        offset = directory[index][2]
        _format, records, strings_at = struct.unpack_from(">HHH", data, offset)
        names = []
        for i in range(records):
            platform, encoding, language, name_id, length, at = struct.unpack_from(
                ">6H", data, offset + 6 + 12 * i
            )
            text = data[offset + strings_at + at : offset + strings_at + at + length]
            if name_id in (1, 4, 16):
                text = (
                    family.encode("utf-16-be") if platform in (0, 3) else family.encode("latin-1")
                )
            names.append((platform, encoding, language, name_id, text))
    except (struct.error, ValueError) as exc:
        raise ValueError(f"not a TrueType font with a name table: {exc}") from exc
    headers, strings = b"", b""
    for platform, encoding, language, name_id, text in names:
        headers += struct.pack(
            ">6H", platform, encoding, language, name_id, len(text), len(strings)
        )
        strings += text
    table = struct.pack(">HHH", 0, len(names), 6 + 12 * len(names)) + headers + strings
    font = bytearray(data + b"\0" * (-len(data) % 4))  # tables start on 4-byte boundaries
    table_at = len(font)
    font += table + b"\0" * (-len(table) % 4)
    struct.pack_into(
        ">4sIII", font, 12 + 16 * index, b"name", _checksum(table), table_at, len(table)
    )
    return bytes(font)


def _checksum(table: bytes) -> int:
    padded = table + b"\0" * (-len(table) % 4)
    return sum(struct.unpack(f">{len(padded) // 4}I", padded)) & 0xFFFFFFFF


def install_fallback_font(data: bytes) -> list[str]:
    """Register ``data`` with Qt and put its families after the interface font's real family;
    returns the families added (empty when Qt refused the font). GUI thread only."""
    from PySide6.QtCore import QByteArray
    from PySide6.QtGui import QFontDatabase, QFontInfo
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if not isinstance(app, QApplication):  # none yet (or a core application without fonts)
        return []
    font_id = QFontDatabase.addApplicationFontFromData(QByteArray(data))
    if font_id < 0:
        log.warning("Qt did not accept the CJK fallback font; CJK text may draw as boxes")
        return []
    families = QFontDatabase.applicationFontFamilies(font_id)
    font = app.font()
    current = font.families() or [font.family()]
    added = [f for f in families if f not in current]
    if added:
        # the family Qt actually draws with, not a generic alias such as "Sans Serif"
        interface = QFontInfo(font).family()
        font.setFamilies([interface, *(f for f in families if f != interface)])
        app.setFont(font)
    return added


async def install_fallback_font_later() -> None:
    """Read the font off the GUI thread, then install it (called once, after the first paint)."""
    import asyncio

    try:
        data = await asyncio.to_thread(fallback_font_bytes)
    except Exception:  # a PyMuPDF without the font: CJK may draw as boxes, the app works
        log.exception("the CJK fallback font could not be read from PyMuPDF")
        return
    install_fallback_font(data)
