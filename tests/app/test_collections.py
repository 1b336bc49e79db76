"""Collections in the app, over a real library (the generated report PDF and a Markdown note):
listed with their counts, made from documents or a folder, renamed and deleted; ticking one
makes it the chat's scope, named in the chat header, and the scripted model's searches see
only its documents; the scope, the counts and the conversation survive a relaunch."""

from __future__ import annotations

from capabilities.scripting import answer, search
from PySide6.QtCore import Qt
from qt_helpers import run_until

from app.chat_helpers import BuiltLibrary, StreamingScript, build_library
from haiku_desk.services.chat import ChatService
from haiku_desk.services.collections import CollectionsService
from haiku_desk.services.library import LibraryService
from haiku_desk.services.models import ModelsService
from haiku_desk.services.notifications import Notifications

QUESTION = "Why were the night convoys delayed?"


class App:
    """The services a window holds, built before the library starts (as create_services does)."""

    def __init__(self, built: BuiltLibrary, qloop) -> None:
        self.notifications = Notifications()
        self.library = LibraryService(built.db_path, built.config, self.notifications)
        self.collections = CollectionsService(self.library, self.notifications)
        self.models = ModelsService(built.config, self.notifications)
        self.chat = ChatService(self.library, self.models, self.notifications)
        self.chat.attach_collections(self.collections)
        opened: list[bool] = []
        self.library.opened.connect(lambda: opened.append(True))
        self.library.start()
        run_until(qloop, lambda: bool(opened) and self.collections.listed, timeout=120)

    def counts(self) -> list[tuple[str, int]]:
        return [(c.name, c.count) for c in self.collections.collections]


def ask(qloop, chat: ChatService, script: StreamingScript) -> str:
    """Ask QUESTION with the scripted model; what its search was shown."""
    chat.models.use_model_instance(script.model)
    done: list = []
    operation = chat.ask(QUESTION)
    operation.succeeded.connect(done.append)
    operation.failed.connect(done.append)
    run_until(qloop, lambda: bool(done) and not chat.busy)
    assert not isinstance(done[0], BaseException), done[0]
    return str(script.seen[-1].last_return("rag_search").content)


def convoy_search() -> StreamingScript:
    return StreamingScript().play(search("night convoys delayed kerosene glass eels"), answer("Noted."))


def test_a_collection_scopes_the_chat_follows_its_documents_and_survives_a_relaunch(qloop, tmp_path):
    built = build_library(tmp_path / "library")
    app = App(built, qloop)
    assert app.counts() == []
    created = qloop.run_until_complete(app.collections.create("Otters", [built.notes_id]))
    assert created is not None and app.counts() == [("Otters", 1)]

    # Chosen as the scope: the model's search sees the note only, never the report.
    app.chat.set_collection_scope("Otters")
    assert app.chat.scope() == (built.notes_id,) and app.chat.scope_collection() == "Otters"
    shown = ask(qloop, app.chat, convoy_search())
    assert "glass eels" in shown and "kerosene" not in shown.lower()

    # The collection grows: the scope follows it, and so does the search.
    qloop.run_until_complete(app.collections.add("Otters", [built.report_id]))
    assert app.counts() == [("Otters", 2)]
    assert set(app.chat.scope()) == {built.notes_id, built.report_id}
    shown = ask(qloop, app.chat, convoy_search())
    assert "glass eels" in shown and "kerosene" in shown.lower()
    conversation_id = app.chat.current.id
    app.library.close()

    # Relaunch: the collection, its count and the conversation's collection scope are kept.
    again = App(built, qloop)
    assert again.counts() == [("Otters", 2)]
    assert [s.id for s in again.chat.conversations()] == [conversation_id]
    record = again.chat.open_conversation(conversation_id)
    assert record.scope_collection == "Otters"
    assert set(again.chat.scope()) == {built.notes_id, built.report_id}

    # Deleting a document from the library drops it from the count and from the scope.
    report_key = again.library.entry_for_document(built.report_id).key
    again.library.delete([report_key])
    run_until(qloop, lambda: again.counts() == [("Otters", 1)], timeout=60)
    assert again.chat.scope() == (built.notes_id,)

    # A rename is followed by the conversation; a delete leaves its documents, named as such.
    qloop.run_until_complete(again.collections.rename("Otters", "River otters"))
    assert again.counts() == [("River otters", 1)] and again.chat.scope_collection() == "River otters"
    qloop.run_until_complete(again.collections.delete("River otters"))
    assert again.counts() == [] and again.chat.scope_collection() is None
    assert again.chat.scope() == (built.notes_id,)
    again.library.close()
    third = App(built, qloop)
    reopened = third.chat.open_conversation(conversation_id)
    assert (reopened.scope_collection, reopened.scope) == (None, [built.notes_id])
    third.library.close()


