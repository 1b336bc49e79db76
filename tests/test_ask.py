"""Answering (``haiku.rag.answering``) and ``haiku-rag ask`` over a real store: the tool mode, the
no-tool fallback, and the command end to end against a scripted OpenAI-compatible server on
127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pdf_factory
import pytest
from capabilities.scripting import ScriptedModel, answer, chunk_ids_in, cite, cite_top, search
from openai_stub_server import StubOpenAI
from pydantic_ai.exceptions import ModelConnectionError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from haiku.rag import answering
from haiku.rag.answering import AGENT_PREAMBLE, Answered, AnswerOptions, Conversation
from haiku.rag.answering.fallback import FALLBACK_INSTRUCTIONS, NO_PASSAGES, REFUSAL
from haiku.rag.capabilities.rag import RAGState
from haiku.rag.citations import Citation, pages_label
from haiku.rag.client import HaikuRAG
from haiku.rag.config import AppConfig, load_config
from haiku.rag.errors import ChatModelError, ModelNotConfiguredError
from haiku.rag.models import HOW_TO_CONNECT

HAIKU_RAG = str(Path(sys.executable).parent / "haiku-rag")
QUESTION = "Why were the night convoys delayed?"
TWO_TOPICS = "What delayed the night convoys, and what do lantern otters hunt?"
OTTER_NOTES = (
    "# Lantern Otters\n\nLantern otters hunt glass eels at dusk along the quartz rivers.\n"
)


@dataclass(frozen=True)
class Library:
    db_path: Path
    config: AppConfig
    report: pdf_factory.PdfLayout
    report_id: str


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    """The generated report PDF, ingested as a user would, next to a Markdown note."""
    root = tmp_path_factory.mktemp("ask-library")
    config = load_config()
    config.storage.data_dir = root / "data"
    config.embeddings.threads = 2
    report = pdf_factory.make_report_pdf(root / "report.pdf")
    db_path = root / "library.lancedb"

    async def ingest() -> str:
        async with HaikuRAG(db_path, config, create=True) as client:
            outcome = await client.ingest_file(report.path)
            assert outcome.status == "ingested" and outcome.document is not None
            await client.create_document(OTTER_NOTES, uri="notes://otters", title="Lantern Otters")
            return outcome.document.id

    report_id = asyncio.run(ingest())
    return Library(db_path=db_path, config=config, report=report, report_id=report_id)


@pytest.fixture(scope="module")
def client(library: Library) -> Iterator[HaikuRAG]:
    """One read-only client for the module: the embedder loads once."""
    client = HaikuRAG(library.db_path, library.config, read_only=True)
    yield client
    client.close()


def rag_state(conversation: Conversation) -> RAGState:
    return RAGState.model_validate(conversation.state.get("rag") or {})


async def ask(
    client: HaikuRAG,
    question: str,
    *,
    model: Any = None,
    mode: Any = "auto",
    conversation: Conversation | None = None,
    filter: str | None = None,
) -> Answered:
    """One question through answering; ``filter`` selects the documents in scope (as the CLI
    resolves ``--filter``)."""
    document_ids = None
    if filter is not None:
        document_ids = tuple(d.id for d in await client.list_documents(filter=filter))
    options = AnswerOptions(mode=mode, document_ids=document_ids)
    return await answering.answer(client, question, conversation, options, model=model)


def has_box_of(boxes: list[Any], block: pdf_factory.DrawnBlock) -> bool:
    """Whether the boxes outline ``block``'s first line (Box objects or their JSON)."""
    first_line = block.lines[0].rect
    for box in boxes:
        page, y0 = (box["page"], box["y0"]) if isinstance(box, dict) else (box.page, box.y0)
        if page == block.page and abs(y0 - first_line[1]) < 2:
            return True
    return False


def assert_cites_the_discussion(citation: Citation, library: Library) -> None:
    block = library.report.block("p_discussion")
    assert citation.document_id == library.report_id
    assert "kerosene shortage" in citation.content
    assert block.page in citation.page_numbers
    assert has_box_of(citation.boxes, block)


