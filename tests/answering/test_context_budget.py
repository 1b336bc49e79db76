"""The no-tools answer path sizes its request to the model's known context: the passages are
cut to fit, and earlier turns that no longer fit beside them are left out of the request (the
conversation keeps them). A model file's context is the one its runtime loads it with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from haiku.rag import answering
from haiku.rag.answering import AnswerOptions, Conversation
from haiku.rag.client import HaikuRAG
from haiku.rag.config import ModelConfig
from haiku.rag.embeddings.local import default_tokenizer
from haiku.rag.local_models import provider

CONTEXT = 2048
QUESTIONS = [
    "What delayed the night convoys?",
    "What do lantern otters hunt?",
    "Why was the depot obsolete?",
    "What did the report conclude?",
    "What do otters eat at dusk?",
    "Which shortage is discussed?",
]


def request_tokens(messages: list[ModelMessage]) -> int:
    """The request's tokens, counted with the project's tokenizer: every part's text and the
    instructions."""
    texts = []
    for message in messages:
        if isinstance(message, ModelRequest) and message.instructions:
            texts.append(message.instructions)
        for part in message.parts:
            content = getattr(part, "content", None)
            texts.append(content if isinstance(content, str) else json.dumps(content, default=str))
    return len(default_tokenizer().encode("\n".join(texts)).ids)


@pytest.mark.parametrize("source", ["configured", "model-file"])
async def test_every_request_fits_a_2048_token_context(corpus, monkeypatch, source) -> None:
    sizes: list[int] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sizes.append(request_tokens(messages))
        return ModelResponse(parts=[TextPart("The passages say so [1].")])

    model = FunctionModel(reply)
    config = corpus.config.model_copy(deep=True)
    if source == "configured":
        config.qa.model = ModelConfig(provider="openai-compatible", name="small", context_tokens=CONTEXT, supports_tools=False)
    else:  # the model-file provider knows the context its runtime loaded the model with
        config.qa.model = ModelConfig(provider="model-file", name="/models/small.gguf", supports_tools=False)
        monkeypatch.setattr(provider, "loaded_context", lambda m: CONTEXT if m is model else None)
    conversation = Conversation()
    async with HaikuRAG(corpus.db_path, config, read_only=True) as client:
        for question in QUESTIONS:
            await answering.answer(client, question, conversation, AnswerOptions(mode="fallback"), model=model)
    assert len(sizes) == len(QUESTIONS)
    answer_room = 200  # the small profile's answer limit
    assert max(sizes) <= CONTEXT - answer_room, sizes
    # the conversation keeps every turn, though the requests left the oldest out
    assert sum(isinstance(m, ModelResponse) for m in conversation.messages) == len(QUESTIONS)


def test_a_model_file_chat_model_knows_its_loaded_context(tmp_path: Path) -> None:
    from gguf_factory import tiny_llama

    path = tiny_llama(tmp_path / "small.gguf", context=CONTEXT)
    try:
        chat = provider.chat_model(ModelConfig(provider="model-file", name=str(path)))
        assert provider.loaded_context(chat) == CONTEXT
        assert provider.loaded_context(FunctionModel(lambda m, i: ModelResponse(parts=[]))) is None
    finally:
        provider.unload()
