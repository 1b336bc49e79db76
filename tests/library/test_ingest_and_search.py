"""End to end through the real pipeline: generated PDFs -> converter -> chunker -> embedder ->
LanceDB -> search, context expansion and visual grounding."""

from __future__ import annotations

import shutil

import numpy as np
import pdf_factory
import pytest

from haiku.rag.client import HaikuRAG
from haiku.rag.doctor import run_doctor
from haiku.rag.operations import CancelToken, Stage
from haiku.rag.store import schema

TOLERANCE_PT = 2.0


@pytest.fixture
async def client(db_path, config):
    async with HaikuRAG(db_path, config, create=True) as c:
        yield c


@pytest.fixture
def report_pdf(tmp_path):
    folder = tmp_path / "papers"
    folder.mkdir()
    layout = pdf_factory.make_report_pdf(folder / "report.pdf")
    return layout


def _versions(client: HaikuRAG) -> dict[str, int]:
    return {n: client.store.table(n).version for n in schema.TABLES if client.store.has_table(n)}


def _close(a, b) -> bool:
    return all(abs(x - y) <= TOLERANCE_PT for x, y in zip(a, b, strict=True))


def _rects(boxes, page=None):
    return [(b.x0, b.y0, b.x1, b.y1) for b in boxes if page is None or b.page == page]


async def test_search_hits_carry_the_right_pages_and_boxes(client, report_pdf):
    outcome = await client.ingest_file(report_pdf.path)
    assert outcome.status == "ingested", outcome.reason
    assert outcome.document.index_state == "hybrid"
    assert outcome.document.page_count == 3

    cases = {
        "albatross consignment harbour of Nordvik": "p_intro",
        "kerosene shortage night convoys": "p_discussion",
        "lighthouse keepers midnight census gannet": "p_appendix",
    }
    for query, key in cases.items():
        results = await client.search(query, limit=3)
        assert results, query
        top = results[0]
        block = report_pdf.block(key)
        assert top.page_numbers == [block.page], (query, top.page_numbers)
        expected = [line.rect for line in block.lines]
        found = _rects(top.boxes, block.page)
        for rect in expected:  # every drawn line of the passage is highlighted, within 2 pt
            assert any(_close(rect, got) for got in found), (key, rect, found)
        assert top.headings, "a chunk keeps its heading path"


async def test_table_text_is_found_on_its_page_inside_the_table(client, report_pdf):
    await client.ingest_file(report_pdf.path)
    page, (tx0, ty0, tx1, ty1) = report_pdf.tables["table"]
    cell = report_pdf.table_cells["table"][1][0]
    results = await client.search(cell, limit=5, search_type="fts")
    hit = next(r for r in results if page in r.page_numbers and "table" in r.labels)
    assert any(tx0 - 2 <= b.x0 and b.x1 <= tx1 + 2 and ty0 - 2 <= b.y0 and b.y1 <= ty1 + 2 for b in hit.boxes if b.page == page)


async def test_visualize_paints_the_highlight_where_the_text_is(client, report_pdf):
    await client.ingest_file(report_pdf.path)
    top = (await client.search("customs brokers recorded every crate of marmalade", limit=1))[0]
    pages = await client.visualize_chunk(top.chunk_id, dpi=144)
    assert [p.page for p in pages] == [1]
    page = pages[0]
    scale = page.dpi / 72
    plain = np.frombuffer(page.samples, np.uint8).reshape(page.height, page.width, 3)
    lit = page.highlighted_rgb()
    line = report_pdf.block("p_intro").lines[0]
    x0, y0, x1, y1 = (int(v * scale) for v in line.rect)
    inside = lit[y0:y1, x0:x1].reshape(-1, 3)
    white_inside = (plain[y0:y1, x0:x1].reshape(-1, 3) == 255).all(axis=1)
    # Background pixels of the cited line turn orange: red stays high, blue drops.
    assert white_inside.any()
    tinted = inside[white_inside]
    assert (tinted[:, 0] > 200).all() and (tinted[:, 2] < 200).all()
    # Far from any cited text (right page margin) nothing changes.
    assert (lit[:, -20:] == plain[:, -20:]).all()
    assert page.to_png().startswith(b"\x89PNG")


