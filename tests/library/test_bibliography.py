"""Bibliographic metadata: read from PDFs at ingest, author–year–page citations, and BibTeX /
CSL-JSON bibliographies of an answer's sources (Zotero keys kept)."""

from __future__ import annotations

import json

import bibtexparser
import pdf_factory
import pytest
import zotero_factory as zf

from haiku.rag.bibliography import (
    Bibliographic,
    Creator,
    author_year_citation,
    bibliographic,
    bibliography_of_answer,
    to_bibtex,
    to_csl_json,
)
from haiku.rag.cli import main
from haiku.rag.client import HaikuRAG
from haiku.rag.pdf_metadata import extract_pdf_metadata
from haiku.rag.zotero import import_zotero

VASWANI = ["Ashish Vaswani", "Noam Shazeer", "Niki Parmar", "Jakob Uszkoreit"]


@pytest.fixture
async def client(db_path, config):
    async with HaikuRAG(db_path, config, create=True) as c:
        yield c


def _record(*names: tuple[str, str], year: int | None = 2017, **kw) -> Bibliographic:
    return Bibliographic(creators=[Creator(given=g, family=f) for g, f in names], year=year, **kw)


def test_author_year_page_citations():
    assert author_year_citation(_record(("Ashish", "Vaswani"), ("Noam", "Shazeer"), ("Niki", "Parmar")), [6]) == (
        "(Vaswani et al., 2017, p. 6)"
    )
    assert author_year_citation(_record(("Sofia", "Haddad"), ("Pieter", "de Vries"), year=2021), [7, 8]) == (
        "(Haddad and de Vries, 2021, pp. 7–8)"
    )
    assert author_year_citation(_record(("Ada", "Lovelace"), year=None), [3, 5]) == "(Lovelace, n.d., pp. 3, 5)"
    assert author_year_citation(_record(title="Otter Dens of the Northern Coast", year=2019), []) == (
        "(“Otter Dens of the…”, 2019)"
    )
    editor_only = Bibliographic(creators=[Creator(family="Polar Institute", role="editor")], year=2019)
    assert author_year_citation(editor_only, [1], parentheses=False) == "Polar Institute, 2019, p. 1"
    # from a document's metadata as stored (what SearchResult.document_meta carries)
    meta = {"bibliographic": _record(("Ashish", "Vaswani"), year=2017).to_metadata()}
    assert author_year_citation(meta, [6]) == "(Vaswani, 2017, p. 6)"
    assert author_year_citation({}, [2], fallback_title="Quarterly Report") == "(“Quarterly Report”, n.d., p. 2)"


def test_first_page_metadata_of_a_paper(tmp_path):
    path = tmp_path / "attention.pdf"
    pdf_factory.make_paper_pdf(
        path,
        title="Attention Is All You Need",
        authors=VASWANI,
        affiliation="Google Brain, Mountain View",
        header_lines=["arXiv:1706.03762v5 [cs.CL] 6 Dec 2017", "https://doi.org/10.5555/3295222.3295349"],
        paragraphs=["The dominant sequence transduction models are based on recurrent networks."],
        info={"author": "Administrator", "title": "Microsoft Word - draft.docx"},
    )
    record = extract_pdf_metadata(path.read_bytes(), filename=path.name)
    assert record.title == "Attention Is All You Need"
    assert [c.family for c in record.creators] == ["Vaswani", "Shazeer", "Parmar", "Uszkoreit"]
    assert [c.given for c in record.creators][:1] == ["Ashish"]
    assert (record.year, record.arxiv, record.doi, record.source) == (2017, "1706.03762", "10.5555/3295222.3295349", "first-page")


def test_info_metadata_when_plausible(tmp_path):
    path = tmp_path / "scan.pdf"
    pdf_factory.make_scanned_pdf(path, pages=1)
    import pymupdf

    with pymupdf.open(path) as doc:
        doc.set_metadata({"author": "Cuellar-Lopez, Monica", "title": "Annual Warn Notices", "creationDate": "D:20160325082400"})
        data = doc.tobytes()
    record = extract_pdf_metadata(data)
    assert [(c.given, c.family) for c in record.creators] == [("Monica", "Cuellar-Lopez")]
    assert (record.title, record.year, record.source) == ("Annual Warn Notices", 2016, "pdf-info")
    for bogus in ("Administrator", "ARRAY(0x2c7cf020)", "SE:W:CAR:MP", "Supreme", "NPC, Inc. 12/12/2022"):
        with pymupdf.open(path) as doc:
            doc.set_metadata({"author": bogus, "title": "Untitled"})
            assert extract_pdf_metadata(doc.tobytes()) is None, bogus


