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


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower().strip()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=os.environ.get("HAIKU_SHARED_DATA", str(REPO.parent / "shared" / "data")))
    parser.add_argument("--markdown", action="store_true", help="print the per-file table for docs/metadata.md")
    args = parser.parse_args()
    folder = Path(args.data) / "pdfs_realworld" / "files"
    if not folder.is_dir():
        print(f"skipped: no pdfs_realworld at {folder}")
        return 0
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
