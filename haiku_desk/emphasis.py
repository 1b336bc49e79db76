"""Emphasis markers that document text carries (a PDF table cell beginning with "**"), made
harmless before Markdown is drawn: an unpaired ``**`` / ``__`` is dropped, so it neither shows as
raw asterisks nor turns the rest of an answer bold; paired ones stay (they render as emphasis).
``plain_emphasis`` drops every marker, for labels that show plain text (a source card's snippet).

Pairing follows CommonMark's rules closely enough for this: a run opens when a non-space follows
it, closes when a non-space precedes it, never crosses a paragraph, list item, heading or table
cell, and code (fenced blocks, inline spans) is left as written.
"""

from __future__ import annotations

import re

__all__ = ["balanced_emphasis", "plain_emphasis"]

_RUN = re.compile(r"(?<!\\)(\*{2,}|_{2,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_THEMATIC_BREAK = re.compile(r"^\s{0,3}([*_-])(?:\s*\1){2,}\s*$")
_BLOCK_START = re.compile(r"^\s*(?:[-+*]\s|\d+[.)]\s|#{1,6}\s|>)")
_CELL_SPLIT = re.compile(r"(?<!\\)(\|)")


def _runs(text: str) -> list[tuple[int, int, str, bool, bool]]:
    """The delimiter runs outside code spans: (start, end, kind, can open, can close)."""
    code = [m.span() for m in _CODE_SPAN.finditer(text)]
    runs = []
    for match in _RUN.finditer(text):
        start, end = match.span()
        if any(a <= start < b for a, b in code):
            continue
        before = text[start - 1] if start > 0 else ""
        after = text[end] if end < len(text) else ""
        kind = match.group()[0]
        if kind == "_" and before.isalnum() and after.isalnum():
            continue  # snake__case: not emphasis
        runs.append((start, end, kind, bool(after) and not after.isspace(), bool(before) and not before.isspace()))
    return runs


def _unpaired(text: str) -> list[tuple[int, int]]:
    open_runs: dict[str, list[tuple[int, int]]] = {"*": [], "_": []}
    unpaired: list[tuple[int, int]] = []
    for start, end, kind, can_open, can_close in _runs(text):
        if can_close and open_runs[kind]:
            open_runs[kind].pop()
        elif can_open:
            open_runs[kind].append((start, end))
        else:
            unpaired.append((start, end))
    unpaired += open_runs["*"] + open_runs["_"]
    return sorted(unpaired)


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    for start, end in reversed(spans):
        text = text[:start] + text[end:]
    return text


def _balance_inline(text: str) -> str:
    return _without(text, _unpaired(text))


def _balance_block(lines: list[str]) -> list[str]:
    if len(lines) == 1 and lines[0].lstrip().startswith("|"):  # a table row: cell by cell
        parts = _CELL_SPLIT.split(lines[0])
        return ["".join(p if p == "|" else _balance_inline(p) for p in parts)]
    return _balance_inline("\n".join(lines)).split("\n")


def balanced_emphasis(markdown: str) -> str:
    """``markdown`` without the ``**`` / ``__`` runs that pair with nothing in their block."""
    out: list[str] = []
    block: list[str] = []
    fence: str | None = None

    def flush() -> None:
        if block:
            out.extend(_balance_block(block))
            block.clear()

    for line in markdown.split("\n"):
        opening = _FENCE.match(line)
        if fence is not None:  # inside a code block: as written
            out.append(line)
            if opening and opening.group(1) == fence:
                fence = None
            continue
        if opening:
            flush()
            fence = opening.group(1)
            out.append(line)
        elif not line.strip() or _THEMATIC_BREAK.match(line):
            flush()
            out.append(line)
        elif line.lstrip().startswith("|"):
            flush()
            block.append(line)
            flush()
        else:
            if _BLOCK_START.match(line) or (block and line.lstrip().startswith("#")):
                flush()
            block.append(line)
    flush()
    return "\n".join(out)


def plain_emphasis(text: str) -> str:
    """``text`` for a plain-text label: every ``**`` / ``__`` run dropped (paired or not), the
    spaces it leaves tidied."""
    if "**" not in text and "__" not in text:
        return text
    spans = [(start, end) for start, end, *_ in _runs(text)]
    return re.sub(r"  +", " ", _without(text, spans)).strip()
