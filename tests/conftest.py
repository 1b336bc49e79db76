"""Test environment: offscreen Qt, no hub downloads, no model requests, no network beyond
loopback, and an isolated data dir so a developer's own library is never touched."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

# Before anything imports Qt, transformers or pydantic_ai.
os.environ["QT_QPA_PLATFORM"] = "offscreen"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
for name in list(os.environ):
    if name.startswith("HAIKU_RAG_"):
        del os.environ[name]

sys.path.insert(0, str(Path(__file__).parent))  # for `import pdf_factory`

import pytest  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("HAIKU_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(autouse=True, scope="session")
def _isolated_data_dir(tmp_path_factory: pytest.TempPathFactory):
    data_home = tmp_path_factory.mktemp("xdg-data")
    os.environ["XDG_DATA_HOME"] = str(data_home)
    yield data_home


@pytest.fixture(autouse=True, scope="session")
def _no_model_requests():
    import pydantic_ai.models

    pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
    yield


_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address):  # type: ignore[no-untyped-def]
    host = address[0] if isinstance(address, tuple) else address
    if self.family in (socket.AF_INET, socket.AF_INET6):
        if host not in ("127.0.0.1", "::1", "localhost") and not str(host).startswith("127."):
            raise OSError(f"test tried to reach {address}: only loopback is allowed in tests")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def _block_network(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    yield


@pytest.fixture
def config(tmp_path: Path):
    from haiku.rag.config import load_config

    cfg = load_config()
    cfg.storage.data_dir = tmp_path / "data"
    cfg.embeddings.threads = 2
    return cfg


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "library.lancedb"


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
