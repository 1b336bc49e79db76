"""File › Import Zotero library…: a Zotero library's PDFs with their metadata and collections
(``haiku.rag.zotero``), as one :class:`~haiku_desk.bridge.Operation`. Vectors follow through
the library's usual queue."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haiku_desk.bridge import Operation
from haiku_desk.services.notifications import Notifications

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG
    from haiku.rag.zotero import ZoteroImportReport

__all__ = ["run_zotero_import", "summarize"]


async def run_zotero_import(
    client: HaikuRAG,
    source: str | os.PathLike[str] | None,
    notifications: Notifications,
) -> ZoteroImportReport | None:
    """Import into ``client`` as one :class:`~haiku_desk.bridge.Operation`.
    Returns the import's result, or None when it failed (said in a notice) or was cancelled.
    The caller refreshes its rows and queues the embeddings."""
    from haiku.rag.zotero import import_zotero

    async def body(token: Any, report: Any) -> ZoteroImportReport:
        folder = Path(source) if source is not None else None
        return await import_zotero(client, folder, progress=report, cancel=token, embed=False)

    operation = Operation("Importing the Zotero library", body)
    operation.start()
    await operation.wait()
    if operation.error is not None:
        notifications.report_failure(operation.title, operation.error)
        return None
    return operation.result  # None when cancelled


def summarize(result: ZoteroImportReport, notifications: Notifications) -> None:
    """Say what the import did: counts by status, and the PDFs missing or failed."""
    missing = [f"{o.title}: {o.reason}" for o in result.outcomes if o.status in ("missing", "failed")]
    counts = ", ".join(f"{n} {status}" for status, n in sorted(result.counts().items()))
    notifications.info(f"Zotero import: {counts or 'no PDF attachments'}", "\n".join(missing))
