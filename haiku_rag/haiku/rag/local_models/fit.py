"""Will a model fit, before it is loaded: memory, context size, threads.

The estimate is the weights (the file, mapped whole while answering) plus the KV cache for the
chosen context (f16 keys and values, every layer) plus llama.cpp's working buffers (logits for
a batch over the vocabulary, activations). It is compared with the memory the system reports
as available now (MemAvailable), so the message reads "needs ~2.1 GB, 9.0 GB free".

The context is the largest of ``CONTEXT_STEPS`` (never more than the model was trained for)
that fits; the answer path's small-model profile sizes its passages to whatever it is.
Threads: one core is left for the desktop (the GUI stays responsive while a model writes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from haiku.rag.local_models.discovery import format_bytes
from haiku.rag.local_models.header import GGUFInfo

DEFAULT_CONTEXT = 8192
MIN_CONTEXT = 2048
CONTEXT_STEPS = (8192, 4096, 2048)
UBATCH = 512
FIXED_OVERHEAD = 96 << 20  # llama.cpp's own structures, the server, the child interpreter
HEADROOM = 0.9  # use at most this share of the available memory


@dataclass(frozen=True)
class Fit:
    needs_bytes: int
    available_bytes: int
    context: int
    threads: int

    @property
    def fits(self) -> bool:
        return self.needs_bytes <= self.available_bytes * HEADROOM

    @property
    def message(self) -> str:
        needs, free = format_bytes(self.needs_bytes), format_bytes(self.available_bytes)
        if self.fits:
            return f"needs ~{needs}, {free} free"
        return (
            f"needs ~{needs} but only {free} is free: close other programs, or choose a smaller "
            "model (fewer parameters or a lower quantisation such as Q4_K_M)"
        )


def estimate_bytes(info: GGUFInfo, context: int, file_size: int | None = None) -> int:
    """Memory to run ``info`` with ``context`` tokens of context."""
    weights = file_size if file_size is not None else info.file_size
    kv = (info.kv_bytes_per_token or 0) * context
    vocab = info.vocab_size or 32_000
    width = info.embedding_length or 2048
    buffers = vocab * UBATCH * 4 + width * UBATCH * 4 * 8
    return weights + kv + buffers + FIXED_OVERHEAD


def available_memory() -> int:
    """Bytes the system can give without swapping (Linux: MemAvailable; else psutil's figure,
    when installed, else the free pages)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    try:
        import importlib

        return int(importlib.import_module("psutil").virtual_memory().available)
    except Exception:  # no psutil: the free pages (an underestimate: caches count as used)
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def choose_threads(cores: int | None = None) -> int:
    """The threads a model may use: the cores this process may run on, less one for the GUI."""
    if cores is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
    return max(1, cores - 1)


def plan(
    info: GGUFInfo,
    *,
    context: int | None = None,
    file_size: int | None = None,
    available: int | None = None,
    cores: int | None = None,
) -> Fit:
    """The memory ``info`` needs and the context and threads to run it with. ``context``:
    the person's choice (kept even when it does not fit: the message says so); None: the
    largest step up to the trained context that fits."""
    free = available_memory() if available is None else available
    threads = choose_threads(cores)
    trained = info.context_length or DEFAULT_CONTEXT
    if context is not None:
        chosen = context
    else:
        steps = [c for c in CONTEXT_STEPS if c <= trained] or [trained]
        chosen = steps[-1]
        for step in steps:
            if estimate_bytes(info, step, file_size) <= free * HEADROOM:
                chosen = step
                break
    return Fit(estimate_bytes(info, chosen, file_size), free, chosen, threads)
