"""How search results are shown to a model.

Each result leads with its chunk id so the model can cite it verbatim, then where it comes from,
what kind of passage it is, and the text. Scores are left out: a model reads a number like 0.016
as a weak match and second-guesses good evidence.

Document text cannot forge that structure: every line of it is quoted (``> ``), and titles and
headings are JSON strings, so a header (``[<id>] [rank 1 of 5]``, ``Source:``, ``Passage``) or a
separator only ever starts a line when this module wrote it. A result widened by context
expansion is shown as its passages, each under its own chunk id, so the model can cite the one
it used. What a return carries is bounded: a passage at ``search.max_context_chars``, a return
at ``MAX_RETURN_CHARS``, each cut with a note saying so.
"""

from __future__ import annotations

import json
import re

from haiku.rag.bounds import bounded_source
from haiku.rag.capabilities.sources import document_name
from haiku.rag.store.models import SearchResult

RESULT_SEPARATOR = "\n\n---\n\n"
NO_RESULTS = "No results found."
QUOTE = "> "
# bound of one search return; with the default 5 results of 5,000 characters it never binds
MAX_RETURN_CHARS = 60_000
# bound of one result when context expansion is off (search.max_context_chars = 0)
UNEXPANDED_RESULT_CHARS = 5_000

# Which label names a passage when it mixes several: the most specific kind wins.
LABEL_PRIORITY = (
    "table",
    "code",
    "form",
    "field_region",
    "key_value_region",
    "field_item",
    "field_key",
    "field_value",
    "field_heading",
    "list_item",
    "formula",
    "chart",
    "picture",
    "caption",
    "footnote",
    "field_hint",
    "marker",
    "section_header",
    "title",
)


def format_results(results: list[SearchResult]) -> str:
    return shown_results(results)[0]


def shown_results(
    results: list[SearchResult], max_chars: int = MAX_RETURN_CHARS
) -> tuple[str, list[SearchResult]]:
    """The text of a search return and the results it shows: whole results, best first, while
    they fit in ``max_chars``, with a note naming what was left out. Only shown results are
    evidence the model saw."""
    if not results:
        return NO_RESULTS, []
    total = len(results)
    blocks: list[str] = []
    used = 0
    for rank, result in enumerate(results, start=1):
        block = format_for_agent(result, rank, total)
        if blocks and used + len(block) + len(RESULT_SEPARATOR) > max_chars:
            break
        blocks.append(block)
        used += len(block) + len(RESULT_SEPARATOR)
    text = RESULT_SEPARATOR.join(blocks)
    if len(blocks) < total:
        text += (
            f"\n\n[{total - len(blocks)} more result(s) not shown: this return is limited to "
            f"{max_chars:,} characters. Search with more specific keywords or a smaller limit.]"
        )
    return text, results[: len(blocks)]


RESULT_HEADER = re.compile(r"^\[([0-9a-f]{32})\] \[rank \d+ of \d+\]", re.MULTILINE)


def result_ids(text: str) -> list[str]:
    """The chunk ids of the results a search return shows, best first (its headers' ids)."""
    return RESULT_HEADER.findall(text)


def format_for_agent(result: SearchResult, rank: int, total: int) -> str:
    lines = [f"[{result.chunk_id}] [rank {rank} of {total}]", f"Source: {named_source_line(result)}"]
    label = primary_label(result)
    if label:
        lines.append(f"Type: {label}")
    lines.append("Content:")
    passages = result_passages(result)
    if passages is None:
        lines.append(quoted(result.content))
    else:
        hits = {result.chunk_id, *result.chunk_ids}
        for chunk_id, text in passages:
            mark = " (search hit)" if chunk_id in hits else ""
            lines.append(f"Passage [{chunk_id}]{mark}:")
            lines.append(quoted(text))
    return "\n".join(lines)


def quoted(text: str) -> str:
    """Document text with every line quoted, so none of it can pass for a line we wrote."""
    return "\n".join(QUOTE + line if line else QUOTE.rstrip() for line in text.split("\n"))


def result_passages(result: SearchResult) -> list[tuple[str, str]] | None:
    """The result's content as (chunk id, text) passages in reading order, when expansion recorded
    them tiling the content exactly; None for a result shown as one passage."""
    if len(result.chunk_texts) < 2:
        return None
    passages = list(result.chunk_texts.items())
    if "\n\n".join(text for _, text in passages) != result.content:
        return None
    return passages


def bounded_result(result: SearchResult, max_chars: int) -> SearchResult:
    """The result with its text cut to ``max_chars`` (a note says how much was left out)."""
    max_chars = max_chars or UNEXPANDED_RESULT_CHARS
    texts = {c: cut(t, max_chars) for c, t in result.chunk_texts.items()}
    content = cut(result.content, max_chars)
    if content is result.content and all(texts[c] is t for c, t in result.chunk_texts.items()):
        return result
    if content is not result.content:
        texts = {}  # passages no longer tile the cut content: show it as one passage
    return result.model_copy(update={"content": content, "chunk_texts": texts})


def cut(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return (
        f"{text[:max_chars]}\n[... {len(text) - max_chars:,} more characters of this passage "
        "not shown]"
    )


def source_line(result: SearchResult) -> str:
    """Title and headings as JSON strings: quotes and line breaks in them stay inside."""
    title = result.document_title or result.document_uri
    headings = [h for h in result.headings if h != title]
    parts = bounded_source(title, headings)  # a 5 MB title must not ride along with every result
    return " > ".join(json.dumps(part, ensure_ascii=False) for part in parts)


def named_source_line(result: SearchResult) -> str:
    """``source_line`` with the document named as a reader would from its record: author–year
    and title for a paper, the file name for a boilerplate title ("FORM 10-Q"); a plain title
    stays as it is. (The no-tools path also reads a filing's cover page: capabilities.sources.)"""
    title = result.document_title or result.document_uri
    name = document_name(result.document_title, result.document_uri, result.document_meta)
    if name == title:
        return source_line(result)
    headings = [h for h in result.headings if h != title]
    parts = bounded_source(" ".join(name.split()), headings)
    return " > ".join(json.dumps(part, ensure_ascii=False) for part in parts)


def primary_label(result: SearchResult) -> str | None:
    """The kind of the matched items (context swept in by expansion does not change what the hit is)."""
    labels = matched_labels(result) or result.labels
    for label in LABEL_PRIORITY:
        if label in labels:
            return label
    return labels[0] if labels else None


def matched_labels(result: SearchResult) -> list[str]:
    matched = set(result.matched_refs)
    return [
        label
        for ref, label in zip(result.doc_item_refs, result.labels, strict=False)
        if ref in matched
    ]
