"""Generate real PDFs with PyMuPDF for tests, and return where every known text was drawn.

Every line is placed by hand (no ``insert_textbox`` wrapping), so the factory knows each
line's exact box: x0 = insertion x, width = ``Font.text_length``, and vertically
``baseline - ascender * size`` .. ``baseline - descender * size``, which is the box PyMuPDF's
text extraction reports for the base-14 fonts. Boxes follow the project's geometry convention
(``haiku.rag.ingest.records``): 1-based pages, PDF points, top-left origin, in the display
space that ``page.get_pixmap()`` renders (so on rotated pages the boxes are rotated too).

Only pymupdf is needed. Each ``make_*`` function writes ``path`` and returns a ``PdfLayout``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

A4 = (595.0, 842.0)
MARGIN = 72.0
BODY_FONT = "helv"
BOLD_FONT = "hebo"
BODY_SIZE = 11.0
TITLE_SIZE = 24.0
H1_SIZE = 18.0
H2_SIZE = 14.0
LINE_GAP = 1.35  # baseline-to-baseline distance as a multiple of the font size

_FONTS = {name: pymupdf.Font(name) for name in (BODY_FONT, BOLD_FONT)}

Rect = tuple[float, float, float, float]


@dataclass(frozen=True)
class DrawnLine:
    page: int
    text: str
    rect: Rect  # x0, y0, x1, y1 in points, top-left origin, display (rotated) space


@dataclass
class DrawnBlock:
    """One logical item as drawn: a heading, paragraph, list item, table cell, caption..."""

    key: str
    kind: str  # title | h1 | h2 | paragraph | bullet | numbered | cell | caption | header | footer
    lines: list[DrawnLine]
    # The text a converter should produce for the item (lines joined by a space, hyphen
    # at a line end removed, list markers stripped).
    text: str

    @property
    def page(self) -> int:
        return self.lines[0].page

    @property
    def rect(self) -> Rect:
        return _union(line.rect for line in self.lines)


@dataclass
class PdfLayout:
    path: Path
    page_count: int
    page_size: tuple[float, float]  # display size (width, height) in points
    blocks: dict[str, DrawnBlock] = field(default_factory=dict)
    # Non-text objects: key -> (page, rect)
    tables: dict[str, tuple[int, Rect]] = field(default_factory=dict)
    table_cells: dict[str, list[list[str]]] = field(default_factory=dict)
    pictures: dict[str, tuple[int, Rect]] = field(default_factory=dict)
    # Blocks in the order a reader would read them (furniture excluded).
    reading_order: list[str] = field(default_factory=list)

    def block(self, key: str) -> DrawnBlock:
        return self.blocks[key]


def _union(rects: Iterable[Rect]) -> Rect:
    rs = list(rects)
    return (
        min(r[0] for r in rs),
        min(r[1] for r in rs),
        max(r[2] for r in rs),
        max(r[3] for r in rs),
    )


class _PageWriter:
    """Writes lines top to bottom on one page and records their boxes."""

    def __init__(self, layout: PdfLayout, page: pymupdf.Page, page_no: int) -> None:
        self.layout = layout
        self.page = page
        self.page_no = page_no
        self.y = MARGIN  # top of the next line

    def line(self, text: str, *, x: float, size: float, bold: bool = False) -> DrawnLine:
        """Draw one line whose box top is at ``self.y``; advance the cursor."""
        fontname = BOLD_FONT if bold else BODY_FONT
        font = _FONTS[fontname]
        baseline = self.y + font.ascender * size
        self.page.insert_text((x, baseline), text, fontname=fontname, fontsize=size)
        rect = (
            x,
            baseline - font.ascender * size,
            x + font.text_length(text, size),
            baseline - font.descender * size,
        )
        self.y += size * LINE_GAP
        return DrawnLine(self.page_no, text, rect)

    def block(
        self,
        key: str,
        kind: str,
        lines: list[str],
        *,
        x: float = MARGIN,
        size: float = BODY_SIZE,
        bold: bool = False,
        expected: str | None = None,
        space_after: float = 8.0,
        in_reading_order: bool = True,
    ) -> DrawnBlock:
        drawn = [self.line(text, x=x, size=size, bold=bold) for text in lines]
        block = DrawnBlock(key, kind, drawn, expected if expected is not None else _join(lines))
        self.layout.blocks[key] = block
        if in_reading_order:
            self.layout.reading_order.append(key)
        self.y += space_after
        return block

    def paragraph(self, key: str, text: str, *, x: float = MARGIN, width: float | None = None):
        width = width if width is not None else self.page.rect.width - x - MARGIN
        return self.block(key, "paragraph", wrap(text, width, BODY_SIZE), x=x)


def _join(lines: list[str]) -> str:
    out = ""
    for line in lines:
        if not out:
            out = line
        elif out.endswith("-") and out[-2:-1].isalpha() and line[:1].islower():
            out = out[:-1] + line
        else:
            out += " " + line
    return out


def wrap(text: str, width: float, size: float, fontname: str = BODY_FONT) -> list[str]:
    """Greedy word wrap with the font's metrics (get_text_length is exact for the Latin-1
    text wrapped here, and much faster than Font.text_length)."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}" if current else word
        if current and pymupdf.get_text_length(candidate, fontname, size) > width:
            lines.append(current)
            current = word
        else:
            current = candidate
    if current:
        lines.append(current)
    return lines


def _draw_furniture(layout: PdfLayout, doc: pymupdf.Document, header: str) -> None:
    """A repeated running header and a "Page N of M" footer on every page."""
    count = doc.page_count
    for index, page in enumerate(doc):
        writer = _PageWriter(layout, page, index + 1)
        writer.y = 28.0
        writer.block(f"header_p{index + 1}", "header", [header], size=8.0, in_reading_order=False)
        writer.y = page.rect.height - 40.0
        footer = f"Page {index + 1} of {count}"
        writer.block(f"footer_p{index + 1}", "footer", [footer], size=8.0, in_reading_order=False)


def _draw_ruled_table(
    layout: PdfLayout, writer: _PageWriter, key: str, rows: list[list[str]], col_width: float
) -> None:
    """A grid of stroked cell borders with one text line per cell."""
    row_height = 20.0
    x0, y0 = MARGIN, writer.y
    page = writer.page
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            cell_rect = pymupdf.Rect(
                x0 + c * col_width, y0 + r * row_height,
                x0 + (c + 1) * col_width, y0 + (r + 1) * row_height,
            )
            page.draw_rect(cell_rect, color=(0, 0, 0), width=0.8)
            writer.y = cell_rect.y0 + 4.0
            bold = r == 0
            writer.block(
                f"{key}_r{r}c{c}", "cell", [cell], x=cell_rect.x0 + 4.0, bold=bold,
                space_after=0.0, in_reading_order=False,
            )
    table_rect = (x0, y0, x0 + len(rows[0]) * col_width, y0 + len(rows) * row_height)
    layout.tables[key] = (writer.page_no, table_rect)
    layout.table_cells[key] = rows
    layout.reading_order.append(key)
    writer.y = table_rect[3] + 12.0


def _draw_picture(layout: PdfLayout, writer: _PageWriter, key: str, width: float, height: float):
    """A small generated raster image (a grey gradient) placed at the cursor."""
    samples = bytes(
        channel for _ in range(32) for x in range(64) for channel in (x * 4, 120, 255 - x * 4)
    )
    pix = pymupdf.Pixmap(pymupdf.csRGB, 64, 32, samples, False)
    rect = pymupdf.Rect(MARGIN, writer.y, MARGIN + width, writer.y + height)
    writer.page.insert_image(rect, pixmap=pix)
    layout.pictures[key] = (writer.page_no, tuple(rect))
    layout.reading_order.append(key)
    writer.y = rect.y1 + 6.0


