"""The records a parse worker sends back pickle as their constructor's arguments
(``__reduce__``): every field survives, and a box shared by an item and a chunk stays one
object."""

import dataclasses
import pickle

import pytest

from haiku.rag.ingest.records import Box, ChunkRecord, ItemRecord, NewDocument


def sample_records() -> tuple[ItemRecord, ChunkRecord]:
    shared = Box(3, 72.0, 100.5, 540.0, 112.5)
    item = ItemRecord(
        position=7,
        self_ref="#/texts/7",
        label="text",
        text="Otters hold hands while they sleep.",
        page_numbers=[3],
        heading_level=0,
        boxes=[shared, Box(4, 72.0, 72.0, 300.0, 84.0)],
    )
    chunk = ChunkRecord(
        order=2,
        text="Otters hold hands",
        embed_text="Otters\nOtters hold hands",
        headings=["Otters"],
        labels=["text"],
        doc_item_refs=["#/texts/7"],
        page_numbers=[3],
        boxes=[shared],
    )
    return item, chunk


@pytest.mark.parametrize("record", [*sample_records(), Box(1, 0.0, 1.0, 2.0, 3.0)])
def test_every_field_survives_a_round_trip(record) -> None:
    cls, args = record.__reduce__()
    assert cls is type(record)
    # the arguments are the fields in their declared order: a new field must be added here too
    assert args == tuple(getattr(record, f.name) for f in dataclasses.fields(record))
    assert pickle.loads(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)) == record


def test_a_box_shared_by_an_item_and_a_chunk_stays_one_object() -> None:
    item, chunk = sample_records()
    document = NewDocument(
        uri="file:///otters.pdf", title="Otters", metadata={}, content_hash="0" * 64,
        mime_type="application/pdf", page_count=4, source_bytes=b"", content="Otters",
        docling_json="", items=[item], chunks=[chunk],
    )
    loaded = pickle.loads(pickle.dumps(document, protocol=pickle.HIGHEST_PROTOCOL))
    assert loaded == document
    assert loaded.chunks[0].boxes[0] is loaded.items[0].boxes[0]
