"""The records the converter passes between its stages: a page's text lines, the blocks
they are grouped into, and the analysed page.

Each box is kept in up to three spaces. PyMuPDF extracts in the *unrotated* page space;
provenance must be in the *display* space that ``page.get_pixmap()`` renders (see
``haiku.rag.ingest.records``); and reading order is worked out in a *reading frame* in
which the page's dominant writing direction runs left to right, so sideways text still
reads top to bottom.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from docling_core.types.doc import TableData

from haiku.rag.ingest.pdf.geometry import Bbox, Matrix, transform, union

BlockKind = Literal[
    "text", "title", "heading", "list_item", "caption", "footnote", "formula",
    "header", "footer", "table", "picture",
]

BULLET_CHARS = "•·◦▪▫‣⁃∙●○■□►▶➢➤✓✔❖\uf0b7\uf0a7\uf076\uf0d8\uf0fc\uf06e*-–—"
LIST_MARKER = re.compile(
    rf"^(?:(?P<bullet>[{re.escape(BULLET_CHARS)}])"
    r"|(?P<enum>\(?(?:\d{1,3}|[a-z]|[ivx]{1,4})[.)]))\s+(?P<rest>\S.*)$"
)
HYPHENS = ("-", "\u00ad", "\u2010")
# a cell of figures: an amount, a count, a percentage, a date ("07/17/2015"), a time
FIGURES = re.compile(r"^\s*[$€£¥(+\-–—]*\d[\d.,/:\-]*[)%]*\s*$")


@dataclass(slots=True)
class Line:
    text: str
    box: Bbox  # reading frame
    unrotated: Bbox  # PyMuPDF's extraction space (tables and layout boxes come in it)
    display: Bbox  # display space (page.rect, top-left origin): what provenance records
    size: float
    bold: bool
    source_block: int  # PyMuPDF block number (fast-mode runs never cross blocks)
    direction: tuple[int, int] | None  # axis-aligned writing direction, None when slanted
    on_axis: bool = True  # runs along the page's dominant direction (set by orient_lines)
    form: bool = False  # drawn inside a form field or button (set by mark_form_lines)


@dataclass(slots=True)
class Block:
    kind: BlockKind
    page_no: int
    box: Bbox  # reading frame
    display: Bbox
    lines: list[Line] = field(default_factory=list)
    table: TableData | None = None
    heading_level: int = 0
    # list items: the stripped marker ("•", "1.") and whether it counts
    marker: str = ""
    enumerated: bool = False
    # pictures: the first line of the caption the figure was found by
    # (``figure_regions``); the builder attaches that caption to it, not by adjacency
    caption_line: Line | None = None


@dataclass(slots=True)
class Page:
    page_no: int
    width: float
    height: float  # display size
    frame_box: Bbox  # the page in the reading frame (for header/footer zones, the title)
    blocks: list[Block]
    usable_chars: int
    needs_ocr: bool
    garbled: bool  # it has text, but the text does not decode


@dataclass(slots=True)
class PageGeometry:
    """How to map an unrotated page box to the reading frame and to display space."""

    page_no: int
    rotation: Matrix  # unrotated -> display
    frame: Matrix  # unrotated -> reading frame

    def block(self, kind: BlockKind, unrotated: Bbox, lines: list[Line] | None = None) -> Block:
        return Block(
            kind=kind,
            page_no=self.page_no,
            box=transform(unrotated, self.frame),
            display=transform(unrotated, self.rotation),
            lines=lines or [],
        )


def text_block(lines: list[Line], page_no: int) -> Block:
    box = union([line.box for line in lines])
    # On an upright, unrotated page the three spaces coincide: skip the second union.
    same_space = all(line.display is line.box for line in lines)
    return Block(
        kind="text",
        page_no=page_no,
        box=box,
        display=box if same_space else union([line.display for line in lines]),
        lines=list(lines),
    )


def compose(lines: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """Join lines with single spaces, undoing end-of-line hyphenation ("exam-" + "ple"), and
    return each line's (start, end) character span inside the joined text."""
    text = ""
    spans: list[tuple[int, int]] = []
    for line in lines:
        if text:
            if text.endswith(HYPHENS) and len(text) >= 2 and text[-2].isalpha() and line[:1].islower():
                text = text[:-1]
                start, end = spans[-1]
                spans[-1] = (start, end - 1)
            else:
                text += " "
        start = len(text)
        text += line
        spans.append((start, len(text)))
    return text, spans


def block_text(block: Block) -> str:
    return compose([line.text for line in block.lines])[0]
