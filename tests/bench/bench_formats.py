"""Office/ODT/EPUB converters: ours (python-docx, python-pptx, openpyxl, stdlib) against
docling's own backends (docling-slim, used directly without its DocumentConverter), on files
made here with each format's library. Prints, per format: conversion time (median of runs),
items made (headings, list items, tables), and per converter family the import time in a fresh
interpreter and the installed size of the packages it needs.

    python tests/bench/bench_formats.py [--runs 5] [--docling-site DIR]

``--docling-site``: a folder where docling-slim and its format libraries were installed with
``pip install --target DIR --no-deps docling-slim==2.143.0 python-docx python-pptx openpyxl
et-xmlfile odfdo beautifulsoup4 soupsieve xlsxwriter filetype langcodes pluggy`` (kept out of
the project's environment on purpose). Results: docs/formats.md.
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def make_files(folder: Path) -> dict[str, bytes]:
    """A 40-section report, a 60-slide deck, a 3-sheet workbook of 2,000 rows, a 40-section
    ODT and a 30-chapter EPUB."""
    import docx
    import openpyxl
    from pptx import Presentation
    from pptx.util import Inches

    files: dict[str, bytes] = {}
    words = "the survey counted otters along the estuary at dawn and again at dusk".split()
    sentence = " ".join(words).capitalize() + ". "

    document = docx.Document()
    document.add_heading("Report", 0)
    for s in range(40):
        document.add_heading(f"Section {s}", 1)
        for _ in range(5):
            document.add_paragraph(sentence * 4)
        for i in range(3):
            document.add_paragraph(f"Point {i} of section {s}", style="List Bullet")
        table = document.add_table(rows=6, cols=4)
        for r in range(6):
            for c in range(4):
                table.cell(r, c).text = f"h{c}" if r == 0 else f"{s}.{r}.{c}"
    buffer = io.BytesIO()
    document.save(buffer)
    files["docx"] = buffer.getvalue()

    deck = Presentation()
    for n in range(60):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide title {n}"
        frame = slide.placeholders[1].text_frame
        frame.text = sentence
        for _ in range(4):
            frame.add_paragraph().text = sentence
        if n % 5 == 0:
            table = slide.shapes.add_table(5, 3, Inches(1), Inches(4), Inches(6), Inches(2)).table
            for r in range(5):
                for c in range(3):
                    table.cell(r, c).text = f"{n}.{r}.{c}"
    buffer = io.BytesIO()
    deck.save(buffer)
    files["pptx"] = buffer.getvalue()

    book = openpyxl.Workbook()
    for index in range(3):
        sheet = book.active if index == 0 else book.create_sheet()
        sheet.title = f"Sheet{index}"
        sheet.append([f"col{c}" for c in range(8)])
        for r in range(2000 // 3):
            sheet.append([r, r * 1.5, f"site {r}", "otter", r % 7, "estuary", r * 2, "dawn"])
    buffer = io.BytesIO()
    book.save(buffer)
    files["xlsx"] = buffer.getvalue()

    from office_factory import ODT_CONTENT, make_epub, make_odt

    body = "".join(
        f'<text:h text:outline-level="1">Section {s}</text:h>' + f"<text:p>{sentence * 4}</text:p>" * 5
        for s in range(40)
    )
    content = ODT_CONTENT.replace("<office:body><office:text>", "<office:body><office:text>" + body)
    files["odt"] = make_odt(folder / "bench.odt", content).read_bytes()

    epub = make_epub(folder / "bench.epub")
    with zipfile.ZipFile(epub) as original:
        members = {name: original.read(name) for name in original.namelist()}
    chapter = members["OEBPS/text/chapter2.xhtml"].decode().replace(
        "<p>Entries record passing schooners.</p>", f"<p>{sentence * 4}</p>" * 20
    )
    spine = "".join(f'<itemref idref="x{i}"/>' for i in range(30))
    manifest = "".join(f'<item id="x{i}" href="text/x{i}.xhtml" media-type="application/xhtml+xml"/>' for i in range(30))
    opf = members["OEBPS/content.opf"].decode().replace("<spine>", "<spine>" + spine).replace("<manifest>", "<manifest>" + manifest)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
        for name, data in members.items():
            package.writestr(name, opf if name == "OEBPS/content.opf" else data)
        for i in range(30):
            package.writestr(f"OEBPS/text/x{i}.xhtml", chapter.replace("Chapter 2: The Log", f"Chapter {i + 3}"))
    files["epub"] = buffer.getvalue()
    return files


def census(doc) -> str:
    kinds: dict[str, int] = {}
    for item, _ in doc.iterate_items():
        name = type(item).__name__
        kinds[name] = kinds.get(name, 0) + 1
    short = {"SectionHeaderItem": "h", "ListItem": "li", "TableItem": "tbl", "TextItem": "p", "TitleItem": "title"}
    return " ".join(f"{short.get(k, k)}={v}" for k, v in sorted(kinds.items()) if k in short)


def ours(kind: str, data: bytes):
    from haiku.rag.ingest.converters import convert_source

    return convert_source(data, filename=f"bench.{kind}").document


def docling_backend(kind: str, data: bytes):
    from docling.backend.epub_backend import EpubDocumentBackend
    from docling.backend.msexcel_backend import MsExcelDocumentBackend
    from docling.backend.mspowerpoint_backend import MsPowerpointDocumentBackend
    from docling.backend.msword_backend import MsWordDocumentBackend
    from docling.backend.opendocument_backend import OdtDocumentBackend
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.document import InputDocument

    backend, fmt = {
        "docx": (MsWordDocumentBackend, InputFormat.DOCX),
        "pptx": (MsPowerpointDocumentBackend, InputFormat.PPTX),
        "xlsx": (MsExcelDocumentBackend, InputFormat.XLSX),
        "odt": (OdtDocumentBackend, InputFormat.ODT),
        "epub": (EpubDocumentBackend, InputFormat.EPUB),
    }[kind]
    source = InputDocument(path_or_stream=io.BytesIO(data), format=fmt, backend=backend, filename=f"bench.{kind}")
    return source._backend.convert()


def timed(convert, kind: str, data: bytes, runs: int) -> tuple[float, str]:
    seconds = []
    doc = None
    for _ in range(runs):
        start = time.perf_counter()
        doc = convert(kind, data)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), census(doc)


def import_seconds(statement: str, extra_path: str | None, runs: int = 3) -> float:
    env_path = ":".join(p for p in (extra_path, *sys.path) if p)
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    values = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={"PYTHONPATH": env_path}).stdout)
        for _ in range(runs)
    ]
    return statistics.median(values)


def installed_mb(packages: list[str], extra_path: str | None) -> float:
    import importlib.util

    total = 0
    for name in packages:
        if extra_path:
            candidate = Path(extra_path) / name
            if candidate.exists():
                total += sum(f.stat().st_size for f in candidate.rglob("*") if f.is_file())
                continue
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        folder = Path(next(iter(spec.submodule_search_locations)))
        total += sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    return total / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--docling-site", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        files = make_files(Path(folder))
    rows = []
    for kind, data in files.items():
        mine = timed(ours, kind, data, args.runs)
        rows.append((kind, len(data) // 1024, "ours", *mine))
    if args.docling_site:
        sys.path.insert(0, args.docling_site)
        for kind, data in files.items():
            try:
                theirs = timed(docling_backend, kind, data, args.runs)
            except Exception as exc:  # a backend that cannot read our file is a finding too
                theirs = (float("nan"), f"failed: {type(exc).__name__}: {exc}"[:80])
            rows.append((kind, len(data) // 1024, "docling", *theirs))
    print("| format | file kB | converter | median s | items |\n|---|---|---|---|---|")
    for kind, kb, who, seconds, items in sorted(rows):
        print(f"| {kind} | {kb} | {who} | {seconds:.3f} | {items} |")
    print()
    ours_import = import_seconds(
        "import haiku.rag.ingest.formats_ooxml, haiku.rag.ingest.formats_package, docx, pptx, openpyxl", None
    )
    ours_mb = installed_mb(["docx", "pptx", "openpyxl", "et_xmlfile", "xlsxwriter"], None)
    print(f"ours: import {ours_import:.2f} s (with docling-core), packages {ours_mb:.1f} MB (+ lxml, shared)")
    if args.docling_site:
        theirs_import = import_seconds(
            "import docling.backend.msword_backend, docling.backend.mspowerpoint_backend, "
            "docling.backend.msexcel_backend, docling.backend.opendocument_backend, docling.backend.epub_backend",
            args.docling_site,
        )
        theirs_mb = installed_mb(
            ["docling", "docx", "pptx", "openpyxl", "et_xmlfile", "xlsxwriter", "odfdo", "bs4", "soupsieve",
             "filetype", "langcodes", "pluggy"],
            args.docling_site,
        )
        print(f"docling backends: import {theirs_import:.2f} s, packages {theirs_mb:.1f} MB (+ lxml; "
              "imports transformers/pandas when installed)")


if __name__ == "__main__":
    main()
