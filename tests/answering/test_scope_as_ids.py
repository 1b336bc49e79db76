"""The chat's scope travels as document ids from ``AnswerOptions`` to the store (issue 31):
no SQL is made from the ids and read back to ids on the way, in any mode, and a citation
outside the scope is still refused."""

from __future__ import annotations

import pytest
from capabilities.scripting import ScriptedModel, answer, cite_top, search
from pydantic_ai.messages import ModelResponse, TextPart

from haiku.rag import answering
from haiku.rag.answering import AnswerOptions, Conversation
from haiku.rag.capabilities.rag import RAGCapability
from haiku.rag.store import documents as store_documents


@pytest.fixture
def no_sql_round_trip(monkeypatch):
    """Resolving SQL to document ids fails the test: the scope is ids already."""

    def refuse(store, filter):
        raise AssertionError(f"the scope went through SQL: {filter!r}")

    monkeypatch.setattr(store_documents, "document_ids_matching", refuse)


async def otters_id(client) -> str:
    documents = await client.list_documents()
    return next(d.id for d in documents if "Otters" in (d.title or ""))


async def test_a_scoped_tools_answer_cites_within_the_ids_without_sql(lent_client, no_sql_round_trip):
    otters = await otters_id(lent_client)
    script = ScriptedModel().play(search("lantern otters diet"), cite_top(1), answer("Glass eels [1]."))
    conversation = Conversation()
    done = await answering.answer(
        lent_client, "What do otters eat?", conversation, AnswerOptions(document_ids=(otters,)), model=script.model
    )
    assert done.citations and {c.document_id for c in done.citations} == {otters}
    state = conversation.state[RAGCapability.namespace]
    assert state["document_ids"] == [otters] and state["document_filter"] is None


async def test_a_scope_replaces_a_hosts_sql_filter_left_in_the_conversation(lent_client, no_sql_round_trip):
    otters = await otters_id(lent_client)
    conversation = Conversation()
    conversation.state[RAGCapability.namespace] = {"document_filter": "title LIKE '%Copperline%'"}
    script = ScriptedModel().play(search("lantern otters diet"), cite_top(1), answer("Glass eels [1]."))
    done = await answering.answer(
        lent_client, "What do otters eat?", conversation, AnswerOptions(document_ids=(otters,)), model=script.model
    )
    assert {c.document_id for c in done.citations} == {otters}


async def test_scoped_fallback_and_search_only_answers_search_by_ids(lent_client, no_sql_round_trip):
    otters = await otters_id(lent_client)
    scope = AnswerOptions(mode="search-only", document_ids=(otters,))
    listed = await answering.answer(lent_client, "bridges and otters", None, scope)
    assert listed.citations and {c.document_id for c in listed.citations} == {otters}

    def first_passage(request):
        return ModelResponse(parts=[TextPart("From the passage [1].")])

    script = ScriptedModel().play(first_passage)
    fallback = AnswerOptions(mode="fallback", document_ids=(otters,))
    read = await answering.answer(lent_client, "bridges and otters", None, fallback, model=script.model)
    assert read.citations and {c.document_id for c in read.citations} == {otters}
