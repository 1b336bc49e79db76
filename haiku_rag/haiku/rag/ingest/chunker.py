"""DoclingDocument -> ``ChunkRecord``s: docling-core's HybridChunker with the embedder's tokenizer.

Token counts include [CLS] and [SEP], so a chunk's ``embed_text`` (headings + text) never
exceeds what the embedder reads (256 tokens for the default model): nothing is silently cut.

Boxes are page-exact: our converters give every text item one provenance entry per line,
with the line's ``charspan`` in the item's text. When HybridChunker splits a long paragraph,
each chunk keeps only the lines it actually contains, so a citation highlights those lines and
not the whole paragraph.

Tables enter chunks as one line of ``row, column = value`` triplets per row (``table_rows``),
so a long table is packed and split by whole rows.

docling-core's chunker module imports transformers (seconds), so it is imported on first use.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from docling_core.types.doc import DocItem, DoclingDocument, RefItem, TextItem

from haiku.rag.ingest.items import prov_box
from haiku.rag.ingest.records import Box, ChunkRecord

if TYPE_CHECKING:
    import tokenizers
    from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
    from docling_core.transforms.chunker.tokenizer.base import BaseTokenizer
    from docling_core.transforms.serializer.base import BaseSerializerProvider


def chunk_document(
    doc: DoclingDocument,
    *,
    tokenizer: tokenizers.Tokenizer | None = None,
    max_tokens: int = 256,
    merge_peers: bool = True,
) -> list[ChunkRecord]:
    """Chunks of at most ``max_tokens`` tokens ([CLS]/[SEP] included), in document order.

    ``tokenizer`` defaults to the default embedder's; pass the tokenizer of the embedder in use
    when it differs, so that limits are counted in that model's tokens.
    """
    chunker = _hybrid_chunker(tokenizer, max_tokens=max_tokens, merge_peers=merge_peers)
    records: list[ChunkRecord] = []
    for order, chunk in enumerate(chunker.chunk(dl_doc=doc)):
        items = _unique_items(doc, chunk.meta.doc_items)
        boxes = _chunk_boxes(doc, chunk.text, items)
        records.append(
            ChunkRecord(
                order=order,
                text=chunk.text,
                embed_text=chunker.contextualize(chunk=chunk),
                headings=list(chunk.meta.headings or []),
                labels=[item.label.value for item in items],
                doc_item_refs=[item.self_ref for item in items],
                page_numbers=sorted({box.page for box in boxes}),
                boxes=boxes,
            )
        )
    return _bounded_chars(records, max_tokens * _LONG_TEXT_CHARS_PER_TOKEN)


def _hybrid_chunker(
    tokenizer: tokenizers.Tokenizer | None, *, max_tokens: int, merge_peers: bool
) -> HybridChunker:
    if tokenizer is None:
        from haiku.rag.embeddings.local import default_tokenizer

        tokenizer = default_tokenizer()
    elif tokenizer.truncation is not None or tokenizer.padding is not None:
        # a truncating tokenizer would under-count long texts; reconfigure a copy, not the
        # caller's object
        tokenizer = type(tokenizer).from_str(tokenizer.to_str())
        tokenizer.no_truncation()
        tokenizer.no_padding()
    hybrid_chunker_class, tokenizer_class, serializer_provider_class = _chunker_classes()
    return hybrid_chunker_class(
        tokenizer=tokenizer_class(tokenizer=tokenizer, max_tokens=max_tokens),
        merge_peers=merge_peers,
        serializer_provider=serializer_provider_class(),
        # our table lines are self-describing triplets with no header to repeat; an
        # overlong row is split by tokens rather than into one-column sub-tables
        omit_header_on_overflow=True,
    )


@functools.cache
def _chunker_classes() -> tuple[
    type[HybridChunker], type[BaseTokenizer], type[BaseSerializerProvider]
]:
    """HybridChunker, our tokenizer adapter and our serializer provider, defined here so the
    import stays lazy."""
    # docling-core's chunker imports transformers: keep it offline (we never load a model
    # through it) and quiet about the absent PyTorch, which we do not need.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from docling_core.transforms.chunker.hierarchical_chunker import (
        ChunkingDocSerializer,
        ChunkingSerializerProvider,
    )
    from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
    from docling_core.transforms.chunker.tokenizer.base import BaseTokenizer
    from docling_core.transforms.serializer.base import BaseTableSerializer, SerializationResult
    from docling_core.transforms.serializer.common import create_ser_result
    from pydantic import ConfigDict

    from haiku.rag.ingest.table_rows import table_row_lines

    class RowTripletTableSerializer(BaseTableSerializer):
        """A table as one line of triplets per row (see ``table_rows``), caption first."""

        def serialize(
            self, *, item: Any, doc_serializer: Any, doc: DoclingDocument, **kwargs: Any
        ) -> SerializationResult:
            parts = []
            caption = doc_serializer.serialize_captions(item=item, **kwargs)
            if caption.text:
                parts.append(caption)
            if item.self_ref not in doc_serializer.get_excluded_refs(**kwargs):
                lines = table_row_lines(item, doc)
                if lines:
                    parts.append(create_ser_result(text="\n".join(lines), span_source=item))
            return create_ser_result(
                text="\n\n".join(part.text for part in parts), span_source=parts
            )

        def get_header_and_body_lines(
            self, *, table_text: str, **kwargs: Any
        ) -> tuple[list[str], list[str]]:
            # no header (each triplet names its column); lines keep their newline, as the
            # line chunker joins them as given
            return [], [line + "\n" for line in table_text.split("\n") if line.strip()]

    class RowTableChunkingSerializer(ChunkingDocSerializer):
        table_serializer: BaseTableSerializer = RowTripletTableSerializer()

    class RowTableSerializerProvider(ChunkingSerializerProvider):
        def get_serializer(self, doc: DoclingDocument) -> RowTableChunkingSerializer:
            # without validating ``doc`` again (see ``items.markdown_serializer``)
            return RowTableChunkingSerializer.model_construct(doc=doc)

    class EmbedderTokenizer(BaseTokenizer):
        """Counts tokens exactly as the embedder sees them: [CLS] and [SEP] included."""

        model_config = ConfigDict(arbitrary_types_allowed=True)

        tokenizer: Any  # tokenizers.Tokenizer, neither truncating nor padding
        max_tokens: int

        def count_tokens(self, text: str) -> int:
            """Exact up to ``max_tokens``; above it, possibly a lower bound still over it.

            docling-core compares counts only against limits of at most ``max_tokens``, but
            re-counts whole oversized texts while splitting them (a table serialised as one
            70,000-character line cost 11 s on one page). A long text whose head already
            exceeds the limit is answered from the head, which keeps splitting linear.
            """
            if len(text) > self.long_text_chars:
                head_end = _last_whitespace(text, self.long_text_chars)
                if head_end > 0:
                    head_count = len(self.tokenizer.encode(text[:head_end]).ids)
                    # a head cut on whitespace has no more tokens than the whole text; the
                    # margin covers tokenizers that merge across the cut
                    if head_count > self.max_tokens + _HEAD_COUNT_MARGIN:
                        return head_count
            return len(self.tokenizer.encode(text).ids)

        @property
        def long_text_chars(self) -> int:
            return _LONG_TEXT_CHARS_PER_TOKEN * self.max_tokens

        def get_max_tokens(self) -> int:
            return self.max_tokens

        def get_tokenizer(self) -> Any:
            # semchunk (HybridChunker's text splitter) takes a token-counting callable
            return self.count_tokens

    return HybridChunker, EmbedderTokenizer, RowTableSerializerProvider


def _unique_items(doc: DoclingDocument, chunk_items: Sequence[DocItem]) -> list[DocItem]:
    """The chunk's items resolved in ``doc``, once each, in order.

    Resolving matters: the chunker may hand back copies typed as plain ``DocItem`` (no text).
    """
    seen: set[str] = set()
    items: list[DocItem] = []
    for chunk_item in chunk_items:
        if chunk_item.self_ref in seen:
            continue
        seen.add(chunk_item.self_ref)
        item = RefItem(cref=chunk_item.self_ref).resolve(doc)
        items.append(item if isinstance(item, DocItem) else chunk_item)
    return items


def _chunk_boxes(doc: DoclingDocument, chunk_text: str, items: list[DocItem]) -> list[Box]:
    """The boxes of the item lines this chunk contains (all of an item's lines when unsure)."""
    chunk_compact = _without_whitespace(chunk_text)
    boxes: list[Box] = []
    for index, item in enumerate(items):
        lines = item.prov
        if isinstance(item, TextItem) and len(lines) > 1 and chunk_compact:
            span = _item_span_in_chunk(
                item.text, chunk_compact, first=index == 0, last=index == len(items) - 1
            )
            if span is not None:
                start, end = span
                inside = [p for p in lines if p.charspan[0] < end and p.charspan[1] > start]
                lines = inside or lines
        boxes.extend(prov_box(doc, prov, item) for prov in lines)
    return boxes


def _item_span_in_chunk(
    item_text: str, chunk_compact: str, *, first: bool, last: bool
) -> tuple[int, int] | None:
    """Which characters ``[start, end)`` of ``item_text`` the chunk holds, or None if unknown.

    Compared without whitespace, because the chunker may re-join split text differently. A
    split item's part is the whole chunk, or, in a chunk merged from several items, a tail of
    the item opening the chunk or a head of the item closing it.
    """
    item_compact, offsets = _compact_with_offsets(item_text)
    if not item_compact:
        return None
    if item_compact in chunk_compact:
        return 0, len(item_text)
    start = item_compact.find(chunk_compact)
    if start >= 0:
        end = start + len(chunk_compact)
    elif first and (tail_start := _longest_suffix_opening(item_compact, chunk_compact)) is not None:
        start, end = tail_start, len(item_compact)
    elif last and (head_end := _longest_prefix_closing(item_compact, chunk_compact)) is not None:
        start, end = 0, head_end
    else:
        return None
    return offsets[start], offsets[end - 1] + 1


def _longest_suffix_opening(item: str, chunk: str) -> int | None:
    """Start of the longest suffix of ``item`` that ``chunk`` starts with."""
    start = item.find(chunk[0])
    while start != -1:
        if chunk.startswith(item[start:]):
            return start
        start = item.find(chunk[0], start + 1)
    return None


def _longest_prefix_closing(item: str, chunk: str) -> int | None:
    """End of the longest prefix of ``item`` that ``chunk`` ends with."""
    last = item.rfind(chunk[-1])
    while last != -1:
        if chunk.endswith(item[: last + 1]):
            return last + 1
        last = item.rfind(chunk[-1], 0, last)
    return None


# above this many characters per allowed token, a text is counted from its head first
_LONG_TEXT_CHARS_PER_TOKEN = 16
_HEAD_COUNT_MARGIN = 8


def _last_whitespace(text: str, before: int) -> int:
    """Index of the last whitespace character in ``text[:before]``, or -1."""
    return max(text.rfind(space, 0, before) for space in (" ", "\n", "\t"))


_WHITESPACE = re.compile(r"\s+")
_NON_SPACE = re.compile(r"\S")


def _without_whitespace(text: str) -> str:
    return _WHITESPACE.sub("", text)


def _compact_with_offsets(text: str) -> tuple[str, list[int]]:
    """``text`` without whitespace, and each remaining character's index in ``text``."""
    offsets = [match.start() for match in _NON_SPACE.finditer(text)]
    return "".join(text[i] for i in offsets), offsets


def _bounded_chars(records: list[ChunkRecord], max_chars: int) -> list[ChunkRecord]:
    """Chunks split to at most ``max_chars`` characters of text, renumbered in order.

    Tokens do not bound characters: a word longer than the tokenizer's word limit is one
    unknown token, so a 1 MB line without spaces fits any token budget. Split on whitespace
    where there is some; every piece keeps its chunk's headings, items and boxes.
    """
    if all(len(r.text) <= max_chars for r in records):
        return records
    bounded: list[ChunkRecord] = []
    for record in records:
        prefix = record.embed_text[: -len(record.text)] if record.embed_text.endswith(record.text) else ""
        for piece in _split_chars(record.text, max_chars):
            bounded.append(dataclasses.replace(record, text=piece, embed_text=prefix + piece))
    for order, record in enumerate(bounded):
        record.order = order
    return bounded


def _split_chars(text: str, max_chars: int) -> list[str]:
    pieces: list[str] = []
    while len(text) > max_chars:
        end = _last_whitespace(text, max_chars + 1)
        end = end if end > max_chars // 2 else max_chars
        pieces.append(text[:end].rstrip())
        text = text[end:].lstrip()
    return [*pieces, text] if text else pieces
