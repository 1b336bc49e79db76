"""ChatService over a real library: streaming, citations, grounding, toggles, scope, stop,
persistence and search-only mode."""

from __future__ import annotations

import asyncio
import json

import pytest
from capabilities.scripting import answer, cite, cite_top, search
from qt_helpers import run_until

from app.chat_helpers import QuestionLog, StreamingScript, chat_library_fixtures
from haiku.rag.capabilities.compaction import COMPACTION_CAPABILITY_ID
from haiku.rag.capabilities.policy import POLICY_CAPABILITY_ID
from haiku.rag.capabilities.rag import RAG_CAPABILITY_ID
from haiku_desk.services.chat import HOW_TO_CONNECT_A_MODEL, ChatService
from haiku_desk.services.conversations import ConversationStore
from haiku_desk.services.models import ModelsService
from haiku_desk.services.notifications import Notifications

QUESTION = "Why were the night convoys delayed?"


built, library, app_config = chat_library_fixtures("chat-library")


def make_chat(library, app_config) -> tuple[ChatService, ModelsService, Notifications]:
    notifications = Notifications()
    models = ModelsService(app_config, notifications)
    # each test its own conversations (the module shares one library, which holds them)
    store = ConversationStore.in_data_dir(app_config.storage.data_dir)
    return ChatService(library, models, notifications, store=store), models, notifications


def history(record) -> str:
    """The answering module's conversation of ``record`` (history, state, numbering)."""
    return json.dumps(record.conversation, sort_keys=True, default=str)


def ask_and_wait(qloop, chat: ChatService, question: str):
    outcome: list = []
    operation = chat.ask(question)
    assert operation is not None
    operation.succeeded.connect(outcome.append)
    operation.failed.connect(lambda exc: outcome.append(RuntimeError(str(exc))))
    run_until(qloop, lambda: bool(outcome) and not chat.busy)
    (result,) = outcome
    if isinstance(result, Exception):
        raise result
    return result


def test_an_answer_streams_with_tool_steps_citations_and_grounding(
    qloop, library, app_config, built
):
    chat, models, _ = make_chat(library, app_config)
    script = StreamingScript().play(
        search("kerosene shortage night convoys"),
        cite_top(1),
        answer("Kerosene ran short, so the night convoys waited."),
    )
    models.use_model_instance(script.model)
    log = QuestionLog(chat)

    turn = ask_and_wait(qloop, chat, QUESTION)
    deltas, steps = log.deltas, [step.label for step in log.steps]

    assert len(deltas) > 1  # streamed in pieces, not delivered at the end
    assert "".join(deltas) == "Kerosene ran short, so the night convoys waited."
    assert steps[0] == "Searching “kerosene shortage night convoys”"
    assert steps[1] == "Citing 1 source"
    assert turn.answer == "Kerosene ran short, so the night convoys waited."
    assert turn.grounding == "grounded" and turn.mode == "tools"
    (citation,) = turn.citations
    assert citation.index == 1 and citation.document_id == built.report_id
    assert "kerosene shortage" in citation.content
    assert built.report.block("p_discussion").page in citation.page_numbers
    assert turn.input_tokens and turn.input_tokens > 0
    assert chat.token_meter == (turn.input_tokens, 0)
    assert chat.current.title == QUESTION


def test_an_answer_that_declares_nothing_is_missing_and_an_empty_citation_ungrounded(
    qloop, library, app_config
):
    chat, models, _ = make_chat(library, app_config)
    models.use_model_instance(StreamingScript().play(answer("Hello there.")).model)
    assert ask_and_wait(qloop, chat, "Hi!").grounding == "missing"
    models.use_model_instance(StreamingScript().play(cite(), answer("Nothing found.")).model)
    assert ask_and_wait(qloop, chat, "What about dragons?").grounding == "ungrounded"


