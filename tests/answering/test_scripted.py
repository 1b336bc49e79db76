"""The library's scripted model (``answering.ScriptedAnswer``): it searches, cites and answers
through whatever tools the capabilities offer, so a host (the app's self-test) never names a
tool; it says what it was offered and shown, and fails clearly when it cannot play."""

from __future__ import annotations

import pytest

from haiku.rag import answering
from haiku.rag.answering import AnswerOptions, Conversation, ScriptedAnswer, ScriptError


async def test_it_searches_cites_and_answers_grounded_through_the_offered_tools(lent_client):
    script = ScriptedAnswer("Lantern otters hunt glass eels.", query="lantern otters diet")
    conversation = Conversation()
    options = AnswerOptions(evidence_compaction=True, citation_policy=True)
    done = await answering.answer(lent_client, "What do otters eat?", conversation, options, model=script.model)

    assert (done.text, done.grounding, done.basis) == ("Lantern otters hunt glass eels.", "grounded", "cited")
    assert script.offered_evidence_tools and len(script.offered) == 3  # search, cite, answer
    (citation,) = done.citations
    assert script.cited == [citation.chunk_id] and "otter" in citation.content.lower()

    follow_up = ScriptedAnswer("You're welcome.")  # no query: answers at once
    thanks = await answering.answer(lent_client, "Thanks!", conversation, options, model=follow_up.model)
    assert thanks.text == "You're welcome."  # (the policy asked it once to declare)
    assert follow_up.shown and follow_up.shown[0].startswith("[Evidence cited earlier")


async def test_it_cites_as_many_results_as_asked(lent_client):
    script = ScriptedAnswer("Two sources.", query="lantern otters", cite=2)
    done = await answering.answer(lent_client, "Otters?", Conversation(), model=script.model)
    assert len(script.cited) == 2 and {c.chunk_id for c in done.citations} == set(script.cited)


async def test_without_a_search_tool_it_says_so(lent_client):
    script = ScriptedAnswer("Never said.", query="lantern otters")
    options = AnswerOptions(mode="fallback")  # the no-tools path offers no tool
    with pytest.raises(ScriptError, match="no search tool was offered"):
        await answering.answer(lent_client, "Otters?", Conversation(), options, model=script.model)
