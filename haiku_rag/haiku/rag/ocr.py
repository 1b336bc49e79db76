"""OCR as hosts see it: the public face of ``haiku.rag.ingest.ocr``. Imports nothing heavy."""

from __future__ import annotations

__all__ = ["runtime"]


def runtime() -> str:
    """The runtime the OCR detector and recogniser load on in this process: "openvino" or
    "onnxruntime" (the fallback). Loads the OCR engine if it is not loaded yet (~1 s)."""
    from haiku.rag.ingest.ocr import runtime as loaded_runtime

    return loaded_runtime()
