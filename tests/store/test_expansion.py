"""Context expansion over hand-built items in a real store."""

from haiku.rag.ingest.records import Box, ChunkRecord, ItemRecord
from haiku.rag.search.expansion import expand_context
from haiku.rag.search.hybrid import search_chunks
from haiku.rag.store import documents as D
from haiku.rag.store.engine import Store


def _doc(sections: list[tuple[str, list[str]]]) -> D.NewDocument:
    items, chunks, position = [], [], 0
    for heading, paragraphs in sections:
        items.append(ItemRecord(position, f"#/texts/{position}", "section_header", heading, [1], 1, [Box(1, 0, 0, 1, 1)]))
        position += 1
        for text in paragraphs:
            ref = f"#/texts/{position}"
            items.append(ItemRecord(position, ref, "text", text, [1], 0, [Box(1, 0, position, 1, position + 1)]))
            chunks.append(ChunkRecord(len(chunks), text, f"{heading}\n{text}", [heading], ["text"], [ref], [1], [Box(1, 0, position, 1, position + 1)]))
            position += 1
    return D.NewDocument("file:///d.pdf", "D", {}, "h", "application/pdf", 1, b"", "", "{}", items, chunks)


def test_small_sections_are_returned_whole_and_never_cross_into_the_next(db_path):
    store = Store(str(db_path), create=True)
    D.write_document(store, _doc([("Alpha", ["zebra crossing " * 60, "second alpha paragraph " * 60]), ("Beta", ["beta text " * 30])]))
    hit = search_chunks(store, "zebra", query_vector=None, search_type="fts")
    expanded = expand_context(store, hit, 5000)[0]
    assert "second alpha paragraph" in expanded.content and "beta text" not in expanded.content
    assert expanded.context_boxes and expanded.boxes == hit[0].boxes
    # a widened result is shown as passages, one per chunk, each citable: the hit's passage
    # holds its own text (and its heading), the neighbour's its own
    hit_text = expanded.chunk_texts[hit[0].chunk_id]
    assert hit[0].content.strip() in hit_text and "second alpha" not in hit_text
    assert "\n\n".join(expanded.chunk_texts.values()) == expanded.content
    [neighbour] = set(expanded.chunk_texts) - {hit[0].chunk_id}
    assert expanded.chunk_texts[neighbour].startswith("second alpha paragraph")


def test_a_merge_that_would_exceed_the_budget_is_split_back(db_path):
    store = Store(str(db_path), create=True)
    filler = [f"filler paragraph {i} " + "lorem " * 150 for i in range(6)]
    D.write_document(store, _doc([("Only", ["needle one " + "x " * 400, *filler, "needle two " + "y " * 400])]))
    hits = search_chunks(store, "needle", query_vector=None, search_type="fts", limit=2)
    assert len(hits) == 2
    expanded = expand_context(store, hits, 2500)
    assert len(expanded) == 2, "two distant hits whose merged window is over budget stay separate"
    for result in expanded:
        assert len(result.content) <= 2500
    assert {r.chunk_id for r in expanded} == {h.chunk_id for h in hits}


def test_a_tiny_section_grows_across_its_boundaries(db_path):
    store = Store(str(db_path), create=True)
    D.write_document(store, _doc([("Alpha", ["zebra crossing"]), ("Beta", ["beta text " * 30])]))
    hit = search_chunks(store, "zebra", query_vector=None, search_type="fts")
    assert "beta text" in expand_context(store, hit, 5000)[0].content


def test_a_heading_opens_the_passage_after_it_never_ends_the_one_before(db_path):
    """A tiny section grows into the next: the next section's heading belongs to that
    section's passage (a cited Summary's snippet and highlight ended "… dam crest. Methods"),
    and a heading the budget cut off from its section is not kept at the window's end."""
    store = Store(str(db_path), create=True)
    D.write_document(
        store, _doc([("Summary", ["zebra crossing"]), ("Methods", ["beta text " * 30]), ("Limits", ["gamma " * 200])])
    )
    hit = search_chunks(store, "zebra", query_vector=None, search_type="fts")
    expanded = expand_context(store, hit, 500)[0]
    assert "beta text" in expanded.content  # it grew into Methods
    assert expanded.chunk_texts[hit[0].chunk_id] == "Summary\n\nzebra crossing"
    [neighbour] = set(expanded.chunk_texts) - {hit[0].chunk_id}
    assert expanded.chunk_texts[neighbour].startswith("Methods\n\nbeta text")
    assert not expanded.content.endswith("Limits") and "Limits" not in expanded.chunk_texts[neighbour]
    assert "\n\n".join(expanded.chunk_texts.values()) == expanded.content

    short = expand_context(store, hit, 40)[0]  # room for the next heading, not its paragraph
    assert not short.content.endswith("Methods"), short.content
    assert "Methods" not in short.chunk_texts.get(hit[0].chunk_id, short.content)


