"""Benchmark of evidence compaction: input tokens per model request over a 10-turn conversation.

Run on demand (pytest does not collect it):

    python tests/bench/bench_compaction.py [--data DIR] [--turns 10] [--limit 5] [--searches 2] [--cite 2]

* Corpus: the ten fictional RepLiQA documents of ``DIR/qa_repliqa_haiku/qa_corpus.json``
  (``DIR`` defaults to ``../shared/data`` next to the repository), ingested as plain text into a
  temporary store with the default embedder. One question per document makes the turns.
  Skips cleanly when the data is absent.
* Conversation: a scripted model (Pydantic AI ``FunctionModel``) plays a diligent researcher on
  every turn, as the RAG instructions ask: it loads the RAG capability once, searches with the
  question, searches again with keywords (``--searches``), cites the first ``--cite`` results of
  its last search, and answers. Both arms run the same script over the same store; one
  registers ``EvidenceCompactionCapability``, the other does not.
* Token estimate: what the model received in each request, counted with the default embedder's
  MiniLM WordPiece tokenizer (``default_tokenizer``): the instructions plus the text of every
  message part, tool-call arguments included. It is deterministic and not any provider's count;
  ratios between the arms are what matter.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
try:
    import haiku.rag  # noqa: F401
except ImportError:  # a plain checkout without `pip install -e .`
    sys.path.insert(0, str(REPO_ROOT / "haiku_rag"))

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from haiku.rag.capabilities.compaction import create_capability as compaction  # noqa: E402
from haiku.rag.capabilities.rag import RAGCapability  # noqa: E402
from haiku.rag.embeddings.local import default_tokenizer  # noqa: E402

REPLIQA = Path("qa_repliqa_haiku", "qa_corpus.json")
CHUNK_ID_PREFIX = "["  # every search result block starts with "[<chunk_id>] [rank i of n]"


@dataclass
class Deps:
    state: dict[str, Any] = field(default_factory=dict)


def request_text(messages: Sequence[ModelMessage], instructions: str | None) -> str:
    """Everything textual in one request, as the model received it."""
    pieces = [instructions or ""]
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                pieces.append(f"{part.tool_name} {part.args_as_json_str()}")
            elif isinstance(part, TextPart | ToolReturnPart):
                pieces.append(str(part.content))
            elif isinstance(part, UserPromptPart):
                items = [part.content] if isinstance(part.content, str) else part.content
                pieces += [item for item in items if isinstance(item, str)]
    return "\n".join(pieces)


def count_tokens(text: str) -> int:
    return len(default_tokenizer().encode(text, add_special_tokens=False).ids)


def keywords(question: str, count: int = 4) -> str:
    """The question's longest words: the "different keywords" of a second search."""
    words = {w.strip("?,.'\"").lower() for w in question.split()}
    return " ".join(sorted(words, key=lambda w: (-len(w), w))[:count])


class Researcher:
    """A scripted model that, every turn, searches (with the question, then with keywords),
    cites the first results of its last search, then answers."""

    def __init__(self, cite_count: int, search_limit: int, searches: int):
        self.cite_count = cite_count
        self.search_limit = search_limit
        self.searches = searches
        self.searches_this_turn = 0
        self.tokens: list[int] = []  # per request, in order
        self.turn_starts: list[int] = []  # index of each turn's first request

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.tokens.append(count_tokens(request_text(messages, info.instructions)))
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returns = {p.tool_name: p for p in last.parts if isinstance(p, ToolReturnPart)}
        question = next(
            p.content
            for m in reversed(messages)
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, UserPromptPart)
            and isinstance(p.content, str)
            and not p.content.startswith("<system>")
        )
        if "rag_search" in returns and self.searches_this_turn < self.searches:
            self.searches_this_turn += 1
            return ModelResponse(
                parts=[
                    ToolCallPart(
                        "rag_search", {"query": keywords(question), "limit": self.search_limit}
                    )
                ]
            )
        if "rag_search" in returns:
            ids = [
                line.split("]")[0][1:]
                for line in str(returns["rag_search"].content).split("\n")
                if line.startswith(CHUNK_ID_PREFIX) and "[rank " in line
            ]
            return ModelResponse(
                parts=[ToolCallPart("rag_cite", {"chunk_ids": ids[: self.cite_count]})]
            )
        if "rag_cite" in returns:
            return ModelResponse(parts=[TextPart("Here is what the documents say.")])
        self.searches_this_turn = 1
        if "load_capability" in returns or any(t.name == "rag_search" for t in info.function_tools):
            if "load_capability" not in returns:
                self.turn_starts.append(len(self.tokens) - 1)
            return ModelResponse(
                parts=[ToolCallPart("rag_search", {"query": question, "limit": self.search_limit})]
            )
        self.turn_starts.append(len(self.tokens) - 1)
        return ModelResponse(parts=[ToolCallPart("load_capability", {"id": "haiku-rag"})])


