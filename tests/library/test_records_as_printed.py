"""Bibliographic records as the first page prints them: a PaSa-like paper (arXiv 2501.10120:
a long title with a colon, seven authors told apart only by their superscript marks, the
affiliations under them, the arXiv stamp in the margin) ingested as a user would, its record
exported as BibTeX and CSL-JSON."""

from __future__ import annotations

import json

import bibtexparser
import pytest
from paper_factory import PASA_ARXIV, PASA_AUTHORS, PASA_TITLE, make_pasa_like_pdf

from haiku.rag.bibliography import author_year_citation, bibliographic, bibliography_of_answer
from haiku.rag.client import HaikuRAG


@pytest.fixture
async def client(db_path, config):
    async with HaikuRAG(db_path, config, create=True) as c:
        yield c


async def test_a_pasa_like_paper_is_cited_with_its_full_title_and_all_its_authors(client, tmp_path):
    path = tmp_path / "2501.10120v1.pdf"
    # the Info title says something shorter, as real files' often do: the page wins
    path.write_bytes(make_pasa_like_pdf(metadata_title="Paper Search"))
    document = (await client.ingest_file(path, embed=False)).document
    assert document.title == PASA_TITLE  # what the library shows...
    record = bibliographic(document.metadata)
    assert record is not None and record.title == PASA_TITLE  # ...is what the record says
    assert [(c.given, c.family) for c in record.authors] == [(g, f) for g, f, _ in PASA_AUTHORS]
    assert (record.arxiv, record.year) == (PASA_ARXIV, 2025)
    assert author_year_citation(record, [1]) == "(He et al., 2025, p. 1)"

    hit = (await client.search("paper search agent", search_type="fts", limit=1))[0]
    library = bibtexparser.parse_string(await bibliography_of_answer(client, [hit], "bibtex"))
    assert not library.failed_blocks
    [entry] = library.entries
    fields = {k: v.value for k, v in entry.fields_dict.items()}
    assert fields["title"].strip("{}") == PASA_TITLE
    assert fields["author"].split(" and ") == [f"{f}, {g}" for g, f, _ in PASA_AUTHORS]
    assert fields["eprint"] == PASA_ARXIV and fields["year"] == "2025"

    [item] = json.loads(await bibliography_of_answer(client, [hit], "csl-json"))
    assert item["title"] == PASA_TITLE
    assert [a["family"] for a in item["author"]] == [f for _, f, _ in PASA_AUTHORS]
