"""A title two documents share, or that looks the same in two Unicode forms, never silently
picks one (issue 32: `delete TITLE` deleted the first of two same-titled documents)."""

from __future__ import annotations

import asyncio
import unicodedata

import pytest

from haiku.rag.cli import main
from haiku.rag.client import HaikuRAG
from haiku.rag.resolve import AmbiguousDocumentError

CAFE_NFC = unicodedata.normalize("NFC", "Café minutes")
CAFE_NFD = unicodedata.normalize("NFD", "Café minutes")


def make_library(db, config, *titles: str) -> list[str]:
    return asyncio.run(_make_library(db, config, *titles))


async def _make_library(db, config, *titles: str) -> list[str]:
    async with HaikuRAG(db, config, create=True) as client:
        return [
            (await client.create_document(f"Text number {n} about the harbour ({title!r}, {len(titles)}).", title=title, embed=False)).id
            for n, title in enumerate(titles)
        ]


def ids_in(db, config) -> set[str]:
    async def listed() -> set[str]:
        async with HaikuRAG(db, config, read_only=True, skip_validation=True) as client:
            return {d.id for d in await client.list_documents()}

    return asyncio.run(listed())


def test_delete_of_a_shared_title_refuses_and_lists_both(db_path, config, capsys):
    first, second = make_library(db_path, config, "Minutes", "Minutes")
    assert main(["--db", str(db_path), "delete", "Minutes"]) == 1
    err = capsys.readouterr().err
    assert first in err and second in err and "by its id" in err
    assert ids_in(db_path, config) == {first, second}  # nothing was deleted
    assert main(["--db", str(db_path), "delete", second]) == 0
    assert ids_in(db_path, config) == {first}


def test_nfc_and_nfd_titles_are_the_same_name(db_path, config, capsys):
    assert CAFE_NFC != CAFE_NFD
    (only,) = make_library(db_path, config, CAFE_NFD)
    assert resolve(db_path, config, CAFE_NFC).id == only
    make_library(db_path, config, CAFE_NFC)
    with pytest.raises(AmbiguousDocumentError) as refused:
        resolve(db_path, config, CAFE_NFC)
    assert only in refused.value.candidates and len(refused.value.candidates) == 2
    assert main(["--db", str(db_path), "delete", CAFE_NFD]) == 1
    assert len(ids_in(db_path, config)) == 2


def resolve(db, config, name: str):
    async def find():
        async with HaikuRAG(db, config, read_only=True, skip_validation=True) as client:
            return await client.resolve_document(name)

    return asyncio.run(find())
