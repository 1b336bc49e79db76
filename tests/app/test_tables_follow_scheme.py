"""Tables, links and code blocks drawn in the scheme's colours, light and dark, and again when
the scheme changes (issue 34, tester 14:21: in the dark scheme the cited passage's table under
the reader kept a white background with black text).

Qt's rich text gives a table no colours of its own (its cells took the widget's palette, its
border a fixed grey) and its Markdown reader gives a link the palette's link colour of the
moment it reads the answer, so an answer read in dark kept dark-scheme links (pale blue) on the
light scheme after a switch, and a code block kept the old scheme's background. Real widgets:
the citation panel with a real PDF's table chunk from a real search, an answer's turn, a text
source in the reader, a removed document's kept quote; the colours are read from the drawn
documents and from the pixels on screen.
"""

from __future__ import annotations

from pdf_factory import make_report_pdf, make_table_pdf
from PySide6.QtGui import QColor
from qt_helpers import run_until

from haiku.rag.citations import Box, Citation
from haiku_desk.services.conversations import Turn
from haiku_desk.services.library import uri_for
from haiku_desk.views import theme
from haiku_desk.views.chat_pane import TurnWidget
from haiku_desk.views.markdown_tables import CODE_BLOCK, tables
from haiku_desk.views.text_reader import TextReader
from tests.app.test_table_rendering import SLOW, _ingest, _table_citation, panel  # noqa: F401

TABLE = "| Depot | Litres |\n|-|-|\n| North | 4,200 |\n| South | 3,900 |"


def _table_colours(document) -> dict[str, set[tuple[str, str]]]:
    """Per row kind (header, body): the (background, text colour) pairs of its cells."""
    found: dict[str, set[tuple[str, str]]] = {"header": set(), "body": set()}
    for table in tables(document):
        header_rows = table.format().headerRowCount()
        for row in range(table.rows()):
            for column in range(table.columns()):
                cell = table.cellAt(row, column)
                background = cell.format().background()
                colour = background.color().name() if background.style().value else "none"
                cursor = cell.firstCursorPosition()
                cursor.movePosition(cursor.MoveOperation.NextCharacter)  # the cell's text's format
                text = cursor.charFormat().foreground()
                text_colour = text.color().name() if text.style().value else "palette"
                found["header" if row < header_rows else "body"].add((colour, text_colour))
    return found


def _assert_drawn_in(document, tokens: theme.Tokens, header: bool = True) -> None:
    colours = _table_colours(document)
    assert colours["body"] == {(tokens.surface, tokens.text)}, (tokens.name, colours)
    if header:
        assert colours["header"] == {(tokens.sunken, tokens.text)}, (tokens.name, colours)
    for table in tables(document):
        assert table.format().borderBrush().color().name() == tokens.border_strong


def _pixel_in_cell(view, table, row: int, column: int) -> QColor:
    """The colour drawn on screen in the cell's padding, beside its text."""
    cursor = table.cellAt(row, column).firstCursorPosition()
    view.setTextCursor(cursor)
    view.ensureCursorVisible()  # the passage's few lines scroll to it
    rect = view.cursorRect(cursor)
    assert view.viewport().rect().contains(rect.center()), rect
    image = view.viewport().grab().toImage()
    return image.pixelColor(rect.left() - 2, rect.center().y())


def test_the_cited_tables_passage_under_the_reader_is_dark_in_the_dark_scheme_and_follows_a_switch(
    qloop, library, panel, tmp_path, themed  # noqa: F811
):
    theme.apply_theme(themed, "dark")
    layout, _ = make_table_pdf(tmp_path / "otsl.pdf", "spanning")
    entry = _ingest(qloop, library, layout.path)
    citation = _table_citation(qloop, library, entry, "inference time HTML", "HTML")
    panel.show_citation(citation)
    run_until(qloop, lambda: panel.current_image is not None, SLOW)

    view = panel.snippet
    (table,) = tables(view.document())
    _assert_drawn_in(view.document(), theme.DARK)
    assert _pixel_in_cell(view, table, 1, 0).name() == theme.DARK.surface  # not white
    assert _pixel_in_cell(view, table, 0, 0).name() == theme.DARK.sunken

    theme.apply_theme(themed, "light")  # View › Appearance › Light while it is shown
    _assert_drawn_in(view.document(), theme.LIGHT)
    assert _pixel_in_cell(view, table, 1, 0).name() == theme.LIGHT.surface
    theme.apply_theme(themed, "dark")
    _assert_drawn_in(view.document(), theme.DARK)


