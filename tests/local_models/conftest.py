from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def allow_model_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests talk to a real llama.cpp on 127.0.0.1 (started by the test itself)."""
    import pydantic_ai.models

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
