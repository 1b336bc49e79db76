"""extract_items: one record per item in reading order, with labels, levels, pages and boxes."""

import os

os.environ["HF_HUB_OFFLINE"] = "1"

import pytest
from docling_core.types.doc import (
    BoundingBox,
    CoordOrigin,
    DocItemLabel,
    DoclingDocument,
    ProvenanceItem,
    TableCell,
    TableData,
)
from docling_factory import PAGE, add_paragraph, line_prov

from haiku.rag.ingest.items import extract_items
from haiku.rag.ingest.records import Box


def table_data(rows: list[list[str]]) -> TableData:
    cells = [
        TableCell(
            text=value,
            start_row_offset_idx=r,
            end_row_offset_idx=r + 1,
            start_col_offset_idx=c,
            end_col_offset_idx=c + 1,
            column_header=r == 0,
        )
        for r, row in enumerate(rows)
        for c, value in enumerate(row)
    ]
    return TableData(num_rows=len(rows), num_cols=len(rows[0]), table_cells=cells)


@pytest.fixture
def doc() -> DoclingDocument:
    doc = DoclingDocument(name="report")
    doc.add_page(page_no=1, size=PAGE)
    doc.add_page(page_no=2, size=PAGE)
    doc.add_title("Annual report", prov=line_prov(1, 40, (0, 13)))
    doc.add_heading("1 Results", level=1, prov=line_prov(1, 80, (0, 9)))
    doc.add_heading("1.1 Revenue", level=2, prov=line_prov(1, 100, (0, 11)))
    add_paragraph(
        doc,
        [
            (1, 740, "Revenue grew strongly in the"),
            (1, 754, "second half, and it continued"),
            (2, 72, "into the next year."),
        ],
    )
    doc.add_table(
        data=table_data([["Year", "Revenue"], ["2023", "10"]]), prov=line_prov(2, 100, (0, 0))
    )
    caption = doc.add_text(
        label=DocItemLabel.CAPTION,
        text="Figure 1: revenue by year.",
        prov=line_prov(2, 300, (0, 26)),
    )
    doc.add_picture(caption=caption, prov=line_prov(2, 200, (0, 0)))
    return doc


def test_one_record_per_item_in_reading_order(doc: DoclingDocument) -> None:
    items = extract_items(doc)
    assert [(i.position, i.self_ref, i.label) for i in items] == [
        (0, "#/texts/0", "title"),
        (1, "#/texts/1", "section_header"),
        (2, "#/texts/2", "section_header"),
        (3, "#/texts/3", "text"),
        (4, "#/tables/0", "table"),
        (5, "#/texts/4", "caption"),
        (6, "#/pictures/0", "picture"),
    ]


def test_heading_levels_only_for_section_headers(doc: DoclingDocument) -> None:
    levels = {i.text: i.heading_level for i in extract_items(doc) if i.label != "picture"}
    assert levels["Annual report"] == 0  # the title: told apart by its label, not its level
    assert levels["1 Results"] == 1
    assert levels["1.1 Revenue"] == 2
    assert levels["Figure 1: revenue by year."] == 0


def test_texts_of_paragraphs_tables_and_pictures(doc: DoclingDocument) -> None:
    items = extract_items(doc)
    assert (
        items[3].text
        == "Revenue grew strongly in the second half, and it continued into the next year."
    )
    table_lines = items[4].text.splitlines()
    assert table_lines[0].split() == ["|", "Year", "|", "Revenue", "|"]
    assert table_lines[2].split() == ["|", "2023", "|", "10", "|"]
    assert items[6].text == "Figure 1: revenue by year."  # a picture's text is its caption


def test_pictures_without_caption_have_empty_text() -> None:
    doc = DoclingDocument(name="pic")
    doc.add_page(page_no=1, size=PAGE)
    doc.add_picture(prov=line_prov(1, 100, (0, 0)))
    (picture,) = extract_items(doc)
    assert picture.text == ""
    assert picture.boxes == [Box(1, 72, 100, 540, 112)]


