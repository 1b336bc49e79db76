"""write_text_atomic: the old file or the new one, never a mix, and no temporary file left."""

from __future__ import annotations

import pytest

from haiku.rag.files import write_text_atomic


def test_a_write_replaces_the_file_and_leaves_nothing_beside_it(tmp_path):
    target = tmp_path / "deep" / "conversation.json"
    assert write_text_atomic(target, "first") == target
    write_text_atomic(target, "second")
    assert target.read_text(encoding="utf-8") == "second"
    assert [p.name for p in target.parent.iterdir()] == ["conversation.json"]


def test_a_write_that_fails_midway_keeps_the_old_file(tmp_path):
    target = tmp_path / "settings.json"
    write_text_atomic(target, "kept")
    with pytest.raises(UnicodeEncodeError):
        write_text_atomic(target, "half written \ud800 lone surrogate")
    assert target.read_text(encoding="utf-8") == "kept"
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]


@pytest.mark.skipif(not hasattr(__import__("os"), "fchmod"), reason="POSIX permission bits")
def test_a_new_file_gets_the_mode_a_plain_write_gives_and_a_private_one_the_owners_only(tmp_path):
    """An exported table was left 0600 (the temporary file's mode) beside a 0644 chat export."""
    import os
    import stat

    from haiku.rag.files import write_atomic

    old = os.umask(0o027)
    try:
        exported = write_atomic(tmp_path / "table.csv", b"a,b\n")
        settings = write_text_atomic(tmp_path / "settings.json", "{}", private=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE(exported.stat().st_mode) == 0o640
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    assert exported.read_bytes() == b"a,b\n"
    # a file that exists keeps its mode across a rewrite
    os.chmod(exported, 0o664)
    write_atomic(exported, b"c,d\n")
    assert stat.S_IMODE(exported.stat().st_mode) == 0o664 and exported.read_bytes() == b"c,d\n"


# --- file URIs back to paths (issue 33, item 4: portable by construction) ---------------------


def test_a_file_uri_gives_back_the_path_it_was_made_from(tmp_path):
    from haiku.rag.files import path_from_file_uri

    for name in ("plain.pdf", "with space.pdf", "per%cent #hash?.pdf", "Éluard — poèmes.pdf"):
        path = (tmp_path / "my papers" / name).resolve()
        assert path_from_file_uri(path.as_uri()) == str(path)


def test_on_windows_the_drive_letter_and_unc_share_come_back():
    """What ``Path.as_uri()`` makes on Windows: not ``/C:/…`` (the old urlparse path)."""
    from haiku.rag.files import path_from_file_uri

    assert path_from_file_uri("file:///C:/Users/Ann/My%20Papers/x.pdf", windows=True) == r"C:\Users\Ann\My Papers\x.pdf"
    assert path_from_file_uri("file://server/share/x%23y.pdf", windows=True) == r"\\server\share\x#y.pdf"
    assert path_from_file_uri("file:///home/ann/x%20y.pdf", windows=False) == "/home/ann/x y.pdf"


def test_the_app_and_the_client_read_file_uris_the_same_portable_way(monkeypatch):
    import types

    from haiku.rag import files
    from haiku.rag.client.base import local_path
    from haiku_desk.services.entries import path_from_uri

    # the Windows conventions, on any machine (only where the URI is read: pathlib stays)
    monkeypatch.setattr(files, "os", types.SimpleNamespace(name="nt"))
    assert path_from_uri("file:///C:/Users/Ann/x.pdf") == r"C:\Users\Ann\x.pdf"
    assert str(local_path("file:///C:/Users/Ann/x.pdf")).endswith(r"C:\Users\Ann\x.pdf")
    assert path_from_uri("https://example.org/x.pdf") is None
