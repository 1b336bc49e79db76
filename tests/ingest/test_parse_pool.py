"""A batch parses files in two worker processes at once (``isolation.parse_ahead``) and gets
exactly what parsing them one by one gives: same chunks (text, heading path, pages, boxes,
doc item refs), same items, same content, in the order given."""

from __future__ import annotations

import threading
from pathlib import Path

import pdf_factory

from haiku.rag.client import HaikuRAG
from haiku.rag.ingest.isolation import (
    largest_first,
    parse_ahead,
    parse_document,
    parse_workers,
    release_extra_workers,
    shared_pool,
)
from haiku.rag.ingest.pipeline import prepare_document
from haiku.rag.operations import Progress


def _sources(folder: Path) -> list[Path]:
    return [
        pdf_factory.make_report_pdf(folder / "report.pdf").path,
        pdf_factory.make_two_column_pdf(folder / "columns.pdf").path,
        pdf_factory.make_paper_pdf(
            folder / "paper.pdf",
            title="Overlapping parses of a batch",
            authors=["Ada Lovelace", "Charles Babbage"],
            paragraphs=[
                f"Paragraph {i} on the analytical engine and its cards. " * 6 for i in range(12)
            ],
            pages=3,
        ).path,
        pdf_factory.make_rotated_pdf(folder / "rotated.pdf").path,
    ]


def test_two_workers_at_once_give_the_same_documents_as_one_by_one(tmp_path, config):
    config.processing.ocr = False
    config.processing.parse_workers = 2
    paths = _sources(tmp_path)
    serial = [
        prepare_document(p.read_bytes(), filename=p.name, uri=p.as_uri(), config=config)
        for p in paths
    ]

    # Each file waits, at its first page, for another file to be mid-parse too: the batch
    # only gets through if two workers parse at the same time (one worker parses one file).
    meet = threading.Barrier(2, timeout=120)
    met: set[str] = set()

    def parse(path: Path):
        def progress(p: Progress) -> None:
            if path.name not in met:
                met.add(path.name)
                meet.wait()

        return parse_document(
            path.read_bytes(),
            filename=path.name,
            uri=path.as_uri(),
            config=config,
            progress=progress,
        )

    assert parse_workers(config.processing) == 2
    pooled = list(parse_ahead(paths, parse, parse_workers(config.processing)))

    assert met == {p.name for p in paths}
    assert [d.uri for d in pooled] == [p.as_uri() for p in paths]
    for one, other in zip(serial, pooled, strict=True):
        assert other.chunks == one.chunks
        assert other.items == one.items
        assert (other.content, other.page_count, other.title) == (
            one.content,
            one.page_count,
            one.title,
        )
        assert other.source_bytes == one.source_bytes
    assert all(
        chunk.boxes and chunk.page_numbers and chunk.doc_item_refs
        for d in pooled
        for chunk in d.chunks
    )
    assert len(shared_pool().pids) == 2  # kept for the next batch...
    release_extra_workers()
    assert shared_pool().pids == [shared_pool().first.pid]  # ...until the library is idle


async def test_a_folder_ingest_in_two_workers_stores_what_one_worker_stores(tmp_path, config):
    """``add_source`` with 2 workers: the same outcomes, in order, and the same stored chunks
    as with 1; a damaged file in the middle fails alone."""
    config.processing.ocr = False
    folder = tmp_path / "files"
    folder.mkdir()
    paths = _sources(folder)
    (folder / "damaged.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 50)

    async def ingest(workers: int, db: Path):
        config.processing.parse_workers = workers
        async with HaikuRAG(db, config, create=True) as client:
            outcomes = await client.add_source(folder, embed=False)
            stored = {}
            for outcome in outcomes:
                if outcome.document is not None:
                    chunks = await client.get_chunks(outcome.document)
                    stored[outcome.source] = [
                        c.model_dump(exclude={"id", "document_id"}) for c in chunks
                    ]
            return [(o.source, o.status, o.category) for o in outcomes], stored

    one = await ingest(1, tmp_path / "one.lancedb")
    two = await ingest(2, tmp_path / "two.lancedb")
    assert two == one
    statuses = [(source.rsplit("/", 1)[-1], status) for source, status, _ in one[0]]
    assert statuses == [
        ("columns.pdf", "ingested"),
        ("damaged.pdf", "failed"),
        ("paper.pdf", "ingested"),
        ("report.pdf", "ingested"),
        ("rotated.pdf", "ingested"),
    ]
    assert len(one[1]) == len(paths) and all(one[1].values())


def test_a_list_is_scheduled_largest_first_and_a_generator_in_its_order():
    assert list(largest_first(["a", "ccc", "bb"], len)) == [(1, "ccc"), (2, "bb"), (0, "a")]
    assert list(largest_first((s for s in ["a", "ccc", "bb"]), len)) == [
        (0, "a"),
        (1, "ccc"),
        (2, "bb"),
    ]


def test_a_long_parse_at_the_head_does_not_hold_up_the_files_behind_it():
    """The second worker goes on with the files behind a long one (here: the first parse
    waits until four later ones are done), and results still come in the order given."""
    later_done = threading.Semaphore(0)
    finished: list[int] = []

    def parse(i: int) -> int:
        if i == 0:
            for _ in range(4):  # four files behind it parse while it is still running
                assert later_done.acquire(timeout=30), "the files behind the head were not parsed"
        else:
            later_done.release()
        finished.append(i)
        return i * 10

    assert list(parse_ahead(range(6), parse, 2)) == [0, 10, 20, 30, 40, 50]
    assert finished[:4] == [1, 2, 3, 4]


def test_parse_ahead_holds_at_most_its_window():
    """No more than ``window`` parses are submitted ahead of a caller that does not take them."""
    started: list[int] = []
    gate = threading.Event()

    def parse(i: int) -> int:
        started.append(i)
        if i == 0:
            gate.wait(timeout=30)
        return i

    results = parse_ahead(range(20), parse, 2, window=5)
    first = threading.Timer(1.0, gate.set)
    first.start()
    assert next(results) == 0
    assert max(started) <= 4  # 0 (the head) and 1-4 behind it, nothing further
    assert list(results) == list(range(1, 20))
    first.cancel()
