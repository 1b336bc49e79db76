"""Store integrity checks (``haiku-rag doctor``). ``run_doctor`` only reads; it reports.

Beyond the rows, it runs a real query through every index (a full-text search for a word of
the library, a lookup through each scalar index): index files can be damaged while every row
reads fine, and then every search fails. ``repair_indexes`` (``doctor --repair``) drops the
damaged indexes and builds them again from the rows, which are the truth.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from dataclasses import dataclass, field

from haiku.rag.store import schema as S
from haiku.rag.store.engine import (
    FTS_INDEX_NAME,
    SCALAR_INDEXES,
    Store,
    create_fts_index,
    short_error,
)


@dataclass(slots=True)
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass(slots=True)
class DoctorReport:
    checks: list[Check] = field(default_factory=list)
    # (table, column) of indexes whose files fail a query; column "content_fts" is full text
    damaged_indexes: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def add(self, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append(Check(name, ok, detail))


S_FIRST_COLUMN = {
    S.DOCUMENTS: "id",
    S.DOCUMENT_BLOBS: "generation",
    S.DOCUMENT_ITEMS: "generation",
    S.CHUNKS: "generation",
    S.CHUNK_VECTORS: "generation",
    S.SETTINGS: "key",
}


def _column(store: Store, table: str, columns: list[str]) -> dict[str, list]:
    data = store.table(table).search().select(columns).limit(None).to_arrow()
    return {c: data[c].to_pylist() for c in columns}


def _sample(values: set[str] | list[str], n: int = 3) -> str:
    values = sorted(values)
    return ", ".join(values[:n]) + (f" (+{len(values) - n} more)" if len(values) > n else "")


def _query_indexes(store: Store, report: DoctorReport, chunk_ids: list[str]) -> None:
    """A real query through the full-text index and each lookup index."""
    chunks = store.table(S.CHUNKS)
    word = "the"
    if chunk_ids:
        sample = chunks.search().select(["content"]).limit(1).to_list()
        found = re.findall(r"[^\W\d_]{3,}", sample[0]["content"]) if sample else []
        word = found[0] if found else word
    try:
        hits = chunks.search(word, query_type="fts", fts_columns="content_fts").limit(1).to_list()
        ok = bool(hits) or not chunk_ids
        detail = "" if ok else f"a search for {word!r}, a word of the library, found nothing"
    except Exception as exc:  # lance reports damaged index files as plain errors
        ok, detail = False, short_error(exc)[:200]
    if not ok:
        report.damaged_indexes.append((S.CHUNKS, "content_fts"))
    report.add("full-text search works", ok, detail + ("; `haiku-rag doctor --repair` rebuilds the index" if not ok else ""))
    broken = []
    for table, column in SCALAR_INDEXES:
        try:
            store.table(table).search().where(f"{column} = 'doctor-probe'", prefilter=True).select([column]).limit(1).to_list()
        except Exception as exc:
            broken.append(f"{table}.{column} ({short_error(exc)[:200]})")
            report.damaged_indexes.append((table, column))
    report.add("lookup indexes work", not broken, "; ".join(broken) + ("; `haiku-rag doctor --repair` rebuilds them" if broken else ""))


def repair_indexes(store: Store, damaged: list[tuple[str, str]]) -> list[str]:
    """Drop the ``damaged`` indexes and build them again from the rows; returns what was
    rebuilt. The rows are not touched (an index is derived data)."""
    rebuilt = []
    with store.write_transaction():
        for table_name, column in damaged:
            table = store.table(table_name)
            name = FTS_INDEX_NAME if column == "content_fts" else f"{column}_idx"
            with contextlib.suppress(Exception):  # a damaged index may not even drop cleanly
                table.drop_index(name)
            if column == "content_fts":
                create_fts_index(table)
            else:
                table.create_scalar_index(column, replace=True)
            rebuilt.append(f"{table_name}.{column}")
    return rebuilt


def run_doctor(store: Store, expected_vector_dim: int | None = None) -> DoctorReport:
    """Check the store's integrity. ``expected_vector_dim``: the configured embedder's size,
    checked against the stored vectors when both are known."""
    report = DoctorReport()
    unreadable = []
    for name in S.TABLES:
        if store.has_table(name):
            try:  # every data file of the table, one cheap column
                store.table(name).search().select([S_FIRST_COLUMN[name]]).limit(None).to_arrow()
            except (OSError, RuntimeError, ValueError) as exc:
                unreadable.append(f"{name} ({str(exc).strip().splitlines()[0].split(', /')[0]})")
    report.add("every table is readable", not unreadable, "; ".join(unreadable))
    if unreadable:
        return report  # the other checks would only fail on the same files
    version = store.get_setting("schema_version")
    report.add("schema version recorded", version is not None, f"found {version!r}")
    documents = _column(store, S.DOCUMENTS, ["id", "uri", "generation", "chunk_count", "index_state"])
    live = dict(zip(documents["id"], documents["generation"], strict=True))
    live_generations = set(live.values())

    repeated_ids = {i for i, n in Counter(documents["id"]).items() if n > 1}
    report.add("one row per document", not repeated_ids, _sample(repeated_ids))
    repeated_uris = {u for u, n in Counter(documents["uri"]).items() if n > 1}
    report.add("one document per URI", not repeated_uris, _sample(repeated_uris))

    # On object storage a young leftover may be another machine's write in progress.
    stale = store.stale_generations(store.recovery_grace_seconds)
    report.add(
        "no leftovers of interrupted writes",
        not stale,
        "; ".join(f"{t}: {len(g)} stale generation(s)" for t, g in stale.items()),
    )

    chunks = _column(store, S.CHUNKS, ["id", "document_id", "generation"])
    in_flight = set().union(*store.stale_generations().values()) - set().union(*stale.values())
    orphans = {
        d
        for d, g in zip(chunks["document_id"], chunks["generation"], strict=True)
        if g not in live_generations and g not in in_flight
    }
    report.add("every chunk has its document", not orphans, _sample(orphans))

    per_doc = Counter(g for g in chunks["generation"] if g in live_generations)
    wrong_counts = {
        doc_id for doc_id, gen, n in zip(documents["id"], documents["generation"], documents["chunk_count"], strict=True)
        if per_doc.get(gen, 0) != n or n == 0
    }
    report.add("every document has all its chunks", not wrong_counts, _sample(wrong_counts))

    for table, what in ((S.DOCUMENT_ITEMS, "items"), (S.DOCUMENT_BLOBS, "stored file")):
        present = Counter(_column(store, table, ["generation"])["generation"])
        missing = {d for d, g in live.items() if g not in present}
        report.add(f"every document has its {what}", not missing, _sample(missing))
        if table == S.DOCUMENT_BLOBS:
            doubled = {d for d, g in live.items() if present.get(g, 0) > 1}
            report.add("one stored file per document", not doubled, _sample(doubled))

    if store.has_table(S.CHUNK_VECTORS):
        identity = store.embedder_identity or {}
        vectors = store.table(S.CHUNK_VECTORS)
        dim = vectors.schema.field("vector").type.list_size
        report.add(
            "vectors have the recorded size",
            identity.get("vector_dim") == dim,
            f"table {dim}-d, recorded {identity.get('vector_dim')}",
        )
        if expected_vector_dim is not None:
            report.add(
                "vectors have the configured embedder's size",
                expected_vector_dim == dim,
                f"stored {dim}-d, configured embedder {expected_vector_dim}-d",
            )
        vec = _column(store, S.CHUNK_VECTORS, ["chunk_id", "generation"])
        live_chunks = {c for c, g in zip(chunks["id"], chunks["generation"], strict=True) if g in live_generations}
        dangling = {c for c, g in zip(vec["chunk_id"], vec["generation"], strict=True) if g in live_generations and c not in live_chunks}
        report.add("every vector belongs to a chunk", not dangling, _sample(dangling))
        have = Counter(g for g in vec["generation"] if g in live_generations)
        incomplete = {
            d for d, g, n, state in zip(documents["id"], documents["generation"], documents["chunk_count"], documents["index_state"], strict=True)
            if state == "hybrid" and have.get(g, 0) != n
        }
        report.add("hybrid documents have every vector", not incomplete, _sample(incomplete))

    indexes = {i.name for i in store.table(S.CHUNKS).list_indices()}
    report.add("full-text index present", any("content_fts" in name for name in indexes), _sample(indexes))
    _query_indexes(store, report, chunks["id"])
    missing_indexes = set()
    for table, column in SCALAR_INDEXES:
        columns = {c for i in store.table(table).list_indices() for c in i.columns}
        if column not in columns:
            missing_indexes.add(f"{table}.{column}")
    report.add("lookup indexes present", not missing_indexes, _sample(missing_indexes))
    return report
