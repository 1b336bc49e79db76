"""``EvidenceCompactionCapability``: earlier questions' evidence, reduced to what was cited.

Each model request is rewritten on its way out, never in the stored history:

- before the current question, the newest evidence return (a search or other evidence tool's
  result; the last of them when one response made several calls) carries a *capsule*: the
  full text of everything earlier questions cited, grouped by
  the question that most recently cited it, newest first, under the chunk ids that still cite it
  (cited pictures are attached again when the owning capability has vision);
- every other earlier evidence return becomes a short receipt, and the images the capabilities
  attached to earlier results are dropped;
- returns are rewritten, never removed, so every tool call keeps its return; framework parts,
  user content, citation acknowledgements and the current question pass through untouched.

The capsule is rebuilt from the evidence ledger, so the host must carry the capabilities' state
with the history; compaction refuses to guess when it did not.
"""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeGuard
from urllib.parse import unquote

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, WrapModelRequestHandler
from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext

from haiku.rag.bounds import bounded_field
from haiku.rag.capabilities.evidence import (
    DiscoveredEvidence,
    discover_evidence,
    evidence_tool_names,
    question_in_progress,
)
from haiku.rag.capabilities.formatting import quoted
from haiku.rag.capabilities.pictures import RETRIEVED_IMAGE_TAG, cited_image_label

if TYPE_CHECKING:
    from haiku.rag.citations import Citation

COMPACTION_CAPABILITY_ID = "haiku-rag-evidence-compaction"
CAPSULE_HEADER = (
    "[Evidence cited earlier in this conversation, kept so later questions can rely on it. "
    "Cite these chunk_ids directly when you use them.]"
)
RECEIPT = (
    "[Evidence retrieved for an earlier question, no longer shown. "
    "It does not count as cited for the current question.]"
)


@dataclass
class Capsule:
    text: str | None  # None when no earlier question cited anything
    images: list[UserContent] = field(default_factory=list)


@dataclass
class EvidenceCompactionCapability(AbstractCapability[Any]):
    """Sends each request with earlier questions' evidence compacted to what they cited."""

    _capsule: Capsule | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Not a class default: pydantic-ai merges duplicates of class-default ids, and a second
        # compaction capability must be rejected instead.
        if self.id is None:
            self.id = COMPACTION_CAPABILITY_ID

    async def for_run(self, ctx: RunContext[Any]) -> EvidenceCompactionCapability:
        per_run = copy.copy(self)
        per_run._capsule = None  # built on first use: earlier questions cannot change in a run
        return per_run

    async def wrap_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        handler: WrapModelRequestHandler,
    ) -> ModelResponse:
        # wrap_model_request, not before_model_request: what the latter returns is written back
        # into the stored history, and compaction must only change what goes on the wire.
        found = discover_evidence(ctx)
        boundary = question_in_progress(found)
        if boundary:
            request_context.messages = await self.compact(found, boundary, request_context.messages)
        return await handler(request_context)

    async def compact(
        self, found: Sequence[DiscoveredEvidence], boundary: int, messages: Sequence[ModelMessage]
    ) -> list[ModelMessage]:
        earlier, current = list(messages[:boundary]), list(messages[boundary:])
        owned = evidence_tool_names(found)
        require_carried_state(found, earlier)
        capsule_at = newest_return(earlier, owned)
        if capsule_at is None:  # no earlier evidence, hence none of our images either
            return list(messages)
        if self._capsule is None:
            self._capsule = await build_capsule(found, boundary)
        capsule = self._capsule
        rewritten = [
            compact_request(message, owned, capsule if index == capsule_at else None)
            if isinstance(message, ModelRequest)
            else message
            for index, message in enumerate(earlier)
        ]
        return [*rewritten, *current]


def create_capability() -> EvidenceCompactionCapability:
    """The compaction capability; registering it is the only switch, there is nothing to configure."""
    return EvidenceCompactionCapability()


def require_carried_state(
    found: Sequence[DiscoveredEvidence], earlier: Sequence[ModelMessage]
) -> None:
    for evidence in found:
        if not evidence.state_carried and newest_return(earlier, evidence.tool_names) is not None:
            raise RuntimeError(
                f"{evidence.capability.id}: the history holds evidence from earlier questions but no "
                f"state for it; pass deps.state[{evidence.namespace!r}] from the earlier runs so "
                "compaction knows what was cited."
            )


