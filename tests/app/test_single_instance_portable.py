"""The single-instance parts that differ by OS, written portably (issue 33, item 4).

Windows has no private socket folder: its named pipes are machine-wide, so the pipe's name
mixes in a random key of the account (kept in its own %LOCALAPPDATA%) and another account
cannot guess it. A hung holder is recognised and stopped through psutil (no /proc, no POSIX
signals), which is what macOS and Windows need; on Linux the old /proc code did the same, so
that test guards the rewrite rather than failing before it."""

from __future__ import annotations

import subprocess
import sys

from haiku_desk import single_instance


def test_a_windows_pipe_name_cannot_be_guessed_by_another_account(tmp_path, monkeypatch):
    monkeypatch.setattr(single_instance, "_named_pipes", lambda: True)
    library = tmp_path / "library.lancedb"
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "ann"))
    ours = single_instance.server_name(library)
    assert single_instance.server_name(library) == ours  # stable: the second launch finds it
    key = tmp_path / "ann" / "haiku-desk" / "instance-key"
    assert len(key.read_text()) == 32
    assert single_instance._library_digest(library) not in ours  # nothing guessable in it
    assert single_instance.server_name(tmp_path / "other.lancedb") != ours
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "bob"))  # another account's key
    assert single_instance.server_name(library) != ours


def test_a_hung_holder_is_recognised_and_stopped_without_proc_or_signals():
    ignores_terms = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    holder = subprocess.Popen([sys.executable, "-c", ignores_terms, "haiku-desk"])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert single_instance._is_haiku_desk(holder.pid)
        assert not single_instance._is_haiku_desk(other.pid)  # never stop what is not ours
        assert single_instance._stop_process(holder.pid)  # terminate ignored, then killed
        assert holder.wait(timeout=30) != 0
    finally:
        for process in (holder, other):
            process.kill()
            process.wait(timeout=30)
