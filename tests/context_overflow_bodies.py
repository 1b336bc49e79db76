"""The 400 bodies real servers send when a request is larger than the model's loaded context
(each copied from the server's own output), shared by the library's and the app's tests."""

from __future__ import annotations

LLAMA_CPP = {  # llama.cpp's server (the built-in "Model file" provider runs it)
    "error": {
        "code": 400,
        "message": "request (7942 tokens) exceeds the available context size (2048 tokens), try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 7942,
        "n_ctx": 2048,
    }
}
OPENAI = {  # OpenAI (and vLLM) wording
    "error": {
        "message": "This model's maximum context length is 2048 tokens. However, your messages resulted in 7942 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
LM_STUDIO = {"error": "Trying to keep the first 7942 tokens when context the overflows. However, the model is loaded with context length of 2048 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}
OLLAMA = {"error": {"message": "the input length exceeds the context length", "type": "api_error"}}