# --- the PDFs -----------------------------------------------------------------------------

REPORT_TITLE = "Quarterly Report on Zephyrine Logistics"
REPORT_HEADER = "Zephyrine Logistics - Internal Review"
REPORT_TABLE = [
    ["Region", "Shipments", "Delay"],
    ["Nordvik", "1204", "3.5 days"],
    ["Salterra", "877", "1.2 days"],
    ["Quillmoor", "455", "6.8 days"],
]


def make_report_pdf(path: str | Path) -> PdfLayout:
    """Three A4 pages: title, H1/H2 headings, paragraphs, bullets, a numbered list, a ruled
    table, a picture with a caption, a paragraph split across a hyphenated line break,
    a repeated running header and page footers.

    Keys in ``blocks``: title, h1_intro, p_intro, h2_background, p_background, p_hyphen,
    bullet_1..3, h1_results, p_results, numbered_1..2, caption_fig1, h2_discussion,
    p_discussion, h1_appendix, p_appendix, header_pN, footer_pN, and table cells
    ``table_rXcY``. ``tables["table"]``, ``pictures["figure"]``.
    """
    path = Path(path)
    layout = PdfLayout(path=path, page_count=3, page_size=A4)
    doc = pymupdf.open()
    # Pages are added one at a time: a Page object goes stale once another page is added.
    w = _PageWriter(layout, doc.new_page(width=A4[0], height=A4[1]), 1)
    w.y = 70.0
    w.block("title", "title", [REPORT_TITLE], size=TITLE_SIZE, bold=True, space_after=14)
    w.block("h1_intro", "h1", ["1 Introduction"], size=H1_SIZE, bold=True)
    w.paragraph(
        "p_intro",
        "The albatross consignment reached the harbour of Nordvik after a voyage of eleven "
        "days, and the customs brokers recorded every crate of marmalade in triplicate before "
        "releasing the cargo to the inland distributors.",
    )
    w.block("h2_background", "h2", ["1.1 Background"], size=H2_SIZE, bold=True)
    w.paragraph(
        "p_background",
        "Historically the quartermasters of Salterra preferred narrow canal barges, because "
        "the lock chambers of the old waterway could not admit the broader vessels.",
    )
    w.block(
        "p_hyphen",
        "paragraph",
        ["The warehouse audit found that the refrigeration equip-", "ment of the depot was obsolete."],
    )
    bullets = [
        "Replace the tungsten lanterns in every loading bay",
        "Retrain the forklift crews on the porcupine protocol",
        "Renegotiate the saffron tariff with the guild",
    ]
    for i, text in enumerate(bullets, start=1):
        w.block(f"bullet_{i}", "bullet", [f"\u2022 {text}"], expected=text, space_after=2)

    w = _PageWriter(layout, doc.new_page(width=A4[0], height=A4[1]), 2)
    w.y = 70.0
    w.block("h1_results", "h1", ["2 Results"], size=H1_SIZE, bold=True)
    w.paragraph(
        "p_results",
        "Across the quarter the fleet delivered a record number of parcels, although the "
        "Quillmoor route suffered from persistent fog and flooded causeways.",
    )
    _draw_ruled_table(layout, w, "table", REPORT_TABLE, col_width=130.0)
    numbered = [
        "Audit the pelican cranes before winter",
        "Publish the corrected manifest ledger",
    ]
    for i, text in enumerate(numbered, start=1):
        w.block(f"numbered_{i}", "numbered", [f"{i}. {text}"], expected=text, space_after=2)
    w.y += 8
    _draw_picture(layout, w, "figure", width=200.0, height=100.0)
    w.block("caption_fig1", "caption", ["Figure 1: Throughput of the narwhal pipeline"])

    w.block("h2_discussion", "h2", ["2.1 Discussion"], size=H2_SIZE, bold=True)
    w.paragraph(
        "p_discussion",
        "The discussion centres on the kerosene shortage, which delayed the night convoys and "
        "forced the dispatchers to reroute the heaviest loads through the mountain pass.",
    )

    w = _PageWriter(layout, doc.new_page(width=A4[0], height=A4[1]), 3)
    w.y = 70.0
    w.block("h1_appendix", "h1", ["3 Appendix"], size=H1_SIZE, bold=True)
    w.paragraph(
        "p_appendix",
        "This appendix lists the lighthouse keepers who volunteered for the midnight census "
        "of the gannet colonies along the northern cliffs.",
    )

    _draw_furniture(layout, doc, REPORT_HEADER)
    doc.set_metadata({"title": REPORT_TITLE})
    doc.save(path)
    doc.close()
    return layout


STAMP = "arXiv:2411.00042v1 [cs.LG] 30 Nov 2026"


def make_two_column_pdf(path: str | Path) -> PdfLayout:
    """One A4 page laid out like a paper: a full-width title, two columns of headings and
    paragraphs, then a full-width closing paragraph under both columns, and an arXiv-style
    stamp written bottom-to-top in the left margin, in a font larger than the title's.

    Reading order: title, left column (h_left, p_left_1, p_left_2), right column
    (h_right, p_right_1, p_right_2), p_full, then the sideways stamp.
    """
    path = Path(path)
    layout = PdfLayout(path=path, page_count=1, page_size=A4)
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    col_width = (A4[0] - 2 * MARGIN - 20.0) / 2
    left_x, right_x = MARGIN, MARGIN + col_width + 20.0

    w = _PageWriter(layout, page, 1)
    w.y = 60.0
    w.block("title", "title", ["Gradient Descent for Lighthouse Scheduling"], size=20, bold=True,
            space_after=18)
    top = w.y

    texts = {
        "left": [
            "We study the scheduling of lighthouse keepers as an optimisation problem whose "
            "objective penalises idle lamps during storms over the estuary.",
            "Our baseline is a greedy heuristic borrowed from cormorant foraging studies, "
            "which assigns the nearest keeper to each darkened tower.",
        ],
        "right": [
            "The method relaxes the integer rota into a smooth surrogate and follows its "
            "gradient with a learning rate tuned on winter tide tables.",
            "Experiments on nine harbours show that the surrogate converges faster than "
            "simulated annealing on every moonless night in the archive.",
        ],
    }
    bottoms = []
    for side, x, heading in (("left", left_x, "1 Introduction"), ("right", right_x, "2 Method")):
        w.y = top
        reading_keys_before = len(layout.reading_order)
        w.block(f"h_{side}", "h1", [heading], x=x, size=H2_SIZE, bold=True)
        for i, text in enumerate(texts[side], start=1):
            w.block(f"p_{side}_{i}", "paragraph", wrap(text, col_width, BODY_SIZE), x=x)
        assert len(layout.reading_order) == reading_keys_before + 3
        bottoms.append(w.y)
    w.y = max(bottoms) + 10.0
    w.paragraph(
        "p_full",
        "In conclusion, full-width prose placed under both columns must be read last, after "
        "the right column, because it closes the paper about the foghorn rota.",
    )
    _draw_stamp(layout, page, "stamp", STAMP, baseline_x=40.0, bottom=600.0, size=22.0)
    doc.save(path)
    doc.close()
    return layout


