from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from capabilities.corpus import Corpus, build_corpus
from capabilities.scripting import ScriptedModel
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from haiku.rag.client import HaikuRAG


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return build_corpus(tmp_path_factory.mktemp("answering-corpus"))


@pytest.fixture(scope="session")
def lent_client(corpus: Corpus) -> Iterator[HaikuRAG]:
    client = HaikuRAG(corpus.db_path, corpus.config, read_only=True)
    yield client
    client.close()


def streaming(script: ScriptedModel) -> FunctionModel:
    """The script as a model that also streams: text in two pieces, tool calls whole."""

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        response: ModelResponse = script._respond(messages, info)
        for index, part in enumerate(response.parts):
            if isinstance(part, TextPart):
                half = len(part.content) // 2
                yield part.content[:half]
                yield part.content[half:]
            elif isinstance(part, ToolCallPart):
                yield {
                    index: DeltaToolCall(
                        name=part.tool_name,
                        json_args=part.args_as_json_str(),
                        tool_call_id=part.tool_call_id,
                    )
                }

    return FunctionModel(script._respond, stream_function=stream)