@dataclass
class Arm:
    tokens: list[int]
    turn_starts: list[int]

    @property
    def total(self) -> int:
        return sum(self.tokens)

    @property
    def mean(self) -> float:
        return self.total / len(self.tokens)


async def run_conversation(
    make_rag: Callable[[], RAGCapability],
    questions: Sequence[str],
    *,
    compact: bool,
    cite_count: int = 2,
    search_limit: int = 5,
    searches: int = 1,
) -> Arm:
    researcher = Researcher(cite_count, search_limit, searches)
    capabilities = [make_rag(), compaction()] if compact else [make_rag()]
    agent = Agent(FunctionModel(researcher), deps_type=Deps, capabilities=capabilities)
    deps, history = Deps(), []
    for question in questions:
        result = await agent.run(question, deps=deps, message_history=history)
        history = result.all_messages()
    return Arm(researcher.tokens, researcher.turn_starts)


def reduction(plain: Arm, compacted: Arm) -> float:
    """Fewer input tokens per request with compaction, in percent (same requests in both arms)."""
    return 100.0 * (1 - compacted.mean / plain.mean)


def report(plain: Arm, compacted: Arm) -> str:
    lines = ["request  plain  compacted"]
    for index, (a, b) in enumerate(zip(plain.tokens, compacted.tokens, strict=True), start=1):
        turn = (
            f"  <- turn {plain.turn_starts.index(index - 1) + 1}"
            if index - 1 in plain.turn_starts
            else ""
        )
        lines.append(f"{index:7d} {a:6d} {b:10d}{turn}")
    lines.append(f"mean     {plain.mean:6.0f} {compacted.mean:10.0f}")
    lines.append(f"total    {plain.total:6d} {compacted.total:10d}")
    lines.append(
        f"input tokens per request: {reduction(plain, compacted):.1f}% fewer with compaction"
    )
    return "\n".join(lines)


def load_repliqa(data: Path, turns: int) -> tuple[list[tuple[str, str]], list[str]]:
    """(document id, text) of each document, and the first question of each, up to ``turns``."""
    records = json.loads((data / REPLIQA).read_text(encoding="utf-8"))
    documents: dict[str, str] = {}
    questions: list[str] = []
    for record in records:
        if record["document_id"] not in documents:
            documents[record["document_id"]] = record["document_extracted"]
            questions.append(record["question"])
    return list(documents.items()), questions[:turns]


async def ingest(db_path: Path, config: Any, documents: Sequence[tuple[str, str]]) -> None:
    from haiku.rag.client import HaikuRAG

    async with HaikuRAG(db_path, config, create=True) as client:
        for document_id, text in documents:
            await client.create_document(
                text, uri=f"repliqa://{document_id}", title=document_id, format="plain"
            )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--limit", type=int, default=5, help="results per search")
    parser.add_argument("--cite", type=int, default=2, help="results cited per turn")
    parser.add_argument("--searches", type=int, default=2, help="searches per turn")
    args = parser.parse_args()
    if not (args.data / REPLIQA).is_file():
        print(f"skipped: {args.data / REPLIQA} not found")
        return 0

    from haiku.rag.capabilities.rag import create_capability
    from haiku.rag.config import load_config

    documents, questions = load_repliqa(args.data, args.turns)
    with tempfile.TemporaryDirectory() as root:
        config = load_config()
        config.storage.data_dir = Path(root) / "data"
        db_path = Path(root) / "repliqa.lancedb"
        await ingest(db_path, config, documents)

        def make_rag() -> RAGCapability:
            return create_capability(db_path, config)

        plain = await run_conversation(
            make_rag,
            questions,
            compact=False,
            cite_count=args.cite,
            search_limit=args.limit,
            searches=args.searches,
        )
        compacted = await run_conversation(
            make_rag,
            questions,
            compact=True,
            cite_count=args.cite,
            search_limit=args.limit,
            searches=args.searches,
        )
    print(
        f"{len(questions)} turns over {len(documents)} RepLiQA documents; {args.searches} search(es) of "
        f"up to {args.limit} results and {args.cite} citation(s) per turn; tokens = MiniLM WordPiece count of each request's text"
    )
    print(report(plain, compacted))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
