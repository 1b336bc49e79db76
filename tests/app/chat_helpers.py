"""Shared pieces of the chat-side app tests: a real library and a streaming scripted model.

The library is a real haiku.rag store holding the generated report PDF and a Markdown note,
ingested through ``HaikuRAG``, and opened by the app's ``LibraryService``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pdf_factory
import pytest
from capabilities.scripting import SeenRequest, Step
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from haiku.rag.citations import Citation
from haiku.rag.client import HaikuRAG
from haiku.rag.config import AppConfig, load_config

OTTER_NOTES = (
    "# Lantern Otters\n\nLantern otters hunt glass eels at dusk along the quartz rivers.\n"
)


@dataclass(frozen=True)
class BuiltLibrary:
    db_path: Path
    config: AppConfig
    report: pdf_factory.PdfLayout
    report_id: str
    notes_id: str


def build_library(root: Path) -> BuiltLibrary:
    """The generated report PDF and a Markdown note, ingested as a user would."""
    root.mkdir(parents=True, exist_ok=True)
    config = load_config()
    config.storage.data_dir = root / "data"
    config.embeddings.threads = 2
    report = pdf_factory.make_report_pdf(root / "report.pdf")
    db_path = root / "library.lancedb"

    async def ingest() -> tuple[str, str]:
        async with HaikuRAG(db_path, config, create=True) as client:
            outcome = await client.ingest_file(report.path)
            assert outcome.status == "ingested" and outcome.document is not None
            notes = await client.create_document(
                OTTER_NOTES, uri="notes://otters", title="Lantern Otters"
            )
            return outcome.document.id, notes.id

    # On a thread of its own: this thread's current loop is the app's qasync loop (registered
    # as running during app tests), which asyncio.run here would clash with or unset.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        report_id, notes_id = pool.submit(asyncio.run, ingest()).result()
    return BuiltLibrary(db_path, config, report, report_id, notes_id)


def open_library(built: BuiltLibrary, loop: Any, notifications: Any = None) -> Any:
    """A started ``LibraryService`` on the built store (the app's own library service)."""
    from qt_helpers import run_until

    from haiku_desk.services.library import LibraryService
    from haiku_desk.services.notifications import Notifications

    service = LibraryService(built.db_path, built.config, notifications or Notifications())
    opened: list[bool] = []
    service.opened.connect(lambda: opened.append(True))
    service.start()
    run_until(loop, lambda: bool(opened), timeout=120)
    return service


def chat_library_fixtures(folder: str) -> tuple[Any, Any, Any]:
    """A chat test module's three fixtures, as
    ``built, library, app_config = chat_library_fixtures("pane-library")``: the library built
    once per module in a temp folder of that name, the app's ``LibraryService`` on it (once
    per module too: the embedder loads once), and each test's copy of its config with a data
    dir of its own (each test its own conversations; the library holds them)."""

    @pytest.fixture(scope="module")
    def built(tmp_path_factory: Any) -> BuiltLibrary:
        return build_library(tmp_path_factory.mktemp(folder))

    @pytest.fixture(scope="module")
    def library(built: BuiltLibrary, qapp: Any) -> Iterator[Any]:
        from haiku_desk.bridge import install_event_loop

        service = open_library(built, install_event_loop(qapp))
        yield service
        service.close()

    @pytest.fixture
    def app_config(built: BuiltLibrary, tmp_path: Path) -> AppConfig:
        config = built.config.model_copy(deep=True)
        config.storage.data_dir = tmp_path / "app-data"
        return config

    return built, library, app_config


def make_chat_pane(qtbot: Any, library: Any, config: AppConfig, *, size: tuple[int, int]) -> Any:
    """The app's ``ChatPane`` over ``library``, shown at ``size``, with models, notifications
    and a chat service of its own (conversations in ``config``'s data dir); its services are
    ``pane.services``."""
    from haiku_desk.services import AppServices
    from haiku_desk.services.chat import ChatService
    from haiku_desk.services.conversations import ConversationStore
    from haiku_desk.services.models import ModelsService
    from haiku_desk.services.notifications import Notifications
    from haiku_desk.views.chat_pane import ChatPane

    notifications = Notifications()
    models = ModelsService(config, notifications)
    store = ConversationStore.in_data_dir(config.storage.data_dir)
    chat = ChatService(library, models, notifications, store=store)
    services = AppServices(config, notifications, library, None, models, chat)  # type: ignore[arg-type]
    pane = ChatPane(services)
    qtbot.addWidget(pane)
    pane.resize(*size)
    pane.show()
    return pane


@dataclass
class StreamingScript:
    """A FunctionModel that plays steps, streamed: text in small pieces, tool calls whole."""

    steps: list[Step] = field(default_factory=list)
    seen: list[SeenRequest] = field(default_factory=list)
    gate: asyncio.Event | None = None  # when set, the stream waits on it before its text

    def play(self, *steps: Step) -> StreamingScript:
        self.steps.extend(steps)
        return self

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self._respond, stream_function=self._stream, model_name="scripted")

    def _next(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = SeenRequest(
            info.instructions or "", [t.name for t in info.function_tools], list(messages)
        )
        self.seen.append(request)
        assert self.steps, f"the model was asked for more than the script holds ({len(self.seen)})"
        step = self.steps.pop(0)
        return step(request) if callable(step) else step

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return self._next(messages, info)

    async def _stream(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | dict[int, DeltaToolCall]]:
        response = self._next(messages, info)
        for index, part in enumerate(response.parts):
            if isinstance(part, TextPart):
                if self.gate is not None:
                    yield part.content[:5]
                    await self.gate.wait()
                    rest = part.content[5:]
                else:
                    rest = part.content
                for start in range(0, len(rest), 7):
                    yield rest[start : start + 7]
            elif isinstance(part, ToolCallPart):
                yield {
                    index: DeltaToolCall(
                        name=part.tool_name,
                        json_args=part.args_as_json_str(),
                        tool_call_id=part.tool_call_id,
                    )
                }

    def tool_names_seen(self) -> list[list[str]]:
        return [sorted(r.tool_names) for r in self.seen]


def answer_text(response: Any) -> str:
    return "".join(p.content for p in response.parts if isinstance(p, TextPart))


class QuestionLog:
    """What the questions a ChatService answers from now on streamed, and how they ended: the
    app's streaming goes through each question's own operation."""

    def __init__(self, chat: Any) -> None:
        self.deltas: list[str] = []
        self.steps: list[Any] = []  # ToolStep, as they begin
        self.finished_steps: list[Any] = []  # ToolStep with output (analysis runs)
        self.outcomes: list[str] = []  # "answered", "cancelled", "failed: …"
        self.questions: list[Any] = []
        self.on_step: Any = None  # called with each step as it begins
        chat.question_started.connect(self._started)

    def _started(self, question: Any) -> None:
        self.questions.append(question)
        question.text_delta.connect(self.deltas.append)
        question.step_added.connect(self._step)
        question.step_finished.connect(self.finished_steps.append)
        question.succeeded.connect(lambda turn: self.outcomes.append("answered"))
        question.failed.connect(lambda exc: self.outcomes.append(f"failed: {exc}"))
        question.cancelled.connect(lambda: self.outcomes.append("cancelled"))

    def _step(self, step: Any) -> None:
        self.steps.append(step)
        if self.on_step is not None:
            self.on_step(step)


def passage_citation(index: int, text: str, *, page: int | None = None) -> Citation:
    """A citation [index] of ``text`` in a made-up paper, on ``page`` (default: page ``index``):
    for chat-pane tests that need no library."""
    return Citation(
        index=index,
        document_id="doc-1",
        chunk_id=f"chunk-{index}",
        document_uri="file:///papers/tables.pdf",
        document_title="Table Structure Recognition",
        page_numbers=[index if page is None else page],
        headings=["2 Related work"],
        content=text,
        matched_text=text,
    )
