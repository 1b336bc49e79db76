"""The one event stream of a question: what a host shows while it is answered, and the answer.

Every stream ends with ``Answered`` (or raises). Text arrives as ``TextDelta``; ``TextReset``
says the text streamed so far was not the answer (the model went on to call tools). ``Step``
is a line of what happened (a search, a citation, an analysis program, a policy redirect, a
compaction), sent when it begins and again, with the same id, when it ends. ``Cited`` carries
the citations an answer adds as they are registered, already numbered for display.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from haiku.rag.answering.options import ModeUsed
from haiku.rag.answering.support import SupportCheck
from haiku.rag.capabilities.ledger import CitationStatus
from haiku.rag.citations import Citation

StepKind = Literal["search", "cite", "analysis", "load", "tool", "policy-redirect", "compaction"]
Basis = Literal["cited", "declared-none", "missing", "search-results", "computed", "no-documents"]


@dataclass(frozen=True)
class Started:
    mode: ModeUsed
    capability_ids: tuple[str, ...]
    notices: tuple[str, ...] = ()  # e.g. why analysis could not be added


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class TextReset:
    """The text streamed so far was not the answer: the model went on."""


@dataclass(frozen=True)
class Step:
    id: str
    kind: StepKind
    label: str
    detail: str = ""  # the analysis program
    output: str | None = None  # what the tool returned (the analysis output), once finished
    finished: bool = False


@dataclass(frozen=True)
class Cited:
    citations: tuple[Citation, ...]  # new in this answer, display-numbered


@dataclass(frozen=True)
class TokenFigures:
    """Token figures of one answer.

    ``input_tokens``: the answer's last model request (what a token meter shows);
    ``output_tokens``: summed over the answer's requests; ``compaction_saved``: an estimate
    (characters / 4) of the input tokens compaction took off the last request's wire, ``None``
    when compaction was off.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    requests: int = 0
    compaction_saved: int | None = None


@dataclass(frozen=True)
class Answered:
    text: str  # ``[n]`` markers are display numbers
    citations: tuple[Citation, ...]  # this answer's, display-numbered, in citing order
    grounding: CitationStatus
    basis: Basis
    mode: ModeUsed
    tokens: TokenFigures
    capability_ids: tuple[str, ...] = ()
    # whether the cited text holds the answer's claims (``answering.support``), beside the
    # ledger's ``grounding``; None when no model wrote an answer (nothing in scope)
    support: SupportCheck | None = None


AnswerEvent = Started | TextDelta | TextReset | Step | Cited | Answered
