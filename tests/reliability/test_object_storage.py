"""The store on an S3-compatible object store: moto's server on 127.0.0.1 stands in for the
bucket; LanceDB is pointed at it only through our configuration (``lancedb.uri`` and
``lancedb.storage_options``), with the credentials in the environment, never in the file."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pdf_factory
import pytest
import yaml

from haiku.rag.client import HaikuRAG
from haiku.rag.config import load_config
from haiku.rag.doctor import run_doctor
from haiku.rag.store import documents as D
from haiku.rag.store import schema as S
from haiku.rag.store.engine import LOCK_FILE, REMOTE_RECOVERY_GRACE_SECONDS, Store, new_generation

HAIKU_RAG = str(Path(sys.executable).parent / "haiku-rag")
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


@pytest.fixture(scope="module")
def s3_endpoint():
    moto_server = pytest.importorskip("moto.server")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def bucket(s3_endpoint, monkeypatch) -> str:
    import boto3

    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    name = f"lib-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    return name


def _options(endpoint: str) -> dict[str, str]:
    return {"endpoint": endpoint, "allow_http": "true", "region": "us-east-1"}


@pytest.fixture
def s3_config(tmp_path, bucket, s3_endpoint, monkeypatch):
    monkeypatch.chdir(tmp_path)  # anything written "locally" by mistake would land here
    config = load_config()
    config.storage.data_dir = tmp_path / "data"
    config.embeddings.threads = 2
    config.lancedb.uri = f"s3://{bucket}/lib.lancedb"
    config.lancedb.storage_options = _options(s3_endpoint)
    return config


async def test_ingest_and_search_on_object_storage(tmp_path, s3_config):
    papers = tmp_path / "papers"
    papers.mkdir()
    layout = pdf_factory.make_report_pdf(papers / "report.pdf")
    local_before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))

    async with HaikuRAG(None, s3_config, create=True) as client:
        assert client.store.is_remote and client.location.startswith("s3://")
        [outcome] = await client.add_source(papers)
        assert outcome.status == "ingested" and outcome.document.index_state == "hybrid"
        results = await client.search("marmalade crates customs")
        assert results and results[0].document_uri == layout.path.resolve().as_uri()
        assert results[0].boxes and results[0].page_numbers
        assert run_doctor(client.store, expected_vector_dim=384).ok

    # Nothing local: no store folder, no lock file, no leftovers folder.
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == local_before
    assert not list(tmp_path.rglob(LOCK_FILE))

    # Another reader (a teammate) opens the same bucket read-only and sees the document.
    async with HaikuRAG(None, s3_config, read_only=True) as reader:
        [document] = await reader.list_documents()
        assert document.chunk_count > 0
        assert await reader.search("marmalade", search_type="fts")
        pages = await reader.visualize_chunk(results[0].chunk_id)
        assert pages and pages[0].boxes


def test_the_cli_points_at_a_bucket_through_the_config_file(tmp_path, bucket, s3_endpoint):
    papers = tmp_path / "papers"
    papers.mkdir()
    pdf_factory.make_two_column_pdf(papers / "paper.pdf")
    config_file = tmp_path / "haiku.rag.yaml"
    config_file.write_text(
        yaml.safe_dump({"lancedb": {"uri": f"s3://{bucket}/team.lancedb", "storage_options": _options(s3_endpoint)}})
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAIKU_RAG_")}
    env.update(CREDENTIALS, HAIKU_RAG_CONFIG_PATH=str(config_file))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([HAIKU_RAG, *args], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)

    added = run("add-src", str(papers), "--json")
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)[0]["status"] == "ingested"
    found = run("search", "--json", "lighthouse keepers scheduling")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)
    doctor = run("doctor")
    assert doctor.returncode == 0 and "FAIL" not in doctor.stdout, doctor.stdout
    assert "testing" not in run("settings").stdout  # storage options with keys would be masked
    assert not (tmp_path / "s3:").exists()


def test_a_writable_open_never_removes_another_machines_write_in_progress(s3_config):
    from store.helpers import new_document

    uri, options = s3_config.lancedb.uri, s3_config.lancedb.storage_options
    store = Store(uri, create=True, storage_options=options)
    kept, _ = D.write_document(store, new_document(uri="file:///kept.pdf"))
    ghost = new_document(uri="file:///ghost.pdf")
    young = new_generation()
    old = f"g{time.time_ns() - int(2 * REMOTE_RECOVERY_GRACE_SECONDS * 1e9):x}-abandoned"
    # Content rows of two uncommitted writes: one in progress elsewhere, one abandoned long ago.
    for generation in (young, old):
        ids = [f"c-{generation}-{i}" for i in range(len(ghost.chunks))]
        store.table(S.CHUNKS).add(D._chunks_table(f"doc-{generation}", generation, ghost.chunks, ids))
    store.close()

    second = Store(uri, storage_options=options)  # a teammate's writable open runs recovery
    generations = set(second.table(S.CHUNKS).search().select(["generation"]).limit(None).to_arrow()["generation"].to_pylist())
    assert young in generations and old not in generations
    assert kept.generation in generations
    assert run_doctor(second).ok  # a young leftover is not damage: it may still be committed
    second.close()