# --- tools --------------------------------------------------------------------------------


async def test_ask_searches_and_cites_with_the_passage_pages_and_boxes(client, library):
    script = ScriptedModel().play(
        search("kerosene shortage night convoys"), cite_top(1), answer("Kerosene ran short.")
    )
    result = await ask(client, QUESTION, model=script.model)

    assert result.mode == "tools"
    assert result.text == "Kerosene ran short."
    assert result.grounding == "grounded"
    (citation,) = result.citations
    assert citation.index == 1
    assert_cites_the_discussion(citation, library)
    first = script.seen[0]
    assert set(first.tool_names) == {"rag_search", "rag_cite"}  # loaded at once, not deferred
    assert AGENT_PREAMBLE in first.instructions and "# RAG" in first.instructions


async def test_citations_come_in_the_order_they_were_cited_not_by_index(client):
    conversation = Conversation()
    first = ScriptedModel().play(search("kerosene otters"), cite_top(1), answer())
    await ask(client, TWO_TOPICS, model=first.model, conversation=conversation)
    shown = chunk_ids_in(str(first.seen[1].last_return("rag_search").content))
    assert len(shown) >= 2

    # A new chunk, then the one cited before: indexes 2 and 1, in that order.
    second = ScriptedModel().play(cite(shown[1], shown[0]), answer())
    result = await ask(client, "And the other?", model=second.model, conversation=conversation)
    assert [(c.chunk_id, c.index) for c in result.citations] == [(shown[1], 2), (shown[0], 1)]


@pytest.mark.parametrize("mode", ["tools", "fallback"])
async def test_the_filter_restricts_what_the_model_reads(client, mode):
    steps = [search("night convoys delayed"), answer()] if mode == "tools" else [answer()]
    script = ScriptedModel().play(*steps)
    await ask(client, QUESTION, filter="uri = 'notes://otters'", model=script.model, mode=mode)
    shown = script.seen[-1].text()
    assert "glass eels" in shown
    assert "Zephyrine" not in shown and "kerosene" not in shown


async def test_without_a_configured_model_ask_says_how_to_connect_one(client):
    assert client.config.qa.model.provider is None
    with pytest.raises(ModelNotConfiguredError, match=re.escape(HOW_TO_CONNECT)):
        await ask(client, QUESTION)


@pytest.mark.parametrize(
    ("supports_tools", "mode", "used"),
    [
        (None, "auto", "tools"),
        (True, "auto", "tools"),
        (False, "auto", "fallback"),
        (None, "fallback", "fallback"),
        (False, "tools", "tools"),
    ],
)
async def test_the_mode_follows_the_request_then_the_model_s_tool_support(
    client, monkeypatch, supports_tools, mode, used
):
    monkeypatch.setattr(client.config.qa.model, "supports_tools", supports_tools)
    script = ScriptedModel().play(answer("Hello."))
    result = await ask(client, "Hello", model=script.model, mode=mode)
    assert result.mode == used
    assert bool(script.seen[0].tool_names) is (used == "tools")


@pytest.mark.parametrize("mode", ["tools", "fallback"])
async def test_the_domain_preamble_and_model_settings_reach_the_model(client, monkeypatch, mode):
    monkeypatch.setattr(client.config.prompts, "domain_preamble", "You serve a logistics firm.")
    monkeypatch.setattr(client.config.qa.model, "temperature", 0.2)
    monkeypatch.setattr(client.config.qa.model, "max_tokens", 300)
    received: list[AgentInfo] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        received.append(info)
        return ModelResponse(parts=[TextPart("Hello.")])

    await ask(client, "Hello", model=FunctionModel(respond), mode=mode)
    (info,) = received
    assert "You serve a logistics firm." in (info.instructions or "")
    assert info.model_settings is not None
    assert (info.model_settings.get("temperature"), info.model_settings.get("max_tokens")) == (
        0.2,
        300,
    )


# --- fallback: retrieve, then read --------------------------------------------------------


