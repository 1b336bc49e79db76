"""Real-PDF layouts the tester found read wrong (session 18).

1. A report page set in three columns with loose leading (a line pitch of 1.6-1.8 times the
   font size, as in Google's 2023 Environmental Report, p. 33), a grey side panel behind
   text and a row of navigation tabs across the top. MuPDF gives every such line a block
   of its own, so each line was read as a paragraph (the larger ones as headings, whose
   words then reached no chunk), and the middle column, which crosses the middle of the
   page, was read line by line with the right one. Every paragraph must come out whole,
   each column read in turn, and the tab row be page furniture.
2. A table continued over pages without its header repeated (pdfplumber's WARN report).
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
from docling_core.types.doc import ContentLayer, DocItemLabel

from haiku.rag.config import load_config
from haiku.rag.ingest.pdf import convert_pdf
from haiku.rag.ingest.pipeline import prepare_document
from tests.pdf_factory import wrap

PAGE = (1280.0, 800.0)
TABS = ["Introduction", "Empowering people", "Working together", "Operating well", "Governance", "Appendix"]
TITLE = ["Harbour", "lights"]
INTRO = "We aim to keep every harbour light burning through each winter storm, at all of our towers and on every night, by 2030"
PANEL = (
    "Measuring our lamp oil footprint starts with the ledgers each keeper fills in at dusk and "
    "again at dawn, tower by tower."
)
MIDDLE_HEADING = "Our ambition"
MIDDLE = [
    (13.0, 21.0, "The keepers' council is unequivocal: an unlit tower is an urgent threat to every "
     "ship in the estuary, and the last several winters have shown how quickly a storm finds one."),
    (10.0, 18.0, "At the harbour office, we are working to move every tower from whale oil to "
     "electric lamps. We know that our responsibility begins with our own towers, which is why "
     "we have taken steps over two decades to cut the oil each one burns through a winter."),
    (10.0, 18.0, "One of the key levers for fewer dark nights is the relief rota. Each keeper now "
     "hands over at a fixed bell, and no tower waits for its relief after the evening tide turns."),
]
RIGHT = [
    (10.0, 18.0, "Running every tower on electric light on every night of the year is a goal we "
     "call a moonshot. We also know that the path there will not be easy or straight, and that "
     "some of our plans will take several winters to show their full results."),
    (10.0, 18.0, "In our third decade of keeping the lights, we recognise that we cannot reach "
     "these goals alone: the pilots, the fishing fleets and the coast guard all share the rota."),
]


def _lines(page: pymupdf.Page, x: float, y: float, lines: list[str], size: float, pitch: float, *, bold: bool = False) -> float:
    """Each line drawn on its own baseline ``pitch`` apart (loose leading); returns the y after."""
    for text in lines:
        page.insert_text((x, y + size), text, fontname="hebo" if bold else "helv", fontsize=size)
        y += pitch
    return y


def _report_page() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE[0], height=PAGE[1])
    for x, tab in zip((100, 240, 400, 560, 720, 860), TABS, strict=True):
        page.insert_text((x, 32), tab, fontname="helv", fontsize=11)
    page.insert_text((1080, 32), "Harbour Report 2031", fontname="helv", fontsize=11)
    # left column: a large title, an 18 pt introduction, then a grey panel with text on it
    y = _lines(page, 60, 120, TITLE, 44.0, 52.0, bold=True)
    y = _lines(page, 60, y + 30, wrap(INTRO, 280, 18.0), 18.0, 32.0)
    page.draw_rect(pymupdf.Rect(50, y + 20, 360, y + 200), color=None, fill=(0.9, 0.9, 0.9))
    _lines(page, 64, y + 40, wrap(PANEL, 270, 12.0), 12.0, 21.0)
    # middle column (it crosses the middle of the page: x 490-790) and right column
    y = _lines(page, 490, 90, [MIDDLE_HEADING], 30.0, 60.0, bold=True)
    for size, pitch, text in MIDDLE:
        y = _lines(page, 490, y, wrap(text, 300, size), size, pitch) + 20
    y = 150.0
    for size, pitch, text in RIGHT:
        y = _lines(page, 920, y, wrap(text, 300, size), size, pitch) + 20
    page.insert_text((1230, 780), "33", fontname="helv", fontsize=11)
    return doc.tobytes()


def test_loosely_leaded_lines_are_read_as_their_paragraphs():
    data = _report_page()
    with pymupdf.open(stream=data) as check:  # the layout reproduced: one block per line
        blocks = [b for b in check[0].get_text("dict")["blocks"] if b["type"] == 0]
        for block in blocks:
            if not block["lines"][0]["spans"][0]["text"].startswith(("Introduction", TITLE[0])):
                assert len(block["lines"]) == 1
    doc = convert_pdf(data, source="report.pdf").document
    body = [item.text for item in doc.texts if item.content_layer != ContentLayer.FURNITURE]
    paragraphs = [INTRO, PANEL, *(text for _, _, text in MIDDLE), *(text for _, _, text in RIGHT)]
    for paragraph in paragraphs:
        assert paragraph in body, paragraph
    # each column read whole, in turn: left (title, introduction, panel), middle, right
    order = [body.index(p) for p in paragraphs]
    assert order == sorted(order)
    assert body.index(" ".join(TITLE)) < body.index(INTRO)
    assert body.index(MIDDLE_HEADING) < body.index(MIDDLE[0][2])
    headings = [item.text for item in doc.texts if item.label in (DocItemLabel.SECTION_HEADER, DocItemLabel.TITLE)]
    assert not set(headings) & set(paragraphs)


def test_a_row_of_tabs_across_the_top_is_page_furniture():
    doc = convert_pdf(_report_page(), source="report.pdf").document
    furniture = " ".join(item.text for item in doc.texts if item.content_layer == ContentLayer.FURNITURE)
    body = " ".join(item.text for item in doc.texts if item.content_layer != ContentLayer.FURNITURE)
    for tab in [*TABS, "Harbour Report 2031"]:
        assert tab in furniture and tab not in body


def test_every_paragraph_reaches_a_chunk_in_column_order(tmp_path: Path):
    config = load_config()
    config.processing.ocr = False
    new = prepare_document(_report_page(), filename="report.pdf", uri="file:///report.pdf", config=config)
    text = "\n".join(chunk.text for chunk in new.chunks)
    paragraphs = [INTRO, PANEL, *(t for _, _, t in MIDDLE), *(t for _, _, t in RIGHT)]
    positions = [text.find(p) for p in paragraphs]
    assert -1 not in positions, [p for p, at in zip(paragraphs, positions, strict=True) if at < 0]
    assert positions == sorted(positions)
    assert not any(tab in text for tab in TABS)
    assert new.title == " ".join(TITLE)


HEADER = ["Notice Date", "Effective", "Received", "Company", "City", "No. Of", "Layoff/Closure"]
COLUMNS = [30, 100, 170, 250, 430, 560, 620]  # x of each column
COMPANIES = ["Maxim Integrated", "Harbour Lights Ltd", "Keeper Supplies", "Tidewater Oil", "Beacon Glassworks"]
CITIES = ["San Jose", "Monterey", "Long Beach", "Oakland", "Temecula"]


def _warn_rows(page: int, count: int) -> list[list[str]]:
    rows = []
    for i in range(count):
        day = 1 + (page * count + i) % 27
        rows.append([
            f"0{page + 6}/{day:02d}/2015", f"0{page + 8}/{day:02d}/2015", f"0{page + 6}/{day + 1:02d}/2015",
            COMPANIES[i % 5], CITIES[(i + page) % 5], str(20 + 7 * i + page), "Layoff Permanent",
        ])
    return rows


def _warn_report(pages: int = 3, rows: int = 18) -> tuple[bytes, list[list[list[str]]]]:
    """A register of notices continued over ``pages`` pages, its header printed on the first
    only, and each row's three dates drawn as one string padded with spaces (as the WARN
    report's generator does), the other cells one string each."""
    doc = pymupdf.open()
    drawn = []
    for p in range(pages):
        page = doc.new_page(width=792, height=612)
        y = 60.0
        if p == 0:
            page.insert_text((300, 40), "Notices by Received Date", fontname="hebo", fontsize=12)
            for x, name in zip(COLUMNS, HEADER, strict=True):
                page.insert_text((x + 4, y), name, fontname="helv", fontsize=10)
            y += 14
        body = _warn_rows(p, rows)
        for row in body:
            page.insert_text((COLUMNS[0], y), "     ".join(row[:3]) + "     ", fontname="helv", fontsize=10)
            for x, cell in zip(COLUMNS[3:], row[3:], strict=True):
                page.insert_text((x, y), cell, fontname="helv", fontsize=10)
            y += 13
        drawn.append(body)
    return doc.tobytes(), drawn


