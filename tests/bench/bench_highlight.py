"""Does the strong highlight land on the sentence an answer quoted from the widened context?

Run on demand (pytest does not collect it):

    python tests/bench/bench_highlight.py [--data DIR] [--queries 8]

Real PDFs of ``DIR/pdfs_realworld/files`` (``DIR`` defaults to ``HAIKU_SHARED_DATA``, else
``../shared/data``) are ingested into a temporary store. For each document, queries made of
words of some of its chunks are searched and widened by context expansion, as ``rag_search``
does. For every widened result, one sentence is taken from a neighbour's passage (context, not
the hit) and found on the page with PyMuPDF (``Page.search_for``). Two citations of that
sentence are compared: citing the hit's id (all a model could cite before every passage had an
id of its own) and citing the passage that holds it. A citation counts as landing when one of
its strong boxes overlaps the sentence's boxes on the page. Skips cleanly when the data is
absent.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
try:
    import haiku.rag  # noqa: F401
except ImportError:  # a plain checkout without `pip install -e .`
    sys.path.insert(0, str(REPO / "haiku_rag"))

from haiku.rag.citations import Citation  # noqa: E402
from haiku.rag.client import HaikuRAG  # noqa: E402
from haiku.rag.config import load_config  # noqa: E402

PDFS = (
    "paperqa__paper.pdf",
    "pymupdf__2201.00069.pdf",
    "docling__multi_page.pdf",
    "unstructured__multi-column.pdf",
    "pdfjs__tracemonkey.pdf",
)
SENTENCE = re.compile(r"[A-Z][^.!?]{40,160}[.!?]")


def overlaps(a, b) -> bool:
    return a.page == b[0] and a.x0 < b[3] and b[1] < a.x1 and a.y0 < b[4] and b[2] < a.y1


def sentence_boxes(pdf, text: str) -> list[tuple[int, float, float, float, float]]:
    needle = text[:45]
    found = []
    for number, page in enumerate(pdf, start=1):
        for rect in page.search_for(needle):
            found.append((number, rect.x0, rect.y0, rect.x1, rect.y1))
    return found


async def measure(data: Path, queries: int, names: list[str]) -> None:
    import pymupdf

    files = [data / "pdfs_realworld" / "files" / name for name in names]
    files = [f for f in files if f.exists()]
    if not files:
        print(f"skipped: no PDFs under {data / 'pdfs_realworld'}")
        return
    root = Path(tempfile.mkdtemp())
    config = load_config()
    config.storage.data_dir = root / "data"
    tried = hit_lands = passage_lands = 0
    async with HaikuRAG(root / "bench.lancedb", config, create=True) as client:
        for path in files:
            outcome = await client.ingest_file(path)
            print(f"{path.name}: {outcome.status}")
        for document in await client.list_documents():
            pdf = pymupdf.open(stream=await client.get_source_bytes(document), filetype="pdf")
            chunks = await client.get_chunks(document)
            step = max(len(chunks) // queries, 1)
            for chunk in chunks[::step][:queries]:
                words = [w for w in re.findall(r"[A-Za-z]{5,}", chunk.content)][:6]
                if len(words) < 3:
                    continue
                hits = await client.search(" ".join(words), limit=1, filter=f"id = '{document.id}'")
                if not hits:
                    continue
                [result] = await client.expand_context(hits)
                neighbours = [c for c in result.chunk_texts if c not in {result.chunk_id, *result.chunk_ids}]
                for neighbour in neighbours[:1]:
                    sentences = SENTENCE.findall(result.chunk_texts[neighbour])
                    located = next(
                        ((s, b) for s in sentences if (b := sentence_boxes(pdf, s))), None
                    )
                    if located is None:
                        continue
                    _, boxes = located
                    tried += 1
                    for chunk_id, counter in ((result.chunk_id, "hit"), (neighbour, "passage")):
                        cited = Citation.from_result(1, chunk_id, result)
                        lands = any(overlaps(s, b) for s in cited.boxes for b in boxes)
                        if lands and counter == "hit":
                            hit_lands += 1
                        if lands and counter == "passage":
                            passage_lands += 1
            pdf.close()
    print(f"sentences quoted from context: {tried}")
    print(f"strong highlight on the quoted sentence, citing the hit:     {hit_lands}/{tried}")
    print(f"strong highlight on the quoted sentence, citing its passage: {passage_lands}/{tried}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", default=os.environ.get("HAIKU_SHARED_DATA", str(REPO.parent / "shared" / "data"))
    )
    parser.add_argument("--queries", type=int, default=8)
    parser.add_argument("--pdf", action="append", help="a file of pdfs_realworld/files (repeat)")
    args = parser.parse_args()
    asyncio.run(measure(Path(args.data), args.queries, args.pdf or list(PDFS)))


if __name__ == "__main__":
    main()