def newest_return(messages: Sequence[ModelMessage], tool_names: frozenset[str]) -> int | None:
    """Index of the last request holding a return of one of ``tool_names``."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelRequest) and any(
            is_owned_return(p, tool_names) for p in message.parts
        ):
            return index
    return None


def is_owned_return(
    part: ModelRequestPart, tool_names: frozenset[str]
) -> TypeGuard[ToolReturnPart]:
    return isinstance(part, ToolReturnPart) and part.tool_name in tool_names


async def build_capsule(found: Sequence[DiscoveredEvidence], boundary: int) -> Capsule:
    """Everything earlier questions cited, each chunk in the group of the newest question citing it.

    Evidence from documents outside the conversation's current scope is left out: it could not
    be cited again, and a scoped chat must not keep showing the documents it excludes.
    """
    groups: dict[int, list[tuple[DiscoveredEvidence, str]]] = defaultdict(list)
    scopes: dict[str, set[str] | None] = {}
    for evidence in found:
        for occurrence in evidence.record.occurrences.values():
            citing = [q for q in occurrence.cited_in_questions if q < boundary]
            if citing:
                if occurrence.chunk_id not in evidence.citations:
                    raise RuntimeError(
                        f"{evidence.capability.id}: chunk {occurrence.chunk_id} is recorded as cited "
                        "but its citation is missing from the stored state"
                    )
                if evidence.namespace not in scopes:
                    scopes[evidence.namespace] = await evidence.capability.scope_documents()
                scope = scopes[evidence.namespace]
                document_id = evidence.citations[occurrence.chunk_id].document_id
                if scope is not None and document_id not in scope:
                    continue
                groups[max(citing)].append((evidence, occurrence.chunk_id))
    if not groups:
        return Capsule(text=None)
    sections = [CAPSULE_HEADER]
    images: list[UserContent] = []
    seen_pictures: set[tuple[str, str, str]] = set()
    for number, question in enumerate(sorted(groups, reverse=True), start=1):
        sections.append(f"[Cited evidence group {number}]")
        for evidence, chunk_id in sorted(groups[question], key=lambda e: (e[0].namespace, e[1])):
            citation = evidence.citations[chunk_id]
            sections.append(
                f"[{chunk_id}] Source: {receipt_source(citation)}\n{quoted(citation.content)}"
            )
            if not evidence.capability.vision:
                continue
            for ref in citation.picture_refs:
                key = (evidence.namespace, citation.document_id, ref)
                if key in seen_pictures:
                    continue
                seen_pictures.add(key)
                image = await evidence.capability.picture(citation.document_id, ref)
                if image is not None:  # a picture that no longer renders goes, label and all
                    images += [cited_image_label(chunk_id, ref), image]
    return Capsule(text="\n\n".join(sections), images=images)


def receipt_source(citation: Citation) -> str:
    """How the capsule names a cited document: its title (or file name) and its id, never its
    URI, which for a local file is a path on this machine (``file:///home/…``) a hosted model
    has no business reading."""
    name = citation.document_title or unquote(citation.document_uri.rsplit("/", 1)[-1])
    title = json.dumps(bounded_field(name or citation.document_id), ensure_ascii=False)
    return f"{title} (document {citation.document_id})"


def compact_request(
    request: ModelRequest, owned: frozenset[str], capsule: Capsule | None
) -> ModelRequest:
    """The request as sent: owned returns become the receipt (or the capsule), our images go."""
    parts: list[ModelRequestPart] = []
    # one model response can make several evidence calls, whose returns share this request: the
    # capsule rides on the last of them only, so cited text travels once
    carrier = max(
        (i for i, p in enumerate(request.parts) if is_owned_return(p, owned)), default=None
    )
    for index, part in enumerate(request.parts):
        if is_owned_return(part, owned):
            carries = capsule is not None and capsule.text is not None and index == carrier
            parts.append(replace(part, content=capsule.text if carries else RECEIPT))
        elif isinstance(part, UserPromptPart):
            stripped = strip_retrieved_images(part)
            if stripped is not None:
                parts.append(stripped)
        else:
            parts.append(part)
    if capsule is not None and capsule.images:
        parts.append(UserPromptPart(capsule.images))
    unchanged = len(parts) == len(request.parts) and all(
        a is b for a, b in zip(parts, request.parts, strict=True)
    )
    return replace(request, parts=parts) if parts and not unchanged else request


def strip_retrieved_images(part: UserPromptPart) -> UserPromptPart | None:
    """The part without images the capabilities attached (a tagged label directly followed by an
    image); None if nothing else was in it. User text and images stay, even text quoting the tag."""
    if isinstance(part.content, str):
        return part
    items = list(part.content)
    kept: list[UserContent] = []
    index = 0
    while index < len(items):
        item = items[index]
        following = items[index + 1] if index + 1 < len(items) else None
        if isinstance(item, str) and RETRIEVED_IMAGE_TAG in item and is_image(following):
            index += 2
            continue
        kept.append(item)
        index += 1
    if len(kept) == len(items):
        return part
    return replace(part, content=kept) if kept else None


def is_image(item: object) -> bool:
    return (isinstance(item, BinaryContent) and item.is_image) or isinstance(item, ImageUrl)