def test_the_toggles_change_the_capabilities_of_the_next_run(qloop, library, app_config):
    chat, models, _ = make_chat(library, app_config)
    chat.new_conversation()

    models.use_model_instance(StreamingScript().play(answer("One.")).model)
    ask_and_wait(qloop, chat, "First?")
    assert chat.last_capability_ids == (RAG_CAPABILITY_ID,)

    chat.set_toggles(evidence_compaction=True)
    chat.set_toggles(citation_policy=True)
    models.use_model_instance(StreamingScript().play(answer("Two.")).model)
    ask_and_wait(qloop, chat, "Second?")
    assert chat.last_capability_ids == (
        RAG_CAPABILITY_ID,
        COMPACTION_CAPABILITY_ID,
        POLICY_CAPABILITY_ID,
    )

    chat.set_toggles(citation_policy=False)
    models.use_model_instance(StreamingScript().play(answer("Three.")).model)
    ask_and_wait(qloop, chat, "Third?")
    assert chat.last_capability_ids == (RAG_CAPABILITY_ID, COMPACTION_CAPABILITY_ID)


def test_the_citation_policy_toggle_makes_an_undeclared_answer_declare(qloop, library, app_config):
    chat, models, _ = make_chat(library, app_config)
    chat.new_conversation()
    chat.set_toggles(citation_policy=True)
    script = StreamingScript().play(
        search("kerosene shortage"), answer("Kerosene."), cite_top(1), answer("Kerosene.")
    )
    models.use_model_instance(script.model)
    turn = ask_and_wait(qloop, chat, QUESTION)
    assert turn.grounding == "grounded" and len(script.seen) == 4


def test_analysis_mode_adds_the_analysis_capability_last_or_says_it_is_missing(
    qloop, library, app_config
):
    chat, models, notifications = make_chat(library, app_config)
    chat.new_conversation()
    chat.set_toggles(evidence_compaction=True)
    chat.set_toggles(analysis=True)
    models.use_model_instance(StreamingScript().play(answer("Done.")).model)
    ask_and_wait(qloop, chat, "Count the documents")
    try:
        import haiku.rag.capabilities.analysis  # noqa: F401
    except ImportError:
        assert "analysis" in notifications.history[-1].message
        assert chat.last_capability_ids == (RAG_CAPABILITY_ID, COMPACTION_CAPABILITY_ID)
    else:
        assert len(chat.last_capability_ids) == 3
        assert chat.last_capability_ids[:2] == (RAG_CAPABILITY_ID, COMPACTION_CAPABILITY_ID)


def test_the_conversations_scope_decides_what_the_model_reads(qloop, library, app_config, built):
    chat, models, _ = make_chat(library, app_config)
    scopes = []
    chat.scope_changed.connect(scopes.append)
    chat.set_scope([built.notes_id])  # before any conversation: kept for the next one
    assert scopes == [(built.notes_id,)] and chat.current is None
    script = StreamingScript().play(search("night convoys delayed"), answer("Nothing."))
    models.use_model_instance(script.model)
    ask_and_wait(qloop, chat, QUESTION)
    scoped = chat.current
    assert scoped.scope == [built.notes_id]
    shown = str(script.seen[-1].last_return("rag_search").content)
    assert "glass eels" in shown and "kerosene" not in shown

    chat.new_conversation()
    chat.set_scope(None)  # the whole library, in this conversation only
    script = StreamingScript().play(search("night convoys delayed kerosene"), answer("Kerosene."))
    models.use_model_instance(script.model)
    ask_and_wait(qloop, chat, QUESTION)
    assert "kerosene" in str(script.seen[-1].last_return("rag_search").content).lower()

    chat.open_conversation(scoped.id)  # switching back brings its scope back
    assert chat.scope() == (built.notes_id,) and scopes[-1] == (built.notes_id,)
    again = make_chat(library, app_config)[0]  # and it is saved with the conversation
    assert again.open_conversation(scoped.id).scope == [built.notes_id]


def test_nothing_ticked_answers_at_once_without_asking_the_model(qloop, library, app_config):
    chat, models, _ = make_chat(library, app_config)
    script = StreamingScript()  # holds no step: asking the model would fail the test
    models.use_model_instance(script.model)
    chat.set_scope([])
    turn = ask_and_wait(qloop, chat, QUESTION)
    assert turn.basis == "no-documents"
    assert "No documents are ticked" in turn.answer and script.seen == []
    assert chat.current.model_messages() == []


