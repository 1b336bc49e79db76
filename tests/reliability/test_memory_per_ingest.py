"""Memory bounds that hold for the whole ingest (issue 32): two decompression bombs in one
folder took 6.8 GB with a 3 GB ``processing.parse_memory_limit_mb``, each parse worker having
the whole of it; and a 15,455 x 20,000 px scan cost 2 GB in the calling process, where
bibliographic metadata is read from page 1 outside the worker's bounds."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pymupdf
import pytest

from haiku.rag.client import HaikuRAG

from .badfiles import make_flate_bomb_pdf

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced on Linux only")


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: one parse worker, nothing is shared")
async def test_parses_running_at_once_share_the_memory_limit(tmp_path, db_path, config):
    folder = tmp_path / "bombs"
    folder.mkdir()
    make_flate_bomb_pdf(folder / "bomb-a.pdf")
    make_flate_bomb_pdf(folder / "bomb-b.pdf")
    config.processing.parse_memory_limit_mb = 512
    config.processing.parse_workers = 2
    async with HaikuRAG(db_path, config, create=True) as client:
        outcomes = await client.add_source(folder, embed=False)
    assert sorted(o.status for o in outcomes) == ["failed", "failed"]
    for outcome in outcomes:
        assert outcome.category == "too_large", outcome
        # each parse was bounded by its half: together they never exceed the setting
        assert "its 256 MB share of the 512 MB memory limit" in outcome.reason, outcome.reason


def _scan_pdf(path: Path, width: int = 15_455, height: int = 20_000) -> Path:
    """One page holding a 15,455 x 20,000 px greyscale scan (309 MB decoded, ~300 KB stored)
    and a line of text."""
    doc = pymupdf.open()
    page = doc.new_page(width=width * 72 / 400, height=height * 72 / 400)  # a 400-dpi scan
    xref = page.insert_image(page.rect, pixmap=pymupdf.Pixmap(pymupdf.csGRAY, 8, 8, bytes(64), 0))
    page.insert_text((72, 72), "A Survey of Walrus Acoustics", fontsize=24)
    compressor = zlib.compressobj(9)
    row = bytes([255]) * width
    stream = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    doc.update_stream(xref, stream, compress=False)
    for key, value in (("Width", str(width)), ("Height", str(height)), ("Filter", "/FlateDecode"),
                       ("ColorSpace", "/DeviceGray"), ("BitsPerComponent", "8"), ("DecodeParms", "null"), ("SMask", "null")):
        doc.xref_set_key(xref, key, value)
    doc.save(path)
    doc.close()
    return path


def test_reading_metadata_does_not_decode_page_images_in_the_caller(tmp_path):
    scan = _scan_pdf(tmp_path / "scan.pdf")
    assert scan.stat().st_size < 2_000_000
    # in a fresh interpreter, so its peak resident memory is this call's alone
    script = textwrap.dedent(
        f"""
        import resource
        from haiku.rag.pdf_metadata import extract_pdf_metadata
        import pymupdf
        data = open({str(scan)!r}, "rb").read()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        extract_pdf_metadata(data, filename="scan.pdf")
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) // 1024)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    grown_mb = int(result.stdout.strip().splitlines()[-1])
    # decoding the image alone takes 309 MB (the whole page's dict took ~600 MB)
    assert grown_mb < 100, f"reading page 1's metadata grew the process by {grown_mb} MB"
