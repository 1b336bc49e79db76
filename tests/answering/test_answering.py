"""``haiku.rag.answering`` over a real corpus: the event stream, the conversation, numbering,
compaction figures, the policy step, stopping, scope, and the fallback's passage numbers."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai import CancellationToken
from pydantic_ai.messages import ModelResponse, TextPart

from answering.conftest import streaming
from capabilities.scripting import ScriptedModel, answer, cite, cite_top, search
from haiku.rag import answering
from haiku.rag.answering import (
    Answered,
    AnswerOptions,
    AnswerStopped,
    Cited,
    Conversation,
    ConversationFormatError,
    Started,
    Step,
    TextDelta,
)


async def collect(client, question, conversation=None, options=None, **kwargs):
    return [e async for e in answering.answer_stream(client, question, conversation, options, **kwargs)]


async def test_a_tools_answer_streams_steps_citations_then_the_answer(lent_client):
    script = ScriptedModel().play(search("lantern otters diet"), cite_top(1), answer("Glass eels [1]."))
    conversation = Conversation()
    events = await collect(lent_client, "What do otters eat?", conversation, model=streaming(script))

    started, *middle, answered = events
    assert isinstance(started, Started) and started.mode == "tools"
    assert started.capability_ids == ("haiku-rag",)
    steps = [e for e in middle if isinstance(e, Step)]
    assert [(s.kind, s.finished) for s in steps] == [
        ("search", False), ("search", True), ("cite", False), ("cite", True)
    ]
    assert steps[0].label == "Searching “lantern otters diet”" and steps[0].id == steps[1].id
    (cited,) = [e for e in middle if isinstance(e, Cited)]
    assert [c.index for c in cited.citations] == [1]
    assert "".join(e.text for e in middle if isinstance(e, TextDelta)) == "Glass eels [1]."
    assert isinstance(answered, Answered)
    assert (answered.text, answered.grounding, answered.basis) == ("Glass eels [1].", "grounded", "cited")
    assert answered.citations == cited.citations
    assert answered.tokens.input_tokens and answered.tokens.requests == 3
    assert answered.tokens.compaction_saved is None  # compaction off
    assert len(conversation.messages) == 6 and conversation.numbers == {answered.citations[0].chunk_id: 1}


@pytest.mark.parametrize("stream", [True, False])
async def test_compaction_reports_what_it_saved_on_the_wire(lent_client, stream):
    options = AnswerOptions(evidence_compaction=True)
    conversation = Conversation()
    first = ScriptedModel().play(search("lantern otters"), cite_top(1), answer("Eels [1]."))
    done = await answering.answer(lent_client, "Otters?", conversation, options, model=first.model)
    assert done.tokens.compaction_saved == 0  # nothing earlier to compact

    second = ScriptedModel().play(answer("Welcome."))
    events = await collect(
        lent_client, "Thanks!", conversation, options, model=streaming(second), stream=stream
    )
    answered = events[-1]
    assert isinstance(answered, Answered)
    shown = second.seen[0].last_return("rag_search").content
    assert str(shown).startswith("[Evidence cited earlier")
    assert answered.tokens.compaction_saved and answered.tokens.compaction_saved > 20
    (step,) = [e for e in events if isinstance(e, Step) and e.kind == "compaction"]
    assert f"{answered.tokens.compaction_saved:,} tokens saved" in step.label