def test_a_refused_name_changes_nothing_and_says_why(qloop, tmp_path):
    built = build_library(tmp_path / "library")
    app = App(built, qloop)
    qloop.run_until_complete(app.collections.create("Reading list", [built.notes_id]))
    assert qloop.run_until_complete(app.collections.create("Reading list", [built.report_id])) is None
    assert "already exists" in app.notifications.history[-1].message
    assert qloop.run_until_complete(app.collections.create("   ", [built.report_id])) is None
    assert "cannot be empty" in app.notifications.history[-1].message
    assert app.counts() == [("Reading list", 1)]
    app.library.close()


def test_the_library_pane_lists_collections_and_ticking_one_scopes_the_chat(qtbot, qloop, tmp_path):
    from haiku_desk.services import create_services
    from haiku_desk.views.main_window import DEFAULT_SIZE, MainWindow

    built = build_library(tmp_path / "library")
    services = create_services(built.db_path, built.config)
    opened: list[bool] = []
    services.library.opened.connect(lambda: opened.append(True))
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.resize(*DEFAULT_SIZE)
    window.show()
    services.library.start()
    run_until(qloop, lambda: bool(opened) and services.collections.listed, timeout=120)
    pane, box = window.library_pane, window.library_pane.collections_box
    header = window.chat_pane.scope_label
    assert box.labels() == [] and not box.list.isVisible()

    # From the selected documents, through the dialog the menu opens.
    pane.select_keys([e.key for e in services.library.entries])
    dialog = box.create_from_selection()
    dialog.setTextValue("Convoys and otters")
    dialog.accept()
    run_until(qloop, lambda: box.labels() == ["Convoys and otters (2)"])
    # From a folder: the library's documents whose file is below it (the report, not the note).
    dialog = box.create_from_folder(str(tmp_path / "library"))
    dialog.setTextValue("Folder")
    dialog.accept()
    run_until(qloop, lambda: box.labels() == ["Convoys and otters (2)", "Folder (1)"])
    assert services.collections.find("Folder").document_ids == [built.report_id]
    assert box.list.isVisible()

    # Ticking the collection (Space on it, as from the keyboard) scopes the chat, by name.
    box.list.setFocus()
    box.list.setCurrentRow(1)
    qtbot.keyClick(box.list, Qt.Key.Key_Space)
    assert services.chat.scope_collection() == "Folder"
    assert services.chat.scope() == (built.report_id,)
    assert header.full_text == "· collection “Folder” (1 document)"
    assert pane.scope() == (built.report_id,)  # its documents are the ones ticked
    assert pane.scope_all.checkState() == Qt.CheckState.PartiallyChecked
    box.list.clearSelection()  # nothing selected: the menu acts on the ticked one, by name
    box.menu.aboutToShow.emit()
    assert box.rename_action.text() == "Rename “Folder”…" and box.delete_action.isEnabled()

    # Ticking a document by hand, or All documents, is another scope: the collection unticks.
    pane.scope_all.click()
    assert services.chat.scope_collection() is None and services.chat.scope() is None
    assert header.full_text == "· all documents"
    assert box.list.item(1).checkState() == Qt.CheckState.Unchecked

    # Rename and delete from the box; the list (and its counts) follow.
    box.list.setCurrentRow(0)
    dialog = box.rename_current()
    dialog.setTextValue("Everything")
    dialog.accept()
    run_until(qloop, lambda: box.labels() == ["Everything (2)", "Folder (1)"])
    box.list.setCurrentRow(1)
    confirm = box.delete_current()
    next(b for b in confirm.buttons() if b.text() == "Delete").click()
    run_until(qloop, lambda: box.labels() == ["Everything (2)"])
    assert {e.document_id for e in services.library.entries} == {built.report_id, built.notes_id}
    qloop.run_until_complete(services.library.aclose())
    services.pages.close()
