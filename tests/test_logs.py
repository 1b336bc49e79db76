"""The log file keeps tracebacks and never credentials."""

from __future__ import annotations

import logging

from haiku.rag.logs import configure_logging, redact


def test_credentials_are_masked():
    text = redact("key sk-proj-abcdefgh12345678901234 Authorization: Bearer abc.def-ghi12345 api_key=hunter2hunter2")
    assert "12345678901234" not in text and "abc.def-ghi12345" not in text and "hunter2" not in text
    assert "sk-proj-abc…" in text and "Bearer …" in text and "api_key=…" in text


def test_the_log_file_keeps_the_traceback(tmp_path):
    path = configure_logging("haiku-rag", tmp_path)
    try:
        try:
            raise KeyError("shelf")
        except KeyError:
            logging.getLogger("haiku.rag").exception("listing failed with OPENAI_API_KEY=sk-abcdefgh0123456789abcdef")
        for handler in logging.getLogger().handlers:
            handler.flush()
        text = path.read_text()
        assert path == tmp_path / "logs" / "haiku-rag.log"
        assert "Traceback (most recent call last)" in text and "KeyError: 'shelf'" in text
        assert "0123456789abcdef" not in text
    finally:
        for handler in [h for h in logging.getLogger().handlers if getattr(h, "_haiku_log", False)]:
            logging.getLogger().removeHandler(handler)
            handler.close()
