"""Word, PowerPoint, Excel, ODT and EPUB in the default install (no docling, no torch): files
made by their own libraries (or written as ZIP + XML) go through the real pipeline (the parse
worker, the chunker) into a real LanceDB store, are found by search, and a citation of each
carries the passage and its location (section, slide, sheet); tables keep header and rows."""

from __future__ import annotations

import asyncio
import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from office_factory import make_docx, make_epub, make_odt, make_pptx, make_xlsx

from haiku.rag.citations import Citation
from haiku.rag.client import HaikuRAG
from haiku.rag.errors import DamagedDocumentError, SourceTooLargeError, UnsupportedSourceError
from haiku.rag.ingest.converters import convert_source
from haiku_desk.citations import citation_location, citation_place


@dataclass(frozen=True)
class Case:
    make: Callable[[Path], Path]
    name: str
    title: str
    query: str
    passage: str
    location: list[str]  # the heading path the citation names
    table_query: str
    table_words: tuple[str, ...]  # a header name and the values of one body row
    table_location: list[str]


CASES = [
    Case(make_docx, "notes.docx", "Otter field notes", "crayfish willow", "Riverbank otters hunt crayfish beneath willow roots at dusk.",
         ["Otter field notes", "Habitat"], "Ollie", ("Age", "Ollie", "4"), ["Otter field notes", "Habitat", "Diet"]),
    Case(make_pptx, "survey.pptx", "Estuary survey", "kelp harbour seals", "Kelp forests sheltered seventeen harbour seals",
         ["Slide 2: Results"], "North cove", ("Seals", "North cove", "11"), ["Slide 3: Counts"]),
    Case(make_xlsx, "budget.xlsx", "", "hydrophone acoustica", "Hydrophone",
         ["Sheet: Budget"], "Hydrophone", ("Supplier", "Hydrophone", "Acoustica", "380"), ["Sheet: Budget"]),
    Case(make_odt, "ice.odt", "Ice report", "meltwater Vatnajökull", "Meltwater lakes doubled along the Vatnajökull margin since 1990.",
         ["Glacier retreat"], "Fjallsárlón", ("Area", "Fjallsárlón", "4 km2"), ["Glacier retreat", "Method"]),
    Case(make_epub, "keepers.epub", "The Lighthouse Keepers", "paraffin wick gale", "The keeper trimmed the paraffin wick every midnight through the gale.",
         ["Chapter 1: The Lamp"], "Marigold", ("Year", "Marigold", "1887"), ["Chapter 2: The Log"]),
]


def _ingest_and_cite(tmp_path: Path, config, case: Case) -> tuple[object, Citation, Citation, str]:
    path = case.make(tmp_path / case.name)

    async def run() -> tuple[object, Citation, Citation, str]:
        async with HaikuRAG(tmp_path / "library.lancedb", config, create=True) as client:
            outcome = await client.ingest_file(path, embed=False)
            assert outcome.status == "ingested", outcome.reason
            hits = await client.search(case.query, limit=3, search_type="fts")
            table_hits = await client.search(case.table_query, limit=3, search_type="fts")
            assert hits and table_hits, "nothing found"
            document = await client.get_document(hits[0].document_id)
            return (
                outcome,
                Citation.from_result(1, hits[0].chunk_id, hits[0]),
                Citation.from_result(2, table_hits[0].chunk_id, table_hits[0]),
                await client.get_content(document),
            )

    return asyncio.run(run())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_office_and_book_formats_are_ingested_searched_and_cited_with_their_location(tmp_path: Path, config, case: Case):
    outcome, citation, table_citation, content = _ingest_and_cite(tmp_path, config, case)
    assert outcome.document is not None
    if case.title:
        assert outcome.document.title == case.title
    # the passage, and where it is: the heading path (section, slide, sheet), named in words
    assert case.passage in citation.content
    assert citation.headings == case.location
    assert citation.page_numbers == [] and citation.boxes == []
    location = citation_location(citation)
    assert case.location[-1] in location and "p." not in location
    assert case.location[-1] in citation_place(citation)
    # the table kept its header with its rows: the header names the row's values
    assert table_citation.headings == case.table_location
    for word in case.table_words:
        assert word in table_citation.content, (word, table_citation.content)
    # the table as the chunker writes PDF tables: its header line over a separator, then one
    # line per body row (the row's own cells, none lost to a neighbour)
    lines = table_citation.content.splitlines()
    row_index = next(i for i, line in enumerate(lines) if case.table_words[1] in line)
    header_index = next(i for i, line in enumerate(lines) if case.table_words[0] in line)
    assert header_index < row_index and set(lines[header_index + 1].replace("|", "").strip()) <= {"-", ":", " "}
    assert all(word in lines[row_index] for word in case.table_words[1:])
    # the stored Markdown has the table with its header row over a separator
    header_line = next(line for line in content.splitlines() if case.table_words[0] in line and line.startswith("|"))
    following = content.splitlines()[content.splitlines().index(header_line) + 1]
    assert set(following.replace("|", "").strip()) <= {"-", ":", " "}


