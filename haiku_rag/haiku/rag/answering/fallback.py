"""Answering without tools (retrieve, then read), for models that cannot call tools.

The question is searched in code, the passages are shown numbered ``[1] … [n]``, and the
answer's ``[n]`` markers become citations. The numbers are the library's, by position in the
list the model was given: document text cannot add a passage or move a number, because every
``[n]`` in document text (content, title, headings) is shown as ``(n)``, so the only ``[n]`` the
model reads are the passage headers. A marker naming no passage is dropped.

Each passage opens with a source line naming its document as a reader would
(``capabilities.sources``: company, form and period for a filing; author–year–title for a paper),
then its text with every line quoted (``> ``), as the tools mode shows it: a ``Source:`` line
or a ``---`` separator planted in a document stays inside its quote and cannot pass for ours.

The small-model profile (``SMALL``) sends fewer, tighter passages sized to the model's
context, asks for the figure as written and its period in a short answer, and for "not found"
when the passages do not hold it; the answer's length is limited.

The fallback records into the RAG capability's state and evidence ledger, as the capability
would, so a conversation can switch modes, citation indexes run on across them, and compaction
and the citation policy see fallback citations like any others. (Compaction rewrites tool
returns only: an earlier fallback question's passages stay in the history as its user message.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from haiku.rag.answering.support import passage_holding, sentences_citing
from haiku.rag.bounds import bounded_source
from haiku.rag.capabilities.formatting import RESULT_SEPARATOR, quoted, source_line
from haiku.rag.capabilities.ledger import EvidenceRef
from haiku.rag.capabilities.rag import RAGCapability, RAGState
from haiku.rag.citations import (
    MARKER,
    marker_numbers,
    matched_picture_refs,
    pages_label,
    printed_labels,
)
from haiku.rag.store.models import SearchResult

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

REFUSAL = "I cannot find enough information in the knowledge base to answer this question."

FALLBACK_INSTRUCTIONS = f"""\
# Answering from passages

The user's message holds numbered passages from the knowledge base, then the question.
- Answer only from the passages. Never invent facts.
- After each claim, write the number of the passage that supports it in square brackets, for \
example: "The depot was obsolete [2]."
- Answer concisely.
- When the passages do not hold the answer, say: "{REFUSAL}" and write no passage numbers."""

NOT_FOUND = "I did not find this in the documents."

SMALL_INSTRUCTIONS = f"""\
# Answering from passages

The user's message holds numbered passages, each under a "Source:" line naming its document \
(company, form and period, or authors, year and title), then the question.
- Use only a passage about the company, document and period the question asks about.
- Give the figure exactly as the passage writes it, with its unit, and say which period it is \
for (for example "for the three months ended March 31, 2023").
- After the sentence, write the passage's number in square brackets, for example: "Revenue \
was $2,100 million for the quarter ended March 31, 2023 [2]."
- Answer in one to three short sentences.
- If the passages do not hold the answer, say only: \"{NOT_FOUND}\""""

NO_PASSAGES = "No passages were found in the knowledge base for this question."

# The refusals' opening words; models vary the rest of the sentence.
REFUSAL_START = re.compile(
    r"\bI (?:cannot|could not|couldn't|can't|did not|didn't) find\b", re.IGNORECASE
)

ProfileName = Literal["standard", "small"]
# Below this many tokens of context a model gets the small profile (the standard one sends up
# to 5 passages of 5,000 characters: ~6k tokens with the instructions).
SMALL_CONTEXT_TOKENS = 8_192
CHARS_PER_TOKEN = 3.5  # a conservative average for English and figures


@dataclass(frozen=True)
class Profile:
    """How many passages, how long each, which instructions, how long an answer."""

    name: ProfileName
    passages: int | None = None  # None: the search's own limit
    passage_chars: int | None = None  # None: as expansion widened them
    max_answer_tokens: int | None = None  # None: the model configuration's

    @property
    def instructions(self) -> str:
        return SMALL_INSTRUCTIONS if self.name == "small" else FALLBACK_INSTRUCTIONS


STANDARD = Profile("standard")
SMALL = Profile("small", passages=3, passage_chars=1_500, max_answer_tokens=200)


