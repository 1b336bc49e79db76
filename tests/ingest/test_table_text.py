"""A table chunk's Markdown read back for a person (haiku.rag.citations): the prose and the
tables of a passage apart, and a table's rows as "header: value" words for one-line snippets."""

from __future__ import annotations

from haiku.rag.citations import ShownTable, passage_blocks, snippet, tables_as_text

CHUNK = (
    "Table 1: HPO performed in OTSL and HTML.\n"
    "| # enc-layers | Language | TEDs all | Inference time (secs) |\n"
    "|-|-|-|-|\n"
    "| 6 | OTSL | 0.955 | 2.73 |\n"
    "|  | HTML | 0.955 | 5.39 |\n"
    "The smaller representation is faster."
)


def test_a_passage_comes_apart_into_its_prose_and_its_table():
    caption, table, after = passage_blocks(CHUNK)
    assert caption == "Table 1: HPO performed in OTSL and HTML."
    assert isinstance(table, ShownTable)
    assert table.header == ["# enc-layers", "Language", "TEDs all", "Inference time (secs)"]
    assert table.rows == [["6", "OTSL", "0.955", "2.73"], ["", "HTML", "0.955", "5.39"]]
    assert after == "The smaller representation is faster."


def test_escaped_pipes_stay_in_their_cell_and_a_stray_separator_shows_nothing():
    (table,) = passage_blocks("| a \\| b | c |\n|-|-|\n| x | y \\| z |")
    assert table.header == ["a | b", "c"] and table.rows == [["x", "y | z"]]
    assert passage_blocks("|-|-|\nloose text") == ["loose text"]
    assert passage_blocks("| just one line |") == ["| just one line |"]  # not a table
    assert passage_blocks("| a | b |") == ["| a | b |"]


def test_a_lone_row_without_its_header_is_a_row_not_pipes():
    """A table chunk cut after its header holds rows alone: a tester's search-only card for the
    NICS Totals row read "…1,067 | 905 | 65 | … | 2,236,457 | *Refers to frames…"."""
    totals = "| Totals | 804,006 | 671,330 | 2,236,457 |\n*Refers to frames, receivers and other firearms"
    row, note = passage_blocks(totals)
    assert isinstance(row, ShownTable) and row.rows == [["Totals", "804,006", "671,330", "2,236,457"]]
    assert note.startswith("*Refers")
    assert "|" not in snippet(totals, "totals")


def test_rows_become_header_value_words_and_the_snippet_has_no_pipes():
    text = tables_as_text(CHUNK)
    assert "• # enc-layers: 6; Language: OTSL; TEDs all: 0.955; Inference time (secs): 2.73" in text
    assert "• Language: HTML; TEDs all: 0.955; Inference time (secs): 5.39" in text  # empty cell left out
    shown = snippet(CHUNK, "HTML inference time", 80)
    assert "|" not in shown and "HTML" in shown
