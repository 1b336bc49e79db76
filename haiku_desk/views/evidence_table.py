"""The evidence table: documents as rows, questions as columns, every cell cited to its page.

A tab beside the chat. The user picks the documents (the ones ticked in the library, or a
collection), adds columns (a question and the kind of answer: text, number, yes/no, one of a
list), and watches the cells fill. A click on a cell opens its citation in the citation panel,
the passage highlighted, as a citation chip in the chat does; a double-click (or F2) edits the
value by hand, which is kept and marked edited. Columns sort; the filter box keeps the rows
whose text matches, the status box the rows with a flagged cell.

Cells that need a second look are drawn differently, in colour and in words, so neither is the
only cue: a low-confidence value starts with "⚠", a value not found in the document reads "∅ Not
found" ("∅ Not named in it" when the document never names the column's words), a hand-edited
one starts with "✎", a cell filled without a model (the best passage) with "¶", and a value
from the document's bibliographic record (a year, authors, a DOI) with "†"; their tooltips and accessible descriptions say why. The legend under the table names
them.

The pane shows what :class:`~haiku_desk.services.extraction.ExtractionService` gives it and
never touches the library.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QSettings,
    QSortFilterProxyModel,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QAction, QBrush, QColor, QFont, QKeyEvent, QPainter, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from haiku_desk.citations import citation_place
from haiku_desk.services.extraction import (
    COLUMN_TYPES,
    EXPORT_FORMATS,
    CellValue,
    ColumnSpec,
    TableState,
)
from haiku_desk.views.widgets import compact_button, confirm_delete

if TYPE_CHECKING:
    from haiku_desk.services.extraction import ExtractionService, Fill, TableSummary

CELL_ROLE = Qt.ItemDataRole.UserRole + 1  # CellValue | None
SORT_ROLE = Qt.ItemDataRole.UserRole + 2  # what a column sorts by (numbers as numbers)
STATUS_ROLE = Qt.ItemDataRole.UserRole + 3  # the cell's status, "" when empty
DOCUMENT_ROLE = Qt.ItemDataRole.UserRole + 4  # the row's document id

# status -> (text cue before the value, what it means)
CUES: dict[str, tuple[str, str]] = {
    "low_confidence": ("⚠", "Low confidence"),
    "not_found": ("∅", "Not found in this document"),
    "edited": ("✎", "Edited by hand"),
}
SEARCH_ONLY_CUE = ("¶", "Best passage (no model connected)")
RECORD_CUE = ("†", "From the library's bibliographic record of this document")
NOT_FOUND_TEXT = "Not found"
NOT_NAMED_TEXT = "Not named in it"  # the document never names the column's words
PENDING_TEXT = "…"
ANSWERING_TEXT = "answering…"
EMPTY_HINT = (
    "An evidence table asks the same questions of many documents, one row per document, "
    "every answer cited to its page. Choose New table…, then its documents (or a collection) "
    "and its questions."
)
LOADING_HINT = "Loading the library's evidence tables…"  # while the library opens
NO_TABLE_TEXT = "No table yet"
LOADING_TEXT = "Loading tables…"
LEGEND = (
    "⚠ low confidence · ∅ not found in this document · ✎ edited by hand · ¶ best passage, no model"
    " · † from the library's record — click a cell to see its page, double-click to edit"
)
# (light, dark) backgrounds per status: paler than the text, readable in both themes
BACKGROUNDS: dict[str, tuple[str, str]] = {
    "low_confidence": ("#fff1c2", "#5a4a14"),
    "not_found": ("#e6e6e6", "#3a3a3a"),
    "edited": ("#dcebff", "#1f3a5c"),
}
# the stronger colour of a flagged cell's left stripe (the same in both themes)
STRIPES = {"low_confidence": "#c98a00", "not_found": "#8a8a8a", "edited": "#2f6fd6"}
STRIPE_WIDTH = 4
STATUS_FILTERS = (
    ("All rows", ""),
    ("Rows with a low-confidence cell", "low_confidence"),
    ("Rows with a cell not found", "not_found"),
    ("Rows with an edited cell", "edited"),
)
COLUMN_TYPE_LABELS = {
    "text": "Text",
    "number": "Number (with a unit)",
    "yes-no": "Yes / no / unclear",
    "category": "One of a list",
}
MODE_LABELS = {
    "tools": "Cells are answered by the chat's model, which searches each document and cites it.",
    "fallback": "Cells are answered by the chat's model from each document's best passages.",
    "search-only": (
        "No chat model is connected: each cell shows the best passage of its document (¶). "
        "Connect one in Settings › Models… for written answers."
    ),
}
DIALOG_WIDTH = 480
REMOVED_ROW = "removed from the library"  # a row whose document was deleted (as the reader says it)
REMOVED_ROW_TIP = (
    "This document was removed from the library. Its row is kept with the values and quotes "
    "filled before; a click on a value opens its kept quote. It is not answered again."
)
TOOLTIP_CHARS = 90  # a cell's tooltip lines are wrapped at words to this width
EXPORT_FOLDER_KEY = "evidence/export_folder"  # QSettings: the folder of the last export
DOCUMENT_COLUMN_WIDTH = 220
DOCUMENT_SHARE = 0.22  # of the table's width, for the documents' titles
ROW_LINES = 2  # a cell shows two lines of its value, wrapped at words
MIN_COLUMN_WIDTH = 120
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")


def _is_dark(widget: QWidget) -> bool:
    return widget.palette().color(QPalette.ColorRole.Window).lightness() < 128


def cell_text(cell: CellValue | None, *, answering: bool = False) -> str:
    """What a cell shows: its value with its status cue in words' place (never colour alone)."""
    if cell is None:
        return ANSWERING_TEXT if answering else ""
    if cell.status == "not_found" and not cell.value:
        return f"{CUES['not_found'][0]} {NOT_NAMED_TEXT if cell.not_named else NOT_FOUND_TEXT}"
    value = " ".join(cell.value.split())
    cue = CUES.get(cell.status)
    if cue is not None:
        value = f"{cue[0]} {value}"
    elif cell.search_only:
        value = f"{SEARCH_ONLY_CUE[0]} {value}"
    elif cell.from_record:
        value = f"{RECORD_CUE[0]} {value}"
    if cell.pages:  # the page as printed ("p. 22" for the PDF's sheet 36)
        value += f"  ({cell.first_page or f'p. {cell.pages[0]}'})"
    return value