def _answer_shown(qtbot, answer: str, question: str = "How much kerosene?") -> TurnWidget:
    """An answered turn citing one passage, shown and drawn."""
    citation = Citation(index=1, document_id="d", chunk_id="c", document_uri="file:///depots.pdf", content="x")
    widget = TurnWidget(Turn(question=question, answer=answer, citations=[citation], grounding="grounded"))
    qtbot.addWidget(widget)
    widget.resize(520, 500)
    widget.show()
    qtbot.waitExposed(widget)
    widget._render()
    return widget


def test_an_answers_table_links_and_code_follow_a_switch_of_scheme(qtbot, themed):
    theme.apply_theme(themed, "light")
    widget = _answer_shown(qtbot, f"The depots' stock [1]:\n\n{TABLE}\n\n```\nlitres = 4200\n```\n")
    document = widget.answer.document()
    _assert_drawn_in(document, theme.LIGHT)

    def links() -> set[str]:
        found = set()
        block = document.begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                if it.fragment().charFormat().isAnchor():
                    found.add(it.fragment().charFormat().foreground().color().name())
                it += 1
            block = block.next()
        return found

    def code_backgrounds() -> set[str]:
        found = set()
        block = document.begin()
        while block.isValid():
            if block.blockFormat().property(CODE_BLOCK):
                found.add(block.blockFormat().background().color().name())
            block = block.next()
        return found

    assert links() == {theme.LIGHT.link} and code_backgrounds() == {theme.LIGHT.sunken}

    theme.apply_theme(themed, "dark")
    _assert_drawn_in(document, theme.DARK)
    assert links() == {theme.DARK.link}  # was the light scheme's #2552b8 on the dark surface
    assert code_backgrounds() == {theme.DARK.sunken}
    (table,) = tables(document)
    assert _pixel_in_cell(widget.answer, table, 1, 0).name() == theme.DARK.surface


def test_a_text_sources_table_in_the_reader_follows_the_scheme(qtbot, themed):
    theme.apply_theme(themed, "dark")
    reader = TextReader()
    qtbot.addWidget(reader)
    reader.resize(500, 400)
    reader.show()
    qtbot.waitExposed(reader)
    reader.show_text(f"# Depots\n\nStock in litres.\n\n{TABLE}\n", passage="Stock in litres.")
    _assert_drawn_in(reader.document(), theme.DARK)
    (table,) = tables(reader.document())
    assert _pixel_in_cell(reader, table, 2, 0).name() == theme.DARK.surface
    theme.apply_theme(themed, "light")
    _assert_drawn_in(reader.document(), theme.LIGHT)


def test_a_removed_documents_kept_table_quote_is_drawn_in_the_dark_scheme(
    qloop, library, panel, tmp_path, themed  # noqa: F811
):
    report = make_report_pdf(tmp_path / "report.pdf")
    library.add_paths([report.path])
    run_until(qloop, lambda: (e := library.entry(uri_for(report.path))) is not None and e.searchable, SLOW)
    entry = library.entry(uri_for(report.path))
    citation = Citation(
        index=1,
        document_id=entry.document_id,
        chunk_id="gone",
        document_uri=uri_for(report.path),
        document_title="report",
        content=f"Night convoys ran short.\n\n{TABLE}",
        boxes=[Box(2, *report.block("p_discussion").rect)],
    )
    library.delete([entry.key])
    run_until(qloop, lambda: library.entry(entry.key) is None, SLOW)
    theme.apply_theme(themed, "dark")
    kinds: list[str] = []
    panel.document_shown.connect(kinds.append)
    panel.show_citation(citation)
    run_until(qloop, lambda: bool(kinds))
    assert kinds == ["removed"]
    _assert_drawn_in(panel.message.document(), theme.DARK)
    theme.apply_theme(themed, "light")
    _assert_drawn_in(panel.message.document(), theme.LIGHT)


def test_a_switch_of_scheme_redraws_an_answers_wide_table_in_one_edit(qtbot, themed):
    """Each cell recoloured as an edit of its own laid the answer out again each time (a
    contentsChanged per cell and fragment: the window froze for a minute on a 9 x 8 table when
    the scheme was switched). The recolouring is one edit: one layout."""
    theme.apply_theme(themed, "light")
    header = "| " + " | ".join(f"Column {c}" for c in range(8)) + " |"
    rows = ["| " + " | ".join(f"{r}.{c}" for c in range(8)) + " |" for r in range(9)]
    widget = _answer_shown(qtbot, "\n".join([header, "|" + "-|" * 8, *rows]) + "\n\nSee [1].\n", "The figures?")
    document = widget.answer.document()
    changes: list[int] = []
    document.contentsChanged.connect(lambda: changes.append(1))
    theme.apply_theme(themed, "dark")
    _assert_drawn_in(document, theme.DARK)
    assert len(changes) == 1, len(changes)  # once, though the view gets several PaletteChanges
    assert not document.isUndoAvailable()