def test_dates_drawn_as_one_padded_string_are_three_cells():
    data, drawn = _warn_report(pages=1)
    doc = convert_pdf(data, source="warn.pdf").document
    (table,) = doc.tables
    grid = table.data.grid
    assert [cell.text for cell in grid[0]] == HEADER
    assert [cell.text for cell in grid[1]] == drawn[0][0]


def test_a_continued_table_takes_the_first_pages_header_not_its_first_row():
    data, drawn = _warn_report()
    doc = convert_pdf(data, source="warn.pdf").document
    assert len(doc.tables) == 3
    for table, body in zip(doc.tables, drawn, strict=True):
        grid = table.data.grid
        assert [cell.text for cell in grid[0]] == HEADER
        assert [[cell.text for cell in row] for row in grid[1:]] == body
        assert not any(cell.column_header for row in grid[1:] for cell in row)
    config = load_config()
    config.processing.ocr = False
    new = prepare_document(data, filename="warn.pdf", uri="file:///warn.pdf", config=config)
    tables = [chunk.text for chunk in new.chunks if chunk.text.startswith("|")]
    assert tables
    for text in tables:
        assert text.splitlines()[0] == "| " + " | ".join(HEADER) + " |"
    everything = "\n".join(chunk.text for chunk in new.chunks)
    for body in drawn[1:]:  # a page's first row is in one chunk, as a row
        assert everything.count("| " + " | ".join(body[0]) + " |") == 1