def test_word_lists_and_headings_keep_their_structure(tmp_path: Path):
    conversion = convert_source(make_docx(tmp_path / "notes.docx").read_bytes(), filename="notes.docx")
    items = [(type(item).__name__, getattr(item, "text", "")) for item, _ in conversion.document.iterate_items()]
    assert ("TitleItem", "Otter field notes") in items
    assert ("SectionHeaderItem", "Habitat") in items and ("SectionHeaderItem", "Diet") in items
    assert ("ListItem", "Fish in spring") in items and ("ListItem", "Frogs in summer") in items
    levels = {item.text: item.level for item, _ in conversion.document.iterate_items() if type(item).__name__ == "SectionHeaderItem"}
    assert levels == {"Habitat": 1, "Diet": 2}


def test_slides_keep_bullets_tables_and_speaker_notes(tmp_path: Path):
    conversion = convert_source(make_pptx(tmp_path / "deck.pptx").read_bytes(), filename="deck.pptx")
    items = [(type(item).__name__, getattr(item, "text", "")) for item, _ in conversion.document.iterate_items()]
    headings = [text for kind, text in items if kind == "SectionHeaderItem"]
    assert headings == ["Slide 1: Estuary survey", "Slide 2: Results", "Slide 3: Counts"]
    assert ("ListItem", "Tides peaked in April") in items
    assert ("TextItem", "Speaker notes: Mention the drone counts.") in items
    assert [kind for kind, _ in items].count("TableItem") == 1


def test_odt_numbered_lists_skip_footnote_bodies(tmp_path: Path):
    conversion = convert_source(make_odt(tmp_path / "ice.odt").read_bytes(), filename="ice.odt")
    items = [item for item, _ in conversion.document.iterate_items()]
    lists = [item for item in items if type(item).__name__ == "ListItem"]
    assert [item.text for item in lists] == ["Survey the moraine", "Photograph the terminus"]
    assert all(item.enumerated for item in lists)
    assert not any("footnote text" in getattr(item, "text", "") for item in items)


def test_epub_reads_the_spine_only_in_order(tmp_path: Path):
    conversion = convert_source(make_epub(tmp_path / "book.epub").read_bytes(), filename="book.epub")
    texts = [getattr(item, "text", "") for item, _ in conversion.document.iterate_items()]
    assert texts.index("Chapter 1: The Lamp") < texts.index("Chapter 2: The Log")
    assert "not in the spine" not in texts and "Contents" not in texts
    assert conversion.title == "The Lighthouse Keepers" and conversion.mime_type == "application/epub+zip"


