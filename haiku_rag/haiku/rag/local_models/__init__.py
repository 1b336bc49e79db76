"""Chat with a model file: GGUF models already on this computer, run by llama.cpp.

- ``discovery``: the files Ollama, LM Studio, GPT4All and the Hugging Face cache keep, and any
  file or folder picked, each described from its header (``header``) without loading weights;
- ``fit``: the memory a model needs for a context against what is free, and the threads;
- ``runtime``: llama.cpp's OpenAI-compatible server (xllamacpp) in a child process on
  127.0.0.1 with a per-session key, started on first use, stopped when idle or on close;
- ``provider``: the chat model (the OpenAI-compatible path of ``haiku.rag.models``) and the
  once-per-model tool-calling probe;
- ``catalog`` / ``download``: a short curated list of model files (size, licence, URL, SHA-256)
  and the download the user starts: ``.part`` resumed with Range, disk space checked first,
  hash and GGUF header checked before the file is put in place.

Standard library only at import; xllamacpp is imported in the child process alone.
"""

from haiku.rag.local_models.discovery import LocalModel, Roots, describe, discover, embedding_models
from haiku.rag.local_models.fit import Fit, plan
from haiku.rag.local_models.header import GGUFError, GGUFInfo, read_header

__all__ = [
    "Fit",
    "GGUFError",
    "GGUFInfo",
    "LocalModel",
    "Roots",
    "describe",
    "discover",
    "embedding_models",
    "plan",
    "read_header",
]
