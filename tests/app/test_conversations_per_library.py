"""Libraries own their conversations: stored inside the library, listed only there."""

from __future__ import annotations

import pytest
from qt_helpers import run_until

from haiku_desk.services.chat import ChatService
from haiku_desk.services.library import LibraryService
from haiku_desk.services.models import ModelsService
from haiku_desk.services.notifications import Notifications


def open_library(qloop, db_path, config, notifications) -> LibraryService:
    service = LibraryService(db_path, config, notifications)
    opened: list[bool] = []
    service.opened.connect(lambda: opened.append(True))
    service.start()
    run_until(qloop, lambda: bool(opened), timeout=120)
    return service


def test_a_conversation_made_in_library_a_is_not_listed_in_library_b(qloop, tmp_path, config):
    notifications = Notifications()
    a = open_library(qloop, tmp_path / "a.lancedb", config, notifications)
    b = open_library(qloop, tmp_path / "b.lancedb", config, notifications)
    try:
        models = ModelsService(config, notifications)
        chat = ChatService(a, models, notifications)
        made_in_a = chat.new_conversation()
        chat.rename(made_in_a.id, "About library A")
        stored = tmp_path / "a.lancedb" / "haiku-desk" / "conversations" / f"{made_in_a.id}.json"
        assert stored.is_file()  # with the library: moved or synced, it carries it along
        assert [s.title for s in chat.conversations()] == ["About library A"]

        assert ChatService(b, models, notifications).conversations() == []  # opened on B

        switched = []
        chat.current_changed.connect(switched.append)
        chat.switch_library(b)  # the window switched libraries
        assert switched == [None] and chat.current is None
        assert chat.conversations() == []
        assert chat.open_conversation(made_in_a.id) is None
        chat.new_conversation("About library B")

        chat.switch_library(a)
        assert [s.title for s in chat.conversations()] == ["About library A"]
        assert not (config.storage.data_dir / "conversations").exists()  # no shared folder
    finally:
        qloop.run_until_complete(a.aclose())
        qloop.run_until_complete(b.aclose())


def test_the_library_service_opening_another_library_switches_the_conversations(
    qloop, tmp_path, config
):
    if not hasattr(LibraryService, "open_library"):
        pytest.skip("needs LibraryService.open_library and library_changed (branch h/quit)")
    notifications = Notifications()
    library = open_library(qloop, tmp_path / "a.lancedb", config, notifications)
    try:
        chat = ChatService(library, ModelsService(config, notifications), notifications)
        made_in_a = chat.new_conversation("About library A")
        switched = []
        chat.current_changed.connect(switched.append)

        assert qloop.run_until_complete(library.open_library(tmp_path / "b.lancedb"))
        assert switched == [None] and chat.current is None and chat.conversations() == []
        made_in_b = chat.new_conversation("About library B")
        assert chat.store.path_of(made_in_b.id).is_relative_to(tmp_path / "b.lancedb")

        assert qloop.run_until_complete(library.open_library(tmp_path / "a.lancedb"))
        assert [s.id for s in chat.conversations()] == [made_in_a.id]
    finally:
        qloop.run_until_complete(library.aclose())


def test_conversations_saved_in_the_data_dir_move_into_the_library_they_cite(
    qloop, tmp_path, config
):
    from haiku.rag.citations import Citation
    from haiku_desk.services.conversations import ConversationRecord, ConversationStore, Turn

    notifications = Notifications()
    library = open_library(qloop, tmp_path / "a.lancedb", config, notifications)
    try:
        document = qloop.run_until_complete(
            library.client.create_document("Otters hunt eels.", uri="notes://otters")
        )
        qloop.run_until_complete(library.refresh())

        def cites(document_id: str) -> Turn:
            citation = Citation(
                index=1, chunk_id="c", document_id=document_id, document_uri="u", content="x"
            )
            return Turn(question="q", answer="a [1]", citations=[citation])

        legacy = ConversationStore.in_data_dir(config.storage.data_dir)  # before libraries
        ours = ConversationRecord(title="Ours", turns=[cites(document.id)])
        theirs = ConversationRecord(title="Another library's", turns=[cites("elsewhere")])
        uncited = ConversationRecord(title="Small talk")
        for record in (ours, theirs, uncited):
            legacy.save(record)

        chat = ChatService(library, ModelsService(config, notifications), notifications)
        assert chat.adopt_data_dir_conversations() == 2
        assert {s.title for s in chat.conversations()} == {"Ours", "Small talk"}
        assert [r.title for r in legacy.records()] == ["Another library's"]  # kept for its own
        assert chat.adopt_data_dir_conversations() == 0
    finally:
        qloop.run_until_complete(library.aclose())
