"""The operations the write queue runs: a file's ingest and a document's embedding, each one
:class:`~haiku_desk.bridge.Operation` over the library's client (plain closures over the
client and the job, never over a QObject: the body runs in a worker thread)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from haiku_desk.bridge import Operation
from haiku_desk.services.entries import LibraryEntry
from haiku_desk.services.work_queue import IngestJob

if TYPE_CHECKING:
    from haiku.rag.client import HaikuRAG, IngestOutcome
    from haiku.rag.operations import CancelToken, Progress
    from haiku.rag.store.models import Document

__all__ = ["ProgressHook", "embedding_operation", "ingest_operation"]

# Called in the worker thread with each progress report of a running ingest and its cancel
# token: tests hold an ingest "in progress" with it (a hook that blocks).
ProgressHook = Callable[["Progress", "CancelToken"], None]


def ingest_operation(client: HaikuRAG, job: IngestJob, hook: ProgressHook | None = None) -> Operation:
    """Parse and store ``job``'s file (no vectors yet: the queue embeds after every parse)."""

    async def body(token: Any, report: Any) -> IngestOutcome:
        progress = report
        if hook is not None:

            def progress(p: Any) -> None:  # in the worker thread
                hook(p, token)
                report(p)

        return await client.ingest_file(
            job.path, password=job.password, progress=progress, cancel=token, embed=False, force=job.force
        )

    return Operation(f"Adding {job.path.name}", body)  # no parent: it may outlive close()


def embedding_operation(client: HaikuRAG, entry: LibraryEntry) -> Operation:
    """Compute the vectors ``entry``'s document is missing; the result is the document after."""
    document_id = entry.document_id
    assert document_id is not None

    async def body(token: Any, report: Any) -> Document:
        document = await client.get_document(document_id)
        await client.embed_pending([document], progress=report, cancel=token)
        return await client.get_document(document_id)

    return Operation(f"Embedding {entry.name}", body)
