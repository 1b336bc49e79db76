"""What a failing program can put in front of the model: its error message is bounded too."""

from __future__ import annotations

from sandbox.test_sandbox import make_sandbox

HUGE_RAISE = "raise ValueError('z' * 50_000_000)"


async def test_a_fifty_megabyte_exception_message_is_cut_with_a_note():
    box = make_sandbox(max_memory_bytes=512 << 20, call_seconds=20.0)
    try:
        result = await box.execute(HUGE_RAISE)
    finally:
        box.close()
    assert not result.success and result.stopped_by == "error"
    assert len(result.stderr) < 5_000, f"{len(result.stderr):,} characters of traceback"
    assert "ValueError" in result.stderr
    assert "characters of this message not shown" in result.stderr
