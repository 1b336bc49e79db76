"""The haiku-rag command as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pdf_factory
import pytest

from haiku.rag.cli import main

HAIKU_RAG = str(Path(sys.executable).parent / "haiku-rag")


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HAIKU_RAG, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture
def papers(tmp_path):
    folder = tmp_path / "papers"
    folder.mkdir()
    layout = pdf_factory.make_report_pdf(folder / "report.pdf")
    (folder / "broken.pdf").write_bytes(b"garbage, not a pdf")
    return folder, layout


def test_add_src_list_search_visualize_round_trip(tmp_path, papers, capsys):
    folder, layout = papers
    db = str(tmp_path / "lib.lancedb")
    assert main(["--db", db, "add-src", str(folder), "--json"]) == 0
    records = {Path(r["source"]).name: r for r in json.loads(capsys.readouterr().out)}
    assert records["report.pdf"]["status"] == "ingested"
    assert records["broken.pdf"]["status"] == "failed" and records["broken.pdf"]["category"] == "damaged"

    assert main(["--db", db, "add-src", str(folder), "--json"]) == 0
    again = {Path(r["source"]).name: r["status"] for r in json.loads(capsys.readouterr().out)}
    assert again == {"report.pdf": "unchanged", "broken.pdf": "failed"}

    assert main(["--db", db, "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [d["title"] for d in listed] == [pdf_factory.REPORT_TITLE]

    assert main(["--db", db, "search", "kerosene shortage convoys", "--json", "--limit", "2"]) == 0
    hits = json.loads(capsys.readouterr().out)
    top = hits[0]
    assert set(top) >= {"chunk_id", "document_uri", "document_title", "page_numbers", "boxes", "score", "text"}
    assert top["page_numbers"] == [layout.block("p_discussion").page]
    assert top["boxes"] and {"page", "x0", "y0", "x1", "y1"} <= set(top["boxes"][0])

    out_dir = tmp_path / "png"
    assert main(["--db", db, "visualize", top["chunk_id"], "--out", str(out_dir)]) == 0
    pngs = list(out_dir.glob("*.png"))
    assert len(pngs) == 1 and pngs[0].read_bytes().startswith(b"\x89PNG")

    assert main(["--db", db, "doctor"]) == 0
    assert "FAIL" not in capsys.readouterr().out


def test_human_readable_search_shows_pages_and_sections(tmp_path, papers, capsys):
    folder, _ = papers
    db = str(tmp_path / "lib.lancedb")
    main(["--db", db, "add-src", str(folder / "report.pdf")])
    capsys.readouterr()
    assert main(["--db", db, "search", "lighthouse keepers"]) == 0
    out = capsys.readouterr().out
    assert "p. 3" in out and "> 3 Appendix" in out and "boxes: p3" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "x"], "no haiku.rag store"),
        (["add-src", "/definitely/not/here"], "does not exist"),
        (["--config", "/nope.yaml", "list"], "config file /nope.yaml does not exist"),
    ],
)
def test_user_mistakes_get_one_line_and_a_non_zero_exit(tmp_path, args, message):
    result = run("--db", str(tmp_path / "none.lancedb"), *args)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_config_key_is_named(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("search:\n  limt: 3\n")
    result = run("--config", str(config), "settings")
    assert result.returncode == 1
    assert "unknown setting 'search.limt'" in result.stderr


def test_a_bad_filter_and_a_failed_single_file(tmp_path, papers):
    folder, _ = papers
    db = str(tmp_path / "lib.lancedb")
    result = run("--db", db, "add-src", str(folder / "broken.pdf"))
    assert result.returncode == 1 and "failed" in result.stdout
    run("--db", db, "add-src", str(folder / "report.pdf"))
    bad = run("--db", db, "search", "fog", "--filter", "no_such_column = 1")
    assert bad.returncode == 1 and "invalid filter" in bad.stderr and "Traceback" not in bad.stderr


def test_settings_masks_secrets(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("lancedb:\n  storage_options:\n    aws_secret_access_key: hunter2\n")
    result = run("--config", str(config), "settings")
    assert result.returncode == 0
    assert "hunter2" not in result.stdout and "aws_secret_access_key: '***'" in result.stdout


def _pdf_with_a_broken_icc_profile(path: Path) -> None:
    """A text page whose image names an ICC profile that is not one: MuPDF reports
    "cmsOpenProfileFromMem failed" when it reads the page."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Colour profiles can be damaged", fontsize=12)
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 8, 8), False)
    pixmap.clear_with(128)
    page.insert_image(pymupdf.Rect(100, 100, 200, 200), pixmap=pixmap)
    image = page.get_images()[0][0]
    profile = doc.get_new_xref()
    doc.update_object(profile, "<< /N 3 >>")
    doc.update_stream(profile, b"not an ICC profile", new=True)
    doc.xref_set_key(image, "ColorSpace", f"[/ICCBased {profile} 0 R]")
    doc.save(path)


def test_json_output_stays_json_when_mupdf_complains(tmp_path):
    # PyMuPDF prints MuPDF's errors on stdout by default; a real PDF with a bad colour profile
    # put 30 such lines before add-src's JSON.
    folder = tmp_path / "src"
    folder.mkdir()
    _pdf_with_a_broken_icc_profile(folder / "bad-icc.pdf")
    result = run("--db", str(tmp_path / "lib.lancedb"), "add-src", str(folder), "--json", "--no-embed")
    assert result.returncode == 0, result.stderr
    (outcome,) = json.loads(result.stdout)
    assert outcome["status"] == "ingested"


def test_python_dash_m_haiku_desk_is_the_app_command() -> None:
    """`python -m haiku_desk` runs the app as the `haiku-desk` command does (a tester ran it so
    and met "'haiku_desk' is a package and cannot be directly executed")."""
    result = subprocess.run([sys.executable, "-m", "haiku_desk", "--version"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith("haiku-desk ")
