"""Tables shown as tables wherever the app shows evidence or answers (issue 29/34): a table
chunk is Markdown (a header line, ``|-|-|``, a line per row). Real PDFs with a table are
ingested into the app's library; the citations come from a real search. The citation panel's
passage and an answer quoting the table draw a table with the right cells, no line of pipes,
and a 25-column table keeps its cells whole (it scrolls sideways instead of wrapping one
letter per line); the snippet under the answer names the cited row in words."""

from __future__ import annotations

import pymupdf
import pytest
from pdf_factory import make_table_pdf
from qt_helpers import run_until

from haiku.rag.citations import Citation
from haiku_desk.services.conversations import Turn
from haiku_desk.services.library import uri_for
from haiku_desk.services.pages import PagesService
from haiku_desk.views.chat_pane import TurnWidget
from haiku_desk.views.citation_panel import CitationPanel
from haiku_desk.views.markdown_tables import cell_text, tables

SLOW = 180
STATES = ["Texas", "Alabama", "Vermont", "Wyoming"]
WIDE_HEADER = (
    ["State / Territory", "Permit", "Handgun", "Long Gun", "Other", "Multiple", "Admin"]
    + [
        f"{kind} {gun}"
        for kind in ("Pre-Pawn", "Redemption", "Returned", "Rentals")
        for gun in ("Handgun", "Long Gun", "Other")
    ]
    + [
        "Private Handgun",
        "Private Long Gun",
        "Return Handgun",
        "Return Long Gun",
        "Return Other",
        "Totals",
    ]
)


def make_wide_table_pdf(path) -> list[list[str]]:
    """A landscape page with a ruled 25-column table (the NICS report's shape): a header row
    and a row per state, small type, every cell stroked."""
    doc = pymupdf.open()
    page = doc.new_page(width=842, height=595)
    page.insert_text(
        (36, 40), "NICS Firearm Background Checks: November 2015", fontsize=12, fontname="hebo"
    )
    x0, y0, width, height = 24, 60, 31.5, 30
    rows = [WIDE_HEADER] + [
        [s] + [f"{(i * 37 + j * 101) % 9000:,}" for j in range(24)] for i, s in enumerate(STATES)
    ]
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            rect = pymupdf.Rect(
                x0 + c * width, y0 + r * height, x0 + (c + 1) * width, y0 + (r + 1) * height
            )
            page.draw_rect(rect, color=(0, 0, 0), width=0.5)
            page.insert_textbox(
                rect + (1, 1, -1, -1), text, fontsize=5, fontname="hebo" if r == 0 else "helv"
            )
    page.insert_text(
        (36, y0 + len(rows) * height + 30),
        "The figures count checks, not firearms sold.",
        fontsize=10,
    )
    doc.save(path)
    doc.close()
    return rows


def _ingest(qloop, library, path):
    library.add_paths([path])
    run_until(
        qloop,
        lambda: (e := library.entry(uri_for(path))) is not None and (e.searchable or e.reason),
        SLOW,
    )
    entry = library.entry(uri_for(path))
    assert entry.searchable, entry.reason
    return entry


def _table_citation(qloop, library, entry, query: str, must_hold: str) -> Citation:
    """The citation of the search hit whose chunk is a table holding ``must_hold``."""
    results = qloop.run_until_complete(
        library.client.search(query, limit=10, document_ids=[entry.document_id])
    )
    for result in results:
        if "|-|" in result.content and must_hold in result.content:
            return Citation.from_result(1, result.chunk_id, result)
    raise AssertionError(
        f"no table chunk holding {must_hold!r} in {[r.content[:80] for r in results]}"
    )


@pytest.fixture
def panel(qtbot, library, notifications):
    pages = PagesService(library, notifications)
    panel = CitationPanel(pages)
    panel.open_in_system_viewer = False
    qtbot.addWidget(panel)
    panel.resize(330, 560)  # the panel's share of a 1024×640 window
    panel.show()
    qtbot.waitExposed(panel)
    yield panel
    pages.close()


def _shown_lines(document) -> list[str]:
    return [line for line in document.toPlainText().splitlines() if line.strip()]


def _assert_cells_whole(document, header: list[str]) -> None:
    """No cell is wrapped letter by letter: a one-word cell ("Texas", "1,010") keeps one
    line, and a longer cell wraps between its words only."""
    (table,) = tables(document)
    assert table.columns() == len(header)
    for row in range(table.rows()):
        for column in range(table.columns()):
            text = cell_text(table, row, column).strip()
            block = table.cellAt(row, column).firstCursorPosition().block()
            layout = block.layout()
            if len(text.split()) == 1:
                assert layout.lineCount() == 1, f"{text!r} wrapped onto {layout.lineCount()} lines"
            words = set(text.split())
            for i in range(layout.lineCount()):
                line = layout.lineAt(i)
                shown = block.text()[line.textStart() : line.textStart() + line.textLength()]
                assert set(shown.split()) <= words, f"{text!r} wrapped inside a word: {shown!r}"


