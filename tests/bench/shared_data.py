"""Where the benchmarks read third-party data: ``--data``, else ``$HAIKU_SHARED_DATA``, else
``../shared/data`` beside the checkout (never copied into the repository)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def data_dir(given: str | None) -> Path:
    return Path(given or os.environ.get("HAIKU_SHARED_DATA") or REPO_ROOT.parent / "shared" / "data")
