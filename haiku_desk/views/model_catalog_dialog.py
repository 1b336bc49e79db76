"""Settings › Chat model › "Download a recommended model…": the curated model files (name,
parameters, size, licence, source) with the free space where they are saved, and each one's
download: progress (bytes, percent, speed), Pause / Resume, Cancel, and what went wrong.

Everything it shows comes from ``services.model_downloads.ModelDownloads`` (plain rows and
signals); the dialog neither downloads nor reads the disk. Pause keeps the partial file, so
Resume (also after a restart of the app) continues where it stopped; Cancel removes it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from haiku_desk.services.model_downloads import (
    CatalogRow,
    DownloadFailure,
    DownloadProgress,
    ModelDownloads,
    format_size,
)

COLUMNS = ("Model", "Parameters", "Size", "Licence", "Source", "Status")
STATE_WORDS = {
    "available": "Not downloaded",
    "partial": "Paused",
    "downloading": "Downloading",
    "pausing": "Pausing…",
    "installed": "Downloaded",
}


class ModelCatalogDialog(QDialog):
    """The catalog's entries and their downloads; ``model_chosen`` (path, kind) when the
    person picks a downloaded file with "Use this model"."""

    model_chosen = Signal(str, str)

    def __init__(self, downloads: ModelDownloads, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.downloads = downloads
        self.setWindowTitle("Recommended models")
        self.setAccessibleName("Recommended models")
        self.setMinimumWidth(760)
        self._progress: dict[str, DownloadProgress] = {}
        self._failures: dict[str, DownloadFailure] = {}
        self._notes: dict[str, str] = {}  # what the last action did ("Cancelled: …")
        self._rows: list[CatalogRow] = []

        self.intro = QLabel(self)
        self.intro.setWordWrap(True)
        self.intro.setAccessibleName("Where models are saved")
        self.intro.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setAccessibleName("Recommended model files")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(COLUMNS.index("Source"), QHeaderView.ResizeMode.Stretch)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.details = QLabel(self)
        self.details.setWordWrap(True)
        self.details.setAccessibleName("Model file details")
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.progress = QProgressBar(self)
        self.progress.setAccessibleName("Download progress")
        self.progress.setRange(0, 100)
        policy = self.progress.sizePolicy()
        policy.setRetainSizeWhenHidden(True)
        self.progress.setSizePolicy(policy)
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Download status")
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.download_button = QPushButton("&Download", self)
        self.download_button.setAccessibleName("Download")
        self.pause_button = QPushButton("&Pause", self)
        self.pause_button.setAccessibleName("Pause")
        self.cancel_button = QPushButton("&Cancel download", self)
        self.cancel_button.setAccessibleName("Cancel download")
        self.cancel_button.setToolTip("Stop and delete the part already downloaded (Pause keeps it)")
        self.use_button = QPushButton("&Use this model", self)
        self.use_button.setAccessibleName("Use this model")
        actions = QHBoxLayout()
        for button in (self.download_button, self.pause_button, self.cancel_button, self.use_button):
            button.setAutoDefault(False)
            actions.addWidget(button)
        actions.addStretch(1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)

        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.details)
        layout.addLayout(actions)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)

        self.table.itemSelectionChanged.connect(self._show_selected)
        self.download_button.clicked.connect(self.start_selected)
        self.pause_button.clicked.connect(self.pause_selected)
        self.cancel_button.clicked.connect(self.cancel_selected)
        self.use_button.clicked.connect(self.use_selected)
        self.buttons.rejected.connect(self.reject)
        # bound methods: Qt drops them when the dialog goes, the downloads go on
        downloads.progressed.connect(self._on_progress)
        downloads.state_changed.connect(self._on_state)
        downloads.failed.connect(self._on_failed)
        downloads.finished.connect(self._on_finished)
        self.refresh()
        if self._rows:
            self.table.selectRow(0)
        self.table.setFocus(Qt.FocusReason.OtherFocusReason)

    # --- what is shown --------------------------------------------------------------------

    def refresh(self) -> None:
        """Every row and the free space again (the disk and the downloads may have moved)."""
        selected = self.selected_file()
        self._rows = self.downloads.rows()
        free = self.downloads.free_space()
        where = f"Model files are saved in {self.downloads.folder}"
        where += f" ({format_size(free)} free on that disk)." if free is not None else "."
        source = f"Catalog: {self.downloads.source_description}."
        if self.downloads.catalog_error:
            source = f"The catalog could not be read: {self.downloads.catalog_error}"
        elif not self._rows:
            source += " It lists no model."
        self.intro.setText(
            f"Small models that run on this computer, downloaded only when you ask. {where} "
            f"Each file is checked against its SHA-256 before it is used. {source}"
        )
        self.table.setRowCount(len(self._rows))
        for index, row in enumerate(self._rows):
            values = (
                row.name,
                row.parameters or "—",
                format_size(row.size),
                row.licence,
                row.url,
                self._status_word(row),
            )
            for column, value in enumerate(values):
                item = QTableWidgetItem(value)
                item.setData(Qt.ItemDataRole.UserRole, row.file_name)
                if COLUMNS[column] == "Source":
                    item.setToolTip(row.url)
                self.table.setItem(index, column, item)
        if selected is not None:
            self._select(selected)
        self._show_selected()

    def _status_word(self, row: CatalogRow) -> str:
        if row.state == "downloading" and row.file_name in self._progress:
            return f"Downloading {self._progress[row.file_name].percent}%"
        if row.state == "partial":
            # a part kept by Pause, or by a lost connection (which says so below the table)
            stopped = "Interrupted" if row.file_name in self._failures else "Paused"
            return f"{stopped} at {format_size(row.done)}"
        if row.state == "available" and row.file_name in self._failures:
            return "Failed"
        return STATE_WORDS[row.state]

    def selected_file(self) -> str | None:
        items = self.table.selectedItems()
        return items[0].data(Qt.ItemDataRole.UserRole) if items else None

    def selected_row(self) -> CatalogRow | None:
        name = self.selected_file()
        return next((row for row in self._rows if row.file_name == name), None)

    def _select(self, file_name: str) -> None:
        for index, row in enumerate(self._rows):
            if row.file_name == file_name:
                self.table.selectRow(index)
                return

    def _show_selected(self) -> None:
        row = self.selected_row()
        for button in (self.download_button, self.pause_button, self.cancel_button, self.use_button):
            button.setEnabled(False)
        self.progress.setVisible(False)
        if row is None:
            self.details.clear()
            self.status.setText(self.downloads.catalog_error or "")
            return
        kind = "chat model" if row.kind == "chat" else "embedding model"
        self.details.setText(
            f"{row.name}: a {kind}, {row.parameters or 'parameters not stated'}, "
            f"{format_size(row.size)}, licence {row.licence}.\nSource: {row.url}\n"
            f"SHA-256: {row.sha256}\nChecked from: {row.verified_from}"
        )
        failure = self._failures.get(row.file_name)
        state = row.state
        self.download_button.setText("&Download")
        if state == "available":
            self.download_button.setEnabled(True)
            if failure is not None:
                self.download_button.setText("&Retry" if failure.can_retry else "&Download")
                self.download_button.setEnabled(failure.can_retry)
            self.status.setText(
                failure.message if failure else self._notes.get(row.file_name, "Not downloaded.")
            )
        elif state == "partial":
            self.download_button.setText("&Retry" if failure is not None else "&Resume")
            self.download_button.setEnabled(True)
            self.cancel_button.setEnabled(True)
            self._show_bar(row.done, row.size)
            kept = f"{format_size(row.done)} of {format_size(row.size)} downloaded"
            self.status.setText(
                failure.message
                if failure is not None
                else f"Paused: {kept}. Resume continues from there; Cancel download deletes it."
            )
        elif state in ("downloading", "pausing"):
            self.pause_button.setEnabled(state == "downloading")
            self.cancel_button.setEnabled(state == "downloading")
            progress = self._progress.get(row.file_name)
            if progress is not None:
                self._show_bar(progress.done, progress.total)
            if state == "pausing":
                self.status.setText("Pausing… (the part downloaded is kept)")
            elif progress is not None:
                self.status.setText(f"Downloading: {progress.describe()}")
            else:
                self.status.setText("Connecting…")
        else:  # installed
            self.use_button.setEnabled(True)
            self._show_bar(row.size, row.size)
            where = "Settings › Chat model" if row.kind == "chat" else "Settings › Search › Embedder"
            self.status.setText(
                f"Downloaded and checked: {row.path}. It is listed with the model files in {where}."
            )

    def _show_bar(self, done: int, total: int) -> None:
        self.progress.setVisible(True)
        self.progress.setValue(int(done * 100 / total) if total else 0)

    # --- the service's signals ------------------------------------------------------------

    def _on_progress(self, file_name: str, progress: DownloadProgress) -> None:
        first = file_name not in self._progress
        self._progress[file_name] = progress
        if first:
            self.refresh()  # its status word; later reports only touch what changes
            return
        for index, row in enumerate(self._rows):
            if row.file_name == file_name:
                item = self.table.item(index, COLUMNS.index("Status"))
                if item is not None:
                    item.setText(f"Downloading {progress.percent}%")
        if self.selected_file() == file_name:
            self._show_bar(progress.done, progress.total)
            selected = self.selected_row()
            if selected is not None and selected.state == "downloading":
                self.status.setText(f"Downloading: {progress.describe()}")

    def _on_state(self, file_name: str) -> None:
        self.refresh()

    def _on_failed(self, file_name: str, failure: DownloadFailure) -> None:
        self._failures[file_name] = failure
        self._progress.pop(file_name, None)
        self.refresh()

    def _on_finished(self, file_name: str, path: str) -> None:
        self._failures.pop(file_name, None)
        self._progress.pop(file_name, None)
        self.refresh()

    # --- actions --------------------------------------------------------------------------

    def start_selected(self) -> None:
        name = self.selected_file()
        if name is not None:
            self._failures.pop(name, None)
            self._progress.pop(name, None)
            self._notes.pop(name, None)
            self.downloads.start(name)

    def pause_selected(self) -> None:
        name = self.selected_file()
        if name is not None:
            self.downloads.pause(name)

    def cancel_selected(self) -> None:
        name = self.selected_file()
        if name is not None:
            self._failures.pop(name, None)
            self._progress.pop(name, None)
            self._notes[name] = "Cancelled: the part downloaded was deleted."
            self.downloads.cancel(name)

    def use_selected(self) -> None:
        row = self.selected_row()
        if row is not None and row.state == "installed":
            self.model_chosen.emit(row.path, row.kind)
            self.accept()
