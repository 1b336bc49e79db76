"""The chat on a library with nothing in it: it says so, and how to add files."""

from __future__ import annotations

from PySide6.QtCore import QUrl
from qt_helpers import run_until

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


def test_on_a_first_run_the_empty_chat_says_to_add_files_and_connect_a_model(qloop, qtbot, library, config, tmp_path):
    """Tester 16:49: on a first run (empty library, no model) the chat said 'Ask a question
    about your library', the only hint of the missing model a small grey line. It says what
    to do first, with links the window follows; once there are documents and a model, how to
    ask."""
    from haiku_desk.views.chat_pane import EMPTY_HINT

    config.storage.data_dir = tmp_path / "app-data"
    pane = make_pane(qtbot, library, config)
    assert library.entries == [] and not pane.models.is_configured()
    hint = pane.empty_hint
    assert hint.isVisible()
    assert "Your library is empty" in hint.text() and "haiku:add-files" in hint.text()
    assert "No chat model is connected" in hint.text() and "haiku:models" in hint.text()
    assert "Ask a question about your library" not in hint.text()
    commands = []
    pane.command_requested.connect(commands.append)
    hint.linkActivated.emit("haiku:add-files")
    hint.linkActivated.emit("haiku:models")
    assert commands == ["add-files", "models"]

    pane.models.use_model_instance(StreamingScript().model)  # a model connected
    assert "No chat model" not in hint.text() and "Your library is empty" in hint.text()
    library.add_paths([_pdf(tmp_path)])  # a document
    run_until(qloop, lambda: bool(library.entries), 60)
    assert EMPTY_HINT in hint.text() and "empty" not in hint.text()


def _pdf(tmp_path):
    from pdf_factory import make_report_pdf

    return make_report_pdf(tmp_path / "report.pdf").path
