"""The optional online lookup of a record (Crossref, arXiv), against stand-in services on
127.0.0.1: off by default (no request at all), on it confirms and fills the record read from
the page, and an answer about another work is ignored."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from paper_factory import PASA_ARXIV, PASA_AUTHORS, PASA_TITLE, make_pasa_like_pdf

from haiku.rag.bibliography import bibliographic
from haiku.rag.client import HaikuRAG

DOI = "10.5555/pasa.2025.42"

ATOM = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <entry>
    <id>http://arxiv.org/abs/{id}v1</id>
    <published>2025-01-17T09:00:00Z</published>
    <title>{title}</title>
    {authors}
    <arxiv:doi>{doi}</arxiv:doi>
    <arxiv:journal_ref>Proceedings of the Paper Search Workshop 2025</arxiv:journal_ref>
  </entry>
</feed>"""


@contextmanager
def services(answers: dict[str, tuple[int, str, str]]) -> Iterator[tuple[str, list[str]]]:
    """GET ``path?query`` -> (status, content type, body); yields the base URL and the paths
    asked for."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            asked.append(self.path)
            status, kind, body = answers.get(self.path, (404, "text/plain", "not found"))
            raw = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", asked
    finally:
        httpd.shutdown()
        httpd.server_close()


def _atom(title: str, authors: list[str]) -> str:
    names = "".join(f"<author><name>{n}</name></author>" for n in authors)
    return ATOM.format(id=PASA_ARXIV, title=title, authors=names, doi=DOI)


def _configure(config, base: str, *, lookup: bool) -> None:
    config.bibliography.crossref.base_url = f"{base}/crossref"
    config.bibliography.arxiv.base_url = f"{base}/arxiv"
    config.bibliography.lookup = lookup


ARXIV_PATH = f"/arxiv/query?id_list={PASA_ARXIV}"
EVERYONE = [f"{g} {f}" for g, f, _ in PASA_AUTHORS]


async def _ingest(db_path, config, tmp_path, data: bytes):
    path = tmp_path / "pasa.pdf"
    path.write_bytes(data)
    async with HaikuRAG(db_path, config, create=True) as client:
        document = (await client.ingest_file(path, embed=False)).document
    return bibliographic(document.metadata)


async def test_the_lookup_is_off_by_default_and_then_asks_nothing(db_path, config, tmp_path):
    assert config.bibliography.lookup is False
    with services({ARXIV_PATH: (200, "application/atom+xml", _atom(PASA_TITLE, EVERYONE))}) as (base, asked):
        _configure(config, base, lookup=False)
        record = await _ingest(db_path, config, tmp_path, make_pasa_like_pdf())
    assert asked == []
    assert record is not None and record.source == "first-page" and record.venue is None


async def test_arxiv_confirms_the_record_and_fills_what_the_page_does_not_say(db_path, config, tmp_path):
    with services({ARXIV_PATH: (200, "application/atom+xml", _atom(PASA_TITLE, EVERYONE))}) as (base, asked):
        _configure(config, base, lookup=True)
        record = await _ingest(db_path, config, tmp_path, make_pasa_like_pdf())
    assert asked == [ARXIV_PATH]
    assert record is not None and record.source == "first-page+arxiv"
    assert record.title == PASA_TITLE and [c.family for c in record.authors] == [f for _, f, _ in PASA_AUTHORS]
    assert (record.doi, record.venue, record.date) == (DOI, "Proceedings of the Paper Search Workshop 2025", "2025-01-17")


async def test_crossref_fills_the_authors_of_a_page_that_names_none(db_path, config, tmp_path):
    """A DOI on the page, no author line the reader can read: Crossref's authors fill it."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "Sparse Walrus Attention", fontname="hebo", fontsize=20)
    page.insert_textbox(pymupdf.Rect(72, 130, 540, 400), "The body of the paper. " * 40 + f" https://doi.org/{DOI}",
                        fontname="helv", fontsize=10)
    crossref = json.dumps({"status": "ok", "message": {
        "DOI": DOI, "title": ["Sparse Walrus Attention"],
        "author": [{"given": "Marta", "family": "Kowalczyk"}, {"given": "Li", "family": "Wen"}],
        "issued": {"date-parts": [[2017, 6]]}, "container-title": ["Journal of Polar Computing"],
        "volume": "12", "page": "101-115", "type": "journal-article",
    }})
    path = f"/crossref/works/{DOI}"
    with services({path: (200, "application/json", crossref)}) as (base, asked):
        _configure(config, base, lookup=True)
        record = await _ingest(db_path, config, tmp_path, doc.tobytes())
    assert asked == [path]
    assert record is not None and record.source.endswith("+crossref")
    assert [c.family for c in record.authors] == ["Kowalczyk", "Wen"]
    assert (record.year, record.venue, record.volume, record.pages) == (2017, "Journal of Polar Computing", "12", "101-115")
    assert record.item_type == "journalArticle" and record.title == "Sparse Walrus Attention"


ENTITY_FEED = (
    '<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY big "x">]>'
    '<feed xmlns="http://www.w3.org/2005/Atom"><entry><title>&big;</title></entry></feed>'
)


@pytest.mark.parametrize("answer", ["another work", "unreachable", "entities", "not xml"])
async def test_an_answer_about_another_work_or_no_answer_leaves_the_record_as_read(db_path, config, tmp_path, answer):
    answers = {ARXIV_PATH: (200, "application/atom+xml", _atom("Graph Neural Networks for Weather", ["Ada Lovelace"]))}
    if answer == "unreachable":
        answers = {ARXIV_PATH: (500, "text/plain", "server error")}
    elif answer == "entities":  # a feed that declares entities is refused, never expanded
        answers = {ARXIV_PATH: (200, "application/atom+xml", ENTITY_FEED)}
    elif answer == "not xml":
        answers = {ARXIV_PATH: (200, "application/atom+xml", "<feed><entry>")}
    with services(answers) as (base, asked):
        _configure(config, base, lookup=True)
        record = await _ingest(db_path, config, tmp_path, make_pasa_like_pdf())
    assert asked == [ARXIV_PATH]
    assert record is not None and record.source == "first-page"
    assert [c.family for c in record.authors] == [f for _, f, _ in PASA_AUTHORS] and record.doi is None


def test_a_working_folder_config_that_turns_the_lookup_on_needs_trust():
    """Turning the lookup on sends the library's identifiers out: like an endpoint, a
    working-folder haiku.rag.yaml may set it only when named (``--config``) or trusted."""
    from haiku.rag.config import endpoint_settings

    assert endpoint_settings({"bibliography": {"lookup": True}}) == ["bibliography.lookup"]
    assert endpoint_settings({"bibliography": {"lookup": False}}) == []
    assert endpoint_settings({"bibliography": {"crossref": {"base_url": "http://x"}}}) == ["bibliography.crossref.base_url"]