def _draw_stamp(
    layout: PdfLayout, page: pymupdf.Page, key: str, text: str, baseline_x: float, bottom: float, size: float
) -> None:
    """Text rotated 90 degrees (reading bottom to top), as arXiv stamps its margin."""
    font = _FONTS[BODY_FONT]
    page.insert_text((baseline_x, bottom), text, fontname=BODY_FONT, fontsize=size, rotate=90)
    rect = (
        baseline_x - font.ascender * size,
        bottom - font.text_length(text, size),
        baseline_x - font.descender * size,
        bottom,
    )
    layout.blocks[key] = DrawnBlock(key, "stamp", [DrawnLine(1, text, rect)], text)
    layout.reading_order.append(key)


def image_only_pdf(page: pymupdf.Page, dpi: int) -> bytes:
    """``page`` rendered at ``dpi`` and wrapped as a one-page PDF that is only that image (a
    scan of it: no text layer, so ingestion must OCR it)."""
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(page.get_pixmap(dpi=dpi).tobytes("png"))).convert("RGB")
    scan = pymupdf.open()
    out = scan.new_page(width=image.width * 72 / dpi, height=image.height * 72 / dpi)
    encoded = io.BytesIO()
    image.save(encoded, format="PNG")
    out.insert_image(out.rect, stream=encoded.getvalue())
    return scan.tobytes()


def _scan_like_pixmap(seed: int) -> pymupdf.Pixmap:
    """A grey page image with dark bars where a scanner would have seen lines of text."""
    width, height = 120, 170
    samples = bytearray([235]) * (width * height)
    for row in range(10, 160, 8):
        length = 60 + (row * 7 + seed * 13) % 40
        for y in range(row, row + 3):
            samples[y * width + 10 : y * width + 10 + length] = bytes([40]) * length
    return pymupdf.Pixmap(pymupdf.csGRAY, width, height, bytes(samples), False)


def _add_scanned_page(doc: pymupdf.Document, seed: int) -> None:
    page = doc.new_page(width=A4[0], height=A4[1])
    page.insert_image(page.rect, pixmap=_scan_like_pixmap(seed))


def make_scanned_pdf(path: str | Path, pages: int = 2) -> PdfLayout:
    """Image-only pages with no text layer at all (a scan before OCR)."""
    path = Path(path)
    doc = pymupdf.open()
    for i in range(pages):
        _add_scanned_page(doc, i)
    doc.save(path)
    doc.close()
    return PdfLayout(path=path, page_count=pages, page_size=A4)


def make_partially_scanned_pdf(path: str | Path) -> PdfLayout:
    """Three pages: text, scanned image only, text. Page 2 needs OCR."""
    path = Path(path)
    layout = PdfLayout(path=path, page_count=3, page_size=A4)
    doc = pymupdf.open()
    for page_no in (1, 2, 3):
        if page_no == 2:
            _add_scanned_page(doc, 2)
            continue
        w = _PageWriter(layout, doc.new_page(width=A4[0], height=A4[1]), page_no)
        w.block(f"h_p{page_no}", "h1", [f"Chapter {page_no}"], size=H1_SIZE, bold=True)
        w.paragraph(f"p_p{page_no}", f"Page {page_no} describes the otter sanctuary {page_no}.")
    doc.save(path)
    doc.close()
    return layout


def make_encrypted_pdf(path: str | Path, password: str, *, owner_only: bool = False) -> PdfLayout:
    """One text page, AES-256 encrypted. With ``owner_only`` the user password is empty,
    so the file opens without a password (only permissions are restricted)."""
    path = Path(path)
    layout = PdfLayout(path=path, page_count=1, page_size=A4)
    doc = pymupdf.open()
    w = _PageWriter(layout, doc.new_page(width=A4[0], height=A4[1]), 1)
    w.block("h_secret", "h1", ["Sealed Memorandum"], size=H1_SIZE, bold=True)
    w.paragraph("p_secret", "The vault combination is hidden behind the walnut bookcase.")
    doc.save(
        path,
        encryption=pymupdf.PDF_ENCRYPT_AES_256,
        owner_pw=password + "-owner" if not owner_only else password,
        user_pw="" if owner_only else password,
        permissions=pymupdf.PDF_PERM_ACCESSIBILITY,
    )
    doc.close()
    return layout


def make_rotated_pdf(path: str | Path, rotation: int = 90) -> PdfLayout:
    """Two pages: page 1 upright, page 2 with ``/Rotate rotation``. Text is drawn in the
    page's own (unrotated) space; recorded boxes are converted into the rotated display
    space with ``page.rotation_matrix``, which is what the rendered pixmap shows."""
    path = Path(path)
    layout = PdfLayout(path=path, page_count=2, page_size=A4)
    doc = pymupdf.open()
    for page_no in (1, 2):
        page = doc.new_page(width=A4[0], height=A4[1])
        w = _PageWriter(layout, page, page_no)
        w.block(f"h_p{page_no}", "h1", [f"Turntable Section {page_no}"], size=H1_SIZE, bold=True)
        w.paragraph(
            f"p_p{page_no}",
            f"Sideways page {page_no} tells how the gramophone collector catalogued every "
            "shellac disc in the attic before the auction of the estate.",
        )
    rotated = doc[1]
    rotated.set_rotation(rotation)
    matrix = rotated.rotation_matrix
    for block in layout.blocks.values():
        if block.page == 2:
            block.lines = [
                DrawnLine(line.page, line.text, tuple(pymupdf.Rect(line.rect) * matrix))
                for line in block.lines
            ]
    doc.save(path)
    doc.close()
    return layout