def test_stop_keeps_the_partial_answer_marked_stopped_out_of_the_history(
    qloop, library, app_config
):
    chat, models, _ = make_chat(library, app_config)
    models.use_model_instance(
        StreamingScript().play(search("kerosene"), cite_top(1), answer("Kerosene.")).model
    )
    ask_and_wait(qloop, chat, QUESTION)
    record = chat.current
    before = history(record)

    gate = asyncio.Event()  # never set: the answer hangs mid-stream until stopped
    script = StreamingScript(gate=gate).play(search("otters"), answer("Otters hunt glass eels."))
    models.use_model_instance(script.model)
    log = QuestionLog(chat)
    question = chat.ask("What do lantern otters hunt?")
    run_until(qloop, lambda: bool(log.deltas))  # the answer has begun streaming
    chat.stop()
    run_until(qloop, lambda: bool(log.outcomes) and not chat.busy)

    assert log.outcomes == ["cancelled"]
    assert history(record) == before  # the model's history and state are as before
    first, stopped = record.turns
    assert stopped is question.turn and stopped.stopped and stopped.basis == "stopped"
    assert stopped.question == "What do lantern otters hunt?"
    assert stopped.answer == "Otter" == "".join(log.deltas)  # what had streamed
    assert stopped.citations == []
    saved = make_chat(library, app_config)[0].open_conversation(record.id)
    assert saved.turns[-1].stopped and saved.turns[-1].answer == "Otter"
    assert history(saved) == before

    # and the conversation goes on from where it was
    models.use_model_instance(
        StreamingScript().play(search("otters"), cite_top(1), answer("Eels.")).model
    )
    turn = ask_and_wait(qloop, chat, "What do lantern otters hunt?")
    assert turn.citations[0].index == 2 and len(record.turns) == 3


def test_a_reopened_conversation_keeps_history_and_state_and_continues(qloop, library, app_config):
    chat, models, _ = make_chat(library, app_config)
    chat.new_conversation()
    chat.set_toggles(evidence_compaction=True)
    chat.set_toggles(citation_policy=True)
    models.use_model_instance(
        StreamingScript().play(search("kerosene shortage"), cite_top(1), answer("Kerosene.")).model
    )
    first = ask_and_wait(qloop, chat, QUESTION)
    record_id = chat.current.id
    saved = history(chat.current)

    # A new service over the same data dir, as a new window would build it.
    again, models2, _ = make_chat(library, app_config)
    assert [s.id for s in again.conversations()] == [record_id]
    record = again.open_conversation(record_id)
    assert record.toggles.evidence_compaction and record.toggles.citation_policy
    assert history(record) == saved and record.conversation["state"]["rag"]["citation_index"]
    assert len(record.model_messages()) == 6  # question, search, return, cite, return, answer
    assert record.turns[0].citations == first.citations

    script = StreamingScript().play(search("otters glass eels"), cite_top(1), answer("Eels."))
    models2.use_model_instance(script.model)
    turn = ask_and_wait(qloop, again, "What do lantern otters hunt?")
    assert turn.citations[0].index == 2  # citation indexes run on from the saved state
    assert again.last_capability_ids[1:] == (COMPACTION_CAPABILITY_ID, POLICY_CAPABILITY_ID)
    assert turn.capability_ids == list(again.last_capability_ids)
    # compaction ran on the carried state: the earlier search result reached the model compacted
    sent = script.seen[0].text()
    assert "Evidence cited earlier in this conversation" in sent


def test_conversations_rename_delete_and_search(qloop, library, app_config):
    chat, models, _ = make_chat(library, app_config)
    models.use_model_instance(StreamingScript().play(answer("Kerosene ran short.")).model)
    chat.new_conversation()
    ask_and_wait(qloop, chat, QUESTION)
    first = chat.current.id
    second = chat.new_conversation().id
    chat.rename(second, "  Otter   research ")

    assert {s.title for s in chat.conversations()} == {QUESTION, "Otter research"}
    assert [s.id for s in chat.conversations("otter")] == [second]
    assert [s.id for s in chat.conversations("KEROSENE")] == [first]  # the answer's text
    chat.delete(second)
    assert [s.id for s in chat.conversations()] == [first]
    assert not chat.store.path_of(second).exists() and chat.current is None


