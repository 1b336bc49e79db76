"""What OCR'd words a change of the OCR changes on the real scans: each scan of
``DIR/pdfs_realworld/files`` (a PDF at least half of whose pages have no text layer; ``DIR``
defaults to ``../shared/data`` beside the repository, ``HAIKU_SHARED_DATA`` also works;
skipped cleanly when absent) is converted by ``haiku.rag.ingest.pdf.convert_pdf`` (the real
path: render, recognise, lines, blocks) with this tree's code and with the code of
``--baseline-rev`` (extracted with ``git archive``), each in a fresh process, one file after
another. The two texts are compared word by word (difflib over whitespace-split words):

* joined before punctuation: "Ltd . ," -> "Ltd.,", a word and the punctuation after it;
* word pieces joined: "transmis s ion" -> "transmission";
* dropped: words the new text no longer has ("三");
* other: any other difference (listed).

Run on demand (pytest does not collect it), niced on a shared machine:

    nice -n 10 python tests/bench/ocr_word_changes.py [--data DIR] [--baseline-rev main]
        [--runtime auto|onnxruntime|openvino] [--json OUT]
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from shared_data import data_dir

REPO_ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys
from pathlib import Path
from haiku.rag.ingest.pdf import convert_pdf
out = {}
for path in json.loads(sys.argv[1]):
    conversion = convert_pdf(Path(path).read_bytes(), source=Path(path).name)
    texts = [getattr(item, "text", "") for item, _ in conversion.document.iterate_items()]
    out[Path(path).name] = {
        "pages": conversion.pages_recognised,
        "text": "\n".join(text for text in texts if text),
    }
print(json.dumps(out))
"""

CLOSING = set(".,;:!?)]}\u2019\u201d\u00bb")



def scans(files: Path) -> list[Path]:
    import pymupdf

    found = []
    for path in sorted(files.glob("*.pdf")):
        with pymupdf.open(path) as doc:
            empty = sum(1 for page in doc if not page.get_text().strip())
            if doc.page_count and empty * 2 >= doc.page_count:
                found.append(path)
    return found


def run(tree: Path, paths: list[Path], runtime: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "HAIKU_RAG_OCR_RUNTIME": runtime}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps([str(path) for path in paths])],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def changes(old: str, new: str) -> dict[str, list[str]]:
    """The word-level differences of two texts, by kind: each space the new text no longer
    has between two old words (before closing punctuation, or inside a word), each old
    word dropped, and any other difference."""
    old_words, new_words = old.split(), new.split()
    kinds: dict[str, list[str]] = {"punctuation": [], "pieces": [], "dropped": [], "other": []}
    matcher = difflib.SequenceMatcher(a=old_words, b=new_words, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        before, after = old_words[i1:i2], new_words[j1:j2]
        joined = "".join(after)
        # words of the old text that are nowhere in the new one: dropped
        dropped = [word for word in before if word not in joined]
        kept = [word for word in before if word in joined]
        if "".join(kept) != joined:
            kinds["other"].append(f"{' '.join(before)} -> {' '.join(after)}")
            continue
        kinds["dropped"].extend(dropped)
        # the kept old words, consumed piece by piece into each new word
        pieces = iter(kept)
        for word in after:
            built = next(pieces)
            while built != word:
                piece = next(pieces)
                kind = "punctuation" if piece[0] in CLOSING else "pieces"
                kinds[kind].append(f"{built} {piece} -> {word}")
                built += piece
    return kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data")
    parser.add_argument("--baseline-rev", default="main")
    parser.add_argument("--runtime", default="auto")
    parser.add_argument("--json")
    args = parser.parse_args()
    files = data_dir(args.data) / "pdfs_realworld" / "files"
    if not files.is_dir():
        print(f"skipped: {files} is absent")
        return 0
    paths = scans(files)
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "baseline.tar"
        subprocess.run(
            ["git", "-C", str(REPO_ROOT), "archive", "-o", str(archive), args.baseline_rev]
            + ["haiku_rag"],
            check=True,
        )
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        old = run(Path(tmp) / "haiku_rag", paths, args.runtime)
    new = run(REPO_ROOT / "haiku_rag", paths, args.runtime)
    print(f"baseline {args.baseline_rev}, runtime {args.runtime}")
    print(
        "| scan | pages OCR'd | words old -> new | spaces gone before punctuation "
        "| word pieces joined | words dropped | other |"
    )
    print("|---|---|---|---|---|---|---|")
    report = {}
    for path in paths:
        before, after = old[path.name], new[path.name]
        kinds = changes(before["text"], after["text"])
        report[path.name] = kinds
        print(
            f"| {path.name} | {len(after['pages'])} | {len(before['text'].split())} -> "
            f"{len(after['text'].split())} | {len(kinds['punctuation'])} | {len(kinds['pieces'])} "
            f"| {len(kinds['dropped'])} | {len(kinds['other'])} |"
        )
    for name, kinds in report.items():
        for kind, shown in kinds.items():
            if shown:
                print(f"  {name} {kind}: " + "; ".join(shown))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"old": old, "new": new, "changes": report}, indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