def _zip(members: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as package:
        for name, data in members.items():
            package.writestr(name, data)
    return buffer.getvalue()


def test_a_zip_bomb_is_refused_before_it_is_unpacked():
    bomb = _zip({"content.xml": b"\0" * (600 * 1024 * 1024)})
    assert len(bomb) < 1024 * 1024
    with pytest.raises(SourceTooLargeError, match=r"^bomb\.odt: this OpenDocument file would unpack to 600 MB"):
        convert_source(bomb, filename="bomb.odt")


def test_xml_entities_are_refused():
    laughs = (
        '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;&a;">]>'
        '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0">&b;</office:document-content>'
    )
    with pytest.raises(DamagedDocumentError, match="declares XML entities"):
        convert_source(_zip({"content.xml": laughs}), filename="laughs.odt")


def test_encrypted_office_files_are_refused_in_plain_words():
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512
    with pytest.raises(UnsupportedSourceError) as raised:
        convert_source(ole, filename="secret.docx")
    assert str(raised.value) == (
        "secret.docx: this Word file is password-protected or in an old binary format, which "
        "isn't supported yet — remove the password or save it as PDF, then add it again"
    )


@pytest.mark.parametrize("name", ["broken.docx", "broken.pptx", "broken.xlsx", "broken.epub", "broken.odt"])
def test_a_zip_that_is_not_the_format_is_damaged(name: str):
    with pytest.raises(DamagedDocumentError, match=rf"^{name.replace('.', '[.]')}: "):
        convert_source(_zip({"hello.txt": "hi"}), filename=name)


def test_the_cli_adds_office_files_and_refuses_an_old_word_file_in_plain_words(tmp_path: Path, capsys):
    import json

    from haiku.rag.cli import main

    folder = tmp_path / "papers"
    folder.mkdir()
    make_docx(folder / "notes.docx")
    make_epub(folder / "keepers.epub")
    (folder / "minutes.doc").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 1024)
    db = str(tmp_path / "lib.lancedb")
    assert main(["--db", db, "add-src", str(folder), "--no-embed", "--json"]) == 0
    records = {Path(r["source"]).name: r for r in json.loads(capsys.readouterr().out)}
    assert records["notes.docx"]["status"] == "ingested" and records["keepers.epub"]["status"] == "ingested"
    refused = records["minutes.doc"]
    assert refused["status"] == "failed" and refused["category"] == "unsupported_type"
    assert refused["reason"].startswith("minutes.doc: .doc files aren't supported yet — save it as PDF")
    assert main(["--db", db, "search", "paraffin wick", "--search-type", "fts", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert "paraffin wick" in hits[0]["text"] and hits[0]["headings"] == ["Chapter 1: The Lamp"]
    assert main(["--db", db, "search", "crayfish willow", "--search-type", "fts"]) == 0
    assert "section: Otter field notes > Habitat" in capsys.readouterr().out


@pytest.mark.parametrize("make", [make_docx, make_pptx, make_xlsx, make_odt, make_epub], ids=lambda m: m.__name__)
def test_a_member_missing_cut_short_or_corrupt_is_a_clear_ingest_error_never_a_crash(tmp_path: Path, make):
    """Every member of the file removed in turn, then cut to half: the converter either reads
    what is left or says the file is damaged (an IngestError naming it); no KeyError, zlib or
    ZIP error escapes (which the app would report as an unexpected failure)."""
    from haiku.rag.errors import IngestError

    suffix = "." + make.__name__.removeprefix("make_")
    path = make(tmp_path / f"original{suffix}")
    with zipfile.ZipFile(path) as original:
        members = {name: original.read(name) for name in original.namelist()}
    variants = [{n: b for n, b in members.items() if n != dropped} for dropped in members]
    variants += [{n: (b[: len(b) // 2] if n == cut else b) for n, b in members.items()} for cut in members]
    blobs = [_zip(variant) for variant in variants] + _corrupted_streams(_zip(members))
    for blob in blobs:
        try:
            convert_source(blob, filename=f"file{suffix}")
        except IngestError as exc:
            assert str(exc).startswith(f"file{suffix}"), exc


def _corrupted_streams(data: bytes) -> list[bytes]:
    """``data`` with the compressed bytes of one member at a time overwritten in the middle
    (the ZIP directory intact, so only decompressing that member fails)."""
    corrupted = []
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        for info in package.infolist():
            if info.compress_type != zipfile.ZIP_DEFLATED or info.compress_size < 8:
                continue
            name_length = int.from_bytes(data[info.header_offset + 26 : info.header_offset + 28], "little")
            extra_length = int.from_bytes(data[info.header_offset + 28 : info.header_offset + 30], "little")
            start = info.header_offset + 30 + name_length + extra_length
            middle = start + info.compress_size // 2
            corrupted.append(data[:middle] + b"\xff\x00\xff\x00" + data[middle + 4 :])
    return corrupted


def test_a_long_sheet_is_cut_between_rows_and_every_piece_keeps_the_header(tmp_path: Path, config):
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Tide log"
    sheet.append(("Station", "Reading", "Observer"))
    for n in range(400):
        sheet.append((f"station{n:03d}", n * 0.25, f"observer{n % 9}"))
    path = tmp_path / "tides.xlsx"
    book.save(path)

    async def run() -> list[str]:
        async with HaikuRAG(tmp_path / "library.lancedb", config, create=True) as client:
            outcome = await client.ingest_file(path, embed=False)
            assert outcome.status == "ingested", outcome.reason
            assert outcome.document is not None
            chunks = await client.get_chunks(outcome.document)
            hits = await client.search("station377", limit=1, search_type="fts")
            return [chunk.content for chunk in chunks] + [hits[0].content]

    *chunks, hit = asyncio.run(run())
    assert len(chunks) > 3  # 400 rows do not fit one chunk
    for text in chunks:
        assert text.splitlines()[0] == "| Station | Reading | Observer |", text[:200]
    rows = [line for text in chunks for line in text.splitlines()[2:]]
    assert len(rows) == 400 and rows[377] == "| station377 | 94.25 | observer8 |"  # none split or lost
    assert "| station377 | 94.25 | observer8 |" in hit.splitlines() and "| Station | Reading | Observer |" in hit


def test_word_text_inside_content_controls_and_tracked_insertions_is_kept(tmp_path: Path):
    """A cover page in a content control (w:sdt) and a tracked insertion (w:ins) are text a
    reader sees; deleted text (w:delText) is not."""
    import docx
    from docx.oxml import parse_xml

    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    document = docx.Document()
    document.add_paragraph("Plain opening paragraph.")
    body = document.element.body
    body.insert(0, parse_xml(
        f'<w:sdt {w}><w:sdtPr/><w:sdtContent><w:p><w:r><w:t>Cover page inside a content control</w:t></w:r></w:p>'
        "</w:sdtContent></w:sdt>"
    ))
    paragraph = parse_xml(
        f'<w:p {w}><w:r><w:t xml:space="preserve">Seals were </w:t></w:r>'
        '<w:ins w:id="1" w:author="a" w:date="2024-01-01T00:00:00Z"><w:r><w:t>newly </w:t></w:r></w:ins>'
        '<w:del w:id="2" w:author="a" w:date="2024-01-01T00:00:00Z"><w:r><w:delText>never </w:delText></w:r></w:del>'
        "<w:r><w:t>counted.</w:t></w:r></w:p>"
    )
    body.insert(len(body) - 1, paragraph)  # before the section properties
    path = tmp_path / "controls.docx"
    document.save(path)
    conversion = convert_source(path.read_bytes(), filename="controls.docx")
    texts = [getattr(item, "text", "") for item, _ in conversion.document.iterate_items()]
    assert texts == ["Cover page inside a content control", "Plain opening paragraph.", "Seals were newly counted."]
