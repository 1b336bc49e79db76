"""Heading paths made of real sections: a book's title printed again on its half-title and
title pages sat under its cover's title, so every chunk's path began "FREE CULTURE › FREE
CULTURE › …" (tester, session 18); a heading that repeats the heading it would sit under is
that heading again. Sections of the same name in different chapters stay sections."""

from __future__ import annotations

import pymupdf

from haiku.rag.ingest.chunker import chunk_document
from haiku.rag.ingest.pdf import convert_pdf

BODY = "The chapter's paragraph runs on about the culture of the commons and its law."


def _book_pdf() -> bytes:
    doc = pymupdf.open()
    cover = doc.new_page(width=400, height=600)
    cover.insert_text((60, 200), "FREE CULTURE", fontname="hebo", fontsize=30)
    title = doc.new_page(width=400, height=600)
    title.insert_text((60, 200), "FREE CULTURE", fontname="hebo", fontsize=22)
    title.insert_text((60, 240), "How big media uses technology and the law.", fontname="helv", fontsize=10)
    for chapter in ("INTRODUCTION", "PIRACY"):
        page = doc.new_page(width=400, height=600)
        page.insert_text((60, 80), chapter, fontname="hebo", fontsize=16)
        for i in range(6):
            page.insert_text((60, 110 + 14 * i), BODY, fontname="helv", fontsize=10)
        page.insert_text((60, 220), "Exercises", fontname="hebo", fontsize=12)
        for i in range(6):
            page.insert_text((60, 250 + 14 * i), f"{chapter.title()} exercise {i}: {BODY}", fontname="helv", fontsize=10)
    data = doc.tobytes()
    doc.close()
    return data


def test_a_title_repeated_under_itself_is_not_a_level_of_the_path():
    chunks = chunk_document(convert_pdf(_book_pdf(), source="free-culture.pdf").document)
    paths = [chunk.headings for chunk in chunks if "exercise 0" in chunk.text or chunk.text.startswith("The chapter")]
    assert paths == [
        ["FREE CULTURE", "INTRODUCTION"],
        ["FREE CULTURE", "INTRODUCTION", "Exercises"],
        ["FREE CULTURE", "PIRACY"],
        ["FREE CULTURE", "PIRACY", "Exercises"],
    ]


def _paper_pdf() -> bytes:
    """A paper's cover page (its title, "Abstract", the abstract, "Keywords"), then its
    title printed again above the body, whose first section is "Introduction"."""
    title = "The Acceptance Model"
    doc = pymupdf.open()
    cover = doc.new_page(width=400, height=600)
    cover.insert_text((40, 80), title, fontname="hebo", fontsize=20)
    cover.insert_text((40, 130), "Abstract", fontname="hebo", fontsize=14)
    for i in range(5):
        cover.insert_text((40, 155 + 14 * i), BODY, fontname="helv", fontsize=10)
    cover.insert_text((40, 250), "Keywords", fontname="hebo", fontsize=11)
    cover.insert_text((40, 270), "technology acceptance, usefulness, ease of use", fontname="helv", fontsize=10)
    body = doc.new_page(width=400, height=600)
    body.insert_text((40, 80), title, fontname="hebo", fontsize=16)
    body.insert_text((40, 120), "Introduction", fontname="hebo", fontsize=11)
    for i in range(5):
        body.insert_text((40, 140 + 14 * i), f"Introduction line {i}: {BODY}", fontname="helv", fontsize=10)
    data = doc.tobytes()
    doc.close()
    return data


def test_a_title_repeated_above_the_body_closes_the_sections_before_it():
    """Taken for text, the repeat left "Introduction" under the cover's "Abstract"."""
    chunks = chunk_document(convert_pdf(_paper_pdf(), source="tam.pdf").document)
    introduction = [chunk for chunk in chunks if "Introduction line 0" in chunk.text]
    assert [chunk.headings for chunk in introduction] == [["The Acceptance Model", "Introduction"]]
