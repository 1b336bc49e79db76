"""Issue 34, the second hour: a relaunch finds the window as it was left: the conversation
shown last selected, its transcript shown, and the tab beside the chat (Evidence table) the
user was on. Real services over a real library, closed and opened again as at Ctrl+Q."""

from __future__ import annotations

from qt_helpers import run_until

from haiku_desk.services.conversations import Turn
from haiku_desk.views.main_window import DEFAULT_SIZE, MainWindow

SLOW = 180


def _launch(qloop, qtbot, db_path, config):
    """What app.main does: the services, the window, then the library's start."""
    from haiku_desk.services import create_services

    services = create_services(db_path, config)
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.resize(*DEFAULT_SIZE)
    window.show()
    qtbot.waitExposed(window)
    opened: list[bool] = []
    services.library.opened.connect(lambda: opened.append(True))
    services.library.start()
    run_until(qloop, lambda: bool(opened), SLOW)
    return services, window


def _quit(qloop, services, window) -> None:
    window.close()  # Ctrl+Q: the window's state is saved
    qloop.run_until_complete(services.library.aclose())
    services.pages.close()


def _asked(chat, title: str, questions: list[str]):
    record = chat.new_conversation(title)
    for question in questions:
        record.turns.append(Turn(question=question, answer=f"An answer to {question!r}.", mode="search-only"))
    chat._keep(record)  # as a finished answer does: saved and listed
    return record


def test_a_relaunch_reopens_the_last_conversation_and_the_evidence_tab(qloop, qtbot, db_path, config):
    services, window = _launch(qloop, qtbot, db_path, config)
    chat = services.chat
    nics = _asked(chat, "How many NICS firearm checks", ["How many NICS checks in Texas?", "And in Alabama?"])
    _asked(chat, "A newer conversation", ["Something else?"])  # listed first (newest first)
    chat.open_conversation(nics.id)  # the user goes back to the first one
    assert window.evidence_pane is not None
    window.show_evidence_table()  # and looks at the evidence table
    _quit(qloop, services, window)

    services, window = _launch(qloop, qtbot, db_path, config)
    try:
        chat = services.chat
        assert chat.current is not None and chat.current.id == nics.id
        pane = window.chat_pane
        item = pane.conversation_list.currentItem()
        assert item is not None and item.isSelected() and item.text() == "How many NICS firearm checks"
        assert [w.turn.question for w in pane.turn_widgets] == ["How many NICS checks in Texas?", "And in Alabama?"]
        assert window.centre.currentWidget() is window.evidence_pane
        window.show_evidence_table()  # back to the chat: remembered as well
        assert window.centre.currentWidget() is pane
    finally:
        _quit(qloop, services, window)

    services, window = _launch(qloop, qtbot, db_path, config)
    try:
        assert window.centre.currentWidget() is window.chat_pane
        assert services.chat.current is not None and services.chat.current.id == nics.id
    finally:
        _quit(qloop, services, window)


def test_a_deleted_last_conversation_leaves_the_start_empty(qloop, qtbot, db_path, config):
    services, window = _launch(qloop, qtbot, db_path, config)
    record = _asked(services.chat, "Gone soon", ["A question?"])
    services.chat.delete(record.id)
    _quit(qloop, services, window)

    services, window = _launch(qloop, qtbot, db_path, config)
    try:
        assert services.chat.current is None
        assert window.chat_pane.conversation_list.count() == 0
    finally:
        _quit(qloop, services, window)
