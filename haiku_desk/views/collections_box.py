"""The library pane's collections: each listed with its document count and a check box that
makes it the chat's scope, and a menu to make one (from the selected documents or a folder),
rename or delete it.

Ticking a collection is an explicit choice of scope, like ticking documents: the chat header
then names the collection (never a silent scope). Ticking documents one by one, or "All
documents", unticks it. Dialogs are non-blocking (``open()``), as elsewhere in the pane.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from haiku_desk.views.widgets import confirm_delete

NAME_ROLE = Qt.ItemDataRole.UserRole + 1
VISIBLE_ROWS = 3  # the list grows to this many rows, then scrolls
FOLDED_SETTING = "library_pane/collections_folded"


def collection_label(name: str, count: int) -> str:
    return f"{name} ({count})"


class CollectionsBox(QWidget):
    # The collection the user ticked as the chat's scope (its name), or None when they
    # unticked it (back to all documents). Never emitted by show_chosen().
    collectionChosen = Signal(object)  # noqa: N815 - Qt's naming, like LibraryPane.scopeChanged
    folded_changed = Signal(bool)  # the list folded away (True) or shown

    def __init__(
        self, collections: Any, selected_document_ids: Callable[[], list[str]], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.collections = collections
        self.selected_document_ids = selected_document_ids
        self.dialog: QInputDialog | QMessageBox | None = None  # the open dialog, if any
        self._chosen: str | None = None
        self._showing = False  # set while the list is rebuilt: item changes are not the user's

        # the title folds the list away (a person's choice is remembered; without one the
        # library pane folds it in a short window), and counts the collections
        self.title = QToolButton()
        self.title.setText("Collections")
        self.title.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.title.setCheckable(True)
        self.title.setAutoRaise(True)
        self.title.setArrowType(Qt.ArrowType.DownArrow)
        self.title.setAccessibleName("Hide the collections")
        self._folded = False
        self.menu_button = QToolButton()
        self.menu_button.setText("Manage")
        self.menu_button.setAccessibleName("Collection actions")
        self.menu_button.setToolTip("Make a collection from the selected documents or a folder; rename or delete one")
        self.menu_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.menu_button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Preferred)
        menu = QMenu(self.menu_button)
        self.new_from_selection_action = menu.addAction("New from selected documents…", self.create_from_selection)
        self.new_from_folder_action = menu.addAction("New from folder…", self.choose_folder)
        self.add_selection_action = menu.addAction("Add selected documents", self.add_selection)
        self.remove_selection_action = menu.addAction("Remove selected documents", self.remove_selection)
        menu.addSeparator()
        self.rename_action = menu.addAction("Rename…", self.rename_current)
        self.delete_action = menu.addAction("Delete…", self.delete_current)
        menu.aboutToShow.connect(self._update_actions)
        self.menu_button.setMenu(menu)
        self.menu = menu

        self.list = QListWidget()
        self.list.setAccessibleName("Collections")
        self.list.setToolTip("Tick a collection to make it what the chat searches")
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.list.itemChanged.connect(self._item_changed)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._context_menu)

        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.addWidget(self.title)
        header.addStretch(1)
        header.addWidget(self.menu_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(header)
        layout.addWidget(self.list)

        collections.collections_changed.connect(self._show)
        self._show(collections.collections)
        from PySide6.QtCore import QSettings

        self.title.toggled.connect(self.fold)
        self.set_folded(bool(QSettings().value(FOLDED_SETTING, False, type=bool)))

    def chosen_fold(self) -> bool:
        """Whether the person folded or unfolded the list themselves (kept in QSettings)."""
        from PySide6.QtCore import QSettings

        return QSettings().contains(FOLDED_SETTING)

    def fold(self, shown: bool) -> None:
        """The person shows or folds away the list (the header stays); remembered across
        starts."""
        from PySide6.QtCore import QSettings

        QSettings().setValue(FOLDED_SETTING, not shown)
        self.set_folded(not shown)

    def set_folded(self, folded: bool) -> None:
        """Fold the list away or show it, without making it the person's choice (the library
        pane's default in a short window)."""
        self._folded = folded
        self.title.blockSignals(True)
        self.title.setChecked(not folded)
        self.title.blockSignals(False)
        self.list.setVisible(not folded and self.list.count() > 0)
        self.title.setArrowType(Qt.ArrowType.RightArrow if folded else Qt.ArrowType.DownArrow)
        self.title.setAccessibleName("Show the collections" if folded else "Hide the collections")
        self.folded_changed.emit(folded)

    def folded(self) -> bool:
        return self._folded

    def unfolded_extra_height(self) -> int:
        """What showing the list adds to the folded header's height."""
        if self.list.count() == 0:
            return 0
        layout = self.layout()
        return self.list.maximumHeight() + (layout.spacing() if layout is not None else 0)

    # --- what is listed ---------------------------------------------------------------------

    def names(self) -> list[str]:
        return [self.list.item(r).data(NAME_ROLE) for r in range(self.list.count())]

    def labels(self) -> list[str]:
        return [self.list.item(r).text() for r in range(self.list.count())]

    def chosen(self) -> str | None:
        return self._chosen

    def current_name(self) -> str | None:
        """The collection the menu acts on: the one selected in the list, else the ticked one."""
        item = self.list.currentItem()
        if item is not None and item.isSelected():
            return item.data(NAME_ROLE)
        return self._chosen if self._chosen in self.names() else None

    def _show(self, found: list[Any]) -> None:
        current = self.current_name()
        self._showing = True
        try:
            self.list.clear()
            for collection in found:
                item = QListWidgetItem(collection_label(collection.name, collection.count))
                item.setData(NAME_ROLE, collection.name)
                item.setToolTip(f"{collection.name}: {collection.count} document(s); tick to search only these")
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(Qt.CheckState.Checked if collection.name == self._chosen else Qt.CheckState.Unchecked)
                self.list.addItem(item)
                if collection.name == current:
                    self.list.setCurrentItem(item)
        finally:
            self._showing = False
        self.list.setVisible(bool(found) and not self._folded)
        self.title.setText(f"Collections ({len(found)})" if found else "Collections")
        rows = max(1, min(VISIBLE_ROWS, len(found)))
        row_height = self.list.sizeHintForRow(0) if found else self.fontMetrics().height() + 4
        # At most this high; the library pane's splitter may make it smaller, or collapse the box.
        self.list.setMaximumHeight(rows * row_height + 2 * self.list.frameWidth())
        self.list.setMinimumHeight(min(row_height, self.list.maximumHeight()))
        self._update_actions()

    def show_chosen(self, name: str | None) -> None:
        """Tick the collection the conversation's scope was chosen as (None: none); never emits."""
        self._chosen = name
        self._showing = True
        try:
            for r in range(self.list.count()):
                item = self.list.item(r)
                ticked = item.data(NAME_ROLE) == name
                item.setCheckState(Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
        finally:
            self._showing = False

    def choose(self, name: str | None) -> None:
        """Tick ``name`` (None: untick), as the user's click would."""
        for r in range(self.list.count()):
            item = self.list.item(r)
            if item.data(NAME_ROLE) == (name if name is not None else self._chosen):
                item.setCheckState(Qt.CheckState.Checked if name is not None else Qt.CheckState.Unchecked)
                return

    def _item_changed(self, item: QListWidgetItem) -> None:
        if self._showing:
            return
        name = item.data(NAME_ROLE)
        if item.checkState() == Qt.CheckState.Checked:
            self.show_chosen(name)  # one collection at a time
            self.collectionChosen.emit(name)
        elif name == self._chosen:
            self._chosen = None
            self.collectionChosen.emit(None)

    # --- actions ----------------------------------------------------------------------------

    def _update_actions(self) -> None:
        selected = bool(self.selected_document_ids())
        name = self.current_name()
        current = name is not None
        named = f" “{name}”" if current else ""  # the menu says which collection it acts on
        self.add_selection_action.setText(f"Add selected documents to{named or ' the collection'}")
        self.remove_selection_action.setText(f"Remove selected documents from{named or ' the collection'}")
        self.rename_action.setText(f"Rename{named}…")
        self.delete_action.setText(f"Delete{named}…")
        self.new_from_selection_action.setEnabled(selected)
        self.add_selection_action.setEnabled(selected and current)
        self.remove_selection_action.setEnabled(selected and current)
        self.rename_action.setEnabled(current)
        self.delete_action.setEnabled(current)

    def _context_menu(self, pos: Any) -> None:
        item = self.list.itemAt(pos)
        if item is None:
            return
        self.list.setCurrentItem(item)
        self._update_actions()
        menu = QMenu(self.list)
        menu.setAccessibleName("Collection actions")
        for action in (self.add_selection_action, self.remove_selection_action, self.rename_action, self.delete_action):
            menu.addAction(action)
        menu.popup(self.list.viewport().mapToGlobal(pos))
        self.context_menu = menu

    def _ask_name(self, title: str, label: str, text: str, done: Callable[[str], None]) -> QInputDialog:
        if self.dialog is not None:
            self.dialog.close()
        dialog = QInputDialog(self)
        dialog.setWindowTitle(title)
        dialog.setLabelText(label)
        dialog.setTextValue(text)
        dialog.setAccessibleName(title)

        def finished(result: int) -> None:
            if result == QInputDialog.DialogCode.Accepted and dialog.textValue().strip():
                done(dialog.textValue().strip())
            self.dialog = None
            dialog.deleteLater()

        dialog.finished.connect(finished)
        self.dialog = dialog
        dialog.open()
        return dialog

    def create_from_selection(self) -> QInputDialog | None:
        ids = self.selected_document_ids()
        if not ids:
            return None
        what = "1 selected document" if len(ids) == 1 else f"{len(ids)} selected documents"
        return self._ask_name(
            "New collection", f"Name of the collection of the {what}:", "", lambda name: self.collections.create(name, ids)
        )

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "New collection from the documents in a folder")
        if folder:
            self.create_from_folder(folder)

    def create_from_folder(self, folder: str) -> QInputDialog:
        from pathlib import Path

        return self._ask_name(
            "New collection",
            f"Name of the collection of the library's documents in {folder}:",
            Path(folder).name,
            lambda name: self.collections.create_from_folder(name, folder),
        )

    def add_selection(self) -> None:
        name, ids = self.current_name(), self.selected_document_ids()
        if name is not None and ids:
            self.collections.add(name, ids)

    def remove_selection(self) -> None:
        name, ids = self.current_name(), self.selected_document_ids()
        if name is not None and ids:
            self.collections.remove(name, ids)

    def rename_current(self) -> QInputDialog | None:
        name = self.current_name()
        if name is None:
            return None
        return self._ask_name(
            "Rename collection", f"New name of the collection “{name}”:", name, lambda new: self.collections.rename(name, new)
        )

    def delete_current(self) -> QMessageBox | None:
        name = self.current_name()
        if name is None:
            return None
        found = self.collections.find(name)
        count = found.count if found is not None else 0
        if self.dialog is not None:
            self.dialog.close()

        def closed() -> None:
            self.dialog = None

        self.dialog = confirm_delete(
            self,
            title="Delete collection",
            question=f"Delete the collection “{name}”?",
            consequence=f"Its {count} document{'s' if count != 1 else ''} stay in the library; only the collection goes.",
            accessible_name="Confirm deleting the collection",
            on_delete=lambda: self.collections.delete(name),
            on_closed=closed,
        )
        return self.dialog
