"""Help › Use this library from other apps (MCP)…: the configuration an MCP client (Claude
Desktop, an IDE, an agent) needs to launch ``haiku-rag mcp`` over stdio on the open library,
with a Copy button. The configuration is the library's own (``haiku.rag.mcp_server.
client_config``), so what is shown is what ``haiku-rag mcp --print-config`` prints."""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtGui import QAction, QFontDatabase
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from haiku_desk.services.mcp import mcp_config

INTRO = (
    "Other apps that speak the Model Context Protocol (Claude Desktop, IDEs, agents) can search "
    "this library and get page-cited passages. Paste this into the client's MCP configuration "
    "(for Claude Desktop: Settings › Developer › Edit Config, claude_desktop_config.json), then "
    "restart the client. The server only reads the library."
)


def missing_parts(config: dict[str, Any]) -> list[str]:
    """What a client would not find: the command (``haiku-rag``, or the bundle's own
    executable), or the MCP SDK beside it (a default dependency: missing only from a broken
    install)."""
    server = next(iter(config["mcpServers"].values()))
    problems = []
    if not Path(server["command"]).is_file():
        problems.append(f"the command {server['command']} does not exist here")
    if importlib.util.find_spec("mcp") is None:
        problems.append("the MCP SDK is missing from this installation (reinstall haiku-desk)")
    return problems


def command_line(argv: list[str], *, windows: bool | None = None) -> str:
    """``argv`` as one command line to paste: quoted for a POSIX shell, or, on Windows, by
    the rules its programs split their command line with (``subprocess.list2cmdline``)."""
    if sys.platform == "win32" if windows is None else windows:
        return subprocess.list2cmdline(argv)
    return shlex.join(argv)


class McpDialog(QDialog):
    def __init__(self, db_path: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Use this library from other apps (MCP)")
        self.setAccessibleName("MCP configuration")
        self.config = mcp_config(db_path)
        server = next(iter(self.config["mcpServers"].values()))
        self.command = command_line([server["command"], *server["args"]])
        intro = QLabel(INTRO)
        intro.setWordWrap(True)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.config_view = QPlainTextEdit(json.dumps(self.config, indent=2, ensure_ascii=False))
        self.config_view.setReadOnly(True)
        self.config_view.setFont(mono)
        self.config_view.setAccessibleName("MCP client configuration (JSON)")
        lines = self.config_view.toPlainText().count("\n") + 1
        self.config_view.setMinimumHeight(self.config_view.fontMetrics().lineSpacing() * (lines + 1) + 12)
        command_label = QLabel("Or the command, for clients that ask for one (stdio):")
        self.command_view = QLineEdit(self.command)
        self.command_view.setReadOnly(True)
        self.command_view.setFont(mono)
        self.command_view.setAccessibleName("MCP server command")
        self.copy_button = QPushButton("Copy configuration")
        self.copy_button.setDefault(True)
        self.copy_button.clicked.connect(self.copy_config)
        self.copy_command_button = QPushButton("Copy command")
        self.copy_command_button.clicked.connect(self.copy_command)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(self.copy_command_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        self.warning = QLabel()
        self.warning.setWordWrap(True)
        self.warning.setProperty("textRole", "warning")  # the theme's warning colour
        problems = missing_parts(self.config)
        self.warning.setText("Before it works: " + "; ".join(problems) + "." if problems else "")
        self.warning.setVisible(bool(problems))
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.config_view, 1)
        layout.addWidget(command_label)
        layout.addWidget(self.command_view)
        layout.addWidget(self.warning)
        layout.addWidget(buttons)
        self.resize(640, self.sizeHint().height())

    def config_text(self) -> str:
        return self.config_view.toPlainText()

    def copy_config(self) -> None:
        QApplication.clipboard().setText(self.config_text())

    def copy_command(self) -> None:
        QApplication.clipboard().setText(self.command)


class McpAction:
    """The Help menu entry and its dialog, for the library open now."""

    def __init__(self, window: QWidget, help_menu: QMenu, db_path: Callable[[], str]) -> None:
        self.window = window  # the dialog's parent
        self.db_path = db_path  # the library open now
        self.dialog: McpDialog | None = None
        self.action = QAction("Use this library from other apps (MCP)…", window)
        self.action.setObjectName("mcp_config")
        self.action.triggered.connect(self.open)
        help_menu.addAction(self.action)

    def open(self) -> McpDialog:
        if self.dialog is not None:
            self.dialog.close()
        dialog = McpDialog(self.db_path(), self.window)
        self.dialog = dialog
        dialog.finished.connect(lambda _result: setattr(self, "dialog", None))
        dialog.open()
        return dialog