def test_a_table_whose_first_row_reads_like_its_body_has_no_header():
    doc = pymupdf.open()
    page = doc.new_page(width=792, height=612)
    y = 60.0
    for row in _warn_rows(1, 12):
        for x, cell in zip(COLUMNS, row, strict=True):
            page.insert_text((x, y), cell, fontname="helv", fontsize=10)
        y += 13
    (table,) = convert_pdf(doc.tobytes(), source="page2.pdf").document.tables
    assert not any(cell.column_header for cell in table.data.table_cells)


def test_headings_with_nothing_under_them_reach_a_chunk():
    """A side panel's contents (headings, one under another, none with text of its own)
    reached no chunk: a heading is a chunk's heading path, and these were nobody's."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 90), "Harbour lights report", fontname="hebo", fontsize=24)
    entries = [
        (16.0, "Our approach"), (13.0, "Measuring the lamp oil"), (13.0, "Relieving the keepers"),
        (13.0, "Managing the dark nights"), (16.0, "The journey ahead"),
    ]
    y = 140.0
    for size, text in entries:
        page.insert_text((72, y), text, fontname="hebo", fontsize=size)
        y += 2.4 * size
    for i in range(6):
        page.insert_text((72, y + 14 * i), f"Line {i} of the closing paragraph about the keepers and their towers.", fontname="helv", fontsize=10)
    config = load_config()
    config.processing.ocr = False
    new = prepare_document(doc.tobytes(), filename="panel.pdf", uri="file:///panel.pdf", config=config)
    held = "\n".join(part for chunk in new.chunks for part in (*chunk.headings, chunk.text))
    for _, text in entries:
        assert text in held, text
    text = "\n".join(chunk.text for chunk in new.chunks)
    assert "Measuring the lamp oil" in text and "Relieving the keepers" in text
