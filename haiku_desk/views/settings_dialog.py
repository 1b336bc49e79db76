"""PLACEHOLDER written by the library side so the main window's "Models…" action works.
The chat side owns this file and replaces it; keep the contract:
``ModelSettingsDialog(models, parent=None)`` is a QDialog."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QLabel, QVBoxLayout, QWidget


class ModelSettingsDialog(QDialog):
    def __init__(self, models, parent: QWidget | None = None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(parent)
        self.models = models
        self.setWindowTitle("Models")
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Model settings"))
