"""Sandboxed Python over the corpus, for the analysis capability.

- ``corpus``: the read-only virtual files (``/documents/{id}/metadata.json``, ``content.txt``,
  ``items.jsonl``, ``toc.json``) and how they are built from the store;
- ``checks``: what code is refused before it runs (imports beyond the allowed modules,
  dynamic code);
- ``filesystem``: the OS handler the interpreter's file calls reach: reads under
  ``/documents`` only, every write refused;
- ``output``: printed output, capped and truncated with a marker;
- ``runtime``: ``Sandbox``, one pydantic-monty session per question, with its limits.

The interpreter is pydantic-monty, a Python interpreter written in Rust that runs in worker
subprocesses and reaches the host only through the calls this package answers. Nothing here
imports it at module level except ``runtime`` and ``filesystem``, which only the analysis
capability's tools import, when code first runs.
"""