async def test_fallback_markers_become_citations_in_the_capability_state_and_ledger(
    client, library
):
    conversation = Conversation()
    script = ScriptedModel().play(answer("A kerosene shortage [1], and fog [9]."))
    result = await ask(
        client, QUESTION, model=script.model, mode="fallback", conversation=conversation
    )

    assert result.mode == "fallback"
    assert result.grounding == "grounded"
    assert result.text == "A kerosene shortage [1], and fog."  # [9] named no passage
    (citation,) = result.citations
    assert citation.index == 1
    assert_cites_the_discussion(citation, library)

    state = rag_state(conversation)
    passages = state.searches[QUESTION]
    assert len(passages) < 9
    assert citation.chunk_id == passages[0].chunk_id
    assert state.citations == [citation.chunk_id]
    assert state.citation_index[citation.chunk_id] == citation
    ledger = state.evidence
    assert ledger.declaration is not None
    assert [ref.chunk_id for ref in ledger.declaration.refs] == [citation.chunk_id]
    occurrence = ledger.occurrences[citation.chunk_id]
    assert occurrence.cited_in_questions == [0] and occurrence.retrieved_in_questions == [0]
    assert not ledger.in_progress

    seen = script.seen[0]
    assert seen.tool_names == []
    assert AGENT_PREAMBLE in seen.instructions and FALLBACK_INSTRUCTIONS in seen.instructions
    (prompt,) = seen.user_texts()
    pages = pages_label(passages[0].page_numbers)
    assert prompt.startswith(
        'Passages from the knowledge base:\n\n[1] Source: "Quarterly Report on Zephyrine Logistics"'
    )
    assert f" — {pages}\n" in prompt
    assert prompt.endswith(f"Question: {QUESTION}")


async def test_fallback_markers_are_renumbered_to_the_citation_indexes(client):
    conversation = Conversation()
    script = ScriptedModel().play(answer("Second [2]. First [1]. Both [1, 2]."))
    result = await ask(
        client, TWO_TOPICS, model=script.model, mode="fallback", conversation=conversation
    )
    passages = rag_state(conversation).searches[TWO_TOPICS]
    assert len(passages) >= 2
    assert f'\n[2] Source: "{passages[1].document_title}"' in script.seen[0].user_texts()[0]
    assert result.text == "Second [1]. First [2]. Both [2, 1]."
    assert [c.chunk_id for c in result.citations] == [passages[1].chunk_id, passages[0].chunk_id]
    assert [c.index for c in result.citations] == [1, 2]


@pytest.mark.parametrize(
    ("reply", "grounding"),
    [
        (REFUSAL, "ungrounded"),
        ("i cannot find enough information about convoys.", "ungrounded"),
        ("The convoys were delayed by kerosene.", "missing"),
        ("Fog [1], though I cannot find enough information on the rest.", "grounded"),
    ],
)
async def test_fallback_grounding_without_markers(client, reply, grounding):
    conversation = Conversation()
    script = ScriptedModel().play(answer(reply))
    result = await ask(
        client, QUESTION, model=script.model, mode="fallback", conversation=conversation
    )
    assert result.grounding == grounding
    assert bool(result.citations) is (grounding == "grounded")
    declaration = rag_state(conversation).evidence.declaration
    assert (declaration is None) is (grounding == "missing")


async def test_a_scope_without_documents_is_answered_without_the_model(client):
    script = ScriptedModel().play(answer("never asked"))
    result = await ask(
        client, QUESTION, filter="uri = 'notes://none'", model=script.model, mode="fallback"
    )
    assert script.seen == []
    assert result.basis == "no-documents" and result.citations == ()
    assert result.grounding == "missing"


def test_fallback_with_nothing_found_says_so_to_the_model():
    from haiku.rag.answering.fallback import passages_prompt

    assert passages_prompt(QUESTION, []) == f"{NO_PASSAGES}\n\nQuestion: {QUESTION}"