def test_search_only_mode_answers_with_citations_and_says_how_to_connect(
    qloop, library, app_config, built
):
    chat, models, _ = make_chat(library, app_config)
    assert not models.is_configured() and chat.answer_mode() == "search-only"
    turn = ask_and_wait(qloop, chat, "kerosene shortage night convoys")
    assert turn.mode == "search-only" and turn.grounding == "grounded"
    assert turn.citations and turn.citations[0].index == 1
    assert any(c.document_id == built.report_id for c in turn.citations)
    assert "kerosene" in turn.answer.lower()
    assert HOW_TO_CONNECT_A_MODEL in turn.answer
    assert chat.current.model_messages() == []  # no model, no history


def test_a_model_without_tools_answers_from_passages_automatically_or_by_hand(
    qloop, library, app_config
):
    chat, models, _ = make_chat(library, app_config)
    script = StreamingScript().play(answer("The kerosene shortage [1]."))
    models.use_model_instance(script.model, supports_tools=False)
    assert chat.answer_mode() == "fallback"
    turn = ask_and_wait(qloop, chat, QUESTION)
    assert turn.mode == "fallback" and turn.grounding == "grounded"
    assert turn.answer == "The kerosene shortage [1]." and turn.citations[0].index == 1
    assert script.seen[0].tool_names == []

    models.use_model_instance(StreamingScript().play(answer("x")).model, supports_tools=True)
    assert chat.answer_mode() == "tools"
    chat.set_toggles(no_tools=True)
    assert chat.answer_mode() == "fallback"


def test_a_failing_model_is_reported_and_leaves_the_history_unchanged(qloop, library, app_config):
    """The model's history is as it was; the question stays in the transcript with why (it
    was lost at the next start, tester 16:39)."""
    chat, models, notifications = make_chat(library, app_config)
    chat.new_conversation()

    def broken(request):
        raise RuntimeError("the model server crashed")

    models.use_model_instance(StreamingScript().play(broken).model)
    with pytest.raises(RuntimeError, match="the model server crashed"):
        ask_and_wait(qloop, chat, QUESTION)
    assert chat.current.conversation is None  # the model's history: nothing of it
    (turn,) = chat.current.turns
    assert turn.basis == "not-answered" and "the model server crashed" in turn.failure.reason
    assert "the model server crashed" in notifications.history[-1].message


