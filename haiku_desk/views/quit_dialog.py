"""Quitting: ask once when work is pending, then stop everything within seconds.

Closing the window is the same as Ctrl+Q (both end in the window's ``closeEvent``, which asks
:meth:`QuitFlow.allow_close`). With work pending, one dialog says how many jobs and what they
are; its default, "Stop and quit", cancels the running job (its write is rolled back), kills
the parse worker and keeps the jobs that were not done in the library, for the next start.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

if TYPE_CHECKING:
    from haiku_desk.services import AppServices
    from haiku_desk.services.library import PendingWork

log = logging.getLogger("haiku_desk")


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def describe_pending(pending: PendingWork) -> str:
    """"3 jobs are not done: Adding big.pdf (running), 1 file to add, 1 delete." """
    parts = []
    if pending.running:
        parts.append(f"{pending.running} (running)")
    if pending.ingests:
        parts.append(_plural(pending.ingests, "file to add", "files to add"))
    if pending.deletes:
        parts.append(_plural(pending.deletes, "delete"))
    if pending.embeddings:
        parts.append(_plural(pending.embeddings, "document to embed", "documents to embed"))
    jobs = pending.jobs
    return f"{_plural(jobs, 'job')} {'is' if jobs == 1 else 'are'} not done: {', '.join(parts)}."


class QuitFlow(QObject):
    """The window's quit decision and the shutdown that follows it.

    ``closing`` is emitted once the window may close; ``finished(stopped)`` once the library
    has shut down (``stopped`` False when the running job did not end in time: exiting is
    still safe, the store's recovery removes an interrupted write at the next open).
    """

    closing = Signal()
    finished = Signal(bool)

    def __init__(self, services: AppServices, window: QWidget) -> None:
        super().__init__(window)
        self.services = services
        self.window = window
        self.dialog: QMessageBox | None = None
        self._confirmed = False
        self._shutdown: asyncio.Future[None] | None = None
        # The app's own window manages the shutdown; a window built by a test or a tool that
        # manages its services itself just closes.
        self.manage_shutdown = False

    @property
    def shutting_down(self) -> bool:
        """Whether the shutdown has begun (the library and page renderer are being closed)."""
        return self._shutdown is not None

    def allow_close(self) -> bool:
        """Whether the window may close now; when work is pending, asks (non-blocking) and
        closes the window itself once the person chose to stop it."""
        if not self.manage_shutdown:
            return True
        if self._confirmed:
            self._begin_shutdown()
            return True
        pending = self.services.library.pending_work()
        if not pending:
            self._confirmed = True
            self._begin_shutdown()
            return True
        self._ask(pending)
        return False

    def force_quit(self) -> None:
        """Quit without asking (SIGTERM, the session ending): the same stop, the same kept work."""
        self._confirmed = True
        if self.dialog is not None:
            self.dialog.done(0)
        self.window.close()

    def _ask(self, pending: PendingWork) -> None:
        if self.dialog is not None:
            self.dialog.raise_()
            self.dialog.activateWindow()
            return
        dialog = QMessageBox(self.window)
        dialog.setIcon(QMessageBox.Icon.Question)
        dialog.setWindowTitle("Quit haiku-desk")
        dialog.setText(describe_pending(pending))
        dialog.setInformativeText(
            "Stop them and quit? The running job is undone; what was not done is kept and "
            "resumes when you open this library again."
        )
        stop = dialog.addButton("Stop and quit", QMessageBox.ButtonRole.AcceptRole)
        keep = dialog.addButton("Keep working", QMessageBox.ButtonRole.RejectRole)
        dialog.setDefaultButton(stop)
        dialog.setEscapeButton(keep)
        dialog.setAccessibleName("Quit with work pending")
        self.stop_button, self.keep_button = stop, keep

        def done(_result: int) -> None:
            chosen = dialog.clickedButton()
            self.dialog = None
            dialog.deleteLater()
            if chosen is stop:
                self._confirmed = True
                QTimer.singleShot(0, self.window.close)

        dialog.finished.connect(done)
        self.dialog = dialog
        dialog.open()

    def _begin_shutdown(self) -> None:
        if self._shutdown is not None:
            return
        self.closing.emit()
        self._shutdown = asyncio.ensure_future(self._run_shutdown())

    async def _run_shutdown(self) -> None:
        stopped = False
        try:
            stopped = await self.services.library.shutdown()
        except Exception:  # quitting must finish whatever went wrong
            log.exception("shutting the library down")
        finally:
            try:
                self.services.pages.close()
            except Exception:
                log.exception("closing the page renderer")
            self.finished.emit(stopped)

    async def wait(self) -> None:
        """Until the shutdown that follows the close has finished (for tests and the app)."""
        while self._shutdown is None:
            await asyncio.sleep(0.01)
        await asyncio.wait({self._shutdown})
