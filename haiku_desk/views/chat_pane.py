"""PLACEHOLDER written by the library side so the main window can be built and tested.
The chat side owns this file and replaces it; keep the contract:
``ChatPane(services, parent=None)`` with ``citation_activated = Signal(object)`` (a Citation)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget


class ChatPane(QWidget):
    citation_activated = Signal(object)  # haiku.rag Citation

    def __init__(self, services, parent: QWidget | None = None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(parent)
        self.services = services
        self.setAccessibleName("Chat")
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Chat"))
