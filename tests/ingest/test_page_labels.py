"""Each PDF page's label as printed (DEFECTS 20:02: a book was cited "pp. 36–37", the PDF's
sheets, where its pages print "22" and "23"): the PDF's own /PageLabels when it has them, else
the running numbers its pages print in their header/footer zones, believed only over a run of
agreeing pages; stored in the document's metadata only where a label differs from the sheet."""

from __future__ import annotations

from pathlib import Path

import pdf_factory
from pdf_factory import FolioPage

from haiku.rag.config import AppConfig
from haiku.rag.ingest.pdf import convert_pdf
from haiku.rag.ingest.pdf.page_labels import ZoneLine, pdf_page_labels, printed_page_labels
from haiku.rag.ingest.pipeline import prepare_document

WORDS = pdf_factory.FOLIO_WORDS
PRINTED = pdf_factory.BOOK_LABELS
book = pdf_factory.folio_book
_body = pdf_factory.folio_body


def _labels(path: Path) -> dict[int, str]:
    found: dict[int, str] = {}

    def read(doc, conversion) -> None:
        found.update(pdf_page_labels(doc, conversion.document))

    convert_pdf(path.read_bytes(), source=path.name, while_open=read)
    return found


def test_a_books_printed_running_numbers_are_its_page_labels(tmp_path):
    """Front matter in roman numerals, body pages 22, 23 (folio left or right of the running
    head), a chapter opening inside the run labelled by it (24), and pages outside every run
    (title, copyright, the first chapter's opening, a last page printing a table's total 17)
    labelled "" (not known) rather than claimed. The footer-zone figure 99 beside page 25's
    folio claims nothing."""
    path = tmp_path / "quokkas.pdf"
    pdf_factory.make_folio_pdf(path, book())
    assert _labels(path) == PRINTED


def test_the_pdfs_own_page_labels_win(tmp_path):
    path = tmp_path / "labelled.pdf"
    rules = [
        {"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
        {"startpage": 5, "prefix": "", "style": "D", "firstpagenum": 21},
    ]
    pdf_factory.make_folio_pdf(path, book(), page_labels=rules)
    expected = {1: "i", 2: "ii", 3: "iii", 4: "iv", 5: "v"} | {sheet: str(sheet + 15) for sheet in range(6, 13)}
    assert _labels(path) == expected


def test_page_labels_that_restate_the_sheets_count_as_absent(tmp_path):
    """A producer's "decimal from 1" /PageLabels says nothing: the printed numbers decide."""
    path = tmp_path / "restated.pdf"
    pdf_factory.make_folio_pdf(path, book(), page_labels=[{"startpage": 0, "prefix": "", "style": "D", "firstpagenum": 1}])
    assert _labels(path) == PRINTED


def test_a_pdf_without_running_numbers_or_numbered_like_its_sheets_gets_no_labels(tmp_path):
    plain = tmp_path / "plain.pdf"
    pdf_factory.make_folio_pdf(plain, [FolioPage(body=_body(s), feet=("Field notes, 2024",)) for s in range(1, 6)])
    assert _labels(plain) == {}
    same = tmp_path / "same.pdf"
    pdf_factory.make_folio_pdf(same, [FolioPage(body=_body(s), feet=(f"Page {s} of 5",)) for s in range(1, 6)])
    assert _labels(same) == {}


def test_numbers_that_agree_with_no_run_claim_nothing(tmp_path):
    """Figures in the footer zone (a table's totals, a year, a footnote's mark) that do not
    count up with the sheets, and a run of only two agreeing pages, label nothing."""
    path = tmp_path / "totals.pdf"
    feet = [("Total 412",), ("Total 97",), ("2024",), ("31",), ("32",), ("Total 1204",)]
    pdf_factory.make_folio_pdf(path, [FolioPage(body=_body(s + 1), feet=f) for s, f in enumerate(feet)])
    assert _labels(path) == {}


def test_a_footnote_counting_up_above_the_folios_is_not_read_as_one(tmp_path):
    """Each page's one footnote mark counts up one a page too (an offset as constant as the
    folios'): only the outermost numbered line of a zone can be a folio, so the notes above
    the folios claim nothing; on the page without a folio the note's mark is outermost, agrees
    with no run, and the folios' run labels the page."""
    pages = [
        FolioPage(body=_body(s), feet=(f"{s + 40}", f"{s + 2} See the ranger's census of that year."))
        for s in range(1, 10)
    ]
    pages[3] = FolioPage(body=_body(4), feet=("6 See the ranger's census of that year.",))
    assert _labels_of(tmp_path, pages) == {s: str(s + 40) for s in range(1, 10)}


def test_two_runs_over_the_same_pages_label_them_only_when_one_far_outnumbers_the_other():
    """A run twice as long as its rival over the same pages keeps them; two runs of like
    length (a journal's page and the article's own, both counting) leave them unknown."""
    folios = {s: [ZoneLine("bottom", 30.0, f"{s + 100}")] for s in range(1, 10)}
    rival = {s: [ZoneLine("top", 30.0, f"Part {s + 7}")] for s in range(3, 6)}
    both = {s: folios[s] + rival.get(s, []) for s in folios}
    assert printed_page_labels(both, 9) == {s: str(s + 100) for s in range(1, 10)}
    even = {s: folios[s] + [ZoneLine("top", 30.0, f"{s + 334}")] for s in folios}
    assert printed_page_labels(even, 9) == {}


def _labels_of(tmp_path: Path, pages: list[FolioPage]) -> dict[int, str]:
    path = tmp_path / "pages.pdf"
    pdf_factory.make_folio_pdf(path, pages)
    return _labels(path)


def test_ingest_stores_the_labels_in_the_documents_metadata(tmp_path):
    path = tmp_path / "quokkas.pdf"
    pdf_factory.make_folio_pdf(path, book())
    document = prepare_document(path.read_bytes(), filename=path.name, uri=path.as_uri(), config=AppConfig())
    assert document.metadata["page_labels"] == {str(sheet): label for sheet, label in PRINTED.items()}
    plain = tmp_path / "plain.pdf"
    pdf_factory.make_folio_pdf(plain, [FolioPage(body=_body(s)) for s in range(1, 4)])
    ordinary = prepare_document(plain.read_bytes(), filename=plain.name, uri=plain.as_uri(), config=AppConfig())
    assert "page_labels" not in ordinary.metadata
