"""Services: the only layer that talks to ``haiku.rag`` and Pydantic AI.

Each service is a QObject that owns no widgets and exposes Qt signals; views call its methods
and subscribe to its signals.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from haiku.rag.config import AppConfig
    from haiku_desk.services.bibliography import BibliographyService
    from haiku_desk.services.chat import ChatService
    from haiku_desk.services.collections import CollectionsService
    from haiku_desk.services.extraction import ExtractionService
    from haiku_desk.services.library import LibraryService
    from haiku_desk.services.models import ModelsService
    from haiku_desk.services.notifications import Notifications
    from haiku_desk.services.pages import PagesService


@dataclass
class AppServices:
    """Everything a view may talk to. Built once per window by :func:`create_services`."""

    config: AppConfig
    notifications: Notifications
    library: LibraryService  # the open library: documents, ingest queue, selection, watch folders
    pages: PagesService  # page renders (QImage) with highlight boxes, cached
    models: ModelsService  # chat model, reranker and embedder choice, discovery, keychain
    chat: ChatService  # conversations, agent runs, streaming, toggles, persistence
    collections: CollectionsService | None = None  # the library's named sets of documents
    bibliography: BibliographyService | None = None  # author–year citations, BibTeX, edits
    evidence: ExtractionService | None = None  # evidence tables: questions × documents, cited


def create_services(db_path: str | os.PathLike[str] | None = None, config: AppConfig | None = None) -> AppServices:
    """Open the library at ``db_path`` (default: the haiku.rag data dir) and build the services."""
    from haiku.rag.config import load_config, resolve_db_path
    from haiku_desk.services.chat import ChatService
    from haiku_desk.services.collections import CollectionsService
    from haiku_desk.services.library import LibraryService
    from haiku_desk.services.models import ModelsService
    from haiku_desk.services.notifications import Notifications
    from haiku_desk.services.pages import PagesService

    config = config or load_config()
    notifications = Notifications()
    library = LibraryService(Path(resolve_db_path(db_path, config)), config, notifications)
    pages = PagesService(library, notifications)
    models = ModelsService(config, notifications, library=library)
    from haiku_desk.services.bibliography import BibliographyService

    chat = ChatService(library, models, notifications)
    collections = CollectionsService(library, notifications)
    chat.attach_collections(collections)
    bibliography = BibliographyService(library, notifications)
    from haiku_desk.services.extraction import ExtractionService

    evidence = ExtractionService(library, models, notifications, collections=collections)
    return AppServices(
        config, notifications, library, pages, models, chat,
        collections=collections, bibliography=bibliography, evidence=evidence,
    )