def test_the_citation_panel_shows_a_cited_table_chunk_as_a_table(qloop, library, panel, tmp_path):
    layout, drawn = make_table_pdf(tmp_path / "otsl.pdf", "spanning")
    entry = _ingest(qloop, library, layout.path)
    citation = _table_citation(qloop, library, entry, "inference time HTML", "HTML")
    chunk = citation.matched_text or citation.content
    body_rows = [line for line in chunk.splitlines() if line.startswith("| ")][1:]

    panel.show_citation(citation)
    run_until(qloop, lambda: panel.current_image is not None, SLOW)  # the page drawn too

    document = panel.snippet.document()
    (table,) = tables(document)
    header = chunk.splitlines()[[line.startswith("| ") for line in chunk.splitlines()].index(True)]
    assert table.columns() == header.count(" | ") + 1 == 8
    assert table.rows() == 1 + len(body_rows)  # the header row and each body row of the chunk
    assert cell_text(table, 0, 7) == "Inference time (secs)"
    lines = _shown_lines(document)
    assert not [line for line in lines if line.lstrip().startswith("|")]
    assert not [line for line in lines if "|-|" in line]
    assert drawn.caption.split(".")[0] in document.toPlainText()  # the caption is kept


def test_a_25_column_table_keeps_its_cells_whole_and_scrolls_sideways_in_the_panel(
    qloop, library, panel, tmp_path
):
    make_wide_table_pdf(tmp_path / "nics.pdf")
    entry = _ingest(qloop, library, tmp_path / "nics.pdf")
    citation = _table_citation(qloop, library, entry, "Texas handgun permit", "Texas")

    panel.show_citation(citation)
    run_until(qloop, lambda: panel.current_image is not None, SLOW)  # the page drawn too

    document = panel.snippet.document()
    _assert_cells_whole(document, WIDE_HEADER)
    assert document.size().width() > panel.snippet.viewport().width()
    assert panel.snippet.horizontalScrollBar().maximum() > 0  # it scrolls sideways
    assert not [line for line in _shown_lines(document) if line.lstrip().startswith("|")]
    copied = panel.copy_citation()  # the quote a manuscript gets: the row in words
    assert "|" not in copied and "State / Territory: Texas; Permit: 0; Handgun: 101" in copied


def test_an_answer_quoting_a_table_shows_it_as_a_table_and_its_source_names_the_row_in_words(
    qloop, qtbot, library, tmp_path
):
    make_wide_table_pdf(tmp_path / "nics.pdf")
    entry = _ingest(qloop, library, tmp_path / "nics.pdf")
    citation = _table_citation(qloop, library, entry, "Texas handgun permit", "Texas")
    chunk = citation.matched_text or citation.content
    # the way a model quotes a passage: a line of its own, then the table beneath it at once
    answer = f"The November 2015 checks for Texas [1]:\n{chunk}"
    widget = TurnWidget(
        Turn(
            question="How many handgun checks in Texas?",
            answer=answer,
            citations=[citation],
            grounding="grounded",
        )
    )
    qtbot.addWidget(widget)
    widget.resize(520, 600)  # the chat pane's width in a 1024×640 window
    widget.show()
    qtbot.waitExposed(widget)
    widget._render()

    document = widget.answer.document()
    _assert_cells_whole(document, WIDE_HEADER)
    (table,) = tables(document)
    assert table.rows() == 2 and cell_text(table, 1, 0) == "Texas"
    assert not [line for line in _shown_lines(document) if line.lstrip().startswith("|")]
    assert widget.answer.horizontalScrollBar().maximum() > 0

    (source,) = widget.source_cards
    assert "|" not in source.snippet
    assert "State / Territory: Texas" in source.snippet and "Handgun: 101" in source.snippet


def test_a_table_right_under_a_line_of_text_becomes_a_block_of_its_own_but_code_stays_as_written():
    from haiku_desk.views.markdown_tables import with_table_breaks

    table = "| a | b |\n|-|-|\n| 1 | 2 |"
    assert with_table_breaks(f"Table 1: sizes\n{table}") == f"Table 1: sizes\n\n{table}"
    quoted = "\n".join(f"> {line}" for line in ["Table 1: sizes", *table.splitlines()])
    assert with_table_breaks(quoted).splitlines()[1] == ">"  # inside a quote, a quoted break
    code = f"```\nTable 1: sizes\n{table}\n```"
    assert with_table_breaks(code) == code
    assert with_table_breaks(f"Text\n\n{table}") == f"Text\n\n{table}"  # already a block


def test_an_answer_with_a_wide_table_is_laid_out_a_few_times_not_once_per_cell(qtbot):
    """Keeping each column's short cells whole changed the answer once per cell, and each
    change laid the whole answer out again (the view fits its height to the document): an
    answer quoting a 25 × 20 table took half a minute to show, the window frozen. The changes
    are one edit: the answer is laid out a few times, whatever the table's size."""
    from haiku_desk.views.chat_pane import AnswerView

    header = "| " + " | ".join(f"Column {c}" for c in range(25)) + " |"
    rows = ["| " + " | ".join(f"{r}.{c}" for c in range(25)) + " |" for r in range(20)]
    view = AnswerView()
    qtbot.addWidget(view)
    view.resize(600, 400)
    view.show()
    qtbot.waitExposed(view)
    changes: list[int] = []
    view.document().contentsChanged.connect(lambda: changes.append(1))
    view.setMarkdown("The checks by state [1]:\n\n" + "\n".join([header, "|" + "-|" * 25, *rows]))
    (table,) = tables(view.document())
    assert table.rows() == 21 and table.columns() == 25
    assert len(changes) <= 6, len(changes)  # was one per cell: 525 and more
    _assert_cells_whole(view.document(), header.strip("| ").split(" | "))
