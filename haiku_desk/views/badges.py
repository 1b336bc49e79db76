"""A document's state as a compact badge: a short word in a tinted pill (ready, parsing,
embedding, failed, OCR, cancelled), with a thin progress line under it while work is measured.

The badge's words are short on purpose (the State column stays narrow and the titles get the
width); the whole state ("searchable (text), embedding…", a failure's reason) stays in the
row's tooltip and accessible description. Colours are the theme's (``Tokens.*_fg/_bg``), so
badges follow light and dark and meet WCAG AA (tests/test_theme.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter

from haiku_desk.services.entries import DocumentState, LibraryEntry
from haiku_desk.views.theme import Tokens, current_tokens

KINDS = ("ready", "working", "failed", "ocr", "cancelled", "muted")

# state -> (the badge's word, its kind)
STATE_BADGES: dict[DocumentState, tuple[str, str]] = {
    DocumentState.QUEUED: ("queued", "muted"),
    DocumentState.PARSING: ("parsing", "working"),
    DocumentState.TEXT: ("text only", "working"),
    DocumentState.EMBEDDING: ("embedding", "working"),
    DocumentState.HYBRID: ("ready", "ready"),
    DocumentState.DELETING: ("deleting", "muted"),
    DocumentState.FAILED: ("failed", "failed"),
    DocumentState.CANCELLED: ("cancelled", "cancelled"),
}
PADDING_X = 7
HEIGHT_EM = 1.35  # the pill's height in lines of its font
GAP = 4  # between two badges
PROGRESS_LINE = 3  # px


@dataclass(frozen=True)
class Badge:
    text: str
    kind: str


def badges_for(entry: LibraryEntry, progress_text: str = "") -> list[Badge]:
    """The badges of a row: its state (with the progress wording while work is measured),
    and "OCR" when some of its pages were read by text recognition."""
    word, kind = STATE_BADGES[entry.state]
    if entry.busy and progress_text and entry.state is not DocumentState.QUEUED:
        word = progress_text
    result = [Badge(word, kind)]
    if getattr(entry, "recognised_pages", 0) and entry.state is not DocumentState.FAILED:
        result.append(Badge("OCR", "ocr"))
    return result


def colours(kind: str, tokens: Tokens | None = None) -> tuple[QColor, QColor]:
    """(text, fill) of a badge kind."""
    t = tokens or current_tokens()
    name = "muted" if kind == "cancelled" else kind
    return QColor(getattr(t, f"{name}_fg")), QColor(getattr(t, f"{name}_bg"))


def badge_font(base: QFont) -> QFont:
    font = QFont(base)
    size = base.pointSizeF()
    if size > 0:
        font.setPointSizeF(max(7.0, size * 0.86))
    font.setWeight(QFont.Weight.DemiBold)
    return font


def paint_badges(
    painter: QPainter, rect: QRect, badges: list[Badge], font: QFont, percent: int | None = None
) -> None:
    """Draw ``badges`` left to right, vertically centred in ``rect`` (each elided to what is
    left), and under them a thin progress line when ``percent`` is given (-1: unmeasured)."""
    small = badge_font(font)
    metrics = QFontMetrics(small)
    height = round(metrics.height() * HEIGHT_EM)
    top = rect.top() + (rect.height() - height) // 2
    x = rect.left() + 2
    tokens = current_tokens()
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setFont(small)
    for badge in badges:
        room = rect.right() - x - 2 * PADDING_X
        if room <= metrics.horizontalAdvance("…"):
            break
        text = metrics.elidedText(badge.text, Qt.TextElideMode.ElideRight, room)
        width = metrics.horizontalAdvance(text) + 2 * PADDING_X
        fg, bg = colours(badge.kind, tokens)
        pill = QRectF(x, top, width, height)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(bg)
        painter.drawRoundedRect(pill, height / 2, height / 2)
        painter.setPen(fg)
        painter.drawText(pill, Qt.AlignmentFlag.AlignCenter, text)
        x += width + GAP
    if percent is not None:
        line_top = top + height + 2
        track = QRectF(rect.left() + 2, line_top, rect.width() - 6, PROGRESS_LINE)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(tokens.sunken))
        painter.drawRoundedRect(track, 1.5, 1.5)
        if percent >= 0:
            done = QRectF(track.left(), track.top(), track.width() * min(100, percent) / 100, PROGRESS_LINE)
            painter.setBrush(QColor(tokens.accent))
            painter.drawRoundedRect(done, 1.5, 1.5)
    painter.restore()
