"""A collapsible panel listing the code analysis mode executed and what it printed."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QPlainTextEdit, QToolButton, QVBoxLayout, QWidget

from haiku_desk.services.conversations import ToolStep


class AnalysisPanel(QWidget):
    """Header button (collapse/expand) over a read-only log of executions."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Analysis panel")
        self.steps: list[ToolStep] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.header = QToolButton(self)
        self.header.setAccessibleName("Show or hide executed analysis code")
        self.header.setCheckable(True)
        self.header.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.header.setAutoRaise(True)
        self.header.toggled.connect(self.set_expanded)
        self.log = QPlainTextEdit(self)
        self.log.setAccessibleName("Executed analysis code and output")
        self.log.setReadOnly(True)
        self.log.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.log.setMaximumHeight(220)
        layout.addWidget(self.header)
        layout.addWidget(self.log)
        self.set_expanded(False)
        self._update_header()

    @property
    def expanded(self) -> bool:
        return self.log.isVisibleTo(self)

    def set_expanded(self, expanded: bool) -> None:
        self.log.setVisible(expanded)
        self.header.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        if self.header.isChecked() != expanded:
            self.header.setChecked(expanded)

    def clear(self) -> None:
        self.steps = []
        self.log.clear()
        self._update_header()

    def add_step(self, step: ToolStep) -> None:
        """Append one execution: the code, then its output."""
        self.steps.append(step)
        number = len(self.steps)
        output = step.output.strip() or "(no output)"
        self.log.appendPlainText(f"# run {number}\n{step.detail.rstrip()}\n\n# output\n{output}\n")
        self._update_header()

    def _update_header(self) -> None:
        count = len(self.steps)
        if not count:  # "(0 runs)" reads like a failure before anything was asked
            self.header.setText("Analysis")
            return
        self.header.setText(f"Analysis ({count} run{'s' if count != 1 else ''})")