async def test_a_conversation_can_switch_modes(client):
    conversation = Conversation()
    first = await ask(
        client,
        QUESTION,
        model=ScriptedModel().play(answer("Kerosene ran short [1].")).model,
        mode="fallback",
        conversation=conversation,
    )
    (cited,) = first.citations

    follow_up = ScriptedModel().play(cite(cited.chunk_id), answer("As I said: kerosene."))
    second = await ask(
        client, "Say that again?", model=follow_up.model, mode="tools", conversation=conversation
    )
    assert "Kerosene ran short [1]." in follow_up.seen[0].text()  # the history went along
    assert second.grounding == "grounded"
    assert [(c.chunk_id, c.index) for c in second.citations] == [(cited.chunk_id, 1)]

    again = ScriptedModel().play(answer("Kerosene [1]."))
    third = await ask(
        client, QUESTION, model=again.model, mode="fallback", conversation=conversation
    )
    assert "As I said: kerosene." in again.seen[0].text()
    assert [(c.chunk_id, c.index) for c in third.citations] == [(cited.chunk_id, 1)]

    occurrence = rag_state(conversation).evidence.occurrences[cited.chunk_id]
    assert occurrence.cited_in_questions == [0, 2, 6]  # a tool-mode question adds 4 messages
    assert len(conversation.messages) == 8


