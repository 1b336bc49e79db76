"""Text fidelity of PDF conversion: is the text we index the text the page says?

Run on demand (pytest does not collect it):

    python tests/bench/bench_pdf_fidelity.py [--data DIR] [--json OUT] [--show-missing N]

Reads ``DIR/pdfs_realworld`` (``DIR`` defaults to ``../shared/data`` next to the repository);
skips cleanly when it is absent. Two tables, both from what the store keeps as the
document's content (``ItemTexts.document_markdown()``, the text chunks are cut from),
Markdown marks removed:

1. **Against the reference conversions** (``groundtruth/docling__*.md``: docling's
   conversions of the same PDFs; OCR references are the OCR bench's business), per file:
   - *recall*: share of the reference's words (lower-cased ``\\w+`` tokens, as a multiset)
     found in ours;
   - *CER*: character edit distance from the reference text to ours (whitespace collapsed,
     lower-cased), divided by the reference's length. Computed after aligning the two
     word sequences (difflib), each unaligned stretch costing its own character edit
     distance: an upper bound of the true distance, exact when the texts differ only
     within words;
   - *order*: share of the reference's words that are found *in the reference's order*
     (the longest common subsequence of the word sequences, as difflib's matching blocks,
     over the reference's word count). recall - order is the share of words we have but
     in another place (a column read out of turn, a fragment moved to the end of a
     paragraph).
2. **Word integrity on every text PDF** (no reference needed): PyMuPDF's own words
   (``page.get_text("words")``: the characters between two spaces on one printed line)
   that are found whole among the text of all our items (running headers and footers
   included, which the content leaves out). A word of one line that we split (``fz_new_context``
   -> ``fz`` ... ``new``) or glue to its neighbour is missed; words ending in a hyphen
   (hyphenation we undo on purpose) and words of under 3 characters are not counted.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections import Counter
from difflib import SequenceMatcher
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
try:
    import haiku.rag  # noqa: F401
except ImportError:  # a plain checkout without `pip install -e .`
    sys.path.insert(0, str(REPO_ROOT / "haiku_rag"))

import pymupdf  # noqa: E402
from bench_ocr import levenshtein as exact_levenshtein  # noqa: E402  (same folder)
from docling_core.types.doc import ContentLayer  # noqa: E402

from haiku.rag.errors import IngestError  # noqa: E402
from haiku.rag.ingest.items import ItemTexts  # noqa: E402
from haiku.rag.ingest.pdf import OcrOptions, convert_pdf  # noqa: E402

REALWORLD = Path("pdfs_realworld")
WORD = re.compile(r"\w+")
MARKDOWN_MARKS = re.compile(r"(?m)^#+\s|^```.*$|<!-- image -->|^\s*[-*]\s|\|:?-{3,}:?|\||\$\$")
EDGE_PUNCTUATION = "\"'“”‘’()[]{}<>.,;:!?*|•●▪■◦–—"
HYPHENS = ("-", "\u00ad", "\u2010")


def our_text(data: bytes, name: str) -> str:
    conversion = convert_pdf(data, source=name, ocr=OcrOptions(enabled=False))
    return ItemTexts(conversion.document).document_markdown()


def plain(markdown: str) -> str:
    return " ".join(MARKDOWN_MARKS.sub(" ", markdown).split())


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def levenshtein(a: str, b: str) -> int:
    """The OCR bench's edit distance, bounded: a huge unaligned stretch counts as all edits
    instead of hanging."""
    if len(a) * len(b) > 4_000_000:
        return max(len(a), len(b))
    return exact_levenshtein(a, b)


def compare(reference: str, ours: str) -> dict[str, float]:
    ref_words, our_words = words(reference), words(ours)
    found = Counter(ref_words) & Counter(our_words)
    matcher = SequenceMatcher(None, ref_words, our_words, autojunk=False)
    in_order = sum(block.size for block in matcher.get_matching_blocks())
    # CER over the lower-cased texts, aligned word by word (tokens keep their punctuation)
    ref_tokens, our_tokens = reference.lower().split(), ours.lower().split()
    edits = 0
    aligner = SequenceMatcher(None, ref_tokens, our_tokens, autojunk=False)
    for tag, i1, i2, j1, j2 in aligner.get_opcodes():
        if tag != "equal":
            edits += levenshtein(" ".join(ref_tokens[i1:i2]), " ".join(our_tokens[j1:j2]))
            edits += (
                1 if (i1 == i2) != (j1 == j2) else 0
            )  # the space around an inserted/deleted stretch
    ref_chars = max(1, len(" ".join(ref_tokens)))
    return {
        "words": len(ref_words),
        "recall": sum(found.values()) / max(1, len(ref_words)),
        "cer": edits / ref_chars,
        "order": in_order / max(1, len(ref_words)),
    }


def reference_table(root: Path, show_missing: int) -> list[dict]:
    rows = []
    for ref_path in sorted((root / "groundtruth").glob("docling__*.md")):
        if ".tesseract." in ref_path.name:
            continue  # an OCR reference (the OCR bench measures those)
        pdf_name = ref_path.name.split(".pdf")[0] + ".pdf"
        pdf_path = root / "files" / pdf_name
        if not pdf_path.exists():
            continue
        reference = plain(ref_path.read_text())
        ours = plain(our_text(pdf_path.read_bytes(), pdf_name))
        row = {"file": pdf_name, **compare(reference, ours)}
        rows.append(row)
        if show_missing:
            missing = Counter(words(reference)) - Counter(words(ours))
            row["missing"] = [w for w, _ in missing.most_common(show_missing)]
    return rows


def raw_words(page: pymupdf.Page) -> list[str]:
    kept = []
    after_hyphen = False
    for entry in page.get_text("words", flags=pymupdf.TEXT_MEDIABOX_CLIP):
        word = entry[4].strip(EDGE_PUNCTUATION)
        hyphenated = word.endswith(HYPHENS)
        # the two halves of a word hyphenated at a line end are joined in ours on purpose
        if len(word) >= 3 and not hyphenated and not after_hyphen:
            kept.append(word)
        after_hyphen = hyphenated
    return kept


def all_item_text(data: bytes, name: str) -> str:
    """Every text item (running headers and footers too), tables as Markdown, one per line."""
    conversion = convert_pdf(data, source=name, ocr=OcrOptions(enabled=False))
    doc = conversion.document
    texts = ItemTexts(doc)
    layers = {ContentLayer.BODY, ContentLayer.FURNITURE}
    return "\n".join(
        texts.text(item) for item, _ in doc.iterate_items(included_content_layers=layers)
    )


def integrity_table(root: Path, show_missing: int) -> list[dict]:
    manifest = {row["file"]: row for row in csv.DictReader((root / "manifest.csv").open())}
    rows = []
    for pdf_path in sorted((root / "files").glob("*.pdf")):
        category = manifest.get(pdf_path.name, {}).get("category", "")
        if "scanned" in category or "ocr" in category:
            continue
        data = pdf_path.read_bytes()
        try:
            ours = all_item_text(data, pdf_path.name)
        except IngestError:
            continue
        with pymupdf.open(stream=data, filetype="pdf") as doc:
            theirs = [w for page in doc for w in raw_words(page)]
        our_tokens = Counter(token.strip(EDGE_PUNCTUATION) for token in plain(ours).split())
        missing = Counter(theirs) - our_tokens
        row = {
            "file": pdf_path.name,
            "words": len(theirs),
            "whole": 1 - sum(missing.values()) / max(1, len(theirs)),
            "identifiers": sum(1 for w in theirs if "_" in w),
            "identifiers_missing": sum(n for w, n in missing.items() if "_" in w),
        }
        if show_missing:
            row["missing"] = [w for w, _ in missing.most_common(show_missing)]
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument(
        "--show-missing", type=int, default=0, help="list the N most missed words per file"
    )
    args = parser.parse_args()
    root = args.data / REALWORLD
    if not (root / "groundtruth").is_dir():
        print(f"skipped: {root} not found (pass --data)")
        return 0

    reference = reference_table(root, args.show_missing)
    print("| file | reference words | recall | CER | order |")
    print("|---|---:|---:|---:|---:|")
    for row in reference:
        print(
            f"| {row['file']} | {row['words']} | {row['recall']:.3f} | {row['cer']:.3f} | {row['order']:.3f} |"
        )
        if row.get("missing"):
            print(f"|   missing: {' '.join(row['missing'])} | | | | |")
    total = sum(r["words"] for r in reference)
    if total:
        mean = {
            k: sum(r[k] * r["words"] for r in reference) / total for k in ("recall", "cer", "order")
        }
        print(
            f"| **all (word-weighted)** | {total} | {mean['recall']:.3f} | {mean['cer']:.3f} | {mean['order']:.3f} |"
        )

    integrity = integrity_table(root, args.show_missing)
    print()
    print("| file | PyMuPDF words | whole in ours | identifiers (with _) | identifiers missed |")
    print("|---|---:|---:|---:|---:|")
    for row in integrity:
        print(
            f"| {row['file']} | {row['words']} | {row['whole']:.4f} | {row['identifiers']} "
            f"| {row['identifiers_missing']} |"
        )
        if row.get("missing"):
            print(f"|   missing: {' '.join(row['missing'])} | | | | |")
    words_all = sum(r["words"] for r in integrity)
    whole_all = sum(r["whole"] * r["words"] for r in integrity) / max(1, words_all)
    ident = sum(r["identifiers"] for r in integrity)
    ident_missing = sum(r["identifiers_missing"] for r in integrity)
    print(f"| **all** | {words_all} | {whole_all:.4f} | {ident} | {ident_missing} |")

    if args.json:
        args.json.write_text(json.dumps({"reference": reference, "integrity": integrity}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
