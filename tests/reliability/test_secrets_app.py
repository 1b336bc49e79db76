"""The desktop app's saved and exported conversations hold no API key.

A real conversation (two questions, the key in a keychain backend, sent to a local server
that refuses requests without it) goes through the library's ``answer`` with a ``Conversation``
(the message history, capability state and numbering the app saves whole); the app's own code then saves it as
a conversation file (``ConversationStore``) and exports it to Markdown with cited page images
(``export_conversation``). Every byte written is searched for the key. (The app's
``ChatService`` streaming path is tested in tests/app; what it saves is this same record.)
"""

from __future__ import annotations

import pytest

from haiku.rag.answering import Conversation, answer
from haiku.rag.client import HaikuRAG

from .secrets_helpers import KeyedStub, _leaks
from .test_secrets import QUESTION

conversations = pytest.importorskip("haiku_desk.services.conversations")
export = pytest.importorskip("haiku_desk.export")


async def test_saved_and_exported_conversations_hold_no_key(
    tmp_path, chat_library, keychain, secret, config, allow_requests
):
    data_dir = tmp_path / "data"
    with KeyedStub(secret) as stub:
        config.storage.data_dir = data_dir
        config.qa.model.provider, config.qa.model.name = "openai-compatible", "stub-model"
        config.qa.model.base_url = stub.base_url
        async with HaikuRAG(chat_library, config) as client:
            conversation = Conversation()
            record = conversations.ConversationRecord(title="Customs and fog")
            for question in (QUESTION, "And what delayed the night convoys?"):
                result = await answer(client, question, conversation)
                record.turns.append(
                    conversations.Turn(
                        question=question,
                        answer=result.text,
                        citations=list(result.citations),
                        grounding=result.grounding,
                    )
                )
            record.set_answering_conversation(conversation)
            saved = conversations.ConversationStore.in_data_dir(data_dir).save(record)
            exported = await export.export_conversation(record, client, tmp_path / "exports")
    assert set(stub.authorizations) == {f"Bearer {secret}"}
    assert record.turns[0].citations and record.model_messages()
    assert saved.is_file() and exported.is_file()
    assert list((tmp_path / "exports").rglob("*.png"))  # the cited pages were rendered too
    assert _leaks(tmp_path, secret) == []
