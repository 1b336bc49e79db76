"""Answering without tools (retrieve, then read), for models that cannot call tools.

The question is searched in code, the passages are shown numbered ``[1] … [n]``, and the
answer's ``[n]`` markers become citations. The numbers are the library's, by position in the
list the model was given: document text cannot add a passage or move a number, because every
``[n]`` in document text (content, title, headings) is shown as ``(n)``, so the only ``[n]`` the
model reads are the passage headers. A marker naming no passage is dropped.

The fallback records into the RAG capability's state and evidence ledger, as the capability
would, so a conversation can switch modes, citation indexes run on across them, and compaction
and the citation policy see fallback citations like any others. (Compaction rewrites tool
returns only: an earlier fallback question's passages stay in the history as its user message.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from haiku.rag.capabilities.formatting import RESULT_SEPARATOR, source_line
from haiku.rag.capabilities.ledger import EvidenceRef
from haiku.rag.capabilities.rag import RAGCapability, RAGState
from haiku.rag.citations import MARKER, marker_numbers, pages_label
from haiku.rag.store.models import SearchResult

REFUSAL = "I cannot find enough information in the knowledge base to answer this question."

FALLBACK_INSTRUCTIONS = f"""\
# Answering from passages

The user's message holds numbered passages from the knowledge base, then the question.
- Answer only from the passages. Never invent facts.
- After each claim, write the number of the passage that supports it in square brackets, for \
example: "The depot was obsolete [2]."
- Answer concisely.
- When the passages do not hold the answer, say: "{REFUSAL}" and write no passage numbers."""

NO_PASSAGES = "No passages were found in the knowledge base for this question."

# The standard refusal's opening words; models vary the rest of the sentence.
REFUSAL_START = re.compile(r"\bI cannot find enough information\b", re.IGNORECASE)
_BRACKETED_NUMBERS = re.compile(r"\[(\s*\d+(?:\s*,\s*\d+)*\s*)\]")


def fallback_instructions(domain_preamble: str) -> str:
    preamble = domain_preamble.strip()
    return f"{preamble}\n\n{FALLBACK_INSTRUCTIONS}" if preamble else FALLBACK_INSTRUCTIONS


def neutralise(text: str) -> str:
    """Document text with every ``[n]`` shown as ``(n)``: it cannot name a passage."""
    return _BRACKETED_NUMBERS.sub(r"(\1)", text)


def passages_prompt(question: str, passages: Sequence[SearchResult]) -> str:
    if not passages:
        return f"{NO_PASSAGES}\n\nQuestion: {question}"
    numbered = RESULT_SEPARATOR.join(
        f"[{number}] {neutralise(passage_heading(passage))}\n{neutralise(passage.content.strip())}"
        for number, passage in enumerate(passages, start=1)
    )
    return f"Passages from the knowledge base:\n\n{numbered}\n\nQuestion: {question}"


def passage_heading(passage: SearchResult) -> str:
    pages = pages_label(passage.page_numbers)
    return f"Source: {source_line(passage)}" + (f" — {pages}" if pages else "")


def cite_markers(
    state: RAGState, answer: str, passages: Sequence[SearchResult], *, epoch: int
) -> list[tuple[int, str]]:
    """Register the passages the answer's ``[n]`` markers name and declare its grounding.

    Returns ``(marker number, chunk id)`` for each passage cited, in the order the answer first
    names them. No marker: nothing is declared, so the grounding is *missing*, unless the answer
    is the standard refusal, which declares it *ungrounded* as an empty ``rag_cite`` would.
    """
    named = [n for match in MARKER.finditer(answer) for n in marker_numbers(match)]
    cited = list(dict.fromkeys(n for n in named if 1 <= n <= len(passages)))
    for n in cited:
        state.cite_result(passages[n - 1].chunk_id, passages[n - 1])
    if cited:
        refs = [
            EvidenceRef(capability=RAGCapability.namespace, chunk_id=passages[n - 1].chunk_id)
            for n in cited
        ]
        state.evidence.declare(refs, epoch, state.retrieved_chunk_ids())
    elif REFUSAL_START.search(answer):
        state.evidence.declare([], epoch, state.retrieved_chunk_ids())
    return [(n, passages[n - 1].chunk_id) for n in cited]
