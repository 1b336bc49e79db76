"""Document titles on the real PDFs: the title chosen before (``structure.choose_title``: the
metadata title unless it names nothing, else the first title or heading) and after
(``ingest.pdf.title.find_title``), one row per file, for the judgements in docs/titles.md.

Run on demand (pytest does not collect it):

    python tests/bench/eval_titles.py [--data DIR] [--markdown]

Reads ``DIR/pdfs_realworld/files`` (``DIR`` defaults to ``../shared/data`` next to the
repository, or ``HAIKU_SHARED_DATA``); skips cleanly when it is absent. Pages are analysed
exactly as ``convert_pdf`` does in ``fast`` mode; a title shown as "(file name)" is the file
name the pipeline falls back to, and a PDF whose pages all lack a text layer fails as "needs
OCR" (its row in the library shows the file name).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "haiku_rag"))


def titles(path: Path) -> tuple[str | None, str | None, str, str]:
    """(before, after, metadata title, note) for one PDF."""
    import pymupdf

    from haiku.rag.ingest.pdf import _analyse_page, _open
    from haiku.rag.ingest.pdf.extract import read_page
    from haiku.rag.ingest.pdf.structure import choose_title, classify_styles, mark_running_furniture
    from haiku.rag.ingest.pdf.title import find_title

    doc = _open(path.read_bytes(), source=path.name, password=None)
    try:
        pages = []
        for index in range(doc.page_count):
            try:
                page = doc.load_page(index)
                pages.append(_analyse_page(page, index + 1, read_page(page), None, []))
            except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase):
                continue
        metadata = doc.metadata or {}
    finally:
        doc.close()
    note = ""
    if all(p.needs_ocr or not p.usable_chars for p in pages):
        note = "needs OCR"
    mark_running_furniture(pages)
    classify_styles(pages)
    return choose_title(metadata, pages), find_title(metadata, pages, path.name), metadata.get("title") or "", note


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(os.environ.get("HAIKU_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    folder = args.data / "pdfs_realworld" / "files"
    if not folder.is_dir():
        print(f"skipped: no real-world PDFs under {folder}")
        return 0
    if args.markdown:
        print("| file | metadata title | before | after |")
        print("|---|---|---|---|")
    for path in sorted(folder.glob("*.pdf")):
        try:
            before, after, meta, note = titles(path)
        except Exception as exc:  # a PDF the converter rejects: say so, go on
            before = after = None
            meta, note = "", f"fails: {type(exc).__name__}"
        shown = [t if t else f"(file name) {path.stem}" for t in (before, after)]
        if args.markdown:
            cells = [path.name, meta.strip() or "—", *shown]
            if note:
                cells[-1] += f" — {note}"
            print("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        else:
            print(f"{path.name}\n  meta:   {meta.strip()!r}\n  before: {shown[0]}\n  after:  {shown[1]}  {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
