"""What ingestion and search hold between uses is given back when the library is idle, and
comes back on next use (issue 16, memory): checked on the objects themselves, never on RSS."""

from __future__ import annotations

import asyncio
import os
import weakref

import numpy as np

from haiku.rag.client import HaikuRAG
from haiku.rag.embeddings.local import LocalEmbedder
from haiku.rag.memory import return_freed_memory


def test_a_released_local_embedder_drops_its_session_and_loads_it_again_on_next_use():
    embedder = LocalEmbedder(threads=1)
    first = embedder.embed_documents(["Glaciers retreat when summer melting exceeds snowfall."])
    session = weakref.ref(embedder._session)
    embedder.release()
    assert embedder._session is None and embedder._tokenizer is None
    assert session() is None  # nothing else kept the session (and its arena) alive
    again = embedder.embed_documents(["Glaciers retreat when summer melting exceeds snowfall."])
    assert embedder._session is not None
    assert np.allclose(first, again, atol=1e-6)
    embedder.close()


def test_release_memory_after_ingesting_gives_back_the_session_and_the_search_caches(tmp_path, config):
    async def scenario() -> None:
        async with HaikuRAG(tmp_path / "lib.lancedb", config, create=True) as client:
            for n in range(3):
                await client.create_document(f"Quokkas number {n} live on Rottnest Island near Perth.")
            hits = await client.search("where do quokkas live", search_type="vector")
            assert hits
            embedder = client._embedder
            assert embedder is not None and embedder._session is not None
            matrix = weakref.ref(client.store.vector_matrix())
            assert matrix() is not None

            client.release_memory()

            assert client._embedder is embedder and embedder._session is None
            assert matrix() is None  # the exact-search matrix is gone, not just unreferenced here
            assert client.store._generations is None
            again = await client.search("where do quokkas live", search_type="vector")
            assert [h.chunk_id for h in again] == [h.chunk_id for h in hits]  # matrix reloaded
            assert await client.search("which island has quokkas", search_type="vector")
            assert embedder._session is not None  # re-created by a new query's embedding

    asyncio.run(scenario())


def test_returning_freed_memory_is_harmless_when_nothing_was_freed():
    return_freed_memory()
    return_freed_memory()


def test_large_buffers_keep_their_own_mappings_after_a_larger_one_was_freed():
    """glibc raises its mmap threshold to the largest block freed, after which large buffers
    come from the heap and fragment it for good (the RSS growth of a create_document loop);
    ``limit_heap_fragmentation`` fixes the threshold. Run in a fresh process: it is process-wide."""
    import subprocess
    import sys

    code = """
import ctypes, ctypes.util
from haiku.rag.memory import limit_heap_fragmentation

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                              "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = Info

def mapped(size):
    before = libc.mallinfo2().hblks
    block = libc.malloc(size)
    own = libc.mallinfo2().hblks > before
    libc.free(block)
    return own

limited = limit_heap_fragmentation() if sys.argv[1] == "limit" else None
libc.free(libc.malloc(8 << 20))  # a large block freed: glibc would raise its threshold to 8 MB
print(limited, mapped(1 << 20), mapped(3 << 20))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}

    def run(mode: str) -> list[str]:
        result = subprocess.run(
            [sys.executable, "-c", "import sys\n" + code, mode], capture_output=True, text=True, timeout=60, env=env
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.split()

    assert run("default") == ["None", "False", "False"]  # glibc alone: from the heap from now on
    assert run("limit") == ["True", "True", "True"]
