"""Help › Use this library from other apps (MCP)…: the configuration shown names the open
library, Copy puts it on the clipboard, and it starts a working `haiku-rag mcp` server: a real
MCP client session over stdio, launched from exactly what the dialog shows, lists the tools
and this library's documents."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import shlex
from pathlib import Path

from PySide6.QtWidgets import QApplication
from qt_helpers import run_until

from haiku.rag.client import HaikuRAG
from haiku.rag.config import load_config
from haiku_desk.services import create_services
from haiku_desk.views.main_window import MainWindow

READ_TOOLS = {"search", "get_document", "get_chunk", "list_documents", "list_collections", "render_page"}


def _in_thread(coroutine):
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:  # not on the app's loop
        return pool.submit(asyncio.run, coroutine).result()


async def _make_library(db: Path, config) -> None:
    async with HaikuRAG(db, config, create=True) as client:
        await client.create_document("Walrus herds haul out on the ice floes in spring.", title="Walrus note", embed=False)


async def _session(command: str, args: list[str]) -> tuple[set[str], list[str]]:
    from mcp import Client, StdioServerParameters

    env = {"XDG_DATA_HOME": os.environ["XDG_DATA_HOME"], "HF_HUB_OFFLINE": "1"}
    params = StdioServerParameters(command=command, args=args, env=env)
    async with Client(params, read_timeout_seconds=120) as session:
        tools = {t.name for t in (await session.list_tools()).tools}
        listed = await session.call_tool("list_documents", {})
        assert not listed.is_error, listed.content
        data = listed.structured_content
        documents = data["result"] if isinstance(data, dict) and "result" in data else data
        return tools, [d["title"] for d in documents]


def test_the_mcp_configuration_shown_starts_a_server_on_the_open_library(qloop, qtbot, tmp_path):
    config = load_config()
    config.storage.data_dir = tmp_path / "data"
    db = tmp_path / "my library.lancedb"  # a space: the command must still be one argument
    _in_thread(_make_library(db, config))
    services = create_services(db, config)
    opened: list[bool] = []
    services.library.opened.connect(lambda: opened.append(True))
    services.library.start()
    run_until(qloop, lambda: bool(opened), 180)
    window = MainWindow(services)
    qtbot.addWidget(window)
    try:
        help_menu = next(a.menu() for a in window.menuBar().actions() if a.text().replace("&", "") == "Help")
        entry = next(a for a in help_menu.actions() if a.text() == "Use this library from other apps (MCP)…")
        entry.trigger()
        dialog = window.mcp.dialog
        assert dialog is not None and dialog.isVisible()
        shown = json.loads(dialog.config_text())
        (server,) = shown["mcpServers"].values()
        assert server["args"] == ["--db", str(services.library.db_path), "mcp"]
        assert Path(server["args"][1]) == db.resolve() or Path(server["args"][1]) == db
        assert Path(server["command"]).is_file() and not dialog.warning.isVisible()
        qtbot.waitExposed(dialog)
        assert dialog.config_view.verticalScrollBar().maximum() == 0  # every line in view
        dialog.copy_button.click()
        assert json.loads(QApplication.clipboard().text()) == shown
        dialog.copy_command_button.click()
        assert shlex.split(QApplication.clipboard().text()) == [server["command"], *server["args"]]

        # what the dialog shows is what a client launches; the app keeps the library open meanwhile
        tools, titles = _in_thread(_session(server["command"], server["args"]))
        assert tools == READ_TOOLS
        assert titles == ["Walrus note"]
    finally:
        qloop.run_until_complete(services.library.aclose())
        services.pages.close()


def test_the_command_is_quoted_for_the_shell_of_the_platform():
    """A Windows path with spaces is quoted the Windows way (a POSIX shell's single quotes
    would reach the program as part of the argument there)."""
    from haiku_desk.views.mcp_dialog import command_line

    argv = [r"C:\Program Files\Haiku Desk\haiku-desk.exe", "--haiku-rag", "--db", r"C:\Users\Ann\My Library", "mcp"]
    assert command_line(argv, windows=True) == (
        r'"C:\Program Files\Haiku Desk\haiku-desk.exe" --haiku-rag --db "C:\Users\Ann\My Library" mcp'
    )
    posix = ["/opt/haiku desk/haiku-desk", "--haiku-rag", "--db", "/home/ann/my library", "mcp"]
    assert shlex.split(command_line(posix, windows=False)) == posix
