"""The bundled CJK fallback font draws only what the interface font lacks: Latin text keeps the
system's UI font (same family, same pixels as that font alone, also after a switch of scheme)
while Chinese, Japanese and Korean draw as the bundled font's glyphs, not as empty boxes.

Rendered for real: QLabels painted into QImages, compared pixel by pixel with references drawn
in one named family with font merging off (so the reference cannot borrow glyphs)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QFontInfo, QFontMetrics, QImage, QPalette
from PySide6.QtWidgets import QLabel

from haiku_desk.views import fonts
from haiku_desk.views.theme import apply_theme

LATIN = "Trace trees and ledgers"
CJK = ("적립 제외 대상", "트레이스", "追踪树", "停车区用地指标", "あいうえお")


@pytest.fixture
def installed(qapp):
    """The application font as the app has it once the fallback is installed; the UI family
    it had before. The font, and the look a test's switch of scheme applies, are put back
    afterwards: the application is shared by the session, and pane widths elsewhere follow
    the font's metrics and the stylesheet's paddings."""
    before, sheet, palette = qapp.font(), qapp.styleSheet(), QPalette(qapp.palette())
    ui_family = QFontInfo(before).family()
    try:
        fonts.install_fallback_font(fonts.fallback_font_bytes())
        yield ui_family
    finally:
        qapp.setStyleSheet(sheet)
        qapp.setPalette(palette)
        qapp.setProperty("haiku_scheme", None)
        qapp.setProperty("haiku_scheme_choice", None)
        qapp.setFont(before)


def _render(text: str, font: QFont | None = None) -> QImage:
    """``text`` in a QLabel (the app's font unless ``font``), black on white, as an image."""
    label = QLabel(text)
    if font is not None:
        label.setFont(font)
    palette = label.palette()
    palette.setColor(QPalette.ColorRole.Window, QColor("white"))
    palette.setColor(QPalette.ColorRole.WindowText, QColor("black"))
    label.setPalette(palette)
    label.setAutoFillBackground(True)
    label.setStyleSheet("QLabel { margin: 0; padding: 0; border: none; }")
    label.resize(label.sizeHint().width() + 40, label.sizeHint().height() + 8)
    label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
    image = QImage(label.size(), QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    label.render(image)
    label.deleteLater()
    return image


def _ink(image: QImage) -> tuple[int, int]:
    """(dark pixels, width of the inked columns) of a black-on-white rendering."""
    dark, columns = 0, []
    for x in range(image.width()):
        column = sum(
            1 for y in range(image.height()) if QColor(image.pixel(x, y)).lightness() < 160
        )
        dark += column
        if column:
            columns.append(x)
    return dark, (columns[-1] - columns[0] + 1) if columns else 0


def _inked(image: QImage) -> QImage:
    """The part of ``image`` that holds ink (any pixel not white), for comparing shapes drawn
    at different offsets."""
    xs, ys = [], []
    for y in range(image.height()):
        for x in range(image.width()):
            if QColor(image.pixel(x, y)).lightness() < 250:
                xs.append(x)
                ys.append(y)
    assert xs, "nothing drawn"
    return image.copy(min(xs), min(ys), max(xs) - min(xs) + 1, max(ys) - min(ys) + 1)


def _alone(family: str, like: QFont) -> QFont:
    """``family`` and nothing else: no fallback to other fonts for missing glyphs."""
    font = QFont(like)
    font.setFamilies([family])
    font.setStyleStrategy(QFont.StyleStrategy.NoFontMerging)
    return font


def test_latin_text_keeps_the_ui_font_when_the_cjk_fallback_is_installed(qapp, installed):
    ui_family = installed
    assert ui_family != fonts.FALLBACK_FAMILY
    for scheme in (None, "dark", "light"):  # View › Appearance re-polishes every widget
        if scheme:
            apply_theme(qapp, scheme)
        label = QLabel(LATIN)
        assert QFontInfo(label.font()).family() == ui_family
        drawn = _render(LATIN)
        alone = _render(LATIN, _alone(ui_family, qapp.font()))
        assert drawn == alone, f"Latin not drawn in {ui_family} (scheme {scheme})"
        _, width = _ink(drawn)
        expected = QFontMetrics(_alone(ui_family, qapp.font())).boundingRect(LATIN).width()
        assert abs(width - expected) <= 2, (width, expected)
        # the check can tell the two fonts apart: the fallback face draws Latin otherwise
        assert drawn != _render(LATIN, _alone(fonts.FALLBACK_FAMILY, qapp.font()))


def test_cjk_text_draws_with_the_bundled_glyphs_not_boxes(qapp, installed):
    ui_family = installed
    for word in (w for text in CJK for w in text.split()):  # a space is the UI font's
        drawn = _inked(_render(word))
        boxes = _inked(_render(word, _alone(ui_family, qapp.font())))  # the UI font's .notdef
        assert drawn != boxes, f"{word}: drawn as empty boxes"
        bundled = _inked(_render(word, _alone(fonts.FALLBACK_FAMILY, qapp.font())))
        assert drawn == bundled, f"{word}: not drawn with the bundled font"


def test_mixed_text_draws_each_script_in_its_font(qapp, installed):
    from PySide6.QtGui import QTextLayout

    ui_family = installed
    layout = QTextLayout("Trace trees 追踪树 트레이스", qapp.font())
    layout.beginLayout()
    layout.createLine()
    layout.endLayout()
    runs = {r.rawFont().familyName(): list(r.glyphIndexes()) for r in layout.glyphRuns()}
    assert set(runs) == {ui_family, fonts.FALLBACK_FAMILY}, runs
    assert len(runs[fonts.FALLBACK_FAMILY]) == 3 + 4  # 追踪树 and 트레이스, Hangul included
    assert 0 not in runs[fonts.FALLBACK_FAMILY] and 0 not in runs[ui_family]


def test_the_bundled_font_has_a_family_of_its_own(qapp):
    """Debian's fonts-droid-fallback (pulled in by Ghostscript) is also "Droid Sans Fallback",
    without Hangul; fontconfig matched that file when Qt asked whether the fallback covers a
    character, so Korean drew as boxes. The bundled copy is registered under its own name."""
    from PySide6.QtCore import QByteArray
    from PySide6.QtGui import QFontDatabase

    data = fonts.fallback_font_bytes()
    font_id = QFontDatabase.addApplicationFontFromData(QByteArray(data))
    assert QFontDatabase.applicationFontFamilies(font_id) == [fonts.FALLBACK_FAMILY]
    assert fonts.FALLBACK_FAMILY != "Droid Sans Fallback"


def test_renaming_refuses_bytes_that_are_not_a_font():
    with pytest.raises(ValueError, match="not a TrueType font"):
        fonts.with_family_name(b"%PDF-1.7 not a font", "Anything")