async def test_reingesting_an_unchanged_folder_writes_nothing(client, report_pdf, tmp_path):
    pdf_factory.make_two_column_pdf(report_pdf.path.parent / "paper.pdf")
    first = await client.add_source(report_pdf.path.parent)
    assert sorted(o.status for o in first) == ["ingested", "ingested"]
    before = _versions(client)
    again = await client.add_source(report_pdf.path.parent)
    assert [o.status for o in again] == ["unchanged", "unchanged"]
    assert _versions(client) == before


async def test_a_copy_of_a_stored_file_under_another_name_is_said_to_be_the_same(client, report_pdf, tmp_path):
    """A watched folder held a byte-identical copy of a file already added: a second row was
    added silently, and answers could cite one passage twice. It is stored (the person may
    want both) and the outcome names the document it repeats."""
    import shutil

    first = await client.ingest_file(report_pdf.path)
    copy = tmp_path / "copy of report.pdf"
    shutil.copy(report_pdf.path, copy)
    second = await client.ingest_file(copy)
    assert second.status == "ingested" and second.document.id != first.document.id
    assert second.same_as is not None and second.same_as.id == first.document.id
    assert second.to_dict()["same_as"] == {"document_id": first.document.id, "uri": first.document.uri}
    assert first.same_as is None
    pdf_factory.make_two_column_pdf(tmp_path / "other.pdf")
    assert (await client.ingest_file(tmp_path / "other.pdf")).same_as is None


async def test_a_changed_file_is_updated_in_place(client, report_pdf):
    first = (await client.ingest_file(report_pdf.path)).document
    pdf_factory.make_two_column_pdf(report_pdf.path)  # same path, new content
    second = await client.ingest_file(report_pdf.path)
    assert second.status == "updated"
    assert second.document.id == first.id
    assert len(await client.list_documents()) == 1
    assert not await client.search("albatross consignment", search_type="fts")
    assert run_doctor(client.store).ok


async def test_a_forced_reingest_reads_an_unchanged_file_again_in_place(db_path, config, report_pdf):
    """An explicit Re-ingest after a parser/OCR fix: the file is unchanged on disk, yet it is
    parsed again (here the fix is a smaller chunk size) and replaced under the same id, so
    what refers to the document (evidence tables, collections, citations) stays attached."""
    async with HaikuRAG(db_path, config, create=True) as client:
        first = (await client.ingest_file(report_pdf.path)).document
    config.processing.chunk_size = 64  # what the new build parses differently
    async with HaikuRAG(db_path, config) as client:
        skipped = await client.ingest_file(report_pdf.path)
        assert skipped.status == "unchanged"
        assert skipped.document.chunk_count == first.chunk_count
        again = await client.ingest_file(report_pdf.path, force=True)
        assert again.status == "updated", again.reason
        assert again.document.id == first.id
        assert again.document.chunk_count > first.chunk_count
        assert again.document.index_state == "hybrid"
        assert len(await client.list_documents()) == 1
        assert (await client.search("albatross consignment Nordvik", limit=1))[0].document_id == first.id
        assert run_doctor(client.store).ok


async def test_two_speed_ingestion_text_first_then_vectors(client, report_pdf):
    outcome = await client.ingest_file(report_pdf.path, embed=False)
    assert outcome.document.index_state == "text"
    hits = await client.search("albatross consignment Nordvik", search_type="hybrid")
    assert hits and hits[0].page_numbers == [1]  # full-text arm serves it before vectors exist
    assert await client.search("albatross", search_type="vector") == []
    embedded = await client.embed_pending()
    assert embedded == outcome.document.chunk_count
    assert (await client.get_document(outcome.document.id)).index_state == "hybrid"
    semantic = await client.search("seabird shipment arrived at the port", search_type="vector", limit=3)
    assert any(r.page_numbers == [1] for r in semantic)
    assert run_doctor(client.store).ok


