"""How search results are shown to a model.

Each result leads with its chunk id so the model can cite it verbatim, then where it comes from,
what kind of passage it is, and the text. Scores are left out: a model reads a number like 0.016
as a weak match and second-guesses good evidence.
"""

from __future__ import annotations

from haiku.rag.store.models import SearchResult

RESULT_SEPARATOR = "\n\n---\n\n"
NO_RESULTS = "No results found."

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
    if not results:
        return NO_RESULTS
    total = len(results)
    return RESULT_SEPARATOR.join(
        format_for_agent(r, rank, total) for rank, r in enumerate(results, start=1)
    )


def format_for_agent(result: SearchResult, rank: int, total: int) -> str:
    lines = [f"[{result.chunk_id}] [rank {rank} of {total}]", f"Source: {source_line(result)}"]
    label = primary_label(result)
    if label:
        lines.append(f"Type: {label}")
    lines.append("Content:")
    lines.append(result.content)
    return "\n".join(lines)


def source_line(result: SearchResult) -> str:
    title = result.document_title or result.document_uri
    headings = [h for h in result.headings if h != title]
    return " > ".join([f'"{title}"', *headings])


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