def profile_for(
    supports_tools: bool | None, context_tokens: int | None, chosen: str = "auto"
) -> Profile:
    """The small profile for a model that cannot call tools or has a small context (or when
    chosen), sized to the context when it is known; else the standard one."""
    if chosen == "standard":
        return STANDARD
    small = chosen == "small" or supports_tools is False or (
        context_tokens is not None and context_tokens < SMALL_CONTEXT_TOKENS
    )
    if not small:
        return STANDARD
    if context_tokens is None:
        return SMALL
    # the context less the answer, the instructions (~350 tokens) and a margin, in characters
    room = int((context_tokens - SMALL.max_answer_tokens - 600) * CHARS_PER_TOKEN)  # type: ignore[operator]
    per_passage = max(400, min(SMALL.passage_chars or 1_500, room // 3))
    count = max(1, min(SMALL.passages or 3, room // per_passage))
    return Profile("small", passages=count, passage_chars=per_passage, max_answer_tokens=200)


# what a request holds besides the history and the passages prompt: the preamble and the
# instructions (~350 tokens), chat-template tokens, and a margin for tokenizers that count more
REQUEST_OVERHEAD_TOKENS = 600


def history_within(
    messages: Sequence[ModelMessage], context_tokens: int, prompt: str, profile: Profile
) -> list[ModelMessage]:
    """The latest whole turns of ``messages`` that fit in ``context_tokens`` beside ``prompt``,
    the instructions and the answer's room (estimated at ``CHARS_PER_TOKEN``): the oldest
    turns go first, and a turn is never split (a tool call is never sent without its return).
    Only what is sent is cut; the conversation keeps every turn."""
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    answer = profile.max_answer_tokens or 0
    room = (context_tokens - answer - REQUEST_OVERHEAD_TOKENS) * CHARS_PER_TOKEN - len(prompt)
    starts = [
        i for i, m in enumerate(messages)
        if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)
    ]  # fmt: skip
    for start in starts:
        kept = list(messages[start:])
        if _chars(kept) <= room:
            return kept
    return []


def _chars(messages: Sequence[ModelMessage]) -> int:
    total = 0
    for message in messages:
        for part in message.parts:
            content = getattr(part, "content", None)
            if isinstance(content, str):
                total += len(content)
            elif content is not None:
                total += len(json.dumps(content, default=str))
            args = getattr(part, "args", None)
            if args is not None:
                total += len(args if isinstance(args, str) else json.dumps(args, default=str))
    return total


def fallback_instructions(domain_preamble: str, profile: Profile = STANDARD) -> str:
    preamble = domain_preamble.strip()
    text = profile.instructions
    return f"{preamble}\n\n{text}" if preamble else text


def tighten(passages: Sequence[SearchResult], question: str, profile: Profile) -> list[SearchResult]:
    """The profile's passages: the first ``passages`` of them, each cut to the part around the
    question's words (what the model then reads, and what its citations cover)."""
    from haiku.rag.citations import excerpt

    chosen = list(passages[: profile.passages] if profile.passages else passages)
    if not profile.passage_chars:
        return chosen
    tight = []
    for passage in chosen:
        if len(passage.content) <= profile.passage_chars:
            tight.append(passage)
            continue
        text = excerpt(passage.content, question, profile.passage_chars)
        # each chunk keeps its own text: what a citation of it covers and names
        tight.append(passage.model_copy(update={"content": text}))
    return tight


def neutralise(text: str) -> str:
    """Document text with every ``[n]`` the answer's markers are read with shown as ``(n)``:
    it cannot name a passage."""
    return MARKER.sub(lambda m: f"{m.group(1)}({m.group(2)})", text)


def passages_prompt(
    question: str, passages: Sequence[SearchResult], names: dict[str, str] | None = None
) -> str:
    """The numbered passages, each under its source line, its text quoted line by line."""
    if not passages:
        return f"{NO_PASSAGES}\n\nQuestion: {question}"
    names = names or {}
    numbered = RESULT_SEPARATOR.join(
        f"[{number}] {neutralise(passage_heading(passage, names.get(passage.document_id)))}\n"
        f"{quoted(neutralise(passage.content.strip()))}"
        for number, passage in enumerate(passages, start=1)
    )
    return f"Passages from the knowledge base:\n\n{numbered}\n\nQuestion: {question}"


def passage_heading(passage: SearchResult, name: str | None = None) -> str:
    """``Source: "<the document as a reader names it>" > "heading" — p. 3`` (JSON strings, so
    quotes and line breaks in them stay inside)."""
    pages = pages_label(passage.page_numbers, printed_labels(passage.document_meta, passage.page_numbers))
    if name:
        title = passage.document_title or passage.document_uri
        headings = [h for h in passage.headings if h != title]
        parts = bounded_source(" ".join(name.split()), headings)  # a huge title stays small
        line = " > ".join(json.dumps(part, ensure_ascii=False) for part in parts)
    else:
        line = source_line(passage)
    return f"Source: {line}" + (f" — {pages}" if pages else "")


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
    chosen = {n: cite_passage(state, answer, n, passages[n - 1]) for n in cited}
    if cited:
        refs = [EvidenceRef(capability=RAGCapability.namespace, chunk_id=chosen[n]) for n in cited]
        state.evidence.declare(refs, epoch, state.retrieved_chunk_ids())
    elif REFUSAL_START.search(answer):
        state.evidence.declare([], epoch, state.retrieved_chunk_ids())
    return [(n, chosen[n]) for n in cited]


def cite_passage(state: RAGState, answer: str, number: int, passage: SearchResult) -> str:
    """Register passage ``number`` of the answer as the citation of its own passage (a chunk
    of the widened passage) that holds the answer's sentences naming it, and return that
    chunk's id: the chip's page and strong highlight are where the sentence is."""
    chunk_id = passage.chunk_id
    if not matched_picture_refs(passage):  # a figure hit is read as an image, not as text
        chunk_id = passage_holding(sentences_citing(answer, number), passage.chunk_texts, chunk_id)
    state.cite_result(chunk_id, passage)
    return chunk_id