async def test_ingest_stores_the_record_and_search_results_carry_it(client, tmp_path):
    path = tmp_path / "attention.pdf"
    pdf_factory.make_paper_pdf(
        path, title="Attention Is All You Need", authors=VASWANI, affiliation="Google Brain",
        header_lines=["arXiv:1706.03762v5 [cs.CL] 6 Dec 2017"],
        paragraphs=["Multi-head attention lets the model attend to several representation subspaces.",
                    "The transformer reaches a new state of the art on English-to-German translation."],
    )
    document = (await client.ingest_file(path, embed=False)).document
    assert bibliographic(document.metadata).creators[0].family == "Vaswani"
    hit = (await client.search("English-to-German translation", search_type="fts", limit=1))[0]
    assert author_year_citation(hit.document_meta, [2]) == "(Vaswani et al., 2017, p. 2)"
    # a document whose caller gave the record (Zotero) keeps it
    given = {"bibliographic": _record(("Grace", "Hopper"), year=1952).to_metadata()}
    other = tmp_path / "other.pdf"
    pdf_factory.make_paper_pdf(other, title="Compiling Routines", authors=["Someone Else"], paragraphs=["Text."], pages=1)
    kept = (await client.ingest_file(other, metadata=given, embed=False)).document
    assert bibliographic(kept.metadata).creators[0].family == "Hopper"


async def test_bibtex_and_csl_of_an_answer_keep_zotero_keys(client, tmp_path):
    zotero = zf.build_library(tmp_path)
    result = await import_zotero(client, zotero.data_dir, embed=False)
    ids = {o.key: o.document_id for o in result.outcomes}
    plain = tmp_path / "plain.pdf"
    pdf_factory.make_paper_pdf(plain, title="Attention Is All You Need", authors=VASWANI,
                               header_lines=["arXiv:1706.03762v5 [cs.CL] 6 Dec 2017"], paragraphs=["Body."], pages=1)
    plain_id = (await client.ingest_file(plain, embed=False)).document.id
    hits = await client.search("sparse attention walrus", search_type="fts", limit=5)
    assert hits
    cited = [*hits, *hits, type("Cited", (), {"document_id": ids[zotero.keys["b_linked"]]})(),
             type("Cited", (), {"document_id": plain_id})()]

    bibtex = await bibliography_of_answer(client, cited, "bibtex")
    library = bibtexparser.parse_string(bibtex)
    assert not library.failed_blocks
    entries = {e.key: e for e in library.entries}
    assert {"AAAA1111", "BBBB2222", "vaswani2017attention"} <= set(entries)
    article = entries["AAAA1111"]
    assert article.entry_type == "article"
    assert article.fields_dict["author"].value == "Kowalczyk, Marta and Ekberg, Jonas and Wen, Li"
    assert article.fields_dict["title"].value == "{Sparse Walrus Attention for Arctic Sensing}"
    assert (article.fields_dict["year"].value, article.fields_dict["doi"].value) == ("2017", "10.5555/walrus.2017.6")
    assert article.fields_dict["journal"].value == "Journal of Polar Computing"
    assert article.fields_dict["pages"].value == "101--115"
    assert entries["BBBB2222"].entry_type == "inproceedings"
    assert entries["BBBB2222"].fields_dict["author"].value == "Haddad, Sofia and {de Vries}, Pieter"
    assert entries["vaswani2017attention"].fields_dict["eprint"].value == "1706.03762"
    assert len(library.entries) == len({h.document_id for h in hits} | {ids[zotero.keys["b_linked"]], plain_id})

    csl = json.loads(await bibliography_of_answer(client, cited, "csl-json"))
    by_id = {item["id"]: item for item in csl}
    assert by_id["AAAA1111"]["type"] == "article-journal"
    assert by_id["AAAA1111"]["author"][0] == {"family": "Kowalczyk", "given": "Marta"}
    assert by_id["AAAA1111"]["issued"] == {"date-parts": [[2017, 6, 12]]}
    assert by_id["BBBB2222"]["type"] == "paper-conference"
    assert by_id["BBBB2222"]["container-title"] == "Proceedings of EcoVision"


def test_bibtex_escapes_and_unique_keys():
    a = _record(("Jane", "Doe"), title="Costs & Benefits of 100% Recall_Rates {draft}")
    b = _record(("Jane", "Doe"), title="Costs of Recall")
    library = bibtexparser.parse_string(to_bibtex([a, b]))
    assert not library.failed_blocks
    assert [e.key for e in library.entries] == ["doe2017costs", "doe2017costsa"]
    assert to_csl_json([]) == [] and to_bibtex([]) == ""


def test_cli_cite(tmp_path, capsys):
    db = str(tmp_path / "lib.lancedb")
    path = tmp_path / "attention.pdf"
    pdf_factory.make_paper_pdf(path, title="Attention Is All You Need", authors=VASWANI,
                               header_lines=["arXiv:1706.03762v5 [cs.CL] 6 Dec 2017"], paragraphs=["Body text."], pages=1)
    assert main(["--db", db, "add-src", str(path), "--no-embed"]) == 0
    capsys.readouterr()
    assert main(["--db", db, "cite", "Attention Is All You Need", "--pages", "6"]) == 0
    assert capsys.readouterr().out.startswith("(Vaswani et al., 2017, p. 6)")
    assert main(["--db", db, "cite", "Attention Is All You Need", "--format", "bibtex"]) == 0
    assert bibtexparser.parse_string(capsys.readouterr().out).entries[0].key == "vaswani2017attention"
    assert main(["--db", db, "cite", "Attention Is All You Need", "--pages", "x"]) == 1
    assert "--pages expects" in capsys.readouterr().err
