"""The shared adversarial PDFs (third-party, read in place from ../shared/data; skipped when
absent): every file is ingested or refused with a specific category naming it, the earlier
document is untouched, doctor passes; password-protected files open with their password."""

from __future__ import annotations

import csv
from pathlib import Path

import pdf_factory
import pytest

from haiku.rag.client import HaikuRAG
from haiku.rag.doctor import run_doctor

from .badfiles import KNOWN_CATEGORIES, snapshot

# What the manifest's category promises about the outcome (others: any handled outcome).
EXPECTED = {
    "empty-0-bytes": {"empty"},
    "not-a-pdf-44-bytes": {"damaged"},
    "not-a-pdf-5-bytes": {"damaged"},
    "encrypted-user-password": {"password_required"},
    "encrypted-rc4-40": {"password_required"},
    "encrypted-rc4-r2": {"password_required"},
    "encrypted-aes256-r6": {"password_required"},
    "encrypted-aes256": {"password_required"},
    "encrypted-with-attachment": {"password_required"},
    # a poster-size page, one large scanned image with a line of text: OCR reads it (a
    # 16 Mpx detector input once ran out of the parse worker's memory: needs_ocr)
    "huge-page-8400pt-mono-image": {"ingested"},
}


@pytest.fixture
def adversarial(shared_data) -> tuple[Path, list[dict[str, str]]]:
    folder = shared_data / "pdfs_adversarial"
    if not (folder / "manifest.csv").is_file():
        pytest.skip("no pdfs_adversarial set in the shared data")
    return folder / "files", list(csv.DictReader((folder / "manifest.csv").open()))


async def test_every_shared_adversarial_pdf_is_handled(tmp_path, db_path, config, adversarial):
    files, rows = adversarial
    config.processing.parse_timeout_seconds = 60
    report = pdf_factory.make_report_pdf(tmp_path / "report.pdf").path
    async with HaikuRAG(db_path, config, create=True) as client:
        assert (await client.ingest_file(report, embed=False)).status == "ingested"
        before = snapshot(client.store)

        outcomes = {Path(o.source).name: o for o in await client.add_source(files, embed=False)}
        assert set(outcomes) == {row["file"] for row in rows}
        for row in rows:
            outcome = outcomes[row["file"]]
            result = "ingested" if outcome.status == "ingested" else outcome.category
            assert result in EXPECTED.get(row["category"], KNOWN_CATEGORIES | {"ingested"}), (row["file"], outcome)
            if outcome.status == "failed":
                assert row["file"] in outcome.reason
            assert result not in ("timeout", "parser_failed"), (row["file"], outcome)  # none hang or crash

        for row in rows:
            password = row["password"]
            if row["needs_password"] != "True" or not password or password == "unknown" or password.startswith("("):
                continue
            outcome = await client.ingest_file(files / row["file"], password=password, embed=False)
            assert outcome.status == "ingested" or outcome.category in {"needs_ocr", "empty"}, (row["file"], outcome)

        after = snapshot(client.store)
        assert {k: after[k] for k in before} == before
        assert run_doctor(client.store).ok
