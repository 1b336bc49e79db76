"""Edit details…: a document's title, authors, year, venue/journal and DOI.

Opened from a library row's context menu (the pane's ``extra_actions`` hook), prefilled from
the record read from the file (or Zotero, or an earlier edit). Save checks the fields with the
library's own checks (a bad year or DOI is named beside its field and nothing is stored), then
stores them through ``BibliographyService.save_details``: one atomic write, nothing re-embedded.
Citations and BibTeX use the edit from then on, across relaunches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

if TYPE_CHECKING:
    from haiku_desk.services.bibliography import Bibliographic, BibliographyService
    from haiku_desk.services.entries import LibraryEntry



class DetailsDialog(QDialog):
    """The form. ``saved`` is emitted once the library stored the edit."""

    saved = Signal(str)  # document id

    def __init__(
        self,
        service: BibliographyService,
        document_id: str,
        record: Bibliographic | None,
        title: str,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.service = service
        self.document_id = document_id
        self.record = record
        self.setWindowTitle("Edit details")
        self.setAccessibleName(f"Edit details of {title}")
        self.title_edit = QLineEdit((record.title if record and record.title else None) or title)
        self.title_edit.setCursorPosition(0)  # a long title shows its beginning
        self.initial_title = self.title_edit.text()
        self.authors_edit = QPlainTextEdit(service.authors_text(record))
        self.authors_edit.setPlaceholderText("One per line: Family, Given")
        self.authors_edit.setTabChangesFocus(True)
        self.authors_edit.setFixedHeight(self.fontMetrics().lineSpacing() * 5 + 12)
        self.year_edit = QLineEdit(str(record.year) if record and record.year else "")
        self.year_edit.setPlaceholderText("e.g. 2021")
        self.venue_edit = QLineEdit(record.venue or "" if record else "")
        self.venue_edit.setPlaceholderText("Journal, proceedings or book")
        self.doi_edit = QLineEdit(record.doi or "" if record else "")
        self.doi_edit.setPlaceholderText("10.1234/abcd")
        self.errors: dict[str, QLabel] = {}
        form = QFormLayout()
        for name, label, edit in (
            ("title", "&Title", self.title_edit),
            ("authors", "&Authors", self.authors_edit),
            ("year", "&Year", self.year_edit),
            ("venue", "&Venue / journal", self.venue_edit),
            ("doi", "&DOI", self.doi_edit),
        ):
            edit.setAccessibleName(label.replace("&", ""))
            form.addRow(label, edit)
            error = QLabel()
            error.setProperty("textRole", "error")  # the theme's danger colour
            error.setWordWrap(True)
            error.setAccessibleName(f"{label.replace('&', '')} error")
            error.hide()
            form.addRow("", error)
            self.errors[name] = error
        source = record.source if record else "none"
        self.source_label = QLabel(_source_text(source))
        self.source_label.setWordWrap(True)
        self.source_label.setStyleSheet("color: palette(placeholder-text);")
        self.status = QLabel()  # a failure to store, in words
        self.status.setProperty("textRole", "error")
        self.status.setWordWrap(True)
        self.status.hide()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.source_label)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)
        self.resize(max(480, self.sizeHint().width()), self.sizeHint().height())
        self.pending: Any = None  # the save being stored

    @property
    def save_button(self) -> Any:
        return self.buttons.button(QDialogButtonBox.StandardButton.Save)

    def edited(self) -> Bibliographic:
        """The record as the form says (an error ``service.field_error`` names for a bad field)."""
        return self.service.edited(
            self.record,
            title=self.title_edit.text(),
            authors=self.authors_edit.toPlainText(),
            year=self.year_edit.text(),
            venue=self.venue_edit.text(),
            doi=self.doi_edit.text(),
        )

    def show_error(self, field: str, message: str) -> None:
        for name, label in self.errors.items():
            label.setVisible(name == field)
            if name == field:
                label.setText(message[:1].upper() + message[1:] + ".")
        edit = {"title": self.title_edit, "authors": self.authors_edit, "year": self.year_edit,
                "venue": self.venue_edit, "doi": self.doi_edit}.get(field)
        if edit is not None:
            edit.setFocus()

    def save(self) -> None:
        self.status.hide()
        try:
            record = self.edited()
        except Exception as exc:
            if (error := self.service.field_error(exc)) is None:
                raise
            self.show_error(*error)
            return
        for label in self.errors.values():
            label.hide()
        self.save_button.setEnabled(False)
        # The document is renamed only when the person changed the title here.
        changed = self.title_edit.text().strip() != self.initial_title.strip()
        self.pending = self.service.save_details(self.document_id, record, self.title_edit.text() if changed else None)
        self.pending.add_done_callback(self._stored)

    def _stored(self, future: Any) -> None:
        self.save_button.setEnabled(True)
        if future.cancelled():
            return
        exc = future.exception()
        if (error := self.service.field_error(exc)) is not None:
            self.show_error(*error)
        elif exc is not None:  # the store refused: say why; the dialog keeps what was typed
            self.status.setText(f"Not saved: {exc}")
            self.status.show()
        else:
            self.saved.emit(self.document_id)
            self.accept()


def _source_text(source: str) -> str:
    return {
        "zotero": "These details came from Zotero.",
        "first-page": "These details were read from the document's first page; check them.",
        "pdf-info": "These details were read from the file's metadata; check them.",
        "user": "You edited these details.",
    }.get(source, "No details were found in the file.")


class DetailsAction:
    """The "Edit details…" entry of a library row's context menu, and its dialog."""

    def __init__(
        self, service: BibliographyService, parent: QWidget, selected: Callable[[], list[LibraryEntry]]
    ) -> None:
        self.selected = selected  # the library rows selected now (the action acts on one)
        self.service = service
        self.parent = parent
        self.dialog: DetailsDialog | None = None
        self.action = QAction("Edit details…", parent)
        self.action.setObjectName("edit_details")
        self.action.setToolTip("Edit the title, authors, year, venue and DOI citations use")
        self.action.triggered.connect(self.open_for_selection)

    def open_for_selection(self) -> Any:
        """Read the selected document's details, then open the form (non-blocking)."""
        selected = [e for e in self.selected() if e.document_id]
        if len(selected) != 1:
            return None
        document_id = selected[0].document_id
        assert document_id is not None
        future = self.service.details(document_id)

        def loaded(f: Any) -> None:
            if f.cancelled() or f.exception() is not None:
                return  # the service reported it
            record, title = f.result()
            self.open(document_id, record, title)

        future.add_done_callback(loaded)
        return future

    def open(self, document_id: str, record: Bibliographic | None, title: str) -> DetailsDialog:
        if self.dialog is not None:
            self.dialog.close()
        dialog = DetailsDialog(self.service, document_id, record, title, self.parent)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.finished.connect(lambda _result: setattr(self, "dialog", None))
        self.dialog = dialog
        dialog.open()
        return dialog
