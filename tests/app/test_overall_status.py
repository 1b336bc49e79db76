"""The overall bar's words (services.entries.OverallStatus), each phase in full and short."""

from __future__ import annotations

from haiku_desk.services.entries import OverallStatus


def test_the_bar_says_the_phase_its_files_and_the_step_under_way():
    reading = OverallStatus(phase="reading", done=3, total=4, files_done=1, files_total=3)
    assert reading.text() == "Reading files: 1 of 3 · 75 %"
    assert reading.text(short=True) == "Reading 1 of 3 · 75 %"
    one_page = OverallStatus(phase="reading", done=3, total=4, files_done=1, files_total=3, detail="text recognition 0 of 1 page")
    assert one_page.text() == "Reading files: 1 of 3 · text recognition 0 of 1 page · 75 %"
    assert one_page.text(short=True) == "Reading 1 of 3 · OCR 0/1 · 75 %"
    pages = OverallStatus(phase="reading", done=1, total=4, files_done=0, files_total=1, detail="text recognition 2 of 4 pages")
    assert pages.text(short=True) == "Reading 0 of 1 · OCR 2/4 · 25 %"
    embedding = OverallStatus(phase="embedding", done=3, total=40, files_done=1, files_total=3)
    assert embedding.text() == "All searchable · improving search: 1 of 3 embedded"
    assert embedding.text(short=True) == "All searchable · embedding 1 of 3"
    failed = OverallStatus(phase="embedding", done=3, total=40, files_done=1, files_total=3, all_searchable=False)
    assert failed.text().startswith("Searchable · ")  # a file that failed is not searchable
    assert OverallStatus(phase="removing", done=1, total=2, removing=1).text() == "Removing 1 document · 50 %"
    assert OverallStatus().idle and OverallStatus().text() == ""
    assert "percent" in embedding.description()
