"""Answering questions from the library: the one home for it.

``answer_stream(client, question, conversation, AnswerOptions(...))`` answers one question as a
stream of typed events (``Started``, ``TextDelta``, ``TextReset``, ``Step``, ``Cited``, and last
``Answered`` with the text, citations, grounding, basis and token figures); ``answer`` returns
the ``Answered``. A ``Conversation`` carries the history, the capabilities' state and the
citation numbering from one question to the next and round-trips through JSON. The
CLI (``ask``, ``analyze``, ``chat``), the desktop app and its self-test all answer through here,
so a host maps its toggles to ``AnswerOptions`` and the events to its widgets, nothing more.

Importing this package is cheap (the CLI parser imports ``haiku.rag.answering.cli`` for every
command); each name loads its module, and Pydantic AI, on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from haiku.rag.lazy import lazy_exports

if TYPE_CHECKING:
    from haiku.rag.answering.agent import AGENT_PREAMBLE, BuiltAgent, build_agent, chat_model_error
    from haiku.rag.answering.conversation import Conversation, ConversationFormatError
    from haiku.rag.answering.events import (
        Answered,
        AnswerEvent,
        Basis,
        Cited,
        Started,
        Step,
        StepKind,
        TextDelta,
        TextReset,
        TokenFigures,
    )
    from haiku.rag.answering.options import AnswerMode, AnswerOptions, ModeUsed
    from haiku.rag.answering.run import AnswerStopped, answer, answer_stream
    from haiku.rag.answering.scripted import ScriptedAnswer, ScriptError

_HOMES = {
    "AGENT_PREAMBLE": "agent",
    "BuiltAgent": "agent",
    "build_agent": "agent",
    "chat_model_error": "agent",
    "Conversation": "conversation",
    "ConversationFormatError": "conversation",
    "AnswerEvent": "events",
    "Answered": "events",
    "Basis": "events",
    "Cited": "events",
    "Started": "events",
    "Step": "events",
    "StepKind": "events",
    "TextDelta": "events",
    "TextReset": "events",
    "TokenFigures": "events",
    "AnswerMode": "options",
    "AnswerOptions": "options",
    "ModeUsed": "options",
    "ScriptedAnswer": "scripted",
    "ScriptError": "scripted",
    "AnswerStopped": "run",
    "answer": "run",
    "answer_stream": "run",
}

__getattr__ = lazy_exports(globals(), _HOMES)


__all__ = [
    "AGENT_PREAMBLE",
    "AnswerEvent",
    "AnswerMode",
    "AnswerOptions",
    "AnswerStopped",
    "Answered",
    "Basis",
    "BuiltAgent",
    "Cited",
    "Conversation",
    "ConversationFormatError",
    "ModeUsed",
    "ScriptError",
    "ScriptedAnswer",
    "Started",
    "Step",
    "StepKind",
    "TextDelta",
    "TextReset",
    "TokenFigures",
    "answer",
    "answer_stream",
    "build_agent",
    "chat_model_error",
]