def test_a_passage_showing_a_split_paragraph_whole_highlights_all_of_it(db_path):
    """Chunking split a long abstract in two; the hit is its second part, and its passage
    shows the abstract whole (the item is the unit). Its citation's strong boxes are then the
    whole abstract's lines (a real paper's answer restated the first sentence while only the
    last lines were highlighted), on the abstract's pages; a table split in two keeps its own
    rows' boxes."""
    from haiku.rag.citations import Citation

    store = Store(str(db_path), create=True)
    first_half, second_half = "Recent advances in document image analysis. " * 8, "We demonstrate the zebra toolkit. " * 8
    lines = [Box(1, 10, 100 + 12 * i, 500, 110 + 12 * i) for i in range(6)]
    rows = [Box(2, 10, 100 + 12 * i, 500, 110 + 12 * i) for i in range(4)]
    table = "| a | b |\n|-|-|\n| 1 | zebra 2 |\n| 3 | 4 |"
    items = [
        ItemRecord(0, "#/texts/0", "section_header", "Abstract", [1], 1, [Box(1, 10, 80, 200, 90)]),
        ItemRecord(1, "#/texts/1", "text", first_half + second_half, [1], 0, lines),
        ItemRecord(2, "#/tables/0", "table", table, [2], 0, [Box(2, 10, 100, 500, 150)]),
    ]
    chunks = [
        ChunkRecord(0, first_half, first_half, ["Abstract"], ["text"], ["#/texts/1"], [1], lines[:3]),
        ChunkRecord(1, second_half, second_half, ["Abstract"], ["text"], ["#/texts/1"], [1], lines[3:]),
        ChunkRecord(2, "| a | b |\n| 1 | zebra 2 |", "| a | b |\n| 1 | zebra 2 |", ["Abstract"], ["table"], ["#/tables/0"], [2], rows[:2]),
        ChunkRecord(3, "| a | b |\n| 3 | 4 |", "| a | b |\n| 3 | 4 |", ["Abstract"], ["table"], ["#/tables/0"], [2], rows[2:]),
    ]
    D.write_document(store, D.NewDocument("file:///d.pdf", "D", {}, "h", "application/pdf", 2, b"", "", "{}", items, chunks))
    hits = search_chunks(store, "zebra", query_vector=None, search_type="fts", limit=2)
    text_hit = next(h for h in hits if "toolkit" in h.content)
    table_hit = next(h for h in hits if "| 1 |" in h.content)
    [widened] = expand_context(store, [text_hit, table_hit], 5000)
    cited = Citation.from_result(1, text_hit.chunk_id, widened)
    assert "Recent advances" in cited.matched_text and "zebra toolkit" in cited.matched_text
    assert cited.boxes == lines and cited.page_numbers == [1]
    assert not set(lines) & set(cited.context_boxes)
    row = Citation.from_result(2, table_hit.chunk_id, widened)
    assert row.boxes == rows[:2]


def test_a_citation_of_one_merged_chunk_highlights_that_chunk_and_opens_on_its_page(db_path):
    """Two hits in one section on different pages merge into one result; citing the second
    must match its own lines (page 2) and leave the first as context, not open on page 1."""
    from haiku.rag.citations import Citation

    store = Store(str(db_path), create=True)
    first, second = "needle on the first page " * 20, "needle on the second page " * 20
    items = [
        ItemRecord(0, "#/texts/0", "section_header", "Only", [1], 1, [Box(1, 10, 10, 200, 20)]),
        ItemRecord(1, "#/texts/1", "text", first, [1], 0, [Box(1, 10, 30, 500, 300)]),
        ItemRecord(2, "#/texts/2", "text", second, [2], 0, [Box(2, 10, 40, 500, 310)]),
    ]
    chunks = [
        ChunkRecord(0, first, f"Only\n{first}", ["Only"], ["text"], ["#/texts/1"], [1], [Box(1, 10, 30, 500, 300)]),
        ChunkRecord(1, second, f"Only\n{second}", ["Only"], ["text"], ["#/texts/2"], [2], [Box(2, 10, 40, 500, 310)]),
    ]
    D.write_document(store, D.NewDocument("file:///d.pdf", "D", {}, "h", "application/pdf", 2, b"", "", "{}", items, chunks))
    hits = search_chunks(store, "needle", query_vector=None, search_type="fts", limit=2)
    [merged] = expand_context(store, hits, 5000)
    assert len(merged.chunk_ids) == 2 and merged.page_numbers == [1, 2]
    by_page = {h.page_numbers[0]: h.chunk_id for h in hits}

    cited = Citation.from_result(1, by_page[2], merged)
    assert {b.page for b in cited.boxes} == {2}
    assert cited.matched_text == second and first in cited.content
    assert Box(1, 10, 30, 500, 300) in cited.context_boxes
    other = Citation.from_result(2, by_page[1], merged)
    assert {b.page for b in other.boxes} == {1} and Box(2, 10, 40, 500, 310) in other.context_boxes
    # a result that merged nothing cites exactly as before
    single = Citation.from_result(3, hits[0].chunk_id, hits[0])
    assert single.boxes == hits[0].boxes and single.context_boxes == hits[0].context_boxes
    assert single.matched_text is None