def test_pages_and_boxes_follow_every_line(doc: DoclingDocument) -> None:
    paragraph = extract_items(doc)[3]
    assert paragraph.page_numbers == [1, 2]
    assert paragraph.boxes == [
        Box(1, 72, 740, 540, 752),
        Box(1, 72, 754, 540, 766),
        Box(2, 72, 72, 540, 84),
    ]


def test_bottom_left_boxes_are_flipped_with_the_page_height() -> None:
    doc = DoclingDocument(name="flip")
    doc.add_page(page_no=1, size=PAGE)
    bbox = BoundingBox(l=72, t=700, r=540, b=688, coord_origin=CoordOrigin.BOTTOMLEFT)
    doc.add_text(
        label=DocItemLabel.TEXT,
        text="x",
        prov=ProvenanceItem(page_no=1, bbox=bbox, charspan=(0, 1)),
    )
    (item,) = extract_items(doc)
    assert item.boxes == [Box(1, 72, 92, 540, 104)]


def test_bottom_left_box_on_an_unknown_page_is_an_error() -> None:
    doc = DoclingDocument(name="flip")
    bbox = BoundingBox(l=72, t=700, r=540, b=688, coord_origin=CoordOrigin.BOTTOMLEFT)
    doc.add_text(
        label=DocItemLabel.TEXT,
        text="x",
        prov=ProvenanceItem(page_no=3, bbox=bbox, charspan=(0, 1)),
    )
    with pytest.raises(ValueError, match="no size for that page"):
        extract_items(doc)


def test_documents_without_pages_have_no_geometry() -> None:
    doc = DoclingDocument(name="notes.md")
    doc.add_heading("Notes", level=1)
    doc.add_text(label=DocItemLabel.LIST_ITEM, text="buy milk")
    items = extract_items(doc)
    assert [(i.label, i.heading_level, i.page_numbers, i.boxes) for i in items] == [
        ("section_header", 1, [], []),
        ("list_item", 0, [], []),
    ]


def test_the_documents_markdown_is_written_from_its_items_unescaped() -> None:
    from haiku.rag.ingest.items import ItemTexts

    doc = DoclingDocument(name="notes")
    doc.add_title("Budget notes")
    doc.add_heading("Costs", level=1)
    doc.add_text(label=DocItemLabel.TEXT, text="R&D_budget < 5 % of <revenue>")
    bullets = doc.add_list_group()
    doc.add_list_item("first point", parent=bullets)
    doc.add_list_item("second point", parent=bullets)
    steps = doc.add_list_group()
    doc.add_list_item("measure", enumerated=True, marker="(a)", parent=steps)
    doc.add_list_item("report", enumerated=True, parent=steps)
    doc.add_heading("Deep", level=7)
    caption = doc.add_text(label=DocItemLabel.CAPTION, text="Figure 1: the trend")
    picture = doc.add_picture()
    picture.captions.append(caption.get_ref())
    cells = [
        TableCell(text=v, start_row_offset_idx=r, end_row_offset_idx=r + 1,
                  start_col_offset_idx=c, end_col_offset_idx=c + 1, column_header=r == 0)
        for r, row in enumerate([["Item", "Cost"], ["Lamps", "12"]])
        for c, v in enumerate(row)
    ]
    doc.add_table(data=TableData(num_rows=2, num_cols=2, table_cells=cells))
    texts = ItemTexts(doc)
    table_markdown = texts.text(doc.tables[0])
    assert "| Lamps" in table_markdown
    assert texts.document_markdown() == "\n\n".join([
        "# Budget notes",
        "## Costs",
        "R&D_budget < 5 % of <revenue>",  # docling-core's serializer wrote R&amp;D\_budget &lt; 5
        "- first point\n- second point",
        "(a) measure\n2. report",
        "###### Deep",
        "Figure 1: the trend",  # once, with its picture
        "<!-- image -->",
        table_markdown,
    ])