def cell_description(cell: CellValue | None, column: ColumnSpec | None = None) -> str:
    """The tooltip and accessible description: status, why, the quote, where it is from."""
    if cell is None:
        return "Not filled yet"
    lines: list[str] = []
    cue = CUES.get(cell.status)
    if cue is not None:
        lines.append(cue[1] + (f": {'; '.join(cell.reasons)}" if cell.reasons else ""))
    elif cell.search_only:
        lines.append(SEARCH_ONLY_CUE[1])
    elif cell.from_record:  # its reasons say which record and where the document names it
        why = "; ".join(cell.reasons)
        lines.append(why[:1].upper() + why[1:] if why else RECORD_CUE[1])
    else:
        lines.append("Grounded in the cited passage")
    if cell.status == "edited" and cell.edited_from is not None:
        lines.append(f"Was: {cell.edited_from or '(empty)'}")
    if cell.quote:
        lines.append(f"“{_short(cell.quote, 300)}”")
    if cell.citations:
        lines.append(citation_place(cell.citations[0]))
        lines.append("Click to see the page")
    if column is not None:
        lines.append(f"Asked: {column.asked}")
    return "\n".join(lines)


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sort_key(cell: CellValue | None, column: ColumnSpec | None) -> Any:
    if cell is None:
        return (2, "")
    if cell.status == "not_found" and not cell.value:
        return (1, "")
    if column is not None and column.type == "number":
        match = _NUMBER.search(cell.value)
        if match:
            try:
                return (0, float(match.group().replace(",", "")))
            except ValueError:
                pass
        return (0, float("inf"))
    return (0, cell.value.casefold())