def test_saved_files_never_hold_a_key(qloop, library, app_config, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-should-never-be-saved")
    chat, models, _ = make_chat(library, app_config)
    models.use_model_instance(StreamingScript().play(answer("Fine.")).model)
    ask_and_wait(qloop, chat, "Hi")
    for path in ConversationStore.in_data_dir(app_config.storage.data_dir).directory.iterdir():
        assert "sk-secret" not in path.read_text()


# --- Stop: Pydantic AI's own cancellation, reported as a cancellation -----------------------


def stop_and_wait(qloop, chat: ChatService, when, stop: bool = True) -> list[str]:
    """Stop once ``when()`` holds (unless the test stops by itself), then wait until the
    question has ended; returns its outcome (``cancelled``, ``failed: …`` or ``answered``)."""
    seen: list[str] = []
    question = chat.running  # asked just before
    assert question is not None
    question.succeeded.connect(lambda turn: seen.append("answered"))
    question.failed.connect(lambda exc: seen.append(f"failed: {exc}"))
    question.cancelled.connect(lambda: seen.append("cancelled"))
    run_until(qloop, when)
    if stop:
        chat.stop()
    run_until(qloop, lambda: bool(seen) and not chat.busy)
    return seen


def snapshot(chat: ChatService) -> tuple:
    """What the model sees of the conversation, in memory and on disk, and its answered turns
    (a stopped question adds a turn marked stopped, nothing else)."""
    record = chat.current
    path = chat.store.path_of(record.id)  # an empty new chat is not written until asked in
    saved = json.loads(path.read_text()) if path.exists() else {"conversation": None}
    return (
        history(record),
        [t.question for t in record.turns if not t.stopped],
        json.dumps(saved["conversation"], sort_keys=True, default=str),
    )


def errors(notifications: Notifications) -> list[str]:
    return [n.message for n in notifications.history if n.level == "error"]


def test_stop_while_streaming_is_a_cancellation_and_the_conversation_goes_on(
    qloop, library, app_config
):
    chat, models, notifications = make_chat(library, app_config)
    models.use_model_instance(
        StreamingScript().play(search("kerosene"), cite_top(1), answer("Kerosene.")).model
    )
    ask_and_wait(qloop, chat, QUESTION)
    record = chat.current
    log = QuestionLog(chat)  # kept: Qt holds only a weak reference to its handlers
    deltas = log.deltas

    for cycle in range(3):  # Stop, then ask again: the conversation keeps working
        before = snapshot(chat)
        deltas.clear()
        script = StreamingScript(gate=asyncio.Event())  # never set: hangs mid-answer
        models.use_model_instance(script.play(search("otters"), answer("Otters eat eels.")).model)
        operation = chat.ask(f"What do lantern otters hunt? ({cycle})")
        outcome = stop_and_wait(qloop, chat, lambda: bool(deltas))

        assert outcome == ["cancelled"]
        assert operation.error is None and not chat.busy
        assert snapshot(chat) == before  # history, state, answered turns, the saved file
        assert record.turns[-1].stopped
        assert errors(notifications) == []
        assert chat.questions._run_token is None  # the run token goes with the run

        models.use_model_instance(
            StreamingScript().play(search("otters glass eels"), cite_top(1), answer("Eels.")).model
        )
        turn = ask_and_wait(qloop, chat, "What do lantern otters hunt?")
        assert turn.answer == "Eels." and turn.grounding == "grounded"
        assert len(record.turns) == 1 + 2 * (cycle + 1)
    assert errors(notifications) == []


def test_stop_while_rag_search_runs_is_a_cancellation(qloop, library, app_config):
    chat, models, notifications = make_chat(library, app_config)
    chat.new_conversation()
    before = snapshot(chat)
    script = StreamingScript().play(search("kerosene shortage"), cite_top(1), answer("Late."))
    models.use_model_instance(script.model)
    log = QuestionLog(chat)
    # Stop as soon as the search step begins: the agent is executing rag_search.
    log.on_step = lambda step: chat.stop()
    seen = log.outcomes
    chat.ask(QUESTION)
    run_until(qloop, lambda: bool(seen) and not chat.busy)
    log.on_step = None
    steps = [step.label for step in log.steps]

    assert seen == ["cancelled"] and steps == ["Searching “kerosene shortage”"]
    assert len(script.seen) == 1  # the model was never asked again after the search
    assert snapshot(chat) == before
    assert errors(notifications) == []

    models.use_model_instance(
        StreamingScript().play(search("kerosene shortage"), cite_top(1), answer("Late.")).model
    )
    turn = ask_and_wait(qloop, chat, QUESTION)
    assert turn.citations[0].index == 1 and turn.grounding == "grounded"


def test_stop_while_analysis_code_runs_in_the_sandbox_is_a_cancellation(
    qloop, library, app_config, monkeypatch
):
    pytest.importorskip("haiku.rag.capabilities.analysis")
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    # The sandbox thread finishes the abandoned program at its own time limit.
    monkeypatch.setattr(library.client.config.analysis, "code_timeout", 3)
    chat, models, notifications = make_chat(library, app_config)
    chat.new_conversation()
    chat.set_toggles(analysis=True)
    before = snapshot(chat)
    endless = "n = 0\nwhile True:\n    n += 1\n"
    script = StreamingScript().play(
        ModelResponse(parts=[ToolCallPart("analysis_execute_code", {"code": endless})]),
        answer("Never."),
    )
    models.use_model_instance(script.model)
    log = QuestionLog(chat)
    started, analysed = log.steps, log.finished_steps
    chat.ask("Count forever")
    outcome = stop_and_wait(qloop, chat, lambda: bool(started))

    assert outcome == ["cancelled"] and started[0].kind == "analysis"
    assert analysed == []  # the program never returned to the model
    assert len(script.seen) == 1 and snapshot(chat) == before
    assert errors(notifications) == []

    models.use_model_instance(
        StreamingScript()
        .play(
            ModelResponse(parts=[ToolCallPart("analysis_execute_code", {"code": "print(6 * 7)"})]),
            answer("42."),
        )
        .model
    )
    turn = ask_and_wait(qloop, chat, "What is six times seven?")
    assert turn.answer == "42." and "42" in turn.steps[0].output


# --- one citation numbering across capabilities ------------------------------------------


def test_rag_and_analysis_citations_share_one_numbering_for_the_conversation(
    qloop, library, app_config, built
):
    pytest.importorskip("haiku.rag.capabilities.analysis")
    chat, models, _ = make_chat(library, app_config)
    chat.new_conversation()
    chat.set_toggles(analysis=True)
    script = StreamingScript().play(
        search("kerosene shortage night convoys"),
        cite_top(1),
        search("lantern otters glass eels", tool="analysis_search"),
        cite_top(1, search_tool="analysis_search", tool="analysis_cite"),
        answer("Kerosene ran short [1]; otters hunt eels."),
    )
    models.use_model_instance(script.model)
    first = ask_and_wait(qloop, chat, QUESTION)
    rag, analysis = first.citations
    assert (rag.index, analysis.index) == (1, 2)  # each capability counted 1 on its own
    assert rag.document_id == built.report_id and analysis.document_id == built.notes_id
    state = chat.current.conversation["state"]
    assert state["rag"]["citation_index"][rag.chunk_id]["index"] == 1
    assert state["analysis"]["citation_index"][analysis.chunk_id]["index"] == 1
    assert first.answer == "Kerosene ran short [1]; otters hunt eels."

    # Next answer, the other way round: analysis cites the report passage RAG cited, RAG the
    # otter passage analysis cited. Each is new to the capability citing it now (its own
    # counter says 2) but keeps the one number the conversation showed it with.
    script = StreamingScript().play(
        search("kerosene shortage night convoys", tool="analysis_search"),
        cite_top(1, search_tool="analysis_search", tool="analysis_cite"),
        search("lantern otters glass eels"),
        cite_top(1),
        answer("Otters hunt eels [2]."),
    )
    models.use_model_instance(script.model)
    second = ask_and_wait(qloop, chat, "And the otters?")
    state = chat.current.conversation["state"]
    assert state["analysis"]["citation_index"][rag.chunk_id]["index"] == 2
    assert state["rag"]["citation_index"][analysis.chunk_id]["index"] == 2
    assert [(c.chunk_id, c.index) for c in second.citations] == [
        (rag.chunk_id, 1),
        (analysis.chunk_id, 2),
    ]
    assert second.answer == "Otters hunt eels [2]."  # RAG's 2, the otter passage, is shown as 2


def test_a_conversation_saved_in_format_1_is_read_and_goes_on(qloop, library, app_config):
    chat, models, _ = make_chat(library, app_config)
    models.use_model_instance(
        StreamingScript().play(search("kerosene shortage"), cite_top(1), answer("Kerosene.")).model
    )
    first = ask_and_wait(qloop, chat, QUESTION)
    path = chat.store.path_of(chat.current.id)
    saved = json.loads(path.read_text())
    inner = saved.pop("conversation")  # as format 1 wrote it: history and state side by side
    saved.update(version=1, messages=inner["messages"], state=inner["state"])
    path.write_text(json.dumps(saved))

    again, models2, _ = make_chat(library, app_config)
    record = again.open_conversation(chat.current.id)
    assert record.version == 1 and record.turns[0].citations == first.citations
    assert len(record.model_messages()) == 6
    models2.use_model_instance(
        StreamingScript().play(search("otters glass eels"), cite_top(1), answer("Eels.")).model
    )
    turn = ask_and_wait(qloop, again, "What do lantern otters hunt?")
    assert turn.citations[0].index == 2  # the numbering goes on from the old answers
    rewritten = json.loads(path.read_text())
    assert rewritten["version"] == 2 and rewritten["messages"] == [] and rewritten["state"] == {}
    assert len(again.current.model_messages()) == 12


def test_an_empty_new_chat_is_listed_while_the_app_runs_but_not_kept(qloop, library, app_config):
    chat, models, _ = make_chat(library, app_config)
    empty = chat.new_conversation()  # Ctrl+N, then nothing asked
    chat.set_toggles(evidence_compaction=True)
    chat.set_scope([])
    assert [s.id for s in chat.conversations()] == [empty.id]  # listed while the app runs
    named = chat.new_conversation()
    chat.rename(named.id, "Ideas")  # the user's own title: kept
    asked = chat.new_conversation()
    models.use_model_instance(StreamingScript().play(answer("Hello.")).model)
    ask_and_wait(qloop, chat, "Hi!")

    relaunched = make_chat(library, app_config)[0]
    assert {s.id for s in relaunched.conversations()} == {asked.id, named.id}
    assert not chat.store.path_of(empty.id).exists()
