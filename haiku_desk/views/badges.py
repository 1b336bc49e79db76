"""A document's state as a compact badge: a short word in a tinted pill (ready, parsing,
embedding, failed, OCR, cancelled), with a thin progress line under it while work is measured.

The badge's words are short on purpose (the State column stays narrow and the titles get the
width): "embedding 41%", "parsing 12/619", "OCR 3/10" (text recognition), and the column is as
wide as the widest of them (:func:`widest_badges`). A badge is never clipped: where the column
is narrower (a small window) a badge drops its figures ("embedding", the line under it still
shows how far), and a second badge ("OCR") that does not fit whole is left out. The whole
state ("searchable (text), embedding…", a failure's reason) stays in the row's tooltip and
accessible description. Colours are the theme's (``Tokens.*_fg/_bg``), so
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


# what the stages of an ingest are called on a badge (the library's stage names are longer)
STAGE_WORDS = {"recognising text": "OCR"}
# The widest badges a row shows (figures at their usual widest): the State column's width.
WIDEST_BADGES = (
    ("embedding 100%",),
    ("parsing 999/999",),
    ("OCR 999/999",),
    ("text only", "OCR"),
    ("cancelled", "OCR"),
)


@dataclass(frozen=True)
class Badge:
    text: str
    kind: str
    short: str = ""  # the word without figures, for a narrow column ("" : the text itself)


def badges_for(entry: LibraryEntry, progress_text: str = "") -> list[Badge]:
    """The badges of a row: its state (with its stage and figures while work is measured:
    "parsing 12/619", "OCR 3/10", "embedding 41%"), and "OCR" when some of its pages were read
    by text recognition. ``progress_text`` is used for a stage without figures."""
    word, kind = STATE_BADGES[entry.state]
    short = word
    if entry.busy and entry.state is not DocumentState.QUEUED and (entry.stage or progress_text):
        stage = STAGE_WORDS.get(entry.stage, entry.stage)
        short = stage or word
        if entry.total and entry.stage == "embedding":
            word = f"{stage} {min(100, 100 * entry.done // entry.total)}%"
        elif entry.total and entry.stage:
            word = f"{stage} {entry.done}/{entry.total}"
        else:
            word = stage or progress_text
    result = [Badge(word, kind, short)]
    if getattr(entry, "recognised_pages", 0) and entry.state is not DocumentState.FAILED:
        result.append(Badge("OCR", "ocr"))
    return result


def badges_width(texts: tuple[str, ...] | list[str], metrics: QFontMetrics) -> int:
    """The width ``texts`` take drawn as badges side by side."""
    return sum(metrics.horizontalAdvance(t) + 2 * PADDING_X for t in texts) + GAP * max(0, len(texts) - 1)


def widest_badges(font: QFont) -> int:
    """The width the State column's badges need at most (their cell's margins not included)."""
    metrics = QFontMetrics(badge_font(font))
    return max(badges_width(texts, metrics) for texts in WIDEST_BADGES)


def fitted(badges: list[Badge], room: int, metrics: QFontMetrics) -> list[str]:
    """The texts to draw in ``room`` px: each badge whole, or its word without figures; a
    later badge that fits neither way is left out; only a first badge with no room for its
    bare word ends in "…" (never at the State column's usual widths)."""
    texts: list[str] = []
    for i, badge in enumerate(badges):
        left = room - badges_width(texts, metrics) - (GAP if texts else 0)
        for text in (badge.text, badge.short or badge.text):
            if metrics.horizontalAdvance(text) + 2 * PADDING_X <= left:
                texts.append(text)
                break
        else:
            if i == 0:
                texts.append(metrics.elidedText(badge.short or badge.text, Qt.TextElideMode.ElideRight, max(0, left - 2 * PADDING_X)))
            break
    return texts


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
    """Draw ``badges`` left to right, vertically centred in ``rect`` (fitted to it: see
    :func:`fitted`), and under them a thin progress line when ``percent`` is given (-1:
    unmeasured)."""
    small = badge_font(font)
    metrics = QFontMetrics(small)
    height = round(metrics.height() * HEIGHT_EM)
    top = rect.top() + (rect.height() - height) // 2
    x = rect.left() + 2
    tokens = current_tokens()
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setFont(small)
    texts = fitted(badges, rect.right() - x, metrics)
    for badge, text in zip(badges, texts, strict=False):
        if not text:
            break
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
