"""Bad inputs generated on the fly (the shared adversarial folder is third-party data and is
never copied here), plus a snapshot of stored documents to prove they stay untouched."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import pdf_factory
import pymupdf

from haiku.rag.store import documents as D
from haiku.rag.store.engine import Store

# Categories a bad file may legitimately get; anything else (or an exception) is a failure.
KNOWN_CATEGORIES = {
    "password_required",
    "wrong_password",
    "needs_ocr",
    "damaged",
    "empty",
    "unsupported_type",
    "too_large",
    "timeout",
    "parser_failed",
}


def _raw_pdf(objects: list[str], root: int = 1, with_xref: bool = True) -> bytes:
    """A hand-written PDF (objects numbered from 1) with a correct xref unless told not to."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref_at = len(out)
    if with_xref:
        out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
        for offset in offsets:
            out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root {root} 0 R >>\n".encode()
    out += f"startxref\n{xref_at}\n%%EOF\n".encode()
    return bytes(out)


def _text_stream(text: str) -> str:
    content = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET"
    return f"<< /Length {len(content)} >>\nstream\n{content}\nendstream"


FONT = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
TEXT = "The lighthouse keeper logged every passing whaler in the brass ledger"


def make_bad_files(folder: Path) -> dict[str, set[str]]:
    """Write the bad files; returns file name -> acceptable outcomes ("ingested" or a category)."""
    folder.mkdir(parents=True, exist_ok=True)
    expected: dict[str, set[str]] = {}

    def put(name: str, data: bytes, outcomes: set[str]) -> None:
        (folder / name).write_bytes(data)
        expected[name] = outcomes

    put("empty.pdf", b"", {"empty"})
    put("html-page.pdf", b"<!DOCTYPE html><html><body>404 Not Found</body></html>", {"damaged"})
    put("image.pdf", b"\x89PNG\r\n\x1a\n" + bytes(200), {"damaged"})
    put("five-bytes.pdf", b"%PDF-", {"damaged", "empty"})
    put("unknown.xyz", b"what is this", {"unsupported_type"})
    put("binary-noise.txt", random.Random(7).randbytes(4096), {"unsupported_type", "damaged", "empty"})

    put(
        "zero-pages.pdf",
        _raw_pdf(["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [] /Count 0 >>"]),
        {"empty", "damaged"},
    )
    # The page tree lists itself as its own kid.
    put(
        "page-tree-loop.pdf",
        _raw_pdf(["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [2 0 R] /Count 1 >>"]),
        {"empty", "damaged"},
    )
    page = "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"
    good_objects = [
        "<< /Type /Catalog /Pages 2 0 R /Outlines 6 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page,
        _text_stream(TEXT),
        FONT,
        # An outline whose only entry points at itself, forever.
        "<< /Type /Outlines /First 7 0 R /Last 7 0 R /Count 1 >>",
        "<< /Title (Loop) /Parent 6 0 R /Next 7 0 R /Prev 7 0 R /First 7 0 R /Last 7 0 R /Dest [3 0 R /Fit] >>",
    ]
    put("outline-loop.pdf", _raw_pdf(good_objects), {"ingested"})
    put("no-xref.pdf", _raw_pdf(good_objects, with_xref=False), {"ingested", "damaged"})
    broken = bytearray(_raw_pdf(good_objects))
    at = broken.index(b"xref\n") + 5
    broken[at : at + 60] = b"9" * 60  # garbage where the cross-reference table should be
    put("broken-xref.pdf", bytes(broken), {"ingested", "damaged"})
    # A content stream that claims more bytes than it has, then ends.
    damaged_objects = list(good_objects)
    damaged_objects[3] = "<< /Length 9999 /Filter /FlateDecode >>\nstream\n\x78\x9c\x0b\xc9\xc8\x2cendstream"
    put("damaged-stream.pdf", _raw_pdf(damaged_objects), {"ingested", "empty", "damaged", "needs_ocr"})
    # Every XObject draws itself.
    loop_objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> /XObject << /X1 6 0 R >> >> >>",
        "<< /Length 55 >>\nstream\n/X1 Do BT /F1 12 Tf 72 720 Td (Recursive art) Tj ET\nendstream",
        FONT,
        "<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /X1 6 0 R >> >> /Length 6 >>\nstream\n/X1 Do\nendstream",
    ]
    put("recursive-xobject.pdf", _raw_pdf(loop_objects), {"ingested", "damaged"})
    # A JavaScript action on open (never run: we only read text).
    js_objects = list(good_objects[:5]) + ["<< /S /JavaScript /JS (app.alert\\('hi'\\);) >>"]
    js_objects[0] = "<< /Type /Catalog /Pages 2 0 R /OpenAction 6 0 R >>"
    put("javascript.pdf", _raw_pdf(js_objects), {"ingested"})

    report = pdf_factory.make_report_pdf(folder / "_report.pdf")
    data = report.path.read_bytes()
    report.path.unlink()
    put("truncated.pdf", data[: len(data) * 6 // 10], {"ingested", "damaged", "empty"})
    pdf_factory.make_encrypted_pdf(folder / "encrypted.pdf", "s3cret")
    expected["encrypted.pdf"] = {"password_required"}

    doc = pymupdf.open()
    huge = doc.new_page(width=14_400, height=14_400)  # the largest page PDF allows, 200 inches
    huge.insert_text((100, 200), "A poster-sized page about cartography", fontsize=48)
    doc.new_page(width=3, height=3).insert_text((0, 2), "x", fontsize=1)  # and a tiny one
    doc.save(folder / "huge-page.pdf")
    doc.close()
    expected["huge-page.pdf"] = {"ingested"}

    pdf_factory.make_scanned_pdf(folder / "scanned.pdf", pages=1)
    expected["scanned.pdf"] = {"needs_ocr"}
    return expected


def make_flate_bomb_pdf(path: Path, inflated_bytes: int = 1 << 30) -> Path:
    """A one-page PDF of a few KB whose content stream inflates to ``inflated_bytes`` of text
    operators: the stream is deflated twice (``[/FlateDecode /FlateDecode]``).

    Built without compressing a GiB: after a full flush, deflating the same 1 MiB block gives
    the same bytes again, so the inner stream is that block's bytes repeated (plus the
    checksum of the whole)."""
    unit = b"BT /F1 12 Tf 72 720 Td (lighthouse keeper) Tj ET\n"
    block = unit * ((1 << 20) // len(unit))
    deflate = zlib.compressobj(9)
    first = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
    again = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
    assert first[2:] == again  # the zlib header, then identical blocks
    blocks = max(1, inflated_bytes // len(block))
    checksum = 1
    for _ in range(blocks):
        checksum = zlib.adler32(block, checksum)
    inner = first + again * (blocks - 1) + deflate.flush(zlib.Z_FINISH)[:-4] + checksum.to_bytes(4, "big")
    outer = zlib.compress(inner, 9).decode("latin-1")
    stream = f"<< /Length {len(outer)} /Filter [/FlateDecode /FlateDecode] >>\nstream\n{outer}\nendstream"
    page = "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>", page, FONT, stream]
    path.write_bytes(_raw_pdf(objects))
    return path


def snapshot(store: Store) -> dict[str, tuple]:
    """Everything that identifies each stored document's current version and content."""
    result = {}
    for document in D.list_documents(store):
        chunks = D.get_chunks(store, document)
        result[document.id] = (
            document.uri,
            document.generation,
            document.content_hash,
            document.updated_at,
            document.index_state,
            tuple(c.content for c in chunks),
            len(D.get_items(store, document)),
            D.get_source_bytes(store, document),
        )
    return result
