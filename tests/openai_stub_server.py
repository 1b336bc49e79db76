"""A scripted OpenAI-compatible chat server on 127.0.0.1 for end-to-end tests.

It speaks the real wire format (``/v1/models``, ``/v1/chat/completions`` with and without
streaming) so the production HTTP path — Pydantic AI's OpenAI provider, our model factory,
the CLI — is exercised; only the "model" is a script:

- tools offered and nothing searched yet  -> call ``rag_search`` with the user's question;
- the last message is a ``rag_search`` result -> call ``rag_cite`` with the first chunk id;
- the last message is a ``rag_cite`` result -> answer with the first sentence it was shown;
- no tools (the retrieve-then-read fallback) -> answer quoting passage [1] with a [1] marker.

Every request body is kept in ``requests`` for assertions.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHUNK_ID = re.compile(r"\[([0-9a-f]{32})\]")
PASSAGE = re.compile(r"^\[1\][^\n]*\n(.+?)(?:\n\n|\Z)", re.M | re.S)


class StubOpenAI:
    def __init__(self, model: str = "stub-model") -> None:
        self.model = model
        self.requests: list[dict[str, Any]] = []
        # a streamed answer ends after this many chunks, without its last chunk or [DONE]:
        # what a client sees when the server dies mid-answer
        self.cut_after_chunks: int | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> StubOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- the script ---------------------------------------------------------------------

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The assistant message for a request: {"content": str} or {"tool_calls": [...]}."""
        messages = body["messages"]
        tools = {t["function"]["name"] for t in body.get("tools", [])}
        last = messages[-1]
        if last["role"] == "tool":
            called = _tool_name_of(messages, last["tool_call_id"])
            if called == "rag_search":
                cited, _ = _first_hit_shown(_text(last["content"]))
                return _call("rag_cite", {"chunk_ids": [cited] if cited else []})
            if called == "rag_cite":
                shown = next((m for m in reversed(messages) if m["role"] == "tool" and "Content:" in _text(m["content"])), None)
                sentence = _first_sentence_shown(_text(shown["content"])) if shown else "Done"
                return {"content": f"According to the library: {sentence}."}
        if "load_capability" in tools and "rag_search" not in tools:
            return _call("load_capability", {"id": "haiku-rag"})
        if "rag_search" in tools:
            question = next(_text(m["content"]) for m in reversed(messages) if m["role"] == "user")
            return _call("rag_search", {"query": question})
        prompt = "\n".join(_text(m["content"]) for m in messages)
        match = PASSAGE.search(prompt)
        # the passage's lines are quoted with "> ", as in a search return
        text = "\n".join(line[2:] if line.startswith("> ") else line.lstrip(">") for line in match.group(1).split("\n")) if match else ""
        first = _closest_sentence(text, prompt.rsplit("Question:", 1)[-1]) if match else "nothing relevant was found"
        return {"content": f"{first} [1]."}

    # --- HTTP ---------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._json({"object": "list", "data": [{"id": stub.model, "object": "model", "owned_by": "stub"}]})
                else:
                    self._json({"error": {"message": "not found"}}, status=404)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                stub.requests.append(body)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._json({"error": {"message": "not found"}}, status=404)
                    return
                message = stub.reply(body)
                if body.get("stream"):
                    self._stream(message)
                else:
                    self._json(_completion(stub.model, message))

            def _json(self, data: dict[str, Any], status: int = 200) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _stream(self, message: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chunks = _stream_chunks(stub.model, message)
                cut = stub.cut_after_chunks if "content" in message else None
                for chunk in chunks[:cut]:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                if cut is None:
                    self.wfile.write(b"data: [DONE]\n\n")

        return Handler


def _closest_sentence(text: str, question: str) -> str:
    """The passage's sentence sharing most words (of 4+ letters) with the question, the first
    of equals: what a model answering from the passage would say."""
    asked = {w.lower() for w in re.findall(r"[A-Za-z]{4,}", question)}
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n\n", text) if s.strip()]
    if not sentences:
        return "nothing relevant was found"
    best = max(sentences, key=lambda s: len(asked & {w.lower() for w in re.findall(r"[A-Za-z]{4,}", s)}))
    return best.rstrip(".")


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _tool_name_of(messages: list[dict[str, Any]], call_id: str) -> str | None:
    for message in messages:
        for call in message.get("tool_calls") or []:
            if call["id"] == call_id:
                return call["function"]["name"]
    return None


_call_counter = iter(range(1, 1_000_000))


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"id": f"call_{next(_call_counter)}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ]
    }


def _completion(model: str, message: dict[str, Any]) -> dict[str, Any]:
    finish = "tool_calls" if "tool_calls" in message else "stop"
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": message.get("content"), **({"tool_calls": message["tool_calls"]} if "tool_calls" in message else {})}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _stream_chunks(model: str, message: dict[str, Any]) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
    chunks = []
    if "tool_calls" in message:
        for i, call in enumerate(message["tool_calls"]):
            delta = {"tool_calls": [{"index": i, "id": call["id"], "type": "function", "function": call["function"]}]}
            chunks.append({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    else:
        for word in re.findall(r"\S+\s*", message["content"]):
            chunks.append({**base, "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]})
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return chunks


def _first_hit_shown(search_return: str) -> tuple[str | None, str]:
    """The first result's best hit and its document text (lines quoted with "> "): the
    passage under the result's own id when the result shows several, else the result."""
    if "Content:" not in search_return:
        return None, ""
    ids = CHUNK_ID.findall(search_return)
    block = search_return.split("Content:", 1)[1].split("\n\n---\n\n")[0]
    passages = re.split(r"^Passage \[([0-9a-f]{32})\]( \(search hit\))?:$", block, flags=re.M)
    if len(passages) > 1:  # ["", id, hit-mark, text, id, hit-mark, text, ...]
        shown = [(passages[i], passages[i + 1], passages[i + 2]) for i in range(1, len(passages), 3)]
        header = ids[0] if ids else None  # the result's own id: its best hit
        chunk_id, _, block = next((p for p in shown if p[0] == header), shown[0])
    else:
        chunk_id = ids[0] if ids else None
    lines = block.split("\n")
    return chunk_id, "\n".join(line[2:] for line in lines if line.startswith("> ") or line == ">")


def _first_sentence_shown(search_return: str) -> str:
    """The first real sentence of the first result's search hit: a heading line ("3.1
    Traces") is not one."""
    _, text = _first_hit_shown(search_return)
    body = " ".join(line for line in text.split("\n") if len(line.split()) >= 4)
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", body.strip()) if s.strip()]
    sentence = next((s for s in sentences if len(s.split()) >= 6), sentences[0] if sentences else "")
    return sentence.rstrip(".")
