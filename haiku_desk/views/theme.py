"""The app's look: one palette per scheme (light, dark), a type scale, and the one stylesheet.

The scheme follows the system's light or dark setting (``QStyleHints.colorScheme``, and
switches when it changes) unless the person chose Light or Dark under View › Appearance; the
choice is kept in QSettings (``appearance/scheme``).

Colours are named once, here, as :class:`Tokens`; ``resources/style/haiku.qss`` uses them as
``${name}`` (and the type scale as ``${title_pt}``, ``${body_pt}``, ``${secondary_pt}``,
``${caption_pt}``), substituted when the theme is applied. Every text/background pair the
stylesheet draws is listed in :func:`text_pairs`, which the tests hold to WCAG AA (4.5:1).

What widgets may set to be styled (the names are listed for the other views in
/work/coord/NOTICE-look.md and in the stylesheet's header):

- ``textRole`` on a QLabel: ``title``, ``secondary``, ``caption`` (body is the default),
  ``error`` and ``warning`` (a message in the danger or the warning colour);
- ``buttonRole`` on a button: ``primary`` (the one main action of a pane), ``danger``,
  ``quiet`` (borderless, for icon-only buttons in a row);
- ``badge`` on a QLabel: ``ready``, ``working``, ``failed``, ``ocr``, ``cancelled``, ``muted``;
- ``focusPane`` (bool) on a pane: the frame that shows which pane F6 moved to
  (use :func:`set_flag`, which re-polishes the widget so the frame shows at once);
- ``card`` (bool) on a QFrame: a rounded surface with a border (a source card, a notice).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from string import Template

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction, QActionGroup, QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QMenu, QWidget

log = logging.getLogger("haiku_desk.theme")

SCHEMES = ("system", "light", "dark")
SCHEME_LABELS = {"system": "Follow the system", "light": "Light", "dark": "Dark"}
SETTINGS_KEY = "appearance/scheme"
STYLESHEET = ("style", "haiku.qss")
# The type scale, as multiples of the system's body size (kept: a person's larger system font
# makes every step larger).
TITLE_SCALE = 1.3
SECONDARY_SCALE = 0.93
CAPTION_SCALE = 0.86
_BASE_PT_PROPERTY = "haiku_base_point_size"


@dataclass(frozen=True)
class Tokens:
    """The colours of one scheme, by what they are for."""

    name: str
    window: str  # behind the panes
    surface: str  # panes, cards, inputs
    sunken: str  # table headers, chips, quiet fills
    hover: str  # a row or button under the pointer
    border: str  # hairlines between things
    border_strong: str  # inputs' and buttons' outlines
    text: str
    text_secondary: str  # file names, steps, the chat's header
    text_muted: str  # captions: the status bar, token meter, placeholders
    text_disabled: str
    accent: str  # the primary button, the progress line, focus
    accent_text: str  # text on accent
    accent_soft: str  # the selection, citation chips
    progress: str  # a progress bar's filled part (its text is drawn over it)
    link: str
    focus: str
    danger: str
    ready_fg: str
    ready_bg: str
    working_fg: str
    working_bg: str
    failed_fg: str
    failed_bg: str
    ocr_fg: str
    ocr_bg: str
    muted_fg: str
    muted_bg: str

    def colour(self, name: str) -> QColor:
        return QColor(getattr(self, name))


LIGHT = Tokens(
    name="light",
    window="#f3f3f1",
    surface="#ffffff",
    sunken="#efeeeb",
    hover="#f0f2f6",
    border="#e2e1dd",
    border_strong="#c9c7c1",
    text="#1d1f23",
    text_secondary="#4f555e",
    text_muted="#5f6670",
    text_disabled="#a2a6ad",
    accent="#2b59c3",
    accent_text="#ffffff",
    accent_soft="#dfe7fa",
    progress="#b7cbf5",
    link="#2552b8",
    focus="#2b59c3",
    danger="#b3261e",
    ready_fg="#17683a",
    ready_bg="#e2f2e7",
    working_fg="#7a4d00",
    working_bg="#fbefd2",
    failed_fg="#a4221b",
    failed_bg="#fbe6e4",
    ocr_fg="#5b3bb0",
    ocr_bg="#eee8fb",
    muted_fg="#4f5661",
    muted_bg="#ecedef",
)

DARK = Tokens(
    name="dark",
    window="#16171a",
    surface="#1f2024",
    sunken="#27292e",
    hover="#2a2c32",
    border="#303238",
    border_strong="#4a4d55",
    text="#e6e7ea",
    text_secondary="#b3b7bf",
    text_muted="#9da2ab",
    text_disabled="#6b6f77",
    accent="#3763d2",
    accent_text="#ffffff",
    accent_soft="#2b3b5e",
    progress="#34508c",
    link="#8db3ff",
    focus="#7fa6ff",
    danger="#ff8f85",
    ready_fg="#7fd894",
    ready_bg="#1d3325",
    working_fg="#f0c46c",
    working_bg="#382d15",
    failed_fg="#ff9c92",
    failed_bg="#3d1f1d",
    ocr_fg="#c8b6ff",
    ocr_bg="#2e2645",
    muted_fg="#b3b7bf",
    muted_bg="#2c2e33",
)

TOKENS = {"light": LIGHT, "dark": DARK}


def text_pairs(tokens: Tokens) -> list[tuple[str, str, str]]:
    """Every (what, text colour, background) the stylesheet and the palette draw text with."""
    t = tokens
    pairs: list[tuple[str, str, str]] = []
    for bg_name in ("window", "surface", "sunken", "hover"):
        bg = getattr(t, bg_name)
        for fg_name in ("text", "text_secondary", "text_muted", "link", "danger", "working_fg"):
            pairs.append((f"{fg_name} on {bg_name}", getattr(t, fg_name), bg))
    pairs.append(("text on the selection", t.text, t.accent_soft))
    pairs.append(("secondary text on the selection", t.text_secondary, t.accent_soft))
    pairs.append(("a citation chip", t.link, t.accent_soft))
    pairs.append(("the primary button's text", t.accent_text, t.accent))
    pairs.append(("a progress bar's text on its filled part", t.text, t.progress))
    for badge in ("ready", "working", "failed", "ocr", "muted"):
        pairs.append((f"the {badge} badge", getattr(t, f"{badge}_fg"), getattr(t, f"{badge}_bg")))
    for banner in ("failed_bg", "working_bg", "accent_soft"):  # the notification banners
        pairs.append((f"a notice's text on {banner}", t.text, getattr(t, banner)))
    return pairs


# Colours the views named before there was a theme (the chat's grounding badges): the badge
# kind each stands for, so it is drawn as a pill in the scheme's own, AA-contrast colours.
KIND_OF_COLOUR = {
    "#2e7d32": "ready",
    "#b26a00": "working",
    "#c62828": "failed",
    "#1565c0": "muted",
    "#6a1b9a": "ocr",
}


def badge_kind(colour: str) -> str:
    return KIND_OF_COLOUR.get(colour.lower(), "muted")


# --- the scheme ------------------------------------------------------------------------------


def stored_scheme() -> str:
    value = QSettings().value(SETTINGS_KEY, "system")
    return value if isinstance(value, str) and value in SCHEMES else "system"


def system_is_dark(app: QGuiApplication) -> bool:
    return app.styleHints().colorScheme() == Qt.ColorScheme.Dark


def is_dark(app: QGuiApplication) -> bool:
    """Whether the app is drawn dark now (the person's choice, else the system's)."""
    return current_tokens(app) is DARK


def resolve(app: QGuiApplication, scheme: str | None = None) -> Tokens:
    scheme = scheme or stored_scheme()
    if scheme == "system":
        return DARK if system_is_dark(app) else LIGHT
    return TOKENS[scheme]


def current_tokens(app: QGuiApplication | None = None) -> Tokens:
    """The tokens the app is drawn with now (light before any theme was applied)."""
    app = app or QGuiApplication.instance()  # type: ignore[assignment]
    name = app.property("haiku_scheme") if app is not None else None
    return TOKENS.get(name, LIGHT) if isinstance(name, str) else LIGHT


# --- palette and stylesheet -----------------------------------------------------------------


def build_palette(t: Tokens) -> QPalette:
    """A full QPalette from the tokens, for what the stylesheet leaves to the style (check
    boxes, scroll bars, menus, item text, the page view)."""
    c = QColor
    p = QPalette()
    roles = {
        QPalette.ColorRole.Window: c(t.window),
        QPalette.ColorRole.WindowText: c(t.text),
        QPalette.ColorRole.Base: c(t.surface),
        QPalette.ColorRole.AlternateBase: c(t.sunken),
        QPalette.ColorRole.ToolTipBase: c(t.surface),
        QPalette.ColorRole.ToolTipText: c(t.text),
        QPalette.ColorRole.PlaceholderText: c(t.text_muted),
        QPalette.ColorRole.Text: c(t.text),
        QPalette.ColorRole.Button: c(t.surface),
        QPalette.ColorRole.ButtonText: c(t.text),
        QPalette.ColorRole.BrightText: c(t.danger),
        QPalette.ColorRole.Light: c(t.surface),
        QPalette.ColorRole.Midlight: c(t.border),
        QPalette.ColorRole.Mid: c(t.border_strong),
        QPalette.ColorRole.Dark: c(t.border_strong),
        QPalette.ColorRole.Shadow: c(t.border_strong),
        QPalette.ColorRole.Link: c(t.link),
        QPalette.ColorRole.LinkVisited: c(t.link),
        QPalette.ColorRole.Highlight: c(t.accent_soft),
        QPalette.ColorRole.HighlightedText: c(t.text),
        QPalette.ColorRole.Accent: c(t.accent),
    }
    for role, colour in roles.items():
        p.setColor(role, colour)
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        p.setColor(QPalette.ColorGroup.Disabled, role, c(t.text_disabled))
    # an unfocused window keeps its selection readable (not Fusion's grey)
    p.setColor(QPalette.ColorGroup.Inactive, QPalette.ColorRole.Highlight, c(t.accent_soft))
    p.setColor(QPalette.ColorGroup.Inactive, QPalette.ColorRole.HighlightedText, c(t.text))
    return p


def resources_dir() -> Path | None:
    """resources/: inside the package when installed from the wheel, beside it in a clone or
    the bundle."""
    here = Path(__file__).resolve().parent.parent
    for folder in (here / "resources", here.parent / "resources"):
        if folder.is_dir():
            return folder
    return None


def type_scale(base_pt: float) -> dict[str, str]:
    def pt(scale: float) -> str:
        return f"{round(base_pt * scale * 2) / 2:g}"

    return {
        "title_pt": pt(TITLE_SCALE),
        "body_pt": pt(1.0),
        "secondary_pt": pt(SECONDARY_SCALE),
        "caption_pt": pt(CAPTION_SCALE),
    }


def stylesheet(t: Tokens, base_pt: float) -> str:
    """The stylesheet with the tokens and the type scale filled in. A ``${name}`` the tokens
    do not define raises KeyError (a typo must not reach the window as an invalid rule)."""
    folder = resources_dir()
    if folder is None:
        raise FileNotFoundError("resources/ was not found beside the app")
    template = Template((folder.joinpath(*STYLESHEET)).read_text(encoding="utf-8"))
    values = {k: v for k, v in asdict(t).items() if k != "name"}
    values.update(type_scale(base_pt))
    values["icons"] = (folder / "icons").as_posix()  # the check boxes' marks
    values["chevron"] = f"{values['icons']}/chevron-{t.name}.svg"  # a drop-down's arrow
    return template.substitute(values)


def base_point_size(app: QApplication) -> float:
    """The system's body size, read once (the stylesheet's sizes are multiples of it)."""
    stored = app.property(_BASE_PT_PROPERTY)
    if isinstance(stored, float) and stored > 0:
        return stored
    size = app.font().pointSizeF()
    if size <= 0:
        size = 10.0
    app.setProperty(_BASE_PT_PROPERTY, float(size))
    return float(size)


def apply_theme(app: QApplication, scheme: str | None = None) -> Tokens:
    """Fusion, the palette and the stylesheet of ``scheme`` (default: the stored choice),
    kept in step with the system's scheme while the choice is "system". Returns the tokens
    applied."""
    if not app.property("haiku_fusion"):
        # once: setStyle again would reset the widgets' fonts to the platform's (on X11 the UI
        # changed its font face and lost its bold headings at each switch of scheme)
        app.setStyle("Fusion")
        app.setProperty("haiku_fusion", True)
    chosen = scheme or stored_scheme()
    tokens = resolve(app, chosen)
    app.setProperty("haiku_scheme_choice", chosen)
    app.setProperty("haiku_scheme", tokens.name)
    app.setPalette(build_palette(tokens))
    try:
        app.setStyleSheet(stylesheet(tokens, base_point_size(app)))
    except OSError:  # a broken install: the palette alone still makes a readable window
        log.exception("the stylesheet could not be read; the window uses the plain style")
    for listener in list(_listeners):  # e.g. icons.retint: the action icons in the new colours
        listener(tokens)
    if not app.property("haiku_theme_connected"):
        app.styleHints().colorSchemeChanged.connect(lambda *_: _system_changed(app))
        app.setProperty("haiku_theme_connected", True)
    return tokens


_listeners: list[Callable[[Tokens], None]] = []


def on_scheme_applied(listener: Callable[[Tokens], None]) -> None:
    """Call ``listener(tokens)`` each time a scheme is applied (what draws with the theme's
    colours outside the stylesheet, like the icons, follows it so; theme imports none of it)."""
    if listener not in _listeners:
        _listeners.append(listener)


def _system_changed(app: QApplication) -> None:
    choice = app.property("haiku_scheme_choice")
    if choice in (None, "system") and resolve(app, "system").name != app.property("haiku_scheme"):
        apply_theme(app, "system")


apply_system_theme = apply_theme  # the name app start-up used before the scheme could be chosen


def set_scheme(app: QApplication, scheme: str) -> Tokens:
    """The person's choice (View › Appearance): kept, and applied now."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown colour scheme {scheme!r}: one of {', '.join(SCHEMES)}")
    QSettings().setValue(SETTINGS_KEY, scheme)
    return apply_theme(app, scheme)


