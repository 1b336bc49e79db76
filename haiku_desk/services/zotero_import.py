"""File › Import Zotero library…: a Zotero library's PDFs with their metadata and collections
(``haiku.rag.zotero``), as one :class:`~haiku_desk.bridge.Operation`. Vectors follow through
the library's usual queue."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haiku_desk.bridge import Operation
from haiku_desk.services.notifications import Level, Notifications

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG
    from haiku.rag.zotero import ZoteroImportReport

__all__ = ["PROBLEMS_KEY", "run_zotero_import", "summarize"]

PROBLEMS_KEY = "zotero-import-problems"  # the one warning about attachments not imported
MAX_NAMED = 5  # attachments named in the warning; the rest are counted (all are in its detail)


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
    """Say what the import did: counts by status (a notice that fades), and the PDFs missing
    or failed, each by title and file, with what to do about them (a warning that stays until
    dismissed, or until an import finds them all)."""
    from haiku.rag.zotero import attachment_file_name

    problems = [o for o in result.outcomes if o.status in ("missing", "failed")]
    details = [f"{o.title}: {o.reason}" for o in problems]
    counts = ", ".join(f"{n} {status}" for status, n in sorted(result.counts().items()))
    notifications.info(f"Zotero import: {counts or 'no PDF attachments'}", "\n".join(details))
    notifications.withdraw(PROBLEMS_KEY)  # an earlier import's warning no longer applies
    if not problems:
        return
    missing = [o for o in problems if o.status == "missing"]
    failed = [o for o in problems if o.status == "failed"]

    def named(outcomes: list[Any]) -> str:
        shown = [f"“{o.title}” ({attachment_file_name(o.source) or o.key})" for o in outcomes[:MAX_NAMED]]
        more = len(outcomes) - len(shown)
        return ", ".join(shown) + (f" and {more} more" if more > 0 else "")

    parts = []
    if missing:
        parts.append(
            f"{_count(len(missing), 'Zotero attachment')} not found: {named(missing)}. In Zotero, "
            "use “Find Available PDF” or relink the file, then import the Zotero library again."
        )
    if failed:
        parts.append(
            f"{_count(len(failed), 'Zotero attachment')} could not be read: {named(failed)}. "
            "Re-download or re-export the PDF in Zotero, then import again."
        )
    notifications.post(Level.WARNING, " ".join(parts), "\n".join(details), key=PROBLEMS_KEY)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("s" if n != 1 else "")
