"""``AnswerOptions``: everything that shapes how one question is answered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

AnswerMode = Literal["auto", "tools", "fallback", "search-only"]
ModeUsed = Literal["tools", "fallback", "search-only"]
AnswerProfile = Literal["auto", "standard", "small"]

SEARCH_ONLY_PASSAGES = 5


@dataclass(frozen=True)
class AnswerOptions:
    """How to answer: the mode, the capabilities, and the documents in scope.

    ``mode="auto"`` answers without tools (the fallback) for a model that cannot call them
    (``supports_tools`` false), else with tools. ``document_ids`` is the scope: ``None`` is the
    whole library, an empty tuple is no document at all (answered at once, without a model).
    ``vision`` ``None`` follows the model configuration. ``profile="auto"`` answers a model
    that cannot call tools, or whose configured context is small, with the small-model profile
    (fewer, tighter passages; a short answer that gives the figure as written and its period);
    ``"standard"`` and ``"small"`` choose one.
    """

    mode: AnswerMode = "auto"
    rag: bool = True
    analysis: bool = False
    evidence_compaction: bool = False
    citation_policy: bool = False
    vision: bool | None = None
    document_ids: tuple[str, ...] | None = None
    search_limit: int = SEARCH_ONLY_PASSAGES
    profile: AnswerProfile = "auto"

    def __post_init__(self) -> None:
        if self.mode not in ("auto", "tools", "fallback", "search-only"):
            raise ValueError(
                f"mode must be 'auto', 'tools', 'fallback' or 'search-only', not {self.mode!r}"
            )
        if self.profile not in ("auto", "standard", "small"):
            raise ValueError(f"profile must be 'auto', 'standard' or 'small', not {self.profile!r}")
        if not (self.rag or self.analysis):
            raise ValueError("answering needs the RAG capability, the analysis capability or both")
        if self.document_ids is not None:
            if isinstance(self.document_ids, str):
                raise TypeError("document_ids is a tuple of document ids, not one string")
            object.__setattr__(self, "document_ids", tuple(dict.fromkeys(self.document_ids)))
        if self.search_limit < 1:
            raise ValueError("search_limit must be at least 1")