def appearance_menu(parent: QMenu) -> QMenu:
    """View › Appearance: Follow the system / Light / Dark (one ticked)."""
    menu = parent.addMenu("Appearance")
    menu.setObjectName("appearance_menu")
    group = QActionGroup(menu)
    group.setExclusive(True)
    chosen = stored_scheme()
    for scheme in SCHEMES:
        action = QAction(SCHEME_LABELS[scheme], menu)
        action.setObjectName(f"scheme_{scheme}")
        action.setCheckable(True)
        action.setChecked(scheme == chosen)
        action.triggered.connect(lambda _=False, s=scheme: _choose(s))
        group.addAction(action)
        menu.addAction(action)
    return menu


def _choose(scheme: str) -> None:
    app = QApplication.instance()
    if isinstance(app, QApplication):
        set_scheme(app, scheme)


# --- dynamic properties ---------------------------------------------------------------------


def set_flag(widget: QWidget, name: str, value: object) -> None:
    """Set a property the stylesheet selects on (``focusPane``, ``badge``, …) and re-polish
    the widget so the change shows now (Qt reads properties only when it polishes)."""
    if widget.property(name) == value:
        return
    widget.setProperty(name, value)
    if name == "focusPane":
        widget.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
    style = widget.style()
    style.unpolish(widget)
    style.polish(widget)
    widget.update()
