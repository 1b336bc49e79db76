"""Figures as evidence on real PDFs: how many captioned figures ("Figure N" / "Fig. N")
become figure chunks, with their caption and the text inside them (axis labels, legends),
and how many picture chunks have no caption (backgrounds, logos: should be none).

Run on demand (pytest does not collect it):

    python tests/bench/bench_figures.py [--data DIR] [--files a.pdf b.pdf] [--json OUT]

Reads ``DIR/pdfs_realworld`` (``DIR`` defaults to ``../shared/data`` beside the repository;
``HAIKU_SHARED_DATA`` also works) and skips cleanly when it is absent. No timing.

Per file: ``captions`` = lines of the text layer that start with "Figure N" / "Fig. N"
(distinct numbers; PyMuPDF's own text, not ours), ``figure chunks`` = chunks whose first ref is
a picture, ``with caption`` = those whose text starts with a "Figure/Fig." caption,
``with inner text`` = those carrying text from inside the figure's box, ``uncaptioned`` =
picture chunks with no caption.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
try:
    import haiku.rag  # noqa: F401
except ImportError:  # a plain checkout without `pip install -e .`
    sys.path.insert(0, str(REPO_ROOT / "haiku_rag"))

CAPTION = re.compile(r"^\s*(?:Figure|Fig\.)\s*(\d+)", re.IGNORECASE)
DEFAULT_FILES = [
    "pymupdf__2201.00069.pdf",
    "paperqa__paper.pdf",
    "unstructured__layout-parser-paper-with-empty-pages.pdf",
    "pdfjs__tracemonkey.pdf",
    "unstructured__multi-column.pdf",
    "docling__amt_handbook_sample.pdf",
    "docling__picture_classification.pdf",
    "docling__table_mislabeled_as_picture.pdf",
    "pdfjs__TAMReview.pdf",
    "unstructured__fr_olap.pdf",
    "pdfplumber__WARN-Report-for-7-1-2015-to-03-25-2016.pdf",
    "pypdf__GeoBase_NHNC1_Data_Model_UML_EN.pdf",
]


def printed_captions(data: bytes) -> set[str]:
    import pymupdf

    numbers: set[str] = set()
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        for page in doc:
            for block in page.get_text("dict")["blocks"]:
                for line in block.get("lines", [])[:1]:
                    text = "".join(span["text"] for span in line["spans"])
                    match = CAPTION.match(text)
                    if match:
                        numbers.add(match.group(1))
    return numbers


def figures_of(path: Path) -> dict:
    from haiku.rag.config import AppConfig
    from haiku.rag.ingest.pipeline import prepare_document

    data = path.read_bytes()
    new = prepare_document(data, filename=path.name, uri=path.name, config=AppConfig())
    chunks = [c for c in new.chunks if c.doc_item_refs and c.doc_item_refs[0].startswith("#/pictures/")]
    with_caption = [c for c in chunks if CAPTION.match(c.text)]
    numbers = {CAPTION.match(c.text).group(1) for c in with_caption}  # type: ignore[union-attr]
    with_inner = [c for c in chunks if "caption" in c.labels and len(c.text.split("\n")) > 1]
    return {
        "file": path.name,
        "captions": len(printed_captions(data)),
        "figure_chunks": len(chunks),
        "with_caption": len(with_caption),
        "caption_numbers": len(numbers),
        "with_inner_text": len(with_inner),
        "uncaptioned": len(chunks) - len([c for c in chunks if "caption" in c.labels]),
        "samples": [c.text[:160].replace("\n", " / ") for c in chunks[:3]],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_data = Path(os.environ.get("HAIKU_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--files", nargs="*", default=DEFAULT_FILES)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--samples", action="store_true")
    args = parser.parse_args()
    folder = args.data / "pdfs_realworld" / "files"
    if not folder.is_dir():
        print(f"skipped: {folder} not found")
        return 0
    rows = [figures_of(folder / name) for name in args.files if (folder / name).exists()]
    print(f"{'file':58} {'capt':>5} {'chunks':>6} {'w/capt':>6} {'nums':>5} {'inner':>5} {'uncapt':>6}")
    for row in rows:
        print(
            f"{row['file'][:58]:58} {row['captions']:5} {row['figure_chunks']:6} {row['with_caption']:6}"
            f" {row['caption_numbers']:5} {row['with_inner_text']:5} {row['uncaptioned']:6}"
        )
        if args.samples:
            for sample in row["samples"]:
                print("    ", sample)
    total = {k: sum(r[k] for r in rows) for k in ("captions", "figure_chunks", "with_caption", "caption_numbers", "with_inner_text", "uncaptioned")}
    print(f"{'all':58} {total['captions']:5} {total['figure_chunks']:6} {total['with_caption']:6} {total['caption_numbers']:5} {total['with_inner_text']:5} {total['uncaptioned']:6}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "total": total}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
