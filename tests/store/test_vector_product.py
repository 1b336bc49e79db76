"""The exact-search product split over two threads (store/vectors.py ``product``): it gives the
scores and the ranking of the one-thread product, at both sides of the split threshold, and
a failure in the helper's half reaches the caller instead of a half-filled score array."""

from __future__ import annotations

import numpy as np
import pytest

from haiku.rag.store import vectors
from haiku.rag.store.vectors import VectorMatrix, product


def _unit_rows(rows: int, dim: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((rows, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


@pytest.mark.parametrize("rows", [1, 2, 3, 1000, 1001])
def test_split_product_equals_plain_product(monkeypatch: pytest.MonkeyPatch, rows: int) -> None:
    m = _unit_rows(rows, 24)
    q = _unit_rows(1, 24, seed=8)[0]
    expected = m.astype(np.float64) @ q.astype(np.float64)
    for threshold in (1, 10**9):  # split, and not
        monkeypatch.setattr(vectors, "SPLIT_PRODUCT_ROWS", threshold)
        got = product(m, q)
        assert got.dtype == np.float32 and got.shape == (rows,)
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_nearest_ranks_the_same_split_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = 5000
    m = _unit_rows(rows, 32)
    matrix = VectorMatrix(
        chunk_ids=np.asarray([f"c{i}" for i in range(rows)], dtype=object),
        generations=np.asarray(["g"] * rows, dtype=object),
        document_codes=(np.arange(rows) % 7).astype(np.int32),
        documents={f"d{i}": i for i in range(7)},
        document_names=[f"d{i}" for i in range(7)],
        vectors=m,
        first_pages=np.full(rows, vectors.NO_PAGE, dtype=np.int32),
        chunk_rows=np.arange(rows, dtype=np.int64),
    )
    q = _unit_rows(3, 32, seed=9)
    for query in q:
        exact = np.argsort(-(m.astype(np.float64) @ query), kind="stable")[:20]
        for scope in (None, ["d2", "d5"]):
            monkeypatch.setattr(vectors, "SPLIT_PRODUCT_ROWS", 1)
            split = matrix.nearest(query, 20, scope)
            monkeypatch.setattr(vectors, "SPLIT_PRODUCT_ROWS", 10**9)
            plain = matrix.nearest(query, 20, scope)
            assert [h["chunk_id"] for h in split] == [h["chunk_id"] for h in plain]
            if scope is None:
                assert [h["chunk_id"] for h in split] == [f"c{i}" for i in exact]
            else:
                assert {h["document_id"] for h in split} <= {"d2", "d5"}


def test_a_failure_in_the_helpers_half_reaches_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller's half succeeds and the helper thread's half fails: the product raises
    instead of returning scores with an unwritten half."""
    monkeypatch.setattr(vectors, "SPLIT_PRODUCT_ROWS", 1)
    real_pool = vectors._product_pool()
    helper_calls = []

    class FailingHelper:
        def submit(self, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
            def fail() -> None:
                helper_calls.append(args[1].shape)  # the second half of the matrix
                raise MemoryError("helper half failed")

            return real_pool.submit(fail)

    monkeypatch.setattr(vectors, "_product_pool", lambda: FailingHelper())
    m = _unit_rows(10, 4)
    with pytest.raises(MemoryError, match="helper half failed"):
        product(m, np.ones(4, dtype=np.float32))
    assert helper_calls == [(5, 4)]
