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
