"""A full disk or a failing writer: a clear one-line error, nothing stored is lost, and once
there is room again the store recovers and ingests.

Two real failures, no mocks:
- a 4 MB tmpfs filled to the brim (needs permission to mount: skipped otherwise);
- a process whose file-size limit (RLIMIT_FSIZE) is smaller than the data it must write: every
  such write fails with EFBIG, as a failing disk would (works without privileges).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pdf_factory
import pymupdf
import pytest

from haiku.rag.cli import main
from haiku.rag.doctor import run_doctor
from haiku.rag.store.engine import Store

from .badfiles import snapshot

HAIKU_RAG = str(Path(sys.executable).parent / "haiku-rag")


def _snapshot(db: Path) -> dict:
    store = Store(str(db), read_only=True)
    try:
        return snapshot(store)
    finally:
        store.close()


def _big_pdf(path: Path, pages: int = 12) -> Path:
    """A PDF of a few hundred KB (its bytes are stored with the document)."""
    doc = pymupdf.open()
    for n in range(pages):
        page = doc.new_page()
        page.insert_text((72, 72), f"Chapter {n}: the archive of tide tables", fontsize=16)
        # Seeded noise: incompressible and different on every page. (An uninitialised Pixmap
        # held whatever memory it got: sometimes zeros, which compressed to a file too small.)
        noise = random.Random(n).randbytes(160 * 160 * 3)
        page.insert_image(page.rect, pixmap=pymupdf.Pixmap(pymupdf.csRGB, 160, 160, noise, 0))
        page.insert_text((72, 700), f"Page {n} lists the soundings of the northern channel.", fontsize=11)
    doc.save(path, deflate=False)
    doc.close()
    return path


@pytest.fixture
def small_disk(tmp_path):
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({result.stderr.strip() or 'not permitted'})")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_a_full_disk_is_a_clear_error_and_loses_nothing(tmp_path, small_disk, capsys):
    db = small_disk / "lib.lancedb"
    papers = tmp_path / "papers"
    papers.mkdir()
    first = pdf_factory.make_report_pdf(papers / "first.pdf").path
    assert main(["--db", str(db), "add-src", str(first)]) == 0
    before = _snapshot(db)

    stat = os.statvfs(small_disk)
    filler = small_disk / "filler"
    filler.write_bytes(bytes(stat.f_bavail * stat.f_frsize - 16 * 1024))  # leave 16 KB
    big = _big_pdf(papers / "big.pdf")
    capsys.readouterr()
    assert main(["--db", str(db), "add-src", str(big)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the disk is full" in err, err
    assert _snapshot(db) == before  # readable while full, and nothing changed

    filler.unlink()
    writer = Store(str(db))  # room again: recovery removes any unfinished write
    assert run_doctor(writer).ok
    writer.close()
    assert main(["--db", str(db), "add-src", str(big)]) == 0
    after = _snapshot(db)
    assert {k: after[k] for k in before} == before and len(after) == 2


# Runs haiku-rag with a file-size limit: every larger write fails with EFBIG.
LIMITED = textwrap.dedent(
    """
    import os, resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # fail the write instead of killing us
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    os.execv(sys.argv[2], sys.argv[2:])
    """
)


def test_a_failing_writer_is_a_clear_error_and_loses_nothing(tmp_path):
    db = tmp_path / "lib.lancedb"
    papers = tmp_path / "papers"
    papers.mkdir()
    first = pdf_factory.make_report_pdf(papers / "first.pdf").path
    assert main(["--db", str(db), "add-src", str(first)]) == 0
    before = _snapshot(db)
    big = _big_pdf(papers / "big.pdf")
    assert big.stat().st_size > 300_000

    result = subprocess.run(
        [sys.executable, "-c", LIMITED, "200000", HAIKU_RAG, "--db", str(db), "add-src", str(big)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("haiku-rag: could not write to the store"), result.stderr
    assert "Traceback" not in result.stderr
    assert _snapshot(db) == before

    writer = Store(str(db))
    assert run_doctor(writer).ok
    writer.close()
    assert main(["--db", str(db), "add-src", str(big)]) == 0
    after = _snapshot(db)
    assert {k: after[k] for k in before} == before and len(after) == 2
