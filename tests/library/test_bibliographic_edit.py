"""Editing a document's bibliographic record: checked field by field, written in one atomic
step of the documents row (nothing re-parsed or re-embedded), kept after a reopen and a
re-ingest, and what citations and BibTeX then use. Bad input changes nothing."""

from __future__ import annotations

import bibtexparser
import pdf_factory
import pytest

from haiku.rag.bibliography import (
    BibliographicError,
    author_year_citation,
    authors_text,
    bibliographic,
    bibliography_of_answer,
    edited_record,
    parse_authors,
    parse_doi,
    parse_year,
)
from haiku.rag.client import HaikuRAG
from haiku.rag.store import schema


def _versions(client: HaikuRAG) -> dict[str, int]:
    return {n: client.store.table(n).version for n in schema.TABLES if client.store.has_table(n)}


def _paper(path, title="Otter Dens of the Northern Coast", authors=("Mette Sørensen", "Jonas Berg", "Ana Lima")):
    return pdf_factory.make_paper_pdf(
        path,
        title=title,
        authors=list(authors),
        header_lines=["arXiv:2104.01234v1 [q-bio.PE] 2 Apr 2021"],
        paragraphs=["Otters den in rock crevices above the tide line.", "Pups stay in the den for two months."],
        pages=2,
    )


def test_fields_are_checked_as_typed():
    assert [(c.family, c.given) for c in parse_authors("Sørensen, Mette\nPieter de Vries; Lima")] == [
        ("Sørensen", "Mette"),
        ("de Vries", "Pieter"),
        ("Lima", ""),
    ]
    assert parse_year(" 2021 ") == 2021 and parse_year("") is None
    for bad in ("20x1", "21", "12345", "-2021", "2021.5"):
        with pytest.raises(BibliographicError, match="year must be a year") as caught:
            parse_year(bad)
        assert caught.value.field == "year"
    assert parse_doi("https://doi.org/10.1234/otters.2021") == "10.1234/otters.2021"
    assert parse_doi("doi: 10.5555/3295222.3295349") == "10.5555/3295222.3295349"
    assert parse_doi("  ") is None
    for bad in ("otters", "10.12/x", "11.1234/x", "10.1234/", "10.1234/with space"):
        with pytest.raises(BibliographicError, match="DOI looks like") as caught:
            parse_doi(bad)
        assert caught.value.field == "doi"


async def test_an_edit_is_stored_atomically_without_reembedding_and_survives_a_reopen(db_path, config, tmp_path):
    path = tmp_path / "otters.pdf"
    _paper(path)
    async with HaikuRAG(db_path, config, create=True) as client:
        document = (await client.ingest_file(path)).document
        extracted = bibliographic(document.metadata)
        assert extracted is not None and extracted.creators[0].family == "Sørensen"
        before = _versions(client)
        edited = edited_record(
            extracted,
            title="Otter dens of the northern coast",
            authors=authors_text(extracted).replace("Berg, Jonas", "Berg, Jonas K."),
            year="2022",
            venue="Journal of Mustelid Ecology",
            doi="https://doi.org/10.1234/otters.2022",
        )
        updated = await client.update_bibliographic(document.id, edited, title="Otter dens of the northern coast")
        after = _versions(client)
        # one new version of the documents table; chunks, vectors, items, blobs untouched
        changed = {name for name in after if after[name] != before.get(name)}
        assert changed == {schema.DOCUMENTS}
        assert after[schema.DOCUMENTS] == before[schema.DOCUMENTS] + 1
        assert (updated.generation, updated.index_state, updated.chunk_count) == (
            document.generation,
            "hybrid",
            document.chunk_count,
        )
        assert updated.title == "Otter dens of the northern coast"
    async with HaikuRAG(db_path, config) as client:  # a relaunch
        stored = await client.get_document(document.id)
        record = bibliographic(stored.metadata)
        assert record.source == "user"
        assert (record.year, record.venue, record.doi) == (2022, "Journal of Mustelid Ecology", "10.1234/otters.2022")
        assert [c.given for c in record.creators] == ["Mette", "Jonas K.", "Ana"]
        assert record.arxiv == "2104.01234"  # a field the form does not show is kept
        assert author_year_citation(stored.metadata, [2]) == "(Sørensen et al., 2022, p. 2)"
        hit = (await client.search("rock crevices tide line", search_type="fts", limit=1))[0]
        assert author_year_citation(hit.document_meta, [1], parentheses=False) == "Sørensen et al., 2022, p. 1"
        bibtex = bibtexparser.parse_string(await bibliography_of_answer(client, [hit], "bibtex"))
        (entry,) = bibtex.entries
        assert entry.key == "sorensen2022otter"
        assert entry["doi"] == "10.1234/otters.2022" and entry["year"] == "2022"
        assert "Journal of Mustelid Ecology" in entry.fields_dict[next(k for k in entry.fields_dict if k in ("journal", "howpublished"))].value


async def test_bad_input_is_refused_and_changes_nothing(db_path, config, tmp_path):
    path = tmp_path / "otters.pdf"
    _paper(path)
    async with HaikuRAG(db_path, config, create=True) as client:
        document = (await client.ingest_file(path, embed=False)).document
        before = _versions(client)
        extracted = bibliographic(document.metadata)
        for record in (
            extracted.model_copy(update={"year": 99999}),
            extracted.model_copy(update={"doi": "not a doi"}),
            extracted.model_copy(update={"title": "x" * 5000}),
        ):
            with pytest.raises(BibliographicError):
                await client.update_bibliographic(document.id, record)
        with pytest.raises(ValueError):  # not a record at all
            await client.update_bibliographic(document.id, {"year": "soon"})
        assert _versions(client) == before
        assert (await client.get_document(document.id)).metadata == document.metadata


async def test_a_reingest_keeps_the_edit_but_not_the_files_old_reading(db_path, config, tmp_path):
    path = tmp_path / "otters.pdf"
    _paper(path)
    async with HaikuRAG(db_path, config, create=True) as client:
        document = (await client.ingest_file(path, embed=False)).document
        edited = edited_record(bibliographic(document.metadata), title=None, authors="Sørensen, Mette", year="2020", venue=None, doi=None)
        await client.update_bibliographic(document.id, edited)
        _paper(path, authors=("Mette Sørensen", "Jonas Berg", "Ana Lima", "Ole Dahl"))  # the file changed
        again = (await client.ingest_file(path, embed=False)).document
        assert again.id == document.id and again.generation != document.generation
        record = bibliographic(again.metadata)
        assert (record.source, [c.family for c in record.creators], record.year) == ("user", ["Sørensen"], 2020)
        # a file never edited is read afresh
        other = tmp_path / "other.pdf"
        _paper(other, title="Seal Haul-outs", authors=("Ada Moss",))
        first = (await client.ingest_file(other, embed=False)).document
        _paper(other, title="Seal Haul-outs", authors=("Ada Moss", "Bo Lund"))
        second = (await client.ingest_file(other, embed=False)).document
        assert [c.family for c in bibliographic(first.metadata).creators] == ["Moss"]
        assert [c.family for c in bibliographic(second.metadata).creators] == ["Moss", "Lund"]
