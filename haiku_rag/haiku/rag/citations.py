"""Citations as hosts show them: the ``Citation`` type, page labels and the ``[n]`` markers.

The one definition of the answer-text marker (``[2]``, ``[1, 3]``): the no-tools fallback reads
the model's markers with it, answering renumbers them with it, and a host finds the sentences a
citation supports with it. Cheap to import (no Pydantic AI).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from haiku.rag.capabilities.state import Citation
from haiku.rag.ingest.records import Box

__all__ = [
    "MARKER",
    "Box",
    "Citation",
    "citing_text",
    "excerpt",
    "marker_numbers",
    "pages_label",
    "renumber_markers",
]

# "[2]" or "[1, 3]", with the whitespace before it (dropped along with a marker that names
# nothing, so "a claim [9]." reads "a claim.").
MARKER = re.compile(r"(\s*)\[(\d+(?:\s*,\s*\d+)*)\]")


def marker_numbers(match: re.Match[str]) -> list[int]:
    """The numbers one ``MARKER`` match names, in order."""
    return [int(n) for n in match.group(2).split(",")]


def renumber_markers(text: str, numbers: Mapping[int, int], *, drop_unknown: bool = False) -> str:
    """Each marker's numbers mapped through ``numbers``; a number not in it is kept, or dropped
    with ``drop_unknown`` (a marker left with no number disappears with its leading space)."""

    def replace(match: re.Match[str]) -> str:
        mapped: dict[int, None] = {}
        for n in marker_numbers(match):
            if n in numbers:
                mapped.setdefault(numbers[n], None)
            elif not drop_unknown:
                mapped.setdefault(n, None)
        if not mapped:
            return ""
        return f"{match.group(1)}[{', '.join(str(n) for n in mapped)}]"

    return MARKER.sub(replace, text)


def citing_text(answer: str, number: int) -> str:
    """The sentences of ``answer`` that carry the marker ``[number]`` (alone or in a list): what
    the citation is meant to support, to centre its snippet on."""
    sentences = re.split(r"(?<=[.!?])\s+|\n+", answer)
    found = [
        sentence
        for sentence in sentences
        if any(number in marker_numbers(m) for m in MARKER.finditer(sentence))
    ]
    return " ".join(dict.fromkeys(found))


SNIPPET_CHARS = 400


def excerpt(content: str, query: str = "", limit: int = SNIPPET_CHARS) -> str:
    """About ``limit`` characters of ``content`` where the most distinct words of ``query``
    (longer than three letters) meet: a passage widened to its section may begin far from what
    matched, and two claims citing one section should each see their own part of it."""
    text = " ".join(content.split())
    if len(text) <= limit:
        return text
    lowered = text.casefold()
    words = {w for w in re.findall(r"\w+", query.casefold()) if len(w) > 3}
    hits = sorted(m.start() for w in words for m in re.finditer(re.escape(w), lowered))
    start, best = 0, 0
    for hit in hits:  # each hit a quarter into the window; the earliest best window wins
        candidate = max(0, hit - limit // 4)
        window = lowered[candidate : candidate + limit]
        score = sum(1 for w in words if w in window)
        if score > best:
            start, best = candidate, score
    if start:
        start = text.rfind(" ", 0, start) + 1
    piece = text[start : start + limit].rsplit(" ", 1)[0]
    return ("…" if start else "") + piece + ("…" if start + len(piece) < len(text) else "")


def pages_label(pages: Sequence[int]) -> str:
    """``p. 3`` or ``pp. 2, 3``; empty for a passage without pages (Markdown, plain text)."""
    if not pages:
        return ""
    prefix = "p." if len(pages) == 1 else "pp."
    return f"{prefix} {', '.join(str(page) for page in pages)}"
