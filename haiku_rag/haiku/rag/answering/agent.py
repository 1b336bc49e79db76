"""The one agent builder: the capabilities ``AnswerOptions`` asks for, in one order, with the
preamble, the model and its settings. ``haiku-rag ask/analyze/chat``, the app and the self-test
all answer through it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic_ai import Agent
from pydantic_ai.exceptions import (
    AgentRunError,
    ModelAPIError,
    ModelConnectionError,
    ModelHTTPError,
)
from pydantic_ai.models import Model

from haiku.rag.answering.conversation import Conversation
from haiku.rag.answering.meter import WireMeter
from haiku.rag.answering.options import AnswerOptions, ModeUsed
from haiku.rag.config import AppConfig, ModelConfig
from haiku.rag.errors import ChatContextTooSmall, ChatModelError, ChatModelUnreachable
from haiku.rag.models import model_settings as settings_of

if TYPE_CHECKING:
    from pydantic_ai.capabilities import AbstractCapability

    from haiku.rag.capabilities.base import EvidenceCapability
    from haiku.rag.client import HaikuRAG

AGENT_PREAMBLE = """\
You are a helpful research assistant for the user's document library. Reply to greetings and \
small talk directly. Never make things up: answer from the knowledge base and cite the evidence \
you use."""


@dataclass(frozen=True)
class BuiltAgent:
    """The agent of one question and what it was given."""

    agent: Agent[Conversation, str]
    capability_ids: tuple[str, ...]  # in order: RAG, compaction, policy, analysis
    notices: tuple[str, ...] = ()  # why something asked for could not be added
    evidence: tuple[EvidenceCapability[Any], ...] = ()  # the evidence capabilities, in order
    meter: WireMeter | None = None


def model_config_for(options: AnswerOptions, config: AppConfig) -> ModelConfig:
    """The configured model that answers: analysis alone uses ``analysis.model`` when set."""
    if not options.rag and config.analysis.model is not None:
        return config.analysis.model
    return config.qa.model


def resolve_model(options: AnswerOptions, config: AppConfig, model: Model | None) -> Model:
    """``model``, else the configured one (``ModelNotConfiguredError`` when there is none)."""
    if model is not None:
        return model
    from haiku.rag import models  # looked up at call time: tests replace models.get_model

    return models.get_model(model_config_for(options, config), config)


def build_agent(
    client: HaikuRAG,
    options: AnswerOptions,
    *,
    model: Model,
    model_settings: dict[str, Any] | None = None,
) -> BuiltAgent:
    """The tools-mode agent for ``options``: RAG, then compaction and the citation policy, then
    analysis, as asked. ``model_settings`` ``None`` takes the configured model's settings."""
    from haiku.rag.capabilities.compaction import create_capability as compaction
    from haiku.rag.capabilities.policy import create_capability as citation_policy
    from haiku.rag.capabilities.rag import create_capability as rag

    config = client.config
    capabilities: list[AbstractCapability[Any]] = []
    evidence: list[EvidenceCapability[Any]] = []
    notices: list[str] = []
    if options.rag:
        searching = rag(rag=client, defer_loading=False, vision=options.vision)
        capabilities.append(searching)
        evidence.append(searching)
    if options.evidence_compaction:
        capabilities.append(compaction())
    if options.citation_policy:
        capabilities.append(citation_policy())
    if options.analysis:
        try:
            from haiku.rag.capabilities.analysis import create_capability as analysis
        except ImportError as exc:  # pydantic-monty missing from this installation
            notices.append(f"analysis mode is not available in this installation ({exc})")
        else:
            computing = analysis(rag=client, defer_loading=False, vision=options.vision)
            capabilities.append(computing)
            evidence.append(computing)
    if not evidence:
        raise ChatModelError(notices[0] if notices else "no evidence capability to answer with")
    ids = tuple(str(c.id) for c in capabilities)
    # Innermost, after compaction: it sees the wire as compaction left it.
    meter = WireMeter(compaction=options.evidence_compaction)
    settings = settings_of(model_config_for(options, config)) if model_settings is None else model_settings
    agent: Agent[Conversation, str] = Agent(
        model,
        deps_type=Conversation,
        instructions=AGENT_PREAMBLE,
        capabilities=[*capabilities, meter],
        model_settings=settings or None,  # type: ignore[arg-type]
    )
    return BuiltAgent(agent, ids, tuple(notices), tuple(evidence), meter)


def chat_model_error(exc: AgentRunError, model: Model, mode_used: ModeUsed) -> ChatModelError:
    """A model failure as one line that says what to do."""
    detail = " ".join(str(exc).split())  # the CLI prints one line
    name = model.model_name
    if isinstance(exc, ModelConnectionError):
        where = f" at {model.base_url}" if model.base_url else ""
        return ChatModelUnreachable(
            f"cannot reach the chat model {name}{where} ({detail}); is the server running?"
        )
    if isinstance(exc, ModelHTTPError) and exc.status_code in (400, 413, 422, 500):
        overflow = context_overflow(exc.body)
        if overflow is not None:
            return overflow
    # Small local models often reject tool definitions or keep calling tools wrongly.
    hint = (
        "; a model that cannot call tools reliably can answer without them "
        "(qa.model.supports_tools: false, or haiku-rag ask --fallback)"
        if mode_used == "tools" and "tool" in detail.lower()
        else ""
    )
    if isinstance(exc, ModelAPIError):
        return ChatModelError(f"the chat model {name} failed: {detail}{hint}")
    return ChatModelError(f"the chat model {name} gave no usable answer: {detail}{hint}")


# How servers say a request is larger than the model's context window: llama.cpp (the built-in
# model-file provider, llama-server), OpenAI and vLLM, LM Studio, Ollama.
_OVERFLOW = re.compile(
    r"exceeds? the available context size|exceed_context_size|context_length_exceeded"
    r"|maximum context length|context length exceeded|exceeds the context length"
    r"|context (?:window|length) (?:is )?(?:exceeded|too small)|when context the overflows"
    r"|greater than the context length|prompt is too long",
    re.I,
)
_SIZES = (  # (pattern, which group is the context, which the request)
    (re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)", re.I), 2, 1),
    (re.compile(r"maximum context length is (\d+) tokens.*?(?:resulted in|requested) (\d+) tokens", re.I | re.S), 1, 2),
    (re.compile(r"keep the first (\d+) tokens.*?context length of (\d+)", re.I | re.S), 2, 1),
)


def context_overflow(body: object) -> ChatContextTooSmall | None:
    """The typed error when an HTTP error's ``body`` says the request did not fit the model's
    context, with both sizes when the server gave them; ``None`` for any other refusal."""
    error = body.get("error", body) if isinstance(body, dict) else body
    text = error if isinstance(error, str) else str(error.get("message", "")) if isinstance(error, dict) else str(body)
    kind = " ".join(str(error.get(k, "")) for k in ("type", "code")) if isinstance(error, dict) else ""
    if not _OVERFLOW.search(f"{text} {kind}"):
        return None
    if isinstance(error, dict) and isinstance(error.get("n_ctx"), int) and isinstance(error.get("n_prompt_tokens"), int):
        return ChatContextTooSmall(error["n_ctx"], error["n_prompt_tokens"])
    for pattern, context, request in _SIZES:
        match = pattern.search(text)
        if match:
            return ChatContextTooSmall(int(match.group(context)), int(match.group(request)))
    return ChatContextTooSmall()
