"""A fallback font for Chinese, Japanese and Korean text in the window.

Ingestion reads CJK PDFs, so their titles and passages must draw as text, not as empty boxes
on a machine without CJK fonts (a bare Debian install has none; even with some installed, Qt
drew Hangul as boxes here). PyMuPDF, a dependency the app and its bundle already carry, ships
Droid Sans Fallback (Apache-2.0, Han, Hangul, Kana) inside MuPDF: we register that copy with
Qt and put it after the default family, so it is used only for glyphs the default font lacks.
Nothing is added to the bundle and nothing is downloaded.

The font bytes are read in a worker thread after the first paint (PyMuPDF is a heavy import);
registering it and changing the application font happen on the GUI thread.
"""

from __future__ import annotations

import logging

log = logging.getLogger("haiku_desk.fonts")

FALLBACK_FONT = "cjk"  # PyMuPDF's name for its bundled Droid Sans Fallback


def fallback_font_bytes() -> bytes:
    """The bundled CJK font's TrueType bytes (no Qt: safe in a worker thread)."""
    from haiku_desk.services.pages import font_bytes

    return font_bytes(FALLBACK_FONT)


def install_fallback_font(data: bytes) -> list[str]:
    """Register ``data`` with Qt and add its families after the application font's own;
    returns the families added (empty when Qt refused the font). GUI thread only."""
    from PySide6.QtCore import QByteArray
    from PySide6.QtGui import QFontDatabase
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
        font.setFamilies([*current, *added])
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
