"""An S3 endpoint that stops answering (issue 32): the writer hung silently for more than
3 minutes (the object-store client retries for 180 s by default, each attempt waiting 30 s).
Now every request is bounded by ``lancedb.request_deadline_seconds`` and the caller gets a
``StoreError`` that says so; what was stored before is intact.

moto's S3 server on 127.0.0.1 is the bucket; a proxy in front of it forwards until told to
stall, then swallows every byte and answers nothing (deterministic: nothing ever answers)."""

from __future__ import annotations

import logging
import uuid

import pytest

from haiku.rag.client import HaikuRAG
from haiku.rag.config import load_config
from haiku.rag.errors import StoreError

from .stall_proxy import StallingProxy

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


@pytest.fixture
def moto_endpoint():
    moto_server = pytest.importorskip("moto.server")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    yield server.get_host_and_port()
    server.stop()


async def test_a_stalled_object_store_fails_the_write_within_the_deadline(tmp_path, moto_endpoint, monkeypatch):
    import boto3

    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    host, port = moto_endpoint
    bucket = f"lib-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=f"http://{host}:{port}", region_name="us-east-1").create_bucket(Bucket=bucket)
    proxy = StallingProxy(host, port)
    config = load_config()
    config.storage.data_dir = tmp_path / "data"
    config.lancedb.uri = f"s3://{bucket}/lib.lancedb"
    config.lancedb.storage_options = {"endpoint": proxy.url, "allow_http": "true", "region": "us-east-1"}
    config.lancedb.request_deadline_seconds = 2
    try:
        async with HaikuRAG(None, config, create=True) as client:
            await client.create_document("Walrus herds drift on the floes.", title="Walrus", embed=False)
            proxy.stall()
            with pytest.raises(StoreError, match=r"did not answer within the deadline \(2 s, lancedb.request_deadline_seconds\)"):
                await client.create_document("Herons nest on the estuary.", title="Heron", embed=False)
    finally:
        proxy.close()
    # straight to the bucket: the first document is intact, the second was never committed
    config.lancedb.storage_options = {"endpoint": f"http://{host}:{port}", "allow_http": "true", "region": "us-east-1"}
    async with HaikuRAG(None, config, read_only=True) as client:
        assert [d.title for d in await client.list_documents()] == ["Walrus"]
