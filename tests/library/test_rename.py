"""HaikuRAG.rename_document: the user's own title is stored in the documents row, kept when
the file is ingested again, and can be dropped for the title found in the file."""

from __future__ import annotations

import pymupdf
import pytest

from haiku.rag.client import HaikuRAG
from haiku.rag.errors import DocumentNotFoundError


def _pdf(path, title: str, body: str):
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 110), title, fontname="hebo", fontsize=22)
    for i in range(6):
        page.insert_text((72, 170 + 14 * i), f"{body} ({i})", fontname="helv", fontsize=10)
    doc.save(path)
    doc.close()
    return path


@pytest.fixture
async def client(db_path, config):
    async with HaikuRAG(db_path, config, create=True) as c:
        yield c


async def test_a_renamed_document_keeps_its_name_across_reingest(client, tmp_path):
    pdf = _pdf(tmp_path / "notes.pdf", "Glass Eels of the Estuary", "Glass eels run upriver in spring.")
    first = (await client.ingest_file(pdf, embed=False)).document
    assert first.title == "Glass Eels of the Estuary"

    renamed = await client.rename_document(first.id, "  Eel   notes ")
    assert renamed.title == "Eel notes" and renamed.id == first.id
    assert renamed.metadata["user_title"] == "Eel notes"
    assert renamed.metadata["ingest_title"] == "Glass Eels of the Estuary"
    hits = await client.search("glass eels upriver", limit=1)
    assert hits and hits[0].document_title == "Eel notes"  # citations name it so too

    _pdf(pdf, "Glass Eels, Revised", "Glass eels run upriver in spring and autumn.")
    again = (await client.ingest_file(pdf, embed=False)).document
    assert again.id == first.id and again.generation != first.generation
    assert again.title == "Eel notes"
    assert again.metadata["ingest_title"] == "Glass Eels, Revised"

    restored = await client.rename_document(first.id, None)
    assert restored.title == "Glass Eels, Revised"
    assert "user_title" not in restored.metadata and "ingest_title" not in restored.metadata


async def test_bad_renames_say_why_and_change_nothing(client, tmp_path):
    pdf = _pdf(tmp_path / "notes.pdf", "Glass Eels of the Estuary", "Glass eels run upriver in spring.")
    document = (await client.ingest_file(pdf, embed=False)).document
    with pytest.raises(ValueError, match="at most 500 characters"):
        await client.rename_document(document.id, "x" * 501)
    with pytest.raises(DocumentNotFoundError):
        await client.rename_document("no-such-id", "Anything")
    assert (await client.get_document(document.id)).title == "Glass Eels of the Estuary"
