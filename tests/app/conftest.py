"""Fixtures for app tests: one qasync loop on pytest-qt's QApplication."""

from __future__ import annotations

import pytest


@pytest.fixture
def qloop(qapp):
    from haiku_desk.bridge import install_event_loop

    loop = install_event_loop(qapp)
    yield loop
