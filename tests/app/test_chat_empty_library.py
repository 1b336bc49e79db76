"""The chat on a library with nothing in it: it says so, and how to add files."""

from __future__ import annotations

from PySide6.QtCore import QUrl

from app.chat_helpers import StreamingScript
from app.test_chat_pane import ask, make_pane


def test_the_first_question_on_an_empty_library_says_how_to_add_files(
    qloop, qtbot, library, config, tmp_path
):
    config.storage.data_dir = tmp_path / "app-data"
    pane = make_pane(qtbot, library, config)  # a fresh, empty store
    assert library.entries == []
    pane.models.use_model_instance(StreamingScript().model)  # never asked
    ask(qloop, pane, "What is in here?")
    (widget,) = pane.turn_widgets
    text = widget.answer.toPlainText()
    assert "Your library is empty" in text and "File → Add files…" in text
    assert "Nothing in your library matches" not in text
    assert not widget.badge.isVisible()  # no "Ungrounded": nothing was there to ground on
    commands = []
    pane.command_requested.connect(commands.append)
    widget.answer.anchorClicked.emit(QUrl("haiku:add-files"))
    assert commands == ["add-files"] and "haiku:add-files" in widget.answer.toHtml()