async def test_a_failed_ask_reports_the_model_and_leaves_the_conversation_as_it_was(client):
    def unreachable(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ModelConnectionError("stub-model", "Connection refused")

    conversation = Conversation()
    with pytest.raises(ChatModelError, match="^cannot reach the chat model .*Connection refused"):
        await ask(client, QUESTION, model=FunctionModel(unreachable), conversation=conversation)
    assert conversation.state == {} and conversation.messages == []

    script = ScriptedModel().play(answer("Hello."))
    result = await ask(client, "Hello", model=script.model, conversation=conversation)
    assert result.text == "Hello."


# --- the command, end to end over HTTP ----------------------------------------------------


def run_ask(
    library: Library, config: Path, *args: str, question: str = QUESTION
) -> subprocess.CompletedProcess[str]:
    # No keychain lookups: a desktop keyring daemon must not answer (or hang) in tests.
    env = {**os.environ, "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"}
    command = [
        HAIKU_RAG,
        "--db",
        str(library.db_path),
        "--config",
        str(config),
        "ask",
        question,
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)


def model_config(tmp_path: Path, base_url: str, extra: str = "") -> Path:
    path = tmp_path / "haiku.rag.yaml"
    path.write_text(
        "qa:\n  model:\n    provider: openai-compatible\n    name: stub-model\n"
        f"    base_url: {base_url}\n{extra}"
    )
    return path


def offered_tools(body: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools", [])}


def user_prompt(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def cited_in_json(stdout: str) -> dict[str, Any]:
    data = json.loads(stdout)
    assert data["grounding"] == "grounded"
    (citation,) = data["citations"]
    assert set(citation) >= {
        "document_id",
        "document_uri",
        "document_title",
        "pages",
        "boxes",
        "text",
    }
    return {**citation, "answer": data["answer"], "mode": data["mode"]}


def assert_cites_the_discussion_json(citation: dict[str, Any], library: Library) -> None:
    block = library.report.block("p_discussion")
    assert citation["document_id"] == library.report_id
    assert citation["document_title"] == pdf_factory.REPORT_TITLE
    assert block.page in citation["pages"]
    assert has_box_of(citation["boxes"], block)
    assert "kerosene shortage" in citation["text"]


def test_the_command_answers_through_an_openai_compatible_server_with_tools(library, tmp_path):
    with StubOpenAI() as stub:
        result = run_ask(library, model_config(tmp_path, stub.base_url), "--json")
    assert result.returncode == 0, result.stderr
    citation = cited_in_json(result.stdout)
    assert citation["mode"] == "tools"
    assert_cites_the_discussion_json(citation, library)
    assert citation["answer"].startswith("According to the library:")  # the stub's last step
    # search, cite, answer: every request offered the tools
    assert len(stub.requests) == 3
    assert all(offered_tools(body) == {"rag_search", "rag_cite"} for body in stub.requests)


async def test_an_answer_whose_stream_is_cut_off_is_a_failure_not_a_supported_answer(client, monkeypatch):
    """The server dies mid-answer: the stream ends after a few words, without the model's
    finish reason or [DONE]. A tester saw that half sentence badged "Supported" in the app,
    which streams its requests as this does."""
    import pydantic_ai.models
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from haiku.rag.errors import ChatAnswerCutOff

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # to the loopback stub only
    with StubOpenAI() as stub:
        model = OpenAIChatModel("stub-model", provider=OpenAIProvider(base_url=stub.base_url, api_key="x"))
        events = []
        whole = [e async for e in answering.answer_stream(client, QUESTION, model=model, supports_tools=True)]
        assert isinstance(whole[-1], Answered) and whole[-1].support is not None  # the stub answers whole
        stub.cut_after_chunks = 3  # "According to the " and no more
        with pytest.raises(ChatAnswerCutOff, match="stopped in the middle of its answer"):
            async for event in answering.answer_stream(client, QUESTION, model=model, supports_tools=True):
                events.append(event)
    assert not any(isinstance(e, Answered) for e in events)


def test_the_fallback_flag_answers_without_tools(library, tmp_path):
    with StubOpenAI() as stub:
        result = run_ask(library, model_config(tmp_path, stub.base_url), "--fallback")
    assert result.returncode == 0, result.stderr
    (body,) = stub.requests
    assert "tools" not in body
    assert '[1] Source: "Quarterly Report on Zephyrine Logistics"' in user_prompt(body)

    lines = result.stdout.splitlines()
    answer_line, blank, citation_line, blank_too, grounding, support = lines[-6:]
    assert support == "support: Supported"  # the sentence is in the passage it cites
    # the stub quotes passage [1]'s sentence closest to the question
    assert answer_line.startswith("The discussion centres on the kerosene shortage") and answer_line.endswith(" [1].")
    assert blank == blank_too == ""
    title, pages, snippet = citation_line.split(" — ")
    assert title == f"[1] {pdf_factory.REPORT_TITLE}"
    assert re.fullmatch(r"pp?\. \d+(, \d+)*", pages) and "2" in pages.split(" ", 1)[1].split(", ")
    assert snippet.startswith(pdf_factory.REPORT_TITLE) and len(snippet) == 200
    assert grounding == "grounding: grounded"


def test_a_model_configured_without_tools_gets_the_fallback(library, tmp_path):
    with StubOpenAI() as stub:
        config = model_config(tmp_path, stub.base_url, "    supports_tools: false\n")
        result = run_ask(library, config, "--json")
    assert result.returncode == 0, result.stderr
    citation = cited_in_json(result.stdout)
    assert citation["mode"] == "fallback"
    assert_cites_the_discussion_json(citation, library)
    (body,) = stub.requests
    assert "tools" not in body


def test_without_a_configured_model_the_command_says_how_to_connect_one(library, tmp_path):
    empty = tmp_path / "haiku.rag.yaml"
    empty.write_text("")
    result = run_ask(library, empty)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == f"haiku-rag: {HOW_TO_CONNECT}\n"


def test_an_unreachable_server_is_one_clear_line(library, tmp_path):
    with socket.socket() as probe:  # a port nothing listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = run_ask(library, model_config(tmp_path, f"http://127.0.0.1:{port}/v1"))
    assert result.returncode == 1
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"haiku-rag: cannot reach the chat model stub-model at http://127.0.0.1:{port}/v1"
    )


def test_a_search_only_answer_quotes_passages_and_gets_no_support_verdict(library, tmp_path):
    """A search-only answer lists passages; it makes no claims, so neither the command's text
    nor its JSON judges it (its own list lines were once judged "Cited but unsupported")."""
    empty = tmp_path / "haiku.rag.yaml"
    empty.write_text("")
    result = run_ask(library, empty, "--search-only")
    assert result.returncode == 0, result.stderr
    assert "[1]" in result.stdout and "grounding: grounded" in result.stdout
    assert "support:" not in result.stdout and "unsupported" not in result.stdout
    result = run_ask(library, empty, "--search-only", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["mode"] == "search-only" and data["citations"]
    assert data["support"] is None
