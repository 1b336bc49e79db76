"""The main window. For now: the frame the library, chat and citation panes will fill."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QMainWindow


class MainWindow(QMainWindow):
    def __init__(self, db_path: str | None = None) -> None:
        super().__init__()
        self.db_path = db_path
        self.setWindowTitle("haiku-desk")
        self.resize(1100, 720)
        placeholder = QLabel(
            "Drop PDFs here to build your library.\n\n"
            "(The library, chat and citation panes arrive with the desktop-app milestone; "
            "use `haiku-rag add-src` and `haiku-rag search` meanwhile.)"
        )
        placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        placeholder.setWordWrap(True)
        placeholder.setAccessibleName("Library drop zone")
        self.setCentralWidget(placeholder)
        self.statusBar().showMessage("Ready")