def _paged_doc() -> D.NewDocument:
    """Sections "4 Methodology › 4.3 Selector" (pages 1-2) and "5 Experiments › 5.1 Setup ›
    Crawler" (pages 2-3), each with stored heading paths as the chunker writes them; every
    paragraph is its own chunk on its own page."""
    items: list[ItemRecord] = []
    chunks: list[ChunkRecord] = []

    def heading(text: str, level: int, page: int) -> None:
        items.append(ItemRecord(len(items), f"#/texts/{len(items)}", "section_header", text, [page], level, [Box(page, 10, 5, 200, 15)]))

    def paragraph(text: str, page: int, path: list[str]) -> None:
        ref, box = f"#/texts/{len(items)}", Box(page, 10, 20 + len(items), 500, 60 + len(items))
        items.append(ItemRecord(len(items), ref, "text", text, [page], 0, [box]))
        chunks.append(ChunkRecord(len(chunks), text, "\n".join([*path, text]), path, ["text"], [ref], [page], [box]))

    method = ["4 Methodology", "4.3 Selector"]
    heading("4 Methodology", 1, 1)
    heading("4.3 Selector", 2, 1)
    paragraph("The selector reads each candidate paper and scores it. " * 3, 1, method)
    paragraph("The selector's threshold was tuned on held out queries. " * 3, 2, method)
    crawler = ["5 Experiments", "5.1 Setup", "Crawler"]
    heading("5 Experiments", 1, 2)
    heading("5.1 Setup", 2, 2)
    heading("Crawler", 3, 2)
    paragraph("The crawler expands citations of every selected paper. " * 3, 3, crawler)
    return D.NewDocument("file:///p.pdf", "P", {}, "h", "application/pdf", 3, b"", "", "{}", items, chunks)


def test_a_citation_names_its_own_chunks_pages_and_path_not_those_of_its_widened_context(db_path):
    """A hit on page 2 widened over pages 1-3: the result (what the model read) keeps pages
    1-3, but its citation says p. 2; two hits in sibling sections merged into one result keep
    one path each instead of a chain of both ("… › Crawler › 4 Methodology › 4.3 Selector")."""
    from haiku.rag.capabilities.state import Citation
    from haiku.rag.citations import pages_label

    store = Store(str(db_path), create=True)
    D.write_document(store, _paged_doc())
    [hit] = search_chunks(store, "threshold", query_vector=None, search_type="fts", limit=1)
    assert hit.page_numbers == [2]
    [widened] = expand_context(store, [hit], 5000)
    assert widened.page_numbers == [1, 2, 3], "the widened passage keeps the pages it spans"
    cited = Citation.from_result(1, hit.chunk_id, widened)
    assert pages_label(cited.page_numbers) == "p. 2"
    assert cited.headings == ["4 Methodology", "4.3 Selector"]
    # a neighbour the expansion swept in is cited with its own page and path
    neighbour = next(cid for cid in widened.chunk_texts if "The crawler" in widened.chunk_texts[cid])
    # the headings between the two passages open the neighbour's, they do not end the hit's
    assert widened.chunk_texts[neighbour].startswith("5 Experiments\n\n5.1 Setup\n\nCrawler\n\nThe crawler")
    assert widened.chunk_texts[hit.chunk_id].rstrip().endswith("held out queries.")
    swept = Citation.from_result(2, neighbour, widened)
    assert swept.page_numbers == [3] and swept.headings == ["5 Experiments", "5.1 Setup", "Crawler"]

    hits = search_chunks(store, "crawler selector", query_vector=None, search_type="fts", limit=3)
    crawler = next(h for h in hits if h.content.startswith("The crawler"))
    selector = next(h for h in hits if h.content.startswith("The selector reads"))
    [merged] = expand_context(store, [crawler, selector], 5000)
    assert set(merged.chunk_ids) >= {crawler.chunk_id, selector.chunk_id}
    assert merged.headings in (["4 Methodology", "4.3 Selector"], ["5 Experiments", "5.1 Setup", "Crawler"])
    assert Citation.from_result(3, crawler.chunk_id, merged).headings == ["5 Experiments", "5.1 Setup", "Crawler"]
    first = Citation.from_result(4, selector.chunk_id, merged)
    assert first.headings == ["4 Methodology", "4.3 Selector"] and first.page_numbers == [1]
