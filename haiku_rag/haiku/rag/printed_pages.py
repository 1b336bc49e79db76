"""A page as a reader cites it: its printed label ("p. 22") rather than the PDF's sheet (36).

A document's printed labels live in its metadata under ``PAGE_LABELS_KEY`` (set at PDF ingest
by ``ingest.pdf.page_labels``): ``{"36": "22", "30": ""}``, by sheet number. A sheet absent
from it prints its own number (or the document has no labels at all: every non-PDF source,
every PDF numbered like its sheets or printing no numbers, every store made before labels);
``""``: the document has printed labels but this sheet's is not known (a part-title page
between two runs), and the page is then named by the PDF's own numbering, said so.

The one wording of pages (``pages_label``, ``page_place``), re-exported by
``haiku.rag.citations``. Below every layer (ingest reads the roman numerals here): imports
nothing of the library.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["PAGE_LABELS_KEY", "page_place", "pages_label", "printed_labels", "roman_numeral", "roman_value"]

PAGE_LABELS_KEY = "page_labels"


def printed_labels(metadata: Mapping[str, Any] | None, pages: Iterable[int] | None = None) -> dict[int, str]:
    """The printed labels a document's metadata holds (``PAGE_LABELS_KEY``), by sheet number,
    for ``pages`` (all of them when None). Stores made before labels existed have none."""
    raw = metadata.get(PAGE_LABELS_KEY) if metadata else None
    if not isinstance(raw, Mapping):
        return {}
    wanted = None if pages is None else set(pages)
    labels: dict[int, str] = {}
    for key, label in raw.items():
        try:
            sheet = int(key)
        except (TypeError, ValueError):
            continue
        if isinstance(label, str) and (wanted is None or sheet in wanted):
            labels[sheet] = label.strip()
    return labels


def pages_label(pages: Iterable[int], labels: Mapping[int, str] | None = None) -> str:
    """``p. 3``, ``pp. 2–3`` (pages in a row as a range) or ``pp. 3, 5``; empty for a passage
    without pages (Markdown, plain text).

    With ``labels`` (a ``Citation.page_labels``), the pages are named as printed: sheets 36–37
    of a book printing "22" and "23" are ``pp. 22–23``. A page whose printed label is not
    known in a document that has them cannot be named as printed: the pages are then named
    by the PDF's own numbering, said so (``PDF p. 30``)."""
    sheets = sorted(set(pages))
    if not sheets:
        return ""
    labels = labels or {}
    if any(labels.get(sheet) == "" for sheet in sheets):
        return "PDF " + pages_label(sheets)
    names = [(sheet, labels.get(sheet) or str(sheet)) for sheet in sheets]
    prefix = "p." if len(names) == 1 else "pp."
    return f"{prefix} {_ranges(names)}"


def page_place(page: int, labels: Mapping[int, str] | None = None) -> str:
    """One page as a reader sees it: ``p. 22 (PDF 36)`` when it prints another number than
    its sheet, ``PDF p. 30`` when its printed label is not known, else ``p. 36``."""
    label = (labels or {}).get(page)
    if label is None:
        return f"p. {page}"
    if label == "":
        return f"PDF p. {page}"
    return f"p. {label} (PDF {page})"


def _ranges(names: list[tuple[int, str]]) -> str:
    """``22–23, 25``: runs of consecutive sheets that print consecutive numbers joined."""
    groups: list[list[str]] = []
    previous: tuple[int, str] | None = None
    for sheet, name in names:
        if previous is not None and sheet == previous[0] + 1 and _follows(previous[1], name):
            groups[-1].append(name)
        else:
            groups.append([name])
        previous = (sheet, name)
    return ", ".join(g[0] if len(g) == 1 else f"{g[0]}–{g[-1]}" for g in groups)


def _follows(before: str, after: str) -> bool:
    """Whether ``after`` is the page number after ``before`` (arabic or roman, same case)."""
    if before.isdigit() and after.isdigit():
        return int(after) == int(before) + 1
    one, two = roman_value(before), roman_value(after)
    return one is not None and two is not None and two == one + 1 and before.islower() == after.islower()


_ROMAN = re.compile(r"m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})")
_ROMAN_VALUES = {"m": 1000, "d": 500, "c": 100, "l": 50, "x": 10, "v": 5, "i": 1}


def roman_value(text: str) -> int | None:
    """The value of a roman numeral written all lower or all upper case ("xiv": 14), else None."""
    word = text.lower()
    if not word or not (text.islower() or text.isupper()) or not _ROMAN.fullmatch(word):
        return None
    total = 0
    for char, following in zip(word, [*word[1:], ""], strict=True):
        value = _ROMAN_VALUES[char]
        total += -value if following and _ROMAN_VALUES[following] > value else value
    return total


def roman_numeral(value: int, *, upper: bool = False) -> str:
    """``14`` -> ``xiv`` (``XIV`` with ``upper``)."""
    parts = []
    for number, numeral in (
        (1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
        (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"),
    ):  # fmt: skip
        count, value = divmod(value, number)
        parts.append(numeral * count)
    text = "".join(parts)
    return text.upper() if upper else text
