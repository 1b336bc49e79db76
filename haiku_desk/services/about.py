"""What Help › About haiku-desk shows: the versions, the licence, where the open library and
the log are, and where the documentation is (plain values; the dialog is views/help_dialog.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from haiku.rag.config import AppConfig

__all__ = ["LICENCE", "AboutFacts", "about_facts"]

LICENCE = "AGPL-3.0-or-later"
LICENCE_URL = "https://www.gnu.org/licenses/agpl-3.0.html"
PROJECT_ROOT = Path(__file__).resolve().parents[2]  # a source checkout's (README.md, docs/)


@dataclass(frozen=True)
class AboutFacts:
    app_version: str
    library_version: str  # haiku.rag's
    licence: str
    licence_url: str
    library_path: str
    log_folder: str
    docs: tuple[tuple[str, str], ...]  # (title, URL): the README and docs/ when shipped


def _docs(root: Path) -> tuple[tuple[str, str], ...]:
    found = []
    for title, relative in (
        ("README", "README.md"),
        ("Using the library and the chat", "docs/chat.md"),
        ("File formats", "docs/formats.md"),
        ("Security and privacy", "docs/security.md"),
        ("All documentation", "docs"),
    ):
        path = root / relative
        if path.exists():
            found.append((title, path.as_uri()))
    return tuple(found)


def about_facts(library_path: str | Path, config: AppConfig, root: Path = PROJECT_ROOT) -> AboutFacts:
    from haiku.rag import __version__ as library_version
    from haiku_desk import __version__ as app_version
    from haiku_desk.services.library_choice import log_folder

    return AboutFacts(
        app_version=app_version,
        library_version=library_version,
        licence=LICENCE,
        licence_url=LICENCE_URL,
        library_path=str(library_path),
        log_folder=str(log_folder(config)),
        docs=_docs(root),
    )