async def test_folder_report_accounts_for_every_file_and_goes_on(client, report_pdf):
    folder = report_pdf.path.parent
    (folder / "broken.pdf").write_bytes(b"this is not a pdf at all")
    (folder / "notes.xyz").write_text("unsupported")
    pdf_factory.make_encrypted_pdf(folder / "locked.pdf", "s3cret")
    pdf_factory.make_scanned_pdf(folder / "scan.pdf")
    (folder / "empty.md").write_text("")
    (folder / "readme.md").write_text("# Notes\n\nThe pelican cranes need an audit.\n")
    outcomes = {o.source.rsplit("/", 1)[-1]: o for o in await client.add_source(folder)}
    assert set(outcomes) == {"report.pdf", "broken.pdf", "notes.xyz", "locked.pdf", "scan.pdf", "empty.md", "readme.md"}
    assert outcomes["report.pdf"].status == "ingested"
    assert outcomes["readme.md"].status == "ingested"
    expected = {
        "broken.pdf": "damaged",
        "notes.xyz": "unsupported_type",
        "locked.pdf": "password_required",
        "scan.pdf": "needs_ocr",
        "empty.md": "empty",
    }
    for name, category in expected.items():
        assert outcomes[name].status == "failed" and outcomes[name].category == category, (name, outcomes[name])
        assert name.split(".")[0] in outcomes[name].reason or "file" in outcomes[name].reason
    assert len(await client.list_documents()) == 2
    assert run_doctor(client.store).ok


async def test_encrypted_pdf_with_password_renders_later(client, tmp_path):
    layout = pdf_factory.make_encrypted_pdf(tmp_path / "locked.pdf", "s3cret")
    wrong = await client.ingest_file(layout.path, password="nope")
    assert wrong.category == "wrong_password"
    outcome = await client.ingest_file(layout.path, password="s3cret")
    assert outcome.status == "ingested", outcome.reason
    first_key = next(iter(layout.blocks))
    hit = (await client.search(layout.blocks[first_key].text, limit=1, search_type="fts"))[0]
    pages = await client.visualize_chunk(hit.chunk_id)
    assert pages and pages[0].boxes


async def test_cancelling_an_ingest_leaves_the_store_as_it_was(client, report_pdf):
    token = CancelToken()

    def cancel_when_chunking(progress):
        if progress.stage == Stage.CHUNKING:
            token.cancel()

    before = _versions(client)
    from haiku.rag.errors import OperationCancelled

    with pytest.raises(OperationCancelled):
        await client.ingest_file(report_pdf.path, progress=cancel_when_chunking, cancel=token)
    assert await client.list_documents() == []
    assert {n: client.store.table(n).count_rows() for n in before if n != schema.SETTINGS} == {
        n: 0 for n in before if n != schema.SETTINGS
    }


async def test_filter_applies_before_the_limit(client, tmp_path):
    a = pdf_factory.make_report_pdf(tmp_path / "a.pdf")
    b_path = tmp_path / "b.pdf"
    shutil.copy(a.path, b_path)
    await client.ingest_file(a.path)
    await client.ingest_file(b_path, title="Second copy")
    results = await client.search("marmalade", limit=1, filter="title = 'Second copy'")
    assert len(results) == 1 and results[0].document_title == "Second copy"
    assert await client.search("marmalade", filter="title = 'nobody'") == []


async def test_context_expansion_stays_in_the_section(client, report_pdf):
    await client.ingest_file(report_pdf.path)
    results = await client.search("customs brokers marmalade", limit=1, search_type="fts")
    expanded = await client.expand_context(results, max_chars=5000)
    assert expanded[0].chunk_id == results[0].chunk_id
    assert results[0].chunk_id in expanded[0].chunk_ids
    assert "albatross" in expanded[0].content
    assert len(expanded[0].content) <= 5000
    tiny = await client.expand_context(results, max_chars=50)
    assert len(tiny[0].content) >= len(results[0].content)  # never less than the chunk itself
