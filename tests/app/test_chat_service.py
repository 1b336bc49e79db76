"""ChatService over a real library: streaming, citations, grounding, toggles, scope, stop,
persistence and search-only mode."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from capabilities.scripting import answer, cite, cite_top, search
from qt_helpers import run_until

from app.chat_helpers import BuiltLibrary, StreamingScript, build_library, open_library
from haiku.rag.capabilities.compaction import COMPACTION_CAPABILITY_ID
from haiku.rag.capabilities.policy import POLICY_CAPABILITY_ID
from haiku.rag.capabilities.rag import RAG_CAPABILITY_ID
from haiku_desk.bridge import install_event_loop
from haiku_desk.services.chat import ChatService
from haiku_desk.services.conversations import ConversationStore
from haiku_desk.services.library import LibraryService
from haiku_desk.services.models import HOW_TO_CONNECT_A_MODEL, ModelsService
from haiku_desk.services.notifications import Notifications

QUESTION = "Why were the night convoys delayed?"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> BuiltLibrary:
    return build_library(tmp_path_factory.mktemp("chat-library"))


@pytest.fixture(scope="module")
def library(built, qapp) -> Iterator[LibraryService]:
    """The app's library service on the built store, shared by the module (the embedder loads
    once); each test starts with nothing selected."""
    loop = install_event_loop(qapp)
    service = open_library(built, loop)
    yield service
    service.close()


@pytest.fixture
def app_config(built, tmp_path):
    config = built.config.model_copy(deep=True)
    config.storage.data_dir = tmp_path / "app-data"
    return config


def make_chat(library, app_config) -> tuple[ChatService, ModelsService, Notifications]:
    notifications = Notifications()
    models = ModelsService(app_config, notifications)
    return ChatService(library, models, notifications), models, notifications


def ask_and_wait(qloop, chat: ChatService, question: str):
    outcome: list = []
    chat.answer_ready.connect(lambda cid, turn: outcome.append(turn))
    chat.question_failed.connect(lambda cid, message: outcome.append(RuntimeError(message)))
    operation = chat.ask(question)
    assert operation is not None
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
    deltas, steps = [], []
    chat.text_delta.connect(lambda cid, text: deltas.append(text))
    chat.tool_step.connect(lambda cid, step: steps.append(step.label))

    turn = ask_and_wait(qloop, chat, QUESTION)

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
    assert chat.token_meter == turn.input_tokens
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
    assert chat.last_built.capability_ids == (RAG_CAPABILITY_ID,)
    agent_ids = [c.id for c in chat.last_built.agent.root_capability.capabilities]
    assert COMPACTION_CAPABILITY_ID not in agent_ids and POLICY_CAPABILITY_ID not in agent_ids

    chat.set_toggle("evidence_compaction", True)
    chat.set_toggle("citation_policy", True)
    models.use_model_instance(StreamingScript().play(answer("Two.")).model)
    ask_and_wait(qloop, chat, "Second?")
    assert chat.last_built.capability_ids == (
        RAG_CAPABILITY_ID,
        COMPACTION_CAPABILITY_ID,
        POLICY_CAPABILITY_ID,
    )
    agent_ids = [c.id for c in chat.last_built.agent.root_capability.capabilities]
    assert COMPACTION_CAPABILITY_ID in agent_ids and POLICY_CAPABILITY_ID in agent_ids

    chat.set_toggle("citation_policy", False)
    models.use_model_instance(StreamingScript().play(answer("Three.")).model)
    ask_and_wait(qloop, chat, "Third?")
    assert chat.last_built.capability_ids == (RAG_CAPABILITY_ID, COMPACTION_CAPABILITY_ID)


def test_the_citation_policy_toggle_makes_an_undeclared_answer_declare(qloop, library, app_config):
    chat, models, _ = make_chat(library, app_config)
    chat.new_conversation()
    chat.set_toggle("citation_policy", True)
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
    chat.set_toggle("evidence_compaction", True)
    chat.set_toggle("analysis", True)
    models.use_model_instance(StreamingScript().play(answer("Done.")).model)
    ask_and_wait(qloop, chat, "Count the documents")
    try:
        import haiku.rag.capabilities.analysis  # noqa: F401
    except ImportError:
        assert chat.analysis_unavailable and "analysis" in notifications.history[-1].message
        assert chat.last_built.capability_ids == (RAG_CAPABILITY_ID, COMPACTION_CAPABILITY_ID)
    else:
        assert len(chat.last_built.capability_ids) == 3
        assert chat.last_built.capability_ids[:2] == (RAG_CAPABILITY_ID, COMPACTION_CAPABILITY_ID)


def test_stop_leaves_the_conversation_as_it_was(qloop, library, app_config):
    chat, models, _ = make_chat(library, app_config)
    models.use_model_instance(
        StreamingScript().play(search("kerosene"), cite_top(1), answer("Kerosene.")).model
    )
    ask_and_wait(qloop, chat, QUESTION)
    record = chat.current
    saved_before = chat.store.path_of(record.id).read_text()
    messages_before, state_before = list(record.messages), json.dumps(record.state, sort_keys=True)

    gate = asyncio.Event()  # never set: the answer hangs mid-stream until stopped
    script = StreamingScript(gate=gate).play(search("otters"), answer("Otters hunt glass eels."))
    models.use_model_instance(script.model)
    deltas, cancelled = [], []
    chat.text_delta.connect(lambda cid, text: deltas.append(text))
    chat.question_cancelled.connect(cancelled.append)
    chat.ask("What do lantern otters hunt?")
    run_until(qloop, lambda: bool(deltas))  # the answer has begun streaming
    chat.stop()
    run_until(qloop, lambda: bool(cancelled) and not chat.busy)

    assert cancelled == [record.id]
    assert record.messages == messages_before
    assert json.dumps(record.state, sort_keys=True) == state_before
    assert len(record.turns) == 1
    assert chat.store.path_of(record.id).read_text() == saved_before

    # and the conversation goes on from where it was
    models.use_model_instance(
        StreamingScript().play(search("otters"), cite_top(1), answer("Eels.")).model
    )
    turn = ask_and_wait(qloop, chat, "What do lantern otters hunt?")
    assert turn.citations[0].index == 2 and len(record.turns) == 2


def test_a_reopened_conversation_keeps_history_and_state_and_continues(qloop, library, app_config):
    chat, models, _ = make_chat(library, app_config)
    chat.new_conversation()
    chat.set_toggle("evidence_compaction", True)
    chat.set_toggle("citation_policy", True)
    models.use_model_instance(
        StreamingScript().play(search("kerosene shortage"), cite_top(1), answer("Kerosene.")).model
    )
    first = ask_and_wait(qloop, chat, QUESTION)
    record_id = chat.current.id
    state = chat.current.state

    # A new service over the same data dir, as a new window would build it.
    again, models2, _ = make_chat(library, app_config)
    assert [s.id for s in again.conversations()] == [record_id]
    record = again.open_conversation(record_id)
    assert record.toggles.evidence_compaction and record.toggles.citation_policy
    assert record.state == state and record.state["rag"]["citation_index"]
    assert len(record.model_messages()) == 6  # question, search, return, cite, return, answer
    assert record.turns[0].citations == first.citations

    script = StreamingScript().play(search("otters glass eels"), cite_top(1), answer("Eels."))
    models2.use_model_instance(script.model)
    turn = ask_and_wait(qloop, again, "What do lantern otters hunt?")
    assert turn.citations[0].index == 2  # citation indexes run on from the saved state
    assert again.last_built.capability_ids[1:] == (COMPACTION_CAPABILITY_ID, POLICY_CAPABILITY_ID)
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
    assert chat.current.messages == []  # no model, no history


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
    chat.set_toggle("no_tools", True)
    assert chat.answer_mode() == "fallback"


def test_a_failing_model_is_reported_and_leaves_the_conversation_unchanged(
    qloop, library, app_config
):
    chat, models, notifications = make_chat(library, app_config)
    chat.new_conversation()

    def broken(request):
        raise RuntimeError("the model server crashed")

    models.use_model_instance(StreamingScript().play(broken).model)
    with pytest.raises(RuntimeError, match="the model server crashed"):
        ask_and_wait(qloop, chat, QUESTION)
    assert chat.current.turns == [] and chat.current.messages == []
    assert "the model server crashed" in notifications.history[-1].message


def test_saved_files_never_hold_a_key(qloop, library, app_config, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-should-never-be-saved")
    chat, models, _ = make_chat(library, app_config)
    models.use_model_instance(StreamingScript().play(answer("Fine.")).model)
    ask_and_wait(qloop, chat, "Hi")
    for path in ConversationStore.in_data_dir(app_config.storage.data_dir).directory.iterdir():
        assert "sk-secret" not in path.read_text()


# --- Stop: Pydantic AI's own cancellation, reported as a cancellation -----------------------


def outcomes(chat: ChatService) -> list[str]:
    """The outcome signals of the questions asked from now on."""
    seen: list[str] = []
    chat.question_cancelled.connect(lambda cid: seen.append("cancelled"))
    chat.question_failed.connect(lambda cid, message: seen.append(f"failed: {message}"))
    chat.answer_ready.connect(lambda cid, turn: seen.append("answered"))
    return seen


def stop_and_wait(qloop, chat: ChatService, when, stop: bool = True) -> list[str]:
    """Stop once ``when()`` holds (unless the test stops by itself), then wait until the
    question has ended; returns its outcome (``cancelled``, ``failed: …`` or ``answered``)."""
    seen = outcomes(chat)
    run_until(qloop, when)
    if stop:
        chat.stop()
    run_until(qloop, lambda: bool(seen) and not chat.busy)
    return seen


def snapshot(chat: ChatService) -> tuple:
    record = chat.current
    return (
        json.dumps(record.messages, sort_keys=True, default=str),
        json.dumps(record.state, sort_keys=True),
        len(record.turns),
        chat.store.path_of(record.id).read_text(),
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
    deltas: list[str] = []
    chat.text_delta.connect(lambda cid, text: deltas.append(text))

    for cycle in range(3):  # Stop, then ask again: the conversation keeps working
        before = snapshot(chat)
        deltas.clear()
        script = StreamingScript(gate=asyncio.Event())  # never set: hangs mid-answer
        models.use_model_instance(script.play(search("otters"), answer("Otters eat eels.")).model)
        operation = chat.ask(f"What do lantern otters hunt? ({cycle})")
        outcome = stop_and_wait(qloop, chat, lambda: bool(deltas))

        assert outcome == ["cancelled"]
        assert operation.error is None and not chat.busy
        assert snapshot(chat) == before  # history, state, turns and the saved file
        assert errors(notifications) == []
        assert chat._run_token is None

        models.use_model_instance(
            StreamingScript().play(search("otters glass eels"), cite_top(1), answer("Eels.")).model
        )
        turn = ask_and_wait(qloop, chat, "What do lantern otters hunt?")
        assert turn.answer == "Eels." and turn.grounding == "grounded"
        assert len(record.turns) == 2 + cycle
    assert errors(notifications) == []


def test_stop_while_rag_search_runs_is_a_cancellation(qloop, library, app_config):
    chat, models, notifications = make_chat(library, app_config)
    chat.new_conversation()
    before = snapshot(chat)
    script = StreamingScript().play(search("kerosene shortage"), cite_top(1), answer("Late."))
    models.use_model_instance(script.model)
    steps: list[str] = []
    # Stop as soon as the search step begins: the agent is executing rag_search.
    chat.tool_step.connect(lambda cid, step: (steps.append(step.label), chat.stop()))
    seen = outcomes(chat)
    chat.ask(QUESTION)
    run_until(qloop, lambda: bool(seen) and not chat.busy)
    chat.tool_step.disconnect()

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
    chat.set_toggle("analysis", True)
    before = snapshot(chat)
    endless = "n = 0\nwhile True:\n    n += 1\n"
    script = StreamingScript().play(
        ModelResponse(parts=[ToolCallPart("analysis_execute_code", {"code": endless})]),
        answer("Never."),
    )
    models.use_model_instance(script.model)
    started: list = []
    chat.tool_step.connect(lambda cid, step: started.append(step))
    analysed: list = []
    chat.analysis_step.connect(lambda cid, step: analysed.append(step))
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
    chat.set_toggle("analysis", True)
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
    assert chat.current.state["rag"]["citation_index"][rag.chunk_id]["index"] == 1
    assert chat.current.state["analysis"]["citation_index"][analysis.chunk_id]["index"] == 1
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
    state = chat.current.state
    assert state["analysis"]["citation_index"][rag.chunk_id]["index"] == 2
    assert state["rag"]["citation_index"][analysis.chunk_id]["index"] == 2
    assert [(c.chunk_id, c.index) for c in second.citations] == [
        (rag.chunk_id, 1),
        (analysis.chunk_id, 2),
    ]
    assert second.answer == "Otters hunt eels [2]."  # RAG's 2, the otter passage, is shown as 2


def test_markers_follow_the_display_numbers():
    from haiku.rag.capabilities.state import Citation
    from haiku_desk.services.chat import display_numbering
    from haiku_desk.services.conversations import Turn

    def citation(index: int, chunk_id: str) -> Citation:
        return Citation(
            index=index, chunk_id=chunk_id, document_id="d", document_uri="u", content="c"
        )

    earlier = Turn(question="q", mode="tools", citations=[citation(1, "a"), citation(2, "x")])
    shown, text = display_numbering(
        [earlier],
        [("analysis", citation(1, "b")), ("rag", citation(2, "c")), ("rag", citation(1, "a"))],
        "C [2], A [1], both [1, 2], other [7].",
    )
    assert [(c.chunk_id, c.index) for c in shown] == [("b", 3), ("c", 4), ("a", 1)]
    assert text == "C [4], A [1], both [1, 4], other [7]."
