"""Cancelling a parse without signals (issue 33, item 4): "cancel N" on the worker's control pipe
stops parse N between pages, even when it reaches the worker before the parse's request is
unpacked (a cancel sent with the request), and the worker lives on: stopped, not killed."""

from __future__ import annotations

import pytest

from haiku.rag.errors import OperationCancelled
from haiku.rag.operations import CancelToken

from .stalling import STUCK_NAME


def test_a_cancel_sent_with_the_request_stops_the_parse_and_keeps_the_worker(stalling_worker, config):
    first = stalling_worker.prepare(b"# Before\n\nA note.", timeout=120, filename="a.md", uri="a.md", config=config)
    assert "A note." in first.content
    pid = stalling_worker.pid
    for _ in range(3):  # each time the cancel races the request's unpacking in the worker
        token = CancelToken()
        token.cancel()
        with pytest.raises(OperationCancelled):
            stalling_worker.prepare(b"%PDF-1.7 stuck", timeout=120, filename=STUCK_NAME, uri=STUCK_NAME, config=config, cancel=token)
        assert stalling_worker.pid == pid  # stopped between pages, not killed after the grace
    after = stalling_worker.prepare(b"# After\n\nStill here.", timeout=120, filename="b.md", uri="b.md", config=config)
    assert "Still here." in after.content and stalling_worker.pid == pid