class EvidenceTableModel(QAbstractTableModel):
    """The open table: column 0 names the document, the others are the table's columns."""

    edit_requested = Signal(str, str, str)  # document id, column id, value

    def __init__(self, titles: Callable[[str], str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._titles = titles
        self.table: TableState | None = None
        self.answering: tuple[str, str] | None = None
        self._rows: list[str] = []
        self._row_of: dict[str, int] = {}
        self.dark = False

    def set_table(self, table: TableState | None) -> None:
        self.beginResetModel()
        self.table = table
        # the rows to fill, then those whose document was removed from the library (kept)
        self._rows = [*table.rows, *table.removed] if table is not None else []
        self._row_of = {d: i for i, d in enumerate(self._rows)}
        self.answering = None
        self.endResetModel()

    def is_removed(self, document_id: str) -> bool:
        """Whether the row's document was removed from the library (its cells kept)."""
        return self.table is not None and document_id in self.table.removed

    def update_cell(self, cell: CellValue) -> None:
        if self.table is None:
            return
        self.table.cells[cell.key] = cell
        self._changed(cell.document_id, cell.column_id)

    def set_answering(self, key: tuple[str, str] | None) -> None:
        before, self.answering = self.answering, key
        for item in (before, key):
            if item is not None:
                self._changed(*item)

    def _changed(self, document_id: str, column_id: str) -> None:
        index = self.index_of(document_id, column_id)
        if index.isValid():
            self.dataChanged.emit(index, index)

    def index_of(self, document_id: str, column_id: str) -> QModelIndex:
        if self.table is None or document_id not in self._row_of:
            return QModelIndex()
        for i, column in enumerate(self.table.columns):
            if column.id == column_id:
                return self.index(self._row_of[document_id], i + 1)
        return QModelIndex()

    def column_at(self, section: int) -> ColumnSpec | None:
        if self.table is None or section < 1 or section > len(self.table.columns):
            return None
        return self.table.columns[section - 1]

    def document_at(self, row: int) -> str:
        return self._rows[row]

    # --- Qt's model ---------------------------------------------------------------------------

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        if parent.isValid() or self.table is None:
            return 0
        return 1 + len(self.table.columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if orientation != Qt.Orientation.Horizontal:
            return None
        if section == 0:
            return "Document" if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole) else None
        column = self.column_at(section)
        if column is None:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return column.name
        if role == Qt.ItemDataRole.ToolTipRole:
            asked = column.asked if column.asked == column.name else f"{column.name}: {column.asked}"
            return f"{asked}\nAnswer: {column.describe_type()}\nRight-click to edit or remove"
        return None

    def flags(self, index: QModelIndex | QPersistentModelIndex) -> Qt.ItemFlag:
        base = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if index.column() > 0 and not (index.isValid() and self.is_removed(self._rows[index.row()])):
            base |= Qt.ItemFlag.ItemIsEditable  # a removed document's row is kept as it was
        return base

    def _cell(self, index: QModelIndex | QPersistentModelIndex) -> tuple[CellValue | None, ColumnSpec | None]:
        column = self.column_at(index.column())
        if self.table is None or column is None:
            return None, None
        return self.table.cell(self._rows[index.row()], column.id), column

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or self.table is None:
            return None
        document_id = self._rows[index.row()]
        if role == DOCUMENT_ROLE:
            return document_id
        if index.column() == 0:
            removed = self.is_removed(document_id)
            title = self.table.removed[document_id] if removed else self._titles(document_id)
            if role == SORT_ROLE:
                return title.casefold()
            if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
                return f"{title} — {REMOVED_ROW}" if removed else title
            if role == Qt.ItemDataRole.ToolTipRole:
                return f"{title}\n{REMOVED_ROW_TIP}" if removed else title
            if role == Qt.ItemDataRole.FontRole and removed:
                font = QFont()
                font.setItalic(True)
                return font
            return None
        cell, column = self._cell(index)
        answering = column is not None and self.answering == (document_id, column.id)
        if role == Qt.ItemDataRole.DisplayRole:
            return cell_text(cell, answering=answering)
        if role == Qt.ItemDataRole.EditRole:
            return cell.value if cell is not None else ""
        if role == CELL_ROLE:
            return cell
        if role == STATUS_ROLE:
            return cell.status if cell is not None else ""
        if role == SORT_ROLE:
            return _sort_key(cell, column)
        if role == Qt.ItemDataRole.ToolTipRole:  # wrapped: a plain tooltip never wraps itself
            lines = cell_description(cell, column).split("\n")
            return "\n".join(textwrap.fill(line, TOOLTIP_CHARS) for line in lines)
        if role == Qt.ItemDataRole.AccessibleDescriptionRole:
            return cell_description(cell, column)
        if role == Qt.ItemDataRole.AccessibleTextRole:
            text = cell_text(cell, answering=answering)
            if cell is not None and (cue := CUES.get(cell.status)) is not None:
                text = f"{cue[1]}: {text}"
            return text
        if role == Qt.ItemDataRole.BackgroundRole and cell is not None:
            colours = BACKGROUNDS.get(cell.status)
            if colours is not None:
                return QBrush(QColor(colours[1] if self.dark else colours[0]))
            return None
        if role == Qt.ItemDataRole.FontRole and (cell is not None or answering):
            if answering or (cell is not None and cell.status != "edited" and (cell.status == "not_found" or cell.search_only)):
                font = QFont()
                font.setItalic(True)
                return font
        return None

    def setData(self, index: QModelIndex | QPersistentModelIndex, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802
        column = self.column_at(index.column())
        if role != Qt.ItemDataRole.EditRole or column is None or self.table is None:
            return False
        text = " ".join(str(value).split())
        cell = self.table.cell(self._rows[index.row()], column.id)
        if cell is not None and cell.value == text:
            return False
        self.edit_requested.emit(self._rows[index.row()], column.id, text)
        return True


class EvidenceFilter(QSortFilterProxyModel):
    """Rows whose text matches the filter box, and that hold a cell of the chosen status."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.text = ""
        self.status = ""
        self.setSortRole(SORT_ROLE)

    def set_filter(self, text: str, status: str) -> None:
        self.text = text.casefold().strip()
        self.status = status
        self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex) -> bool:  # noqa: N802
        model = self.sourceModel()
        columns = model.columnCount()
        if self.status:
            statuses = {model.data(model.index(source_row, c), STATUS_ROLE) for c in range(1, columns)}
            if self.status not in statuses:
                return False
        if not self.text:
            return True
        for c in range(columns):
            shown = model.data(model.index(source_row, c), Qt.ItemDataRole.DisplayRole) or ""
            if self.text in str(shown).casefold():
                return True
        return False

    def lessThan(self, left: QModelIndex | QPersistentModelIndex, right: QModelIndex | QPersistentModelIndex) -> bool:  # noqa: N802
        a, b = left.data(SORT_ROLE), right.data(SORT_ROLE)
        try:
            return bool(a < b)
        except TypeError:
            return str(a) < str(b)


class CellDelegate(QStyledItemDelegate):
    """Paints a flagged cell's status colour under its text, with a stripe of the stronger
    colour at its left edge. Painted here because the app's stylesheet styles table items,
    and a styled item ignores the model's background."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:
        status = index.data(STATUS_ROLE)
        colours = BACKGROUNDS.get(status) if isinstance(status, str) else None
        if colours is None:
            super().paint(painter, option, index)
            return
        dark = _is_dark(option.widget) if isinstance(option.widget, QWidget) else False
        painter.save()
        painter.fillRect(option.rect, QColor(colours[1] if dark else colours[0]))
        painter.restore()
        shifted = QStyleOptionViewItem(option)
        shifted.rect = option.rect.adjusted(STRIPE_WIDTH, 0, 0, 0)  # the text clear of the stripe
        super().paint(painter, shifted, index)
        painter.save()  # the stripe on top: seen when the cell is selected too
        stripe = option.rect.adjusted(0, 0, 0, 0)
        stripe.setWidth(STRIPE_WIDTH)
        painter.fillRect(stripe, QColor(STRIPES[status]))
        painter.restore()


class EvidenceTableView(QTableView):
    """The table: Return or a click opens a cell's citation; F2 or a double-click edits."""

    open_requested = Signal(QModelIndex)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.state() != QAbstractItemView.State.EditingState:
            index = self.currentIndex()
            if index.isValid():
                self.open_requested.emit(index)
                return
        super().keyPressEvent(event)


class _CheckedDialog(QDialog):
    """A form whose OK first checks what was entered: a problem is shown above the buttons and
    the dialog stays open."""

    error: QLabel

    def _lay_out(self, form: QFormLayout, *, ok_text: str = "", error_name: str = "") -> None:
        """The form, the (hidden) problem and OK/Cancel, one under the other."""
        self.error = QLabel()
        self.error.setWordWrap(True)
        if error_name:
            self.error.setAccessibleName(error_name)
        self.error.hide()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        ok = buttons.button(QDialogButtonBox.StandardButton.Ok)
        if ok_text and ok is not None:
            ok.setText(ok_text)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)

    def problem(self) -> str:
        """Why what was entered cannot be saved ("" when it can)."""
        return ""

    def _accept(self) -> None:
        problem = self.problem()
        if problem:
            self.error.setText(problem)
            self.error.show()
            return
        self.accept()


class ColumnDialog(_CheckedDialog):
    """A column's header, its question and the kind of answer (add and edit)."""

    def __init__(self, parent: QWidget | None = None, column: ColumnSpec | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Edit column" if column is not None else "Add column")
        self.setAccessibleName(self.windowTitle())
        self.setMinimumWidth(DIALOG_WIDTH)
        self.name = QLineEdit(column.name if column else "")
        self.name.setPlaceholderText("e.g. Sample size")
        self.name.setAccessibleName("Column name")
        self.question = QPlainTextEdit(column.question if column else "")
        self.question.setPlaceholderText("The question asked of each document (the name when empty)")
        self.question.setAccessibleName("Question")
        self.question.setTabChangesFocus(True)
        self.question.setFixedHeight(self.fontMetrics().lineSpacing() * 4)
        self.type = QComboBox()
        self.type.setAccessibleName("Kind of answer")
        for kind in COLUMN_TYPES:
            self.type.addItem(COLUMN_TYPE_LABELS[kind], kind)
        if column is not None:
            self.type.setCurrentIndex(max(0, COLUMN_TYPES.index(column.type) if column.type in COLUMN_TYPES else 0))
        self.unit = QLineEdit(column.unit or "" if column else "")
        self.unit.setPlaceholderText("e.g. participants, USD million")
        self.unit.setAccessibleName("Unit")
        self.categories = QLineEdit(", ".join(column.categories) if column else "")
        self.categories.setPlaceholderText("e.g. RCT, cohort, case study")
        self.categories.setAccessibleName("Categories")

        form = QFormLayout()
        form.addRow("&Name:", self.name)
        form.addRow("&Question:", self.question)
        form.addRow("&Answer:", self.type)
        form.addRow("&Unit:", self.unit)
        form.addRow("&Categories:", self.categories)
        self._form = form
        self._lay_out(form, error_name="Why the column cannot be saved")
        self.type.currentIndexChanged.connect(self._type_changed)
        self._type_changed()

    def _type_changed(self, *_: object) -> None:
        kind = self.type.currentData()
        self._form.setRowVisible(self.unit, kind == "number")
        self._form.setRowVisible(self.categories, kind == "category")

    def values(self) -> dict[str, Any]:
        kind = self.type.currentData()
        categories = [c.strip() for c in self.categories.text().split(",") if c.strip()]
        return {
            "name": " ".join(self.name.text().split()),
            "question": " ".join(self.question.toPlainText().split()),
            "type": kind,
            "unit": (self.unit.text().strip() or None) if kind == "number" else None,
            "categories": categories if kind == "category" else [],
        }

    def problem(self) -> str:
        values = self.values()
        if not values["name"]:
            return "Give the column a name."
        if values["type"] == "category" and len(values["categories"]) < 2:
            return "List at least two categories, separated by commas."
        return ""


class DocumentsChooser(QWidget):
    """Where a table's rows come from: documents chosen in its own list (the library's ticks to
    begin with), or a collection. Choosing here never changes the library's ticks, which are
    what the open chat searches. The list is chosen first when the user ticked some documents
    (``prefer_ticked``), a collection when everything is ticked and the library has one."""

    def __init__(
        self,
        ticked: Callable[[], list[str]],
        collections: Callable[[], list[tuple[str, int]]],
        parent: QWidget | None = None,
        *,
        prefer_ticked: bool = False,
        documents: Callable[[], list[tuple[str, str]]] = list,
    ) -> None:
        super().__init__(parent)
        chosen = set(ticked())
        self.use_ticked = QRadioButton()
        self.documents = QListWidget()
        self.documents.setAccessibleName("Documents of the table")
        for document_id, title in documents():
            item = QListWidgetItem(title)
            item.setToolTip(title)
            item.setData(Qt.ItemDataRole.UserRole, document_id)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if document_id in chosen else Qt.CheckState.Unchecked)
            self.documents.addItem(item)
        self.documents.setFixedHeight(self.fontMetrics().lineSpacing() * 7)
        self.documents.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.documents.setTextElideMode(Qt.TextElideMode.ElideRight)  # the whole title in its tooltip
        self.documents.itemChanged.connect(self._documents_changed)
        self._documents_changed()
        count = len(self.chosen_documents())
        self.use_collection = QRadioButton("The collection:")
        self.collection = QComboBox()
        self.collection.setAccessibleName("Collection")
        for name, size in collections():
            self.collection.addItem(f"{name} ({size})", name)
        if not self.collection.count():
            self.use_collection.setEnabled(False)
            self.collection.setEnabled(False)
            self.use_ticked.setChecked(True)
        elif prefer_ticked and count:
            self.use_ticked.setChecked(True)
        else:
            self.use_collection.setChecked(True)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.use_collection)
        row.addWidget(self.collection, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.use_ticked)
        layout.addWidget(self.documents)
        layout.addLayout(row)
        self.collection.activated.connect(lambda _i: self.use_collection.setChecked(True))

    def chosen_documents(self) -> list[str]:
        items = (self.documents.item(i) for i in range(self.documents.count()))
        return [
            str(item.data(Qt.ItemDataRole.UserRole))
            for item in items
            if item is not None and item.checkState() == Qt.CheckState.Checked
        ]

    def _documents_changed(self, *_: object) -> None:
        self.use_ticked.setText(f"These documents ({len(self.chosen_documents())} chosen):")
        if _:  # a box ticked by the user: the list is the choice
            self.use_ticked.setChecked(True)

    def choice(self) -> tuple[list[str] | None, str | None]:
        """(document ids, None) for the documents chosen in the list, (None, name) for a
        collection."""
        if self.use_collection.isChecked() and self.collection.currentData():
            return None, str(self.collection.currentData())
        return self.chosen_documents(), None


class NewTableDialog(_CheckedDialog):
    """A new table: its name, its documents and its first columns (one question per line)."""

    def __init__(
        self,
        ticked: Callable[[], list[str]],
        collections: Callable[[], list[tuple[str, int]]],
        parent: QWidget | None = None,
        *,
        name: str = "",
        prefer_ticked: bool = False,
        documents: Callable[[], list[tuple[str, str]]] = list,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("New evidence table")
        self.setAccessibleName("New evidence table")
        self.setMinimumWidth(DIALOG_WIDTH)
        self.name = QLineEdit(name)
        self.name.setAccessibleName("Table name")
        self.documents = DocumentsChooser(ticked, collections, prefer_ticked=prefer_ticked, documents=documents)
        self.columns = QPlainTextEdit()
        self.columns.setAccessibleName("Columns")
        self.columns.setTabChangesFocus(True)
        self.columns.setPlaceholderText("One column per line, e.g.\nSample size\nMethod\nMain finding")
        self.columns.setFixedHeight(self.fontMetrics().lineSpacing() * 6)
        form = QFormLayout()
        form.addRow("&Name:", self.name)
        form.addRow("Rows:", self.documents)
        form.addRow("&Columns:", self.columns)
        self._lay_out(form, ok_text="Create and fill")

    def column_names(self) -> list[str]:
        return [" ".join(line.split()) for line in self.columns.toPlainText().splitlines() if line.strip()]

    def problem(self) -> str:
        ids, collection = self.documents.choice()
        if not " ".join(self.name.text().split()):
            return "Give the table a name."
        if collection is None and not ids:
            return "Choose the table's documents in the list, or a collection."
        if not self.column_names():
            return "Write at least one column (a question), one per line."
        return ""


class EvidenceTablePane(QWidget):
    """The evidence table tab: choose or create a table, its columns and rows, watch it fill."""

    citation_activated = Signal(object)  # the cell's first Citation, for the citation panel

    def __init__(
        self,
        service: ExtractionService,
        *,
        ticked: Callable[[], Sequence[str] | None] = lambda: None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.service = service
        self._ticked = ticked  # the library's ticks: ids, or None for all documents
        self._collections = service.collection_choices  # (name, count) of the collections
        self.setAccessibleName("Evidence table")
        self.dialog: QDialog | None = None

        self.tables = QComboBox()
        self.tables.setAccessibleName("Evidence tables")
        self.tables.setToolTip("The library's evidence tables")
        self.tables.setPlaceholderText(NO_TABLE_TEXT)
        self.tables.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.tables.setMinimumContentsLength(12)
        self.new_button = compact_button(QPushButton("New table…"))
        self.new_button.setAccessibleName("New evidence table")
        self.table_menu_button = QToolButton()
        self.table_menu_button.setText("Table")
        self.table_menu_button.setAccessibleName("Table actions")
        self.table_menu_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        table_menu = QMenu(self.table_menu_button)
        self.documents_action = table_menu.addAction("Choose documents…")
        self.rename_action = table_menu.addAction("Rename…")
        self.refill_action = table_menu.addAction("Answer every cell again")
        table_menu.addSeparator()
        self.delete_action = table_menu.addAction("Delete table…")
        self.table_menu_button.setMenu(table_menu)
        self.export_button = QToolButton()
        self.export_button.setText("Export")
        self.export_button.setAccessibleName("Export the table")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        export_menu = QMenu(self.export_button)
        self.export_actions: dict[str, QAction] = {}
        for fmt, (label, _suffix) in EXPORT_FORMATS.items():
            action = export_menu.addAction(label + "…")
            action.triggered.connect(lambda _=False, f=fmt: self.choose_export(f))
            self.export_actions[fmt] = action
        self.export_button.setMenu(export_menu)

        self.add_column_button = compact_button(QPushButton("Add column…"))
        self.add_column_button.setAccessibleName("Add column")
        self.fill_button = compact_button(QPushButton("Fill"))
        self.fill_button.setAccessibleName("Fill the empty cells")
        self.fill_button.setToolTip("Answer the cells not filled yet")
        self.stop_button = compact_button(QPushButton("Stop"))
        self.stop_button.setAccessibleName("Stop filling")
        self.stop_button.setToolTip("Stop filling; the cells filled so far are kept")
        self.progress = QProgressBar()
        self.progress.setAccessibleName("Cells filled")
        self.progress.setFormat("%v / %m cells")
        self.progress.setTextVisible(True)
        self.progress.setMaximumWidth(180)
        self.progress.hide()
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter rows…")
        self.filter.setAccessibleName("Filter rows")
        self.filter.setClearButtonEnabled(True)
        self.status_filter = QComboBox()
        self.status_filter.setAccessibleName("Show rows")
        for label, status in STATUS_FILTERS:
            self.status_filter.addItem(label, status)

        self.model = EvidenceTableModel(service.document_title, self)
        self.proxy = EvidenceFilter(self)
        self.proxy.setSourceModel(self.model)
        self.table = EvidenceTableView()
        self.table.setAccessibleName("Evidence table cells")
        self.table.setModel(self.proxy)
        self.table.setItemDelegate(CellDelegate(self.table))
        self.table.viewport().installEventFilter(self)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)  # rows in the table's order
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectItems)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked | QAbstractItemView.EditTrigger.EditKeyPressed
        )
        self.table.setWordWrap(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.setMouseTracking(True)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setDefaultSectionSize(170)
        header.setStretchLastSection(False)
        # a name wider than its column ends in "…" (its tooltip holds it whole), never clipped
        # on both sides as centred text is
        header.setTextElideMode(Qt.TextElideMode.ElideRight)
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self._header_menu)
        header.sectionDoubleClicked.connect(self._header_double_clicked)
        rows = self.table.verticalHeader()
        rows.setVisible(False)
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(int(self.fontMetrics().lineSpacing() * (ROW_LINES + 0.8)))
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._cell_menu)

        self.empty_hint = QLabel(EMPTY_HINT)
        self.empty_hint.setWordWrap(True)
        self.empty_hint.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.empty_hint.setAccessibleName("What an evidence table is")
        self.legend = QLabel(LEGEND)
        self.legend.setWordWrap(True)
        self.legend.setAccessibleName("Legend")
        self.mode_label = QLabel()
        self.mode_label.setWordWrap(True)
        self.mode_label.setAccessibleName("How cells are answered")

        top = QHBoxLayout()
        top.addWidget(self.tables, 1)
        top.addWidget(self.new_button)
        top.addWidget(self.table_menu_button)
        top.addWidget(self.export_button)
        controls = QHBoxLayout()
        controls.addWidget(self.add_column_button)
        controls.addWidget(self.fill_button)
        controls.addWidget(self.stop_button)
        controls.addWidget(self.progress)
        controls.addStretch(0)
        filters = QHBoxLayout()
        filters.addWidget(self.filter, 1)
        filters.addWidget(self.status_filter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(top)
        layout.addLayout(controls)
        layout.addLayout(filters)
        layout.addWidget(self.empty_hint, 1)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.legend)
        layout.addWidget(self.mode_label)

        self.new_button.clicked.connect(self.new_table)
        self.add_column_button.clicked.connect(lambda: self.edit_column(None))
        self.fill_button.clicked.connect(lambda: self.service.fill())
        self.stop_button.clicked.connect(self.service.stop)
        self.documents_action.triggered.connect(self.choose_documents)
        self.rename_action.triggered.connect(self.rename_table)
        self.refill_action.triggered.connect(lambda: self.service.fill(recompute=True))
        self.delete_action.triggered.connect(self.delete_table)
        self.tables.activated.connect(self._table_chosen)
        self.filter.textChanged.connect(self._filter_changed)
        self.status_filter.currentIndexChanged.connect(self._filter_changed)
        # a click opens the cell's citation once a double-click can no longer follow: a
        # double-click edits, and the reader opening at its first click (reader mode in a
        # narrow window) moved the table under the pointer, so the edit never began
        # (tester 16:58)
        self._click_timer = QTimer(self)
        self._click_timer.setSingleShot(True)
        self._clicked_cell = QPersistentModelIndex()
        self._click_timer.timeout.connect(self._open_clicked_cell)
        self.table.clicked.connect(self._cell_clicked)
        self.table.doubleClicked.connect(lambda _index: self._click_timer.stop())
        self.table.open_requested.connect(self.open_cell)
        self.model.edit_requested.connect(self.service.set_value)

        service.tables_changed.connect(self._show_tables)
        service.table_changed.connect(self._show_table)
        service.cell_changed.connect(self.model.update_cell)
        service.fill_started.connect(self._fill_started)
        service.fill_progressed.connect(self._progressed)
        # bound methods, not lambdas: Qt drops them with the pane (a service outliving its pane,
        # as in a test's teardown with a fill still ending, never reaches a deleted widget)
        service.busy_changed.connect(self._service_changed)
        service.mode_changed.connect(self._service_changed)
        service.listed_changed.connect(self._service_changed)
        self._show_tables(service.tables)
        self._show_table(service.current)
        if service.filling is not None:  # resumed at the start, before this pane was made
            self._fill_started(service.filling)

    # --- showing ------------------------------------------------------------------------------

    def _show_tables(self, tables: list[TableSummary]) -> None:
        current = self.service.current.id if self.service.current is not None else None
        self.tables.blockSignals(True)
        self.tables.clear()
        for table in tables:
            self.tables.addItem(f"{table.name} ({table.rows} × {table.columns})", table.id)
        index = self.tables.findData(current) if current is not None else -1
        self.tables.setCurrentIndex(index)
        self.tables.blockSignals(False)
        self._update_controls()

    def _show_table(self, table: TableState | None) -> None:
        self.model.dark = _is_dark(self)
        self.model.set_table(table)
        if table is not None:
            index = self.tables.findData(table.id)
            if index >= 0:
                self.tables.setCurrentIndex(index)
            self.fit_columns()
        self._update_controls()

    def focus_target(self) -> QWidget:
        """Where the keyboard goes when this pane is reached (F6): the table, else New table."""
        return self.table if self.table.isVisibleTo(self) else self.new_button

    def fit_columns(self) -> None:
        """Every column in view when they fit at a readable width (the documents' a little
        wider), else readable widths and the table scrolls sideways."""
        count = self.model.columnCount()
        if count == 0:
            return
        header = self.table.horizontalHeader()
        room = self.table.viewport().width() or self.table.width()
        document = max(MIN_COLUMN_WIDTH, min(DOCUMENT_COLUMN_WIDTH, int(room * DOCUMENT_SHARE)))
        rest = max(MIN_COLUMN_WIDTH, (room - document) // max(1, count - 1))
        header.resizeSection(0, document)
        for section in range(1, count):
            header.resizeSection(section, rest)

    def eventFilter(self, watched: Any, event: Any) -> bool:  # noqa: N802
        if watched is self.table.viewport() and event.type() == QEvent.Type.Resize:
            self.fit_columns()  # the table's room changed (a resize, its tab shown)
        return super().eventFilter(watched, event)

    def _service_changed(self, *_: object) -> None:
        self._update_controls()

    def _update_controls(self) -> None:
        table = self.service.current
        has_table = table is not None
        busy = self.service.busy
        self.empty_hint.setVisible(not has_table)
        listed = self.service.listed  # until then "No table yet" would be untrue
        self.empty_hint.setText(EMPTY_HINT if listed else LOADING_HINT)
        self.tables.setPlaceholderText(NO_TABLE_TEXT if listed else LOADING_TEXT)
        self.new_button.setEnabled(listed)
        self.table.setVisible(has_table)
        self.legend.setVisible(has_table)
        self.table_menu_button.setEnabled(has_table)
        self.export_button.setEnabled(has_table)
        controls: tuple[QWidget, ...] = (
            self.add_column_button, self.fill_button, self.stop_button, self.filter, self.status_filter,
        )
        for control in controls:
            control.setVisible(has_table)  # nothing to act on before a table exists
        missing = has_table and table is not None and table.filled < table.total
        self.fill_button.setEnabled(has_table and not busy and bool(missing))
        self.stop_button.setEnabled(busy)
        self.progress.setVisible(busy)
        mode = self.service.answer_mode()
        self.mode_label.setText(MODE_LABELS.get(mode, "") if has_table else "")
        self.mode_label.setVisible(has_table)

    def _fill_started(self, fill: Fill) -> None:
        fill.cell_filled.connect(lambda _cell: self.model.set_answering(None))
        fill.cell_started.connect(self.model.set_answering)
        fill.ended.connect(lambda: self.model.set_answering(None))
        if fill.total:  # a fill resumed before this pane existed has counted its cells
            self.progress.setRange(0, fill.total)
            self.progress.setValue(fill.done)
        else:  # until the fill has counted its cells
            self.progress.setRange(0, 0)
        self._update_controls()

    def _progressed(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(done)

    def _filter_changed(self, *_: object) -> None:
        self.proxy.set_filter(self.filter.text(), str(self.status_filter.currentData() or ""))

    # --- cells --------------------------------------------------------------------------------

    def cell_at(self, index: QModelIndex) -> CellValue | None:
        value = index.data(CELL_ROLE)
        return value if isinstance(value, CellValue) else None

    def proxy_index(self, document_id: str, column_id: str) -> QModelIndex:
        """The view's index of a cell (for tests and the journey)."""
        return self.proxy.mapFromSource(self.model.index_of(document_id, column_id))

    def _cell_clicked(self, index: QModelIndex) -> None:
        self._clicked_cell = QPersistentModelIndex(index)
        self._click_timer.start(QApplication.doubleClickInterval())

    def _open_clicked_cell(self) -> None:
        if self._clicked_cell.isValid() and self.table.state() != QAbstractItemView.State.EditingState:
            clicked = self._clicked_cell  # where the click was, even if rows moved since
            self.open_cell(self.table.model().index(clicked.row(), clicked.column()))

    def open_cell(self, index: QModelIndex) -> None:
        """Show the cell's citation in the citation panel (its passage highlighted on its page)."""
        cell = self.cell_at(index)
        if cell is not None and cell.citations:
            self.citation_activated.emit(cell.citations[0])

    def edit_cell(self, index: QModelIndex) -> None:
        if index.isValid() and index.column() > 0:
            self.table.setCurrentIndex(index)
            self.table.edit(index)

    def _cell_menu(self, pos: Any) -> None:
        index = self.table.indexAt(pos)
        if not index.isValid():
            return
        source = self.proxy.mapToSource(index)
        document_id = self.model.document_at(source.row())
        column = self.model.column_at(source.column())
        menu = QMenu(self)
        cell = self.cell_at(index)
        if column is not None:
            menu.addAction("Show the cited page", lambda: self.open_cell(index)).setEnabled(
                bool(cell and cell.citations)
            )
            menu.addAction("Edit the value", lambda: self.edit_cell(index))
            menu.addAction(
                "Answer this cell again",
                lambda: self.service.fill(rows=[document_id], columns=[column.id], recompute=True),
            )
            menu.addAction(
                "Answer this column again", lambda: self.service.fill(columns=[column.id], recompute=True)
            )
        menu.addAction("Answer this row again", lambda: self.service.fill(rows=[document_id], recompute=True))
        removed = self.model.is_removed(document_id)  # kept as it was: never answered again
        for action in menu.actions():
            if action.text().startswith("Answer"):
                action.setEnabled(not self.service.busy and not (removed and "column" not in action.text()))
            if action.text() == "Edit the value":
                action.setEnabled(not removed)
        menu.popup(self.table.viewport().mapToGlobal(pos))
        self.menu = menu

    def _header_double_clicked(self, section: int) -> None:
        column = self.model.column_at(section)
        if column is not None:
            self.edit_column(column)

    def _header_menu(self, pos: Any) -> None:
        header = self.table.horizontalHeader()
        column = self.model.column_at(header.logicalIndexAt(pos))
        if column is None:
            return
        menu = QMenu(self)
        menu.addAction("Edit column…", lambda: self.edit_column(column))
        menu.addAction(
            "Answer this column again", lambda: self.service.fill(columns=[column.id], recompute=True)
        ).setEnabled(not self.service.busy)
        menu.addSeparator()
        menu.addAction("Remove column", lambda: self.service.remove_column(column.id))
        menu.popup(header.mapToGlobal(pos))
        self.menu = menu

    # --- dialogs (non-blocking) ---------------------------------------------------------------

    def _ticked_ids(self) -> list[str]:
        ticked = self._ticked()
        searchable = self.service.searchable_documents()
        if ticked is None:
            return searchable
        allowed = set(searchable)
        return [d for d in ticked if d in allowed]

    def _documents(self) -> list[tuple[str, str]]:
        """The library's searchable documents, (id, title), for a table's own list."""
        return [(d, self.service.document_title(d)) for d in self.service.searchable_documents()]

    def _some_ticked(self) -> bool:
        """The user ticked some documents in the library (not all of them)."""
        return self._ticked() is not None

    def new_table(self) -> NewTableDialog:
        """Ask for a new table's name, documents and columns; it fills once created."""
        dialog = NewTableDialog(
            self._ticked_ids, self._collections, self, name=self._free_name(), prefer_ticked=self._some_ticked(),
            documents=self._documents,
        )

        def accepted() -> None:
            ids, collection = dialog.documents.choice()
            columns = [ColumnSpec(id="", name=name) for name in dialog.column_names()]
            self.service.create_table(dialog.name.text(), columns, document_ids=ids, collection=collection)

        self._open_dialog(dialog, accepted)
        return dialog

    def _open_dialog(self, dialog: QDialog, accepted: Callable[[], None]) -> None:
        """Show ``dialog`` without blocking (kept as ``self.dialog``); ``accepted`` runs when
        it is accepted, and the dialog is deleted once it closes either way."""

        def done(result: int) -> None:
            if result == QDialog.DialogCode.Accepted:
                accepted()
            dialog.deleteLater()

        dialog.finished.connect(done)
        self.dialog = dialog
        dialog.open()

    def _free_name(self) -> str:
        names = {t.name.casefold() for t in self.service.tables}
        n = 1
        while f"table {n}" in names:
            n += 1
        return f"Table {n}"

    def edit_column(self, column: ColumnSpec | None) -> ColumnDialog:
        """Add a column (``column`` None) or change one."""
        dialog = ColumnDialog(self, column)

        def accepted() -> None:
            values = dialog.values()
            if column is None:
                self.service.add_column(values)
            else:
                changes = {k: v for k, v in values.items() if v != _column_value(column, k)}
                if changes:
                    self.service.update_column(column.id, **changes)

        self._open_dialog(dialog, accepted)
        return dialog

    def choose_documents(self) -> QDialog:
        """The table's rows become the ticked documents or a collection's."""
        dialog = QDialog(self)
        dialog.setWindowTitle("Choose the table's documents")
        dialog.setAccessibleName(dialog.windowTitle())
        table = self.service.current
        rows = list(table.rows) if table is not None else []
        chooser = DocumentsChooser(  # the list starts from the table's rows
            lambda: rows, self._collections, prefer_ticked=True, documents=self._documents
        )
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(dialog.accept)
        buttons.rejected.connect(dialog.reject)
        layout = QVBoxLayout(dialog)
        layout.addWidget(chooser)
        layout.addWidget(buttons)

        def accepted() -> None:
            ids, collection = chooser.choice()
            if collection is not None:
                ids = self._collection_ids(collection)
            if ids is not None:
                self.service.set_rows(ids)

        dialog.chooser = chooser  # type: ignore[attr-defined]
        self._open_dialog(dialog, accepted)
        return dialog

    def _collection_ids(self, name: str) -> list[str] | None:
        return self.service.collection_documents(name)

    def rename_table(self) -> None:
        from PySide6.QtWidgets import QInputDialog

        table = self.service.current
        if table is None:
            return
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Rename the table")
        dialog.setLabelText("Name:")
        dialog.setTextValue(table.name)

        def accepted() -> None:
            if dialog.textValue().strip():
                self.service.rename_table(table.id, dialog.textValue())

        self._open_dialog(dialog, accepted)

    def delete_table(self) -> None:
        table = self.service.current
        if table is None:
            return

        def delete() -> None:
            self.service.delete_table(table.id)

        confirm_delete(
            self,
            title="Delete the table",
            question=f"Delete the evidence table “{table.name}”?",
            consequence="Its cells and hand-edited values are deleted; the documents stay in the library.",
            accessible_name="Delete the evidence table",
            on_delete=delete,
            on_closed=lambda: None,
        )

    def _table_chosen(self, index: int) -> None:
        table_id = self.tables.itemData(index)
        if isinstance(table_id, str):
            import asyncio

            asyncio.ensure_future(self.service.open_table(table_id))

    # --- export -------------------------------------------------------------------------------

    def choose_export(self, fmt: str) -> None:
        table = self.service.current
        if table is None:
            return
        label, suffix = EXPORT_FORMATS[fmt]
        name = re.sub(r"[^\w\- ]+", "", table.name).strip() or "evidence-table"
        folder = export_folder()
        path, _ = QFileDialog.getSaveFileName(
            self, f"Export as {label}", str(Path(folder) / (name + suffix)), f"{label} (*{suffix})"
        )
        if path:
            if not path.endswith(suffix):
                path += suffix
            QSettings().setValue(EXPORT_FOLDER_KEY, str(Path(path).parent))
            self.export_to(fmt, path)

    def export_to(self, fmt: str, path: str) -> Any:
        return self.service.export(fmt, path)


def export_folder() -> str:
    """Where the export dialog opens: the folder of the last export, else the home folder."""
    saved = QSettings().value(EXPORT_FOLDER_KEY)
    if isinstance(saved, str) and saved and Path(saved).is_dir():
        return saved
    return str(Path.home())


def _column_value(column: ColumnSpec, key: str) -> Any:
    value = getattr(column, key)
    if key == "categories":
        return list(value)
    if key == "question":
        return value or ""
    return value
