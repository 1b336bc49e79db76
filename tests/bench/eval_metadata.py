"""Bibliographic metadata extraction on the real-world PDFs (``pdfs_realworld``).

    .venv/bin/python tests/bench/eval_metadata.py [--data ../shared/data] [--markdown]

For every PDF, ``haiku.rag.pdf_metadata.extract_pdf_metadata`` (what ingestion stores as
``metadata["bibliographic"]``) is compared with what the PDF itself states, labelled by hand
below from its first pages and its Info dictionary: the first author's family name (None when
the PDF names no author) and the year (None when it states none). A file counts for the
author share only when it names an author, for the year share only when it states a year.
Organisations named as authors (FAA, IRCC) are labelled too and count as misses when the
extractor, which reads person names only, leaves them out.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "haiku_rag"))

# file -> (first author's family name as stated, year as stated, where it is stated)
LABELS: dict[str, tuple[str | None, int | None, str]] = {
    "docling__amt_handbook_sample.pdf": ("FAA", None, "Info author (an agency)"),
    "docling__odf_presentation_01.odp.pdf": ("Staar", None, "Info author"),
    "docling__right_to_left_01.pdf": ("Algadeeb", None, "Info author"),
    "paperqa__paper.pdf": ("Wellawatte", None, "author line"),
    "pdfjs__TAMReview.pdf": ("Chuttur", 2009, "author line; 'cite as' line"),
    "pdfjs__freeculture.pdf": ("Lessig", 2004, "Info author; title page and copyright page (p. 6, 8)"),
    "pdfjs__tracemonkey.pdf": ("Gal", 2009, "author line; copyright block"),
    "pdfjs__xfa_filled_imm1344e.pdf": ("Immigration, Refugees and Citizenship Canada", None, "Info author (an agency)"),
    "pdfplumber__WARN-Report-for-7-1-2015-to-03-25-2016.pdf": ("Cuellar-Lopez", None, "Info author"),
    "pymupdf__test-styled-table.pdf": ("Lieder", None, "Info author"),
    "pypdf-samples__GeoTopo-komprimiert.pdf": ("Thoma", 2016, "title page; Info author"),
    "unstructured__fr_olap.pdf": ("Aligon", None, "author line"),
    "unstructured__layout-parser-paper-with-empty-pages.pdf": ("Shen", 2021, "author line; arXiv stamp"),
    "unstructured__multi-column.pdf": ("Karpukhin", 2020, "author line; arXiv stamp"),
    "unstructured__a1977-backus-p21.pdf": (None, 1978, "page footer (Communications of the ACM, August 1978)"),
    "pdfplumber__federal-register-2020-17221.pdf": (None, 2020, "masthead date"),
    "pdfplumber__scotus-transcript-p1.pdf": (None, 2009, "hearing date"),
    "pdfjs__prefilled_f1040.pdf": (None, 2010, "form title"),
    "pdfplumber__nics-background-checks-2015-11.pdf": (None, 2015, "table title"),
    "pypdf__GeoBase_NHNC1_Data_Model_UML_EN.pdf": (None, 2004, "edition line"),
    "unstructured__pdf-bad-color-space.pdf": (None, 2023, "running header"),
    "unstructured__pdf2image-memory-error-test-400p.pdf": (None, 2023, "effective date"),
}


# Papers whose first page prints a title block and an author list: (title, every author's
# family name in the printed order), read by hand from page 1. ``arxiv``: the ones that are
# arXiv papers (a stamp or an arXiv stub); the others are research papers set the same way.
PRINTED: dict[str, tuple[str, list[str], bool]] = {
    "unstructured__multi-column.pdf": (
        "Dense Passage Retrieval for Open-Domain Question Answering",
        ["Karpukhin", "Oğuz", "Min", "Lewis", "Wu", "Edunov", "Chen", "Yih"], True),
    "unstructured__layout-parser-paper-with-empty-pages.pdf": (
        "LayoutParser: A Unified Toolkit for Deep Learning Based Document Image Analysis",
        ["Shen", "Zhang", "Dell", "Lee", "Carlson", "Li"], True),
    "paperqa__paper.pdf": (
        "A Perspective on Explanations of Molecular Prediction Models",
        ["Wellawatte", "Gandhi", "Seshadri", "White"], True),
    "pdfjs__tracemonkey.pdf": (
        "Trace-based Just-in-Time Type Specialization for Dynamic Languages",
        ["Gal", "Eich", "Shaver", "Anderson", "Mandelin", "Haghighat", "Kaplan", "Hoare", "Zbarsky",
         "Orendorff", "Ruderman", "Smith", "Reitmaier", "Bebenita", "Chang", "Franz"], False),
    "unstructured__fr_olap.pdf": (
        "Résumés et interrogations de logs de requêtes OLAP", ["Aligon", "Marcel", "Negre"], False),
    "pdfjs__TAMReview.pdf": (
        "Overview of the Technology Acceptance Model: Origins, Developments and Future Directions",
        ["Chuttur"], False),
}


def records_as_printed(folder: Path) -> int:
    """The record ingestion stores (``client._add_bibliographic``: the library's title passed
    to ``extract_pdf_metadata`` when the converter found one) against ``PRINTED``: title
    exact (case, spacing, ligatures and accents folded), author list exact (every family
    name, in order), and the share of printed authors found."""
    import inspect

    from haiku.rag.ingest.pdf import convert_pdf
    from haiku.rag.pdf_metadata import extract_pdf_metadata

    takes_title = "title" in inspect.signature(extract_pdf_metadata).parameters
    rows = []
    for name, (want_title, want_families, arxiv) in PRINTED.items():
        path = folder / name
        if not path.is_file():
            continue
        data = path.read_bytes()
        shown = convert_pdf(data, source=name).title
        if takes_title:
            record = extract_pdf_metadata(data, filename=name, title=shown)
        else:  # the code before issue 29: the record read its own title
            record = extract_pdf_metadata(data, filename=name)
        title = record.title if record else None
        families = [c.family for c in record.authors] if record else []
        title_ok = title is not None and _fold(" ".join(title.split())) == _fold(want_title)
        found = sum(1 for f in want_families if _fold(f) in {_fold(x) for x in families})
        exact = [_fold(f) for f in families] == [_fold(f) for f in want_families]
        rows.append((name, arxiv, title_ok, exact, found, len(want_families), len(families), title, shown))
    for name, arxiv, title_ok, exact, found, wanted, got, title, shown in rows:
        print(f"{name}{' (arXiv)' if arxiv else ''}: title {'✓' if title_ok else '✗'} {title!r}"
              f" (library: {shown!r}); authors {found}/{wanted} found, {got} given, list {'✓' if exact else '✗'}")
    for label, subset in (("arXiv papers", [r for r in rows if r[1]]), ("all papers", rows)):
        if not subset:
            continue
        titles = sum(1 for r in subset if r[2])
        lists = sum(1 for r in subset if r[3])
        found = sum(r[4] for r in subset)
        wanted = sum(r[5] for r in subset)
        given = sum(r[6] for r in subset)
        print(f"{label}: titles {titles}/{len(subset)}, author lists exact {lists}/{len(subset)}, "
              f"authors found {found}/{wanted} ({found / wanted:.0%}), authors given {given}")
    return 0


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower().strip()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=os.environ.get("HAIKU_SHARED_DATA", str(REPO.parent / "shared" / "data")))
    parser.add_argument("--markdown", action="store_true", help="print the per-file table for docs/metadata.md")
    parser.add_argument("--records", action="store_true",
                        help="titles and full author lists of the records ingestion stores, on the papers")
    args = parser.parse_args()
    folder = Path(args.data) / "pdfs_realworld" / "files"
    if not folder.is_dir():
        print(f"skipped: no pdfs_realworld at {folder}")
        return 0
    if args.records:
        return records_as_printed(folder)
    from haiku.rag.pdf_metadata import extract_pdf_metadata

    rows = []
    seconds = []
    for path in sorted(folder.glob("*.pdf")):
        data = path.read_bytes()
        started = time.perf_counter()
        record = extract_pdf_metadata(data, filename=path.name)
        seconds.append(time.perf_counter() - started)
        author = record.authors[0].family if record and record.authors else None
        year = record.year if record else None
        want_author, want_year, where = LABELS.get(path.name, (None, None, "states neither"))
        author_ok = None if want_author is None else (author is not None and _fold(author) == _fold(want_author))
        year_ok = None if want_year is None else year == want_year
        spurious = want_author is None and author is not None
        rows.append((path.name, want_author, want_year, where, author, year, author_ok, year_ok, spurious,
                     record.source if record else "-"))

    def share(values: list[bool | None]) -> tuple[int, int]:
        counted = [v for v in values if v is not None]
        return sum(counted), len(counted)

    a_ok, a_n = share([r[6] for r in rows])
    y_ok, y_n = share([r[7] for r in rows])
    both = [r[6] and r[7] for r in rows if r[6] is not None and r[7] is not None]
    spurious = sum(1 for r in rows if r[8])
    seconds.sort()
    if args.markdown:
        print("| file | stated author | stated year | stated in | extracted first author | extracted year | source | ok |")
        print("|---|---|---|---|---|---|---|---|")
        for name, wa, wy, where, a, y, aok, yok, spur, source in rows:
            marks = []
            if aok is not None:
                marks.append("author ✓" if aok else "author ✗")
            if yok is not None:
                marks.append("year ✓" if yok else "year ✗")
            if spur:
                marks.append("spurious author")
            print(f"| {name} | {wa or '–'} | {wy or '–'} | {where} | {a or '–'} | {y or '–'} | {source} | {', '.join(marks) or '–'} |")
        print()
    print(f"files: {len(rows)}")
    print(f"first author correct: {a_ok}/{a_n} ({a_ok / a_n:.0%}) of the PDFs that name an author")
    print(f"year correct: {y_ok}/{y_n} ({y_ok / y_n:.0%}) of the PDFs that state a year")
    print(f"both correct: {sum(both)}/{len(both)} of the PDFs that state both")
    print(f"spurious authors (PDF names none, extractor gave one): {spurious}/{sum(1 for r in rows if r[1] is None)}")
    extra_years = [r for r in rows if r[2] is None and r[5] is not None]
    from_info = sum(1 for r in extra_years if r[9] == "pdf-info")
    print(f"years where the PDF states none: {len(extra_years)}/{sum(1 for r in rows if r[2] is None)} "
          f"({from_info} of them the Info creation date of a PDF whose author came from Info)")
    print(f"time per file: median {seconds[len(seconds) // 2] * 1000:.1f} ms, max {seconds[-1] * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