def make_paper_pdf(
    path: str | Path,
    *,
    title: str,
    authors: list[str],
    paragraphs: list[str],
    affiliation: str | None = None,
    header_lines: list[str] | None = None,
    info: dict[str, str] | None = None,
    pages: int = 2,
) -> PdfLayout:
    """A research paper: optional header lines (arXiv id, DOI) above the title, the title,
    one author line, an affiliation line, then paragraphs spread over ``pages`` pages.
    ``info`` sets the PDF's Info dictionary (title, author, ...).

    Keys in ``blocks``: header_N, title, authors, affiliation, p_N."""
    path = Path(path)
    layout = PdfLayout(path=path, page_count=pages, page_size=A4)
    doc = pymupdf.open()
    for _ in range(pages):
        doc.new_page(width=A4[0], height=A4[1])  # all first: adding a page orphans loaded ones
    writers = [_PageWriter(layout, doc[n], n + 1) for n in range(pages)]
    first = writers[0]
    for n, line in enumerate(header_lines or []):
        first.block(f"header_{n}", "header", [line], size=8.0, in_reading_order=False)
    first.block("title", "title", wrap(title, A4[0] - 2 * MARGIN, TITLE_SIZE, BOLD_FONT), size=TITLE_SIZE, bold=True)
    first.block("authors", "paragraph", [", ".join(authors)], size=12.0)
    if affiliation:
        first.block("affiliation", "paragraph", [affiliation], size=10.0)
    for n, text in enumerate(paragraphs):
        writers[min(pages - 1, n * pages // max(1, len(paragraphs)))].paragraph(f"p_{n}", text)
    if info:
        doc.set_metadata(info)
    doc.save(path)
    doc.close()
    return layout


# --- tables ---------------------------------------------------------------------------------


@dataclass
class DrawnTable:
    """A table as drawn: its caption, its column-header texts (in reading order), its body
    rows (cell texts left to right), and where each body row and the header were drawn
    (display space: the union of the row's text boxes)."""

    page: int
    caption: str
    header: list[str]
    rows: list[list[str]]
    row_rects: list[Rect] = field(default_factory=list)
    header_rect: Rect | None = None
    row_pages: list[int] = field(default_factory=list)  # each body row's page (default: page)

    def page_of(self, row: int) -> int:
        return self.row_pages[row] if self.row_pages else self.page


OTSL_CAPTION = (
    "Table 1: HPO performed in OTSL and HTML representation on the same transformer-based "
    "TableFormer architecture, trained only on PubTabNet. Effects of reducing the # of layers "
    "in encoder and decoder stages of the model show that smaller models trained on OTSL "
    "perform better, especially in recognizing complex table structures."
)
OTSL_ROWS = [
    ["6", "6", "OTSL", "0.965", "0.934", "0.955", "0.88", "2.73"],
    ["6", "6", "HTML", "0.969", "0.927", "0.955", "0.857", "5.39"],
    ["4", "4", "OTSL", "0.938", "0.904", "0.927", "0.853", "1.97"],
    ["4", "4", "HTML", "0.952", "0.909", "0.938", "0.843", "3.77"],
    ["2", "4", "OTSL", "0.923", "0.897", "0.915", "0.859", "1.91"],
    ["2", "4", "HTML", "0.945", "0.901", "0.931", "0.834", "3.81"],
    ["4", "2", "OTSL", "0.952", "0.92", "0.942", "0.857", "1.22"],
    ["4", "2", "HTML", "0.944", "0.903", "0.931", "0.824", "2"],
]

_DEPOTS = [
    "Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Ginkgo", "Hazel", "Ilex", "Juniper",
    "Kauri", "Larch", "Maple", "Nutmeg", "Oak", "Poplar", "Quince", "Rowan", "Spruce", "Teak",
    "Ulmus", "Viburnum", "Willow", "Xylosma", "Yew", "Zelkova", "Acacia", "Banyan", "Catalpa",
    "Deodar", "Ebony", "Fig", "Gum", "Hornbeam", "Ironwood", "Jacaranda", "Kapok", "Linden",
]
_REGIONS = ["Nordvik", "Salterra", "Quillmoor", "Brackwater", "Ostrelund"]
LEDGER_CAPTION = "Table 2: Shipments handled by each depot in 2024"
LEDGER_HEADER = ["Depot", "Region", "Shipments", "Delay (days)", "Carrier"]


def ledger_rows(count: int) -> list[list[str]]:
    """Body rows with words unique per row (a depot name), for tests that find rows."""
    return [
        [
            f"{_DEPOTS[i % len(_DEPOTS)]} depot {i + 1}",
            _REGIONS[i % len(_REGIONS)],
            f"{1000 + 37 * i:,}",
            f"{(i * 7) % 10}.{(i * 3) % 10}",
            ["Harbourline", "Ferrox", "Pellicane"][i % 3],
        ]
        for i in range(count)
    ]


def _text_width(text: str, size: float, bold: bool = False) -> float:
    return pymupdf.get_text_length(text, BOLD_FONT if bold else BODY_FONT, size)


def _draw_cells(
    page: pymupdf.Page,
    texts: list[str],
    columns: list[tuple[float, float]],
    y: float,
    size: float,
    *,
    bold: bool = False,
    to_display: pymupdf.Matrix | None = None,
    rotate: int = 0,
) -> Rect:
    """One table row: each text left-aligned in its column (x0, x1); returns the row's
    display rect. ``to_display``/``rotate``: draw on a rotated page so the row reads
    upright (the insertion point mapped from display to page space)."""
    font = _FONTS[BOLD_FONT if bold else BODY_FONT]
    baseline = y + font.ascender * size
    rects = []
    for text, (x0, _x1) in zip(texts, columns, strict=True):
        if not text:
            continue
        point = pymupdf.Point(x0, baseline)
        if to_display is not None:
            point = point * ~to_display
        page.insert_text(
            point, text, fontname=BOLD_FONT if bold else BODY_FONT, fontsize=size, rotate=rotate
        )
        rects.append((x0, y, x0 + font.text_length(text, size), baseline - font.descender * size))
    return _union(rects)


def _columns_for(rows: list[list[str]], x0: float, size: float, gap: float) -> list[tuple[float, float]]:
    widths = [max(_text_width(row[c], size, bold=True) for row in rows) for c in range(len(rows[0]))]
    columns = []
    for width in widths:
        columns.append((x0, x0 + width))
        x0 += width + gap
    return columns


def make_table_pdf(
    path: str | Path, kind: str, *, rows: int = 28, caption_in_pieces: bool = False
) -> tuple[PdfLayout, DrawnTable]:
    """A page (or two) with one table between a heading's paragraph and the next heading.

    ``kind``: ``ruled`` (every cell stroked), ``unruled`` (whitespace only, bold header),
    ``spanning`` (the OTSL results table: two header rows, "TEDs" spanning three columns,
    booktabs rules), ``scanned`` (the unruled table rendered to an image: no text layer),
    ``rotated`` (a landscape expenditure table on a page with /Rotate 90, drawn so that it
    reads upright), ``rotated_ruled`` (the same, every cell stroked), ``statement`` (a cash-flow statement: labels far from right-aligned
    amounts, "$" printed apart, years centred over the amounts, section rows; no caption).
    ``in_column`` (a two-column page: running text in the left column, a small results table
    with its caption in the right one, their lines side by side).
    ``rows``: body rows of the ledger tables (ruled, unruled, scanned).
    ``caption_in_pieces``: the ledger caption's label printed as its own bold spans, spread
    apart as justified text spreads them ("Table", "2:", then the caption's text).
    Blocks: h_results, p_before, h_next, p_after."""
    if kind == "scanned":
        return _scanned_table_pdf(Path(path), rows)
    if kind == "statement":
        return _statement_pdf(Path(path))
    if kind == "in_column":
        return _table_in_column_pdf(Path(path))
    path = Path(path)
    layout = PdfLayout(path=path, page_count=1, page_size=A4)
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    if kind in ("rotated", "rotated_ruled"):
        return _rotated_table_pdf(path, doc, layout, ruled=kind == "rotated_ruled")
    w = _PageWriter(layout, page, 1)
    w.block("h_results", "h1", ["5 Experiments"], size=H1_SIZE, bold=True)
    w.paragraph(
        "p_before",
        "We compare the two table representations on the same model and report accuracy "
        "and the time inference takes. Every configuration was trained from scratch on the "
        "same data with the same schedule, and each figure is the mean of three runs with "
        "different seeds. Encoder and decoder depths vary together and apart, so that the "
        "effect of each on speed and accuracy can be told apart. Accuracy is measured as "
        "tree-edit-distance similarity on simple and complex tables, and the detection of "
        "cells as mean average precision at an overlap of three quarters.",
    )
    size = 9.0 if kind == "spanning" else 10.0
    if kind == "spanning":
        table = _draw_otsl_table(w, size)
    else:
        body = ledger_rows(rows)
        if caption_in_pieces:
            caption_text = _draw_caption_in_pieces(w, LEDGER_CAPTION, size)
        else:
            caption_text = w.block("caption", "caption", wrap(LEDGER_CAPTION, 450, size), size=size).text
        table = DrawnTable(1, caption_text, list(LEDGER_HEADER), body)
        columns = _columns_for([LEDGER_HEADER, *body], MARGIN, size, 24.0)
        row_height = size * 1.6
        if kind in ("ruled", "ruled_groups"):
            right = columns[-1][1] + 6
            edges = [c[0] - 6 for c in columns] + [right]
        for r, texts in enumerate([LEDGER_HEADER, *body]):
            if w.y + row_height > A4[1] - MARGIN:
                page = doc.new_page(width=A4[0], height=A4[1])
                layout.page_count += 1
                w = _PageWriter(layout, page, layout.page_count)
            top = w.y
            rect = _draw_cells(page, texts, columns, top + 0.45 * size, size, bold=r == 0)
            if kind == "ruled":
                for c in range(len(columns)):
                    page.draw_rect(
                        pymupdf.Rect(edges[c], top, edges[c + 1], top + row_height),
                        color=(0, 0, 0), width=0.6,
                    )
            if kind == "ruled_groups":  # every column ruled, a rule under every third row
                for x in edges:
                    page.draw_line((x, top), (x, top + row_height), width=0.6)
                if r % 3 == 0:
                    page.draw_line((edges[0], top + row_height), (edges[-1], top + row_height), width=0.6)
                if r == 0:
                    page.draw_line((edges[0], top), (edges[-1], top), width=0.6)
            if r == 0:
                table.header_rect = rect
            else:
                table.row_rects.append(rect)
                table.row_pages.append(w.page_no)
            w.y = top + row_height
        w.y += 14
    w.block("h_next", "h1", ["6 Conclusion"], size=H1_SIZE, bold=True)
    w.paragraph(
        "p_after",
        "The smaller representation is faster to decode and loses nothing in accuracy. "
        "Its vocabulary is a handful of tokens, every sequence it produces is a valid "
        "table, and its output is shorter, which is where the time is saved: the decoder "
        "runs once per token, and fewer tokens mean fewer runs of the largest part of the "
        "model. We release the code and the trained models with this paper.",
    )
    doc.save(path)
    doc.close()
    return layout, table


def _draw_caption_in_pieces(w: _PageWriter, caption: str, size: float) -> str:
    """A caption whose label ("Table", "2:") is printed in bold spans of its own, with wide
    justified gaps before the text; returns the caption's text as a reader reads it."""
    word, number, text = caption.split(" ", 2)
    font, bold = _FONTS[BODY_FONT], _FONTS[BOLD_FONT]
    baseline = w.y + font.ascender * size
    x = MARGIN
    for piece, is_bold, gap in ((word, True, 9.0), (number, True, 14.0), (text, False, 0.0)):
        w.page.insert_text((x, baseline), piece, fontname=BOLD_FONT if is_bold else BODY_FONT, fontsize=size)
        x += (bold if is_bold else font).text_length(piece, size) + gap
    w.y += size * LINE_GAP + 8.0
    return caption


def _draw_otsl_table(w: _PageWriter, size: float) -> DrawnTable:
    page = w.page
    caption = w.block("caption", "caption", wrap(OTSL_CAPTION, A4[0] - 2 * MARGIN, size), size=size)
    top_header = ["# enc-layers", "# dec-layers", "Language", "TEDs", "", "", "mAP", "Inference"]
    sub_header = ["", "", "", "simple", "complex", "all", "(0.75)", "time (secs)"]
    columns = _columns_for([top_header, sub_header, *OTSL_ROWS], MARGIN, size, 14.0)
    x0, x1 = columns[0][0], columns[-1][1]
    step = size * 1.5
    w.y += 4
    page.draw_line((x0, w.y), (x1, w.y), width=0.8)  # toprule
    w.y += 3
    # "TEDs" centred over its three columns, not in one of them
    teds_x = (columns[3][0] + columns[5][1]) / 2 - _text_width("TEDs", size) / 2
    spans = [*columns[:3], (teds_x, teds_x), (0, 0), (0, 0), *columns[6:]]
    rect1 = _draw_cells(page, top_header, spans, w.y, size)
    w.y += step
    page.draw_line((columns[3][0], w.y - 1.5), (columns[5][1], w.y - 1.5), width=0.4)  # cmidrule
    rect2 = _draw_cells(page, sub_header, columns, w.y, size)
    w.y += step
    page.draw_line((x0, w.y), (x1, w.y), width=0.5)  # midrule
    w.y += 3
    table = DrawnTable(
        w.page_no, caption.text,
        [t for t in top_header + sub_header if t], [list(r) for r in OTSL_ROWS],
        header_rect=_union([rect1, rect2]),
    )
    for row in OTSL_ROWS:
        table.row_rects.append(_draw_cells(page, row, columns, w.y, size))
        w.y += step
    page.draw_line((x0, w.y), (x1, w.y), width=0.8)  # bottomrule
    w.y += 14
    return table


EXPENSES_HEADER = ["Name", "Office", "Travel", "Lodging", "Meals", "Total"]
EXPENSES_ROWS = [
    ["Adaeze Okonkwo", "Treasury", "412.50", "980.00", "121.75", "1,514.25"],
    ["Bertrand Vasquez", "Harbour Board", "88.20", "0.00", "35.10", "123.30"],
    ["Chiyo Lindqvist", "Archives", "1,205.00", "640.00", "210.40", "2,055.40"],
    ["Dmitri Ferreira", "Parks", "56.00", "310.00", "48.90", "414.90"],
    ["Eilidh Mensah", "Libraries", "730.15", "1,120.00", "98.60", "1,948.75"],
]


def _rotated_table_pdf(
    path: Path, doc: pymupdf.Document, layout: PdfLayout, *, ruled: bool = False
) -> tuple[PdfLayout, DrawnTable]:
    """An expenditure table on a landscape page: a portrait page with /Rotate 90 whose text
    is drawn turned, so the rendered page shows it upright; ``ruled``: every cell stroked."""
    page = doc[0]
    page.set_rotation(90)
    to_display = page.rotation_matrix
    layout.page_size = (A4[1], A4[0])
    size = 11.0
    y = MARGIN
    font = _FONTS[BOLD_FONT]
    for text, bold, fsize in (("Councillors' expenditure 2023", True, H1_SIZE),):
        point = pymupdf.Point(MARGIN, y + font.ascender * fsize) * ~to_display
        page.insert_text(point, text, fontname=BOLD_FONT if bold else BODY_FONT, fontsize=fsize, rotate=90)
        y += fsize * 2
    caption = "Table 3: Expenses claimed by each councillor, in pounds"
    _draw_cells(page, [caption], [(MARGIN, 700)], y, size, to_display=to_display, rotate=90)
    y += size * 2.2
    columns = _columns_for([EXPENSES_HEADER, *EXPENSES_ROWS], MARGIN, size, 40.0)
    table = DrawnTable(1, caption, list(EXPENSES_HEADER), [list(r) for r in EXPENSES_ROWS])
    table.header_rect = _draw_cells(
        page, EXPENSES_HEADER, columns, y, size, bold=True, to_display=to_display, rotate=90
    )
    header_top = y
    y += size * 2
    for row in EXPENSES_ROWS:
        table.row_rects.append(
            _draw_cells(page, row, columns, y, size, to_display=to_display, rotate=90)
        )
        y += size * 1.8
    if ruled:  # rules in display space, drawn in the page's own (unrotated) space
        edges = [c[0] - 8 for c in columns] + [columns[-1][1] + 8]
        tops = [header_top - 4, header_top + size * 2 - 4]
        tops += [tops[-1] + size * 1.8 * (i + 1) for i in range(len(EXPENSES_ROWS))]
        for top, bottom in zip(tops, tops[1:], strict=False):
            for left, right in zip(edges, edges[1:], strict=False):
                page.draw_rect(pymupdf.Rect(left, top, right, bottom) * ~to_display, color=(0, 0, 0), width=0.6)
    doc.save(path)
    doc.close()
    return layout, table


def _scanned_table_pdf(path: Path, rows: int) -> tuple[PdfLayout, DrawnTable]:
    """The unruled ledger table drawn on a page, rendered at 200 dpi and inserted as the
    only content of a page with no text layer (a scan)."""
    source = path.with_name(path.stem + "-source.pdf")
    _, table = make_table_pdf(source, "unruled", rows=rows)
    with pymupdf.open(source) as drawn:
        pix = drawn[0].get_pixmap(dpi=200, colorspace=pymupdf.csGRAY)
    source.unlink()
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    page.insert_image(page.rect, pixmap=pix)
    doc.save(path)
    doc.close()
    return PdfLayout(path=path, page_count=1, page_size=A4), table


STATEMENT_ROWS = [
    ["Net income including noncontrolling interest", "$ 5,363", "$ 4,869", "$ 5,058"],
    ["Depreciation and amortization", "1,488", "1,544", "1,474"],
    ["Company pension and postretirement contributions", "(370)", "(967)", "(383)"],
    ["Stock-based compensation expense", "302", "324", "298"],
    ["Cash Flows from Investing Activities"],
    ["Purchases of property, plant and equipment (PP&E)", "(1,577)", "(1,373)", "(1,420)"],
    ["Proceeds from sale of PP&E and other assets", "262", "49", "58"],
    ["Net cash provided by (used in) investing activities", "222", "(3,086)", "(1,403)"],
    ["Cash and cash equivalents at end of period", "$ 2,853", "$ 3,053", "$ 2,398"],
]


def _statement_pdf(path: Path) -> tuple[PdfLayout, DrawnTable]:
    """A 10-K cash-flow statement page: labels at the left margin, amounts right-aligned
    near the right margin (the gap wider than a third of the page), currency signs drawn
    apart from their amounts, bold years centred over the amount columns."""
    layout = PdfLayout(path=path, page_count=1, page_size=A4)
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    w = _PageWriter(layout, page, 1)
    w.block("h_results", "h1", ["Consolidated Statement of Cash Flows"], size=H1_SIZE, bold=True)
    w.paragraph(
        "p_before",
        "The statement below shows how cash moved through the company in each of the last "
        "three years, from operations, from investments and from financing, in millions of "
        "dollars. Amounts in parentheses are outflows.",
    )
    size = 8.0
    rights = [425.0, 485.0, 545.0]  # right edges of the amount columns
    font = _FONTS[BODY_FONT]
    bold = _FONTS[BOLD_FONT]
    y = w.y + 6
    table = DrawnTable(1, "", ["2018", "2017", "2016"], [])

    def text_at(x: float, top: float, text: str, is_bold: bool = False) -> Rect:
        f = bold if is_bold else font
        baseline = top + f.ascender * size
        page.insert_text((x, baseline), text, fontname=BOLD_FONT if is_bold else BODY_FONT, fontsize=size)
        return (x, top, x + f.text_length(text, size), baseline - f.descender * size)

    header = [text_at(MARGIN, y, "(Millions)", True)]
    for right, year in zip(rights, table.header, strict=True):
        header.append(text_at(right - 21 - bold.text_length(year, size) / 2, y, year, True))
    table.header_rect = _union(header)
    y += size * 1.6
    for row in STATEMENT_ROWS:
        rects = [text_at(MARGIN, y, row[0], len(row) == 1)]
        for right, amount in zip(rights, row[1:], strict=False):
            if amount.startswith("$ "):
                rects.append(text_at(right - 40, y, "$"))
                amount = amount[2:]
            rects.append(text_at(right - font.text_length(amount, size), y, amount))
        table.rows.append(list(row) + [""] * (4 - len(row)))
        table.row_rects.append(_union(rects))
        y += size * 1.45
    w.y = y + 14
    w.block("h_next", "h1", ["Notes to the Statements"], size=H1_SIZE, bold=True)
    w.paragraph(
        "p_after",
        "The accompanying notes are an integral part of these statements and describe the "
        "accounting policies the amounts were prepared under.",
    )
    doc.save(path)
    doc.close()
    return layout, table


WRAPPED_HEADER = ["Item", "Description", "Remark", "Count"]
WRAPPED_ROWS = [  # each cell as its printed lines
    [["Alder crate"], ["Oak boards,", "planed both sides"], ["Checked"], ["12"]],
    [["Birch crate"], ["Pine battens"], ["Returned by", "the carrier"], ["7"]],
    [["Cedar crate"], ["Spruce laths,", "tied in bundles"], ["Kept for", "the spring order"], ["31"]],
    [["Elm crate"], ["Larch posts"], ["Checked"], ["4"]],
    [["Fir crate"], ["Maple blocks,", "kiln dried"], ["Split on", "arrival"], ["19"]],
]


STATES = [
    "Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Connecticut", "Delaware",
    "Florida", "Georgia", "Hawaii", "Idaho", "Illinois", "Indiana", "Iowa", "Kansas", "Kentucky",
    "Louisiana", "Maine", "Maryland", "Massachusetts", "Michigan", "Minnesota", "Mississippi",
    "Missouri", "Montana", "Nebraska", "Nevada", "New Hampshire", "New Jersey", "New Mexico",
    "New York", "North Carolina", "North Dakota", "Ohio", "Oklahoma", "Oregon", "Pennsylvania",
    "Rhode Island", "South Carolina", "South Dakota", "Tennessee", "Texas", "Utah", "Vermont",
    "Virginia", "Washington", "West Virginia", "Wisconsin", "Wyoming",
]
STATE_HEADER = [
    "State / Territory", "Permit", "Handgun", "Long Gun", "Other", "Multiple", "Admin",
    "Pre-Pawn Handgun", "Pre-Pawn Long Gun", "Redemption Handgun", "Redemption Long Gun",
    "Rentals", "Private Sale", "Returned", "Totals",
]


def make_landscape_table_pdf(path: str | Path) -> tuple[PdfLayout, DrawnTable]:
    """One landscape page (1008 x 612 points, as the FBI's monthly NICS statistics are) filled
    by a wide table: a title, a header row, then a row per state (50, small print), so a row
    such as Texas sits low on the page, far below the header. Figures are made up."""
    path = Path(path)
    size_page = (1008.0, 612.0)
    layout = PdfLayout(path=path, page_count=1, page_size=size_page)
    doc = pymupdf.open()
    page = doc.new_page(width=size_page[0], height=size_page[1])
    w = _PageWriter(layout, page, 1)
    w.y = 24.0
    w.block("title", "title", ["Background checks by state, November"], size=14.0, bold=True, x=36.0)
    size = 7.0
    body = [
        [state, *(f"{(i + 3) * (c + 7) * 37 % 90_000:,}" for c in range(len(STATE_HEADER) - 1))]
        for i, state in enumerate(STATES)
    ]
    table = DrawnTable(1, "", list(STATE_HEADER), body)
    columns = _columns_for([STATE_HEADER, *body], 36.0, size, 19.0)
    row_height = size * 1.5
    w.y += 6
    for r, texts in enumerate([STATE_HEADER, *body]):
        rect = _draw_cells(page, texts, columns, w.y + 0.25 * size, size, bold=r == 0)
        if r == 0:
            table.header_rect = rect
        else:
            table.row_rects.append(rect)
        w.y += row_height
    doc.save(path)
    doc.close()
    return layout, table


def make_wrapped_cells_pdf(path: str | Path, *, ruled: bool) -> tuple[PdfLayout, list[list[str]]]:
    """A table whose cells wrap onto a second line. ``ruled``: every cell stroked, one-line
    cells centred in their cell's height, the header shaded with its text shading inset
    (as Word draws it), and one line struck out (a rule across its text). Unruled: cells
    top-aligned, a wider gap between rows. Returns each body row's cells as a reader reads
    them (a cell's lines joined)."""
    path = Path(path)
    layout = PdfLayout(path=path, page_count=1, page_size=A4)
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    w = _PageWriter(layout, page, 1)
    w.block("h_results", "h1", ["Goods received"], size=H1_SIZE, bold=True)
    size = 10.0
    font = _FONTS[BODY_FONT]
    widths = [80.0, 130.0, 110.0, 40.0]
    lefts = [MARGIN]
    for width in widths[:-1]:
        lefts.append(lefts[-1] + width + 12)
    line_height = size * 1.3
    y = w.y + 8

    def put(x: float, top: float, text: str, bold: bool = False) -> Rect:
        baseline = top + font.ascender * size
        page.insert_text((x, baseline), text, fontname=BOLD_FONT if bold else BODY_FONT, fontsize=size)
        return (x, top, x + _text_width(text, size, bold), baseline - font.descender * size)

    if ruled:
        cell_height = 2 * line_height + 6
        header_height = line_height + 8
        for left, width in zip(lefts, widths, strict=True):
            outer = pymupdf.Rect(left - 6, y, left + width + 6, y + header_height)
            page.draw_rect(outer, color=(0, 0, 0), fill=(0.85, 0.85, 0.85), width=0.5)
            page.draw_rect(pymupdf.Rect(outer.x0 + 4, outer.y0 + 3, outer.x1 - 4, outer.y1 - 3),
                           color=None, fill=(0.85, 0.85, 0.85), width=0)
        for left, text in zip(lefts, WRAPPED_HEADER, strict=True):
            put(left, y + 4, text, True)
        y += header_height
        for r, row in enumerate(WRAPPED_ROWS):
            for left, width, lines in zip(lefts, widths, row, strict=True):
                page.draw_rect(pymupdf.Rect(left - 6, y, left + width + 6, y + cell_height), color=(0, 0, 0), width=0.5)
                top = y + (cell_height - len(lines) * line_height) / 2
                for k, text in enumerate(lines):
                    rect = put(left, top + k * line_height, text)
                    if r == 2 and k == 0 and left == lefts[1]:  # struck out
                        middle = (rect[1] + rect[3]) / 2
                        page.draw_line((rect[0], middle), (rect[2], middle), width=0.6)
            y += cell_height
    else:
        for left, text in zip(lefts, WRAPPED_HEADER, strict=True):
            put(left, y, text, True)
        y += line_height * 1.6
        for row in WRAPPED_ROWS:
            for left, lines in zip(lefts, row, strict=True):
                for k, text in enumerate(lines):
                    put(left, y + k * line_height, text)
            y += line_height * (max(len(c) for c in row) + 0.8)
    doc.save(path)
    doc.close()
    return layout, [[" ".join(cell) for cell in row] for row in WRAPPED_ROWS]


GROUPS = [("Pre-Pawn", ["Handgun", "Long Gun", "Other"]), ("Redemption", ["Handgun", "Long Gun", "Other"]),
          ("Rentals", ["Handgun", "Long Gun"])]
GROUP_STATES = ["Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Delaware"]


def make_group_header_pdf(path: str | Path, *, ruled: bool) -> tuple[PdfLayout, list[str], list[list[str]]]:
    """A checks report like the NICS one: single columns ("State", "Permit", "Admin"), then
    groups ("Pre-Pawn", "Redemption", "Rentals") whose labels are centred over their
    sub-columns ("Handgun", "Long Gun", "Other"), all columns of one width, numbers in the
    body; ``ruled``: vertical rules between the groups, from the group row down (the
    group's cell), no horizontal rules. Returns the layout, each column's expected name
    (group and sub-column) and the body rows."""
    path = Path(path)
    layout = PdfLayout(path=path, page_count=1, page_size=(842.0, 595.0))
    doc = pymupdf.open()
    page = doc.new_page(width=842.0, height=595.0)
    w = _PageWriter(layout, page, 1)
    w.block("h_results", "h1", ["Background checks, November"], size=H1_SIZE, bold=True)
    size, width, gap = 7.0, 40.0, 8.0
    names = ["State", "Permit", "Admin"]
    subs: list[str] = ["", "", ""]
    group_cells: list[tuple[str, int, int]] = []
    for group, members in GROUPS:
        group_cells.append((group, len(subs), len(subs) + len(members) - 1))
        subs += members
        names += [f"{group} {m}" for m in members]
    subs.append("")
    names.append("Totals")
    x0 = MARGIN
    columns = [(x0, x0 + 62.0)]
    x = x0 + 62.0 + gap
    for _ in range(len(names) - 1):
        columns.append((x, x + width))
        x += width + gap
    top = w.y + 6
    font = _FONTS[BOLD_FONT]
    for group, first, last in group_cells:  # centred over its sub-columns
        middle = (columns[first][0] + columns[last][0] + width) / 2
        page.insert_text(
            (middle - font.text_length(group, size) / 2, top + font.ascender * size), group,
            fontname=BOLD_FONT, fontsize=size,
        )
    y = top + size * 1.6
    heads = ["State", "Permit", "Admin", *subs[3:-1], "Totals"]
    _draw_cells(page, heads, columns, y, size, bold=True)
    y += size * 1.6
    rows = []
    for i, state in enumerate(GROUP_STATES):
        values = [state] + [f"{(37 * i + 11 * c) % 900 + 10:,}" for c in range(1, len(names))]
        _draw_cells(page, values, columns, y, size)
        rows.append(values)
        y += size * 1.5
    if ruled:
        for _, first, last in group_cells:
            for edge in (columns[first][0] - gap / 2, columns[last][1] + gap / 2):
                page.draw_line((edge, top - 2), (edge, y), width=0.5)
    doc.save(path)
    doc.close()
    return layout, names, rows


DATASET_HEADER = ["Dataset", "Train", "Dev", "Test"]
DATASET_ROWS = [
    ["Natural Questions", "79,168", "8,757", "3,610"],
    ["TriviaQA", "78,785", "8,837", "11,313"],
    ["WebQuestions", "3,417", "361", "2,032"],
    ["CuratedTREC", "1,353", "133", "694"],
    ["SQuAD", "78,713", "8,886", "10,570"],
]
COLUMN_TEXT = (
    "The trick of in-batch negatives has been used in full batch settings and more recently "
    "for mini-batch training. It is an efficient way of reusing the negative examples already "
    "in the batch rather than creating new ones, and it produces more training pairs for each "
    "batch, which turns out to be the key to the gains we see. We use the same batch size for "
    "every run and report the mean of three seeds, so that differences between the datasets "
    "are not differences in how the models were trained on them."
)


def _table_in_column_pdf(path: Path) -> tuple[PdfLayout, DrawnTable]:
    layout = PdfLayout(path=path, page_count=1, page_size=A4)
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    w = _PageWriter(layout, page, 1)
    w.block("h_results", "h1", ["4 Experimental Setup"], size=H1_SIZE, bold=True)
    top = w.y
    col_width = (A4[0] - 2 * MARGIN - 20.0) / 2
    right_x = MARGIN + col_width + 20.0
    size = 10.0
    w.block("p_left", "paragraph", wrap(COLUMN_TEXT + " " + COLUMN_TEXT, col_width, size), size=size)
    w.y = top
    caption = w.block(
        "caption", "caption", wrap("Table 1: Number of questions in each dataset", col_width, 9.0),
        x=right_x, size=9.0,
    )
    table = DrawnTable(1, caption.text, list(DATASET_HEADER), [list(r) for r in DATASET_ROWS])
    columns = _columns_for([DATASET_HEADER, *DATASET_ROWS], right_x, 9.0, 10.0)
    w.y += 4
    table.header_rect = _draw_cells(page, DATASET_HEADER, columns, w.y, 9.0, bold=True)
    w.y += 9.0 * 1.6
    for row in DATASET_ROWS:
        table.row_rects.append(_draw_cells(page, row, columns, w.y, 9.0))
        w.y += 9.0 * 1.6
    doc.save(path)
    doc.close()
    return layout, table


# --- sectioned papers -------------------------------------------------------------------------


def make_sectioned_pdf(
    path: str | Path, *, title: str, sections: list[tuple[str | None, list[str]]], new_pages: Iterable[int] = ()
) -> PdfLayout:
    """A paper of sections, pages added as the text needs: the title, then each section's
    heading (H1 size, bold; None: no heading, its paragraphs follow the previous ones) and
    paragraphs (each its own block, e.g. one reference entry each). Sections whose index is
    in ``new_pages`` start a page.

    Keys in ``blocks``: title, h_N (section N's heading), s_N_M (section N's paragraph M)."""
    path = Path(path)
    layout = PdfLayout(path=path, page_count=1, page_size=A4)
    doc = pymupdf.open()
    w = _PageWriter(layout, doc.new_page(width=A4[0], height=A4[1]), 1)

    def room(lines: int, size: float, *, new_page: bool = False) -> None:
        nonlocal w
        if new_page or w.y + lines * size * LINE_GAP > A4[1] - MARGIN:
            # a new page only after the last one is done with: a Page goes stale when one is added
            layout.page_count += 1
            w = _PageWriter(layout, doc.new_page(width=A4[0], height=A4[1]), layout.page_count)

    lines = wrap(title, A4[0] - 2 * MARGIN, TITLE_SIZE, BOLD_FONT)
    w.block("title", "title", lines, size=TITLE_SIZE, bold=True, space_after=14)
    new_pages = set(new_pages)
    for n, (heading, paragraphs) in enumerate(sections):
        if n in new_pages:
            room(0, BODY_SIZE, new_page=True)
        if heading is not None:
            room(3, H1_SIZE)
            w.block(f"h_{n}", "h1", [heading], size=H1_SIZE, bold=True)
        for m, text in enumerate(paragraphs):
            lines = wrap(text, A4[0] - 2 * MARGIN, BODY_SIZE)
            room(len(lines), BODY_SIZE)
            w.block(f"s_{n}_{m}", "paragraph", lines)
    doc.set_metadata({"title": title})
    doc.save(path)
    doc.close()
    return layout


@dataclass(frozen=True)
class FolioPage:
    """One sheet of ``make_folio_pdf``: its body text and what it prints in its header and
    footer zones (each a list of lines, drawn from the page's edge inwards; "" prints nothing)."""

    body: str = ""
    heads: tuple[str, ...] = ()
    feet: tuple[str, ...] = ()
    heading: str = ""  # a chapter opening's title, set large above the body


def make_folio_pdf(
    path: str | Path, pages: list[FolioPage], *, page_labels: list[dict] | None = None
) -> PdfLayout:
    """A book's sheets as printed: running heads and folios ("22 A BOOK OF QUOKKAS") in the
    top and bottom zones, each page's body a paragraph (block ``p{sheet}``), chapter openings
    with a large heading. ``page_labels``: the PDF's own /PageLabels rules
    (``Document.set_page_labels``), none by default."""
    doc = pymupdf.open()
    layout = PdfLayout(Path(path), len(pages), A4)
    for index, folio in enumerate(pages):
        sheet = index + 1
        page = doc.new_page(width=A4[0], height=A4[1])
        writer = _PageWriter(layout, page, sheet)
        for row, head in enumerate(folio.heads):
            writer.y = 30.0 + 12.0 * row
            if head:
                writer.block(f"head_p{sheet}_{row}", "header", [head], size=9.0, in_reading_order=False)
        writer.y = 110.0
        if folio.heading:
            writer.block(f"h_p{sheet}", "h1", [folio.heading], size=H1_SIZE, bold=True, space_after=16.0)
        if folio.body:
            writer.paragraph(f"p{sheet}", folio.body)
        for row, foot in enumerate(folio.feet):
            writer.y = A4[1] - 40.0 - 12.0 * row
            if foot:
                writer.block(f"foot_p{sheet}_{row}", "footer", [foot], size=9.0, in_reading_order=False)
    if page_labels:
        doc.set_page_labels(page_labels)
    doc.save(str(path))
    doc.close()
    return layout


FOLIO_WORDS = (
    "quokka burrow ferry lighthouse salt lake dune heath scrub colony ranger census tide "
    "wallaby bakery awning campsite boardwalk jetty granite cove"
).split()


def folio_body(sheet: int) -> str:
    """A paragraph of its own for each sheet (searchable by its first words)."""
    words = " ".join(FOLIO_WORDS[(sheet + i) % len(FOLIO_WORDS)] for i in range(60))
    return f"Sheet {sheet} marker{sheet}word tells of the island. {words}."


def folio_book() -> list[FolioPage]:
    """A title page and a copyright page (no numbers), three pages of front matter numbered
    vii–ix, a chapter opening (no number), body pages printing 22 and 23 on either side of
    their running head, a second chapter opening (no number) inside the run, a page whose
    footer zone also holds a table's figure, and a last page printing only a table's total."""
    return [
        FolioPage(heading="A Book of Quokkas", body=folio_body(1)),
        FolioPage(body=folio_body(2)),
        FolioPage(heading="Preface", body=folio_body(3), feet=("PREFACE vii",)),
        FolioPage(body=folio_body(4), feet=("viii PREFACE",)),
        FolioPage(body=folio_body(5), feet=("PREFACE ix",)),
        FolioPage(heading="1 Burrows", body=folio_body(6)),
        FolioPage(body=folio_body(7), feet=("22 A BOOK OF QUOKKAS",)),
        FolioPage(body=folio_body(8), feet=("BURROWS 23",)),
        FolioPage(heading="2 Colonies", body=folio_body(9)),
        FolioPage(body=folio_body(10), feet=("COLONIES 25", "Burrows counted on the north shore 99")),
        FolioPage(body=folio_body(11), feet=("26 A BOOK OF QUOKKAS",)),
        FolioPage(body=folio_body(12), feet=("Table 4 total 17",)),
    ]


# the labels folio_book prints, by sheet ("": not known)
BOOK_LABELS = {1: "", 2: "", 3: "vii", 4: "viii", 5: "ix", 6: "", 7: "22", 8: "23", 9: "24", 10: "25", 11: "26", 12: ""}
