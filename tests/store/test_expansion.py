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
