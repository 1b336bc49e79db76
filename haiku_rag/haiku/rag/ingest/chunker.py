"""DoclingDocument -> ``ChunkRecord``s: our own chunker, counted in the embedder's tokens.

The contract (what the store, search and the citation panel rely on):

- a chunk's ``embed_text`` (heading path + text) never exceeds ``max_tokens`` tokens of the
  embedder's tokenizer, [CLS] and [SEP] included, so nothing is silently cut when embedding;
- ``headings`` is the section path above the chunk (title, then headings by level);
- ``doc_item_refs`` / ``labels`` name the document items the chunk holds, in order;
- ``boxes`` / ``page_numbers`` are page-exact: our converters give every text item one
  provenance entry per line with the line's ``charspan`` in the item text, and a chunk holding
  part of a long item keeps only the lines that part overlaps.

How: one pass over the body items tracks the heading path; each item's text is tokenised once
(for WordPiece, the document's distinct words, each once, ``_Words``; else one batch call for
the whole document), and an item over the budget is cut on token offsets,
preferring a line break (a table row), then a sentence end, then a word boundary. Consecutive
pieces under the same headings are then packed greedily up to the budget (``merge_peers``),
joined by newlines. Counts are added up from the per-item encodings, which is exact for the
default WordPiece tokenizer (it splits on whitespace first); every final chunk is counted
again as a whole and cut further in the rare case a tokenizer merges across the joins.

Tables are Markdown (``table_markdown``): each table chunk is the caption, the header lines
(stacked header rows joined per column) and as many whole body rows as fit, so a row is never
split from its header or cut in two, and its boxes are its rows' cells and the header's, so a
citation highlights the rows it quotes. Pieces of one table are never packed together (that
would repeat the header). Pictures contribute their captions. Page furniture (running headers and footers) is not chunked.

This replaced docling-core's HybridChunker, whose serializers and pydantic copies were about
two thirds of parse+chunk time (see docs/benchmarks.md); the chunks it made follow the same
contract, so stored libraries keep working without a rebuild (see docs/library.md).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from docling_core.types.doc import (
    DocItem,
    DoclingDocument,
    NodeItem,
    PictureItem,
    SectionHeaderItem,
    TableItem,
    TextItem,
    TitleItem,
)

from haiku.rag.ingest.items import ItemBoxes, ItemTexts, reading_order
from haiku.rag.ingest.records import Box, ChunkRecord

if TYPE_CHECKING:
    import tokenizers

    from haiku.rag.ingest.table_markdown import TableParts


def chunk_document(
    doc: DoclingDocument,
    *,
    tokenizer: tokenizers.Tokenizer | None = None,
    max_tokens: int = 256,
    merge_peers: bool = True,
    ordered: Sequence[NodeItem] | None = None,
    boxes: ItemBoxes | None = None,
    texts: ItemTexts | None = None,
) -> list[ChunkRecord]:
    """Chunks of at most ``max_tokens`` tokens ([CLS]/[SEP] included), in document order.

    ``tokenizer`` defaults to the default embedder's; pass the tokenizer of the embedder in use
    when it differs, so that limits are counted in that model's tokens. It only needs
    ``encode(text)`` returning an encoding with ``ids`` and ``offsets`` (``tokenizers``'
    ``Encoding``); its own truncation and padding settings are ignored.
    """
    counter = _TokenCounter(_untruncated(tokenizer))
    texts = texts or ItemTexts(doc)  # each table's Markdown parts, made once for items and chunks
    units = list(_units(doc, reading_order(doc) if ordered is None else ordered, counter, max_tokens, texts))
    if all(isinstance(unit.parts[0].item, (TitleItem, SectionHeaderItem)) for unit in units):
        # headings and nothing else: no passage to index (ingestion says "only headings"); a
        # heading with nothing under it is a unit only beside the document's other text
        units = []
    counter.count_all(units)
    pieces: list[_Piece] = []
    for unit in units:
        pieces.extend(_split_unit(unit, counter, max_tokens))
    groups = _pack(pieces, counter, max_tokens) if merge_peers else [[piece] for piece in pieces]
    groups = _fit(groups, counter, max_tokens)
    boxes = boxes or ItemBoxes(doc)
    records = [_record(boxes, order, group) for order, group in enumerate(groups)]
    return _bounded_chars(records, max_tokens * _LONG_TEXT_CHARS_PER_TOKEN)


# ---------------------------------------------------------------------------------------------
# Units: one per body item (a table with its captions), with its heading path


@dataclass(slots=True)
class _Part:
    """One item inside a unit: its text's characters ``[start, end)`` in the unit text.
    ``boxes``: the part's own boxes when they are not the item's (a table's rows)."""

    item: DocItem
    start: int
    end: int
    boxes: list[Box] | None = None


@dataclass(slots=True)
class _Unit:
    text: str
    headings: tuple[str, ...]
    parts: list[_Part]
    tokens: int = 0  # without special tokens
    table: str | None = None  # a table's self_ref: pieces of one table are never packed together


def _units(
    doc: DoclingDocument,
    ordered: Sequence[NodeItem],
    counter: _TokenCounter,
    max_tokens: int,
    texts: ItemTexts,
) -> Iterable[_Unit]:
    heading_by_level: dict[int, str] = {}
    headings: tuple[str, ...] = ()
    # the headings of the path under which no unit has come yet: one that gives way to the
    # next heading of its level (or a shallower one) with nothing under it, or that ends the
    # document, becomes a unit of its own, so its words reach a chunk (a side panel's
    # entries, "Our approach" / "Measuring our carbon footprint", were in no chunk at all)
    empty: dict[int, DocItem] = {}
    captions_of_floats = {
        ref.cref for item in (*doc.tables, *doc.pictures) for ref in item.captions
    }
    for item in ordered:
        if not isinstance(item, DocItem):
            continue
        if isinstance(item, (TitleItem, SectionHeaderItem)):
            level = item.level if isinstance(item, SectionHeaderItem) else 0
            yield from _empty_headings(empty, heading_by_level, level)
            heading_by_level[level] = item.text
            for deeper in [k for k in heading_by_level if k > level]:
                del heading_by_level[deeper]
            headings = tuple(heading_by_level[k] for k in sorted(heading_by_level))
            if item.text.strip():
                empty[level] = item
            continue
        if isinstance(item, (TableItem, PictureItem)):
            captions: list[tuple[DocItem, str]] = []
            for ref in item.captions:
                caption = ref.resolve(doc)
                if isinstance(caption, TextItem) and caption.text.strip():
                    captions.append((caption, caption.text))
            if isinstance(item, TableItem):
                empty.clear()  # every heading of the path has a unit under it
                yield from _table_units(texts.table_parts(item), item, captions, headings, counter, max_tokens)
                continue
            unit = _joined(captions, headings)
            if unit is not None:
                empty.clear()
                yield unit
            continue  # a picture without a caption is no unit: its heading stays empty
        if isinstance(item, TextItem):
            if item.self_ref in captions_of_floats or not item.text.strip():
                continue  # a caption goes with its table or figure
            empty.clear()
            yield _Unit(item.text, headings, [_Part(item, 0, len(item.text))])
    yield from _empty_headings(empty, heading_by_level, -1)


def _empty_headings(empty: dict[int, DocItem], heading_by_level: dict[int, str], level: int) -> Iterable[_Unit]:
    """When the path gives way at ``level``: the deepest heading there with nothing under
    it, as a unit under the headings above it (which then have it under them: ``empty`` is
    cleared). A heading with something under it is only ever a chunk's heading path."""
    gone = [k for k in empty if k >= level]
    if not gone:
        return
    deepest = max(gone)
    heading = empty[deepest]
    empty.clear()
    above = tuple(heading_by_level[k] for k in sorted(heading_by_level) if k < deepest)
    yield _Unit(heading.text, above, [_Part(heading, 0, len(heading.text))])


def _table_units(
    parts: TableParts,
    table: TableItem,
    captions: list[tuple[DocItem, str]],
    headings: tuple[str, ...],
    counter: _TokenCounter,
    max_tokens: int,
) -> Iterable[_Unit]:
    """A table as Markdown cut by whole rows: each unit is the caption, the header lines and
    as many body rows as fit the budget, and its boxes are those rows' cells and the header
    cells (the table's box when its cells have none). A row longer than the budget alone is
    a unit of its own (cut later like any long unit)."""
    if not parts.rows and not any(text.strip(" |-") for text in parts.header):
        unit = _joined(captions, headings)
        if unit is not None:
            yield unit
        return
    caption = "\n".join(text for _, text in captions)
    header = "\n".join(parts.header)
    budget = _budget(headings, counter, max_tokens)
    counts = counter.count_texts([caption + "\n" + header, *parts.rows])
    prefix_tokens, row_tokens = counts[0], counts[1:]
    if prefix_tokens > budget // 2 and caption:
        # a caption too long to repeat: later pieces carry its first sentence
        later_caption = _first_sentence(caption)
    else:
        later_caption = caption
    later_tokens = prefix_tokens if later_caption == caption else counter.count_texts([later_caption + "\n" + header])[0]
    groups: list[list[int]] = []
    used = prefix_tokens
    for index, tokens in enumerate(row_tokens):
        if groups and groups[-1] and used + tokens > budget:
            groups.append([])
            used = later_tokens
        if not groups:
            groups.append([])
        groups[-1].append(index)
        used += tokens
    if not groups:
        groups = [[]]
    for number, rows in enumerate(groups):
        cap = caption if number == 0 else later_caption
        lines = [*([cap] if cap else []), *parts.header, *(parts.rows[i] for i in rows)]
        text = "\n".join(lines)
        unit_parts: list[_Part] = []
        start = 0
        if cap and captions:
            end = len(cap)
            for caption_item, caption_text in captions:  # captions are joined by newlines
                length = min(len(caption_text), max(end - start, 0))
                if length > 0:
                    unit_parts.append(_Part(caption_item, start, start + length))
                start += len(caption_text) + 1
            start = len(cap) + 1
        boxes = [*parts.header_boxes, *(b for i in rows for b in parts.row_boxes[i])]
        if boxes:
            # a caption printed on another page (the table ran on over a page break) is
            # context for these rows, not part of their highlight or their pages
            pages = {box.page for box in boxes}
            for part in unit_parts:
                if not {prov.page_no for prov in part.item.prov} & pages:
                    part.boxes = []
        unit_parts.append(_Part(table, start, len(text), boxes or None))
        yield _Unit(text, headings, unit_parts, table=table.self_ref)


_CAPTION_LABEL_ONLY = re.compile(r"^\W*\w+\.?\s*[0-9IVXivx]+[A-Za-z]?[.:]?$")


def _first_sentence(text: str) -> str:
    """The caption's first sentence; past its label ("Table 1." is no sentence)."""
    for match in re.finditer(r"[.!?](\s|$)", text):
        head = text[: match.start() + 1]
        if not _CAPTION_LABEL_ONLY.match(head):
            return head
    return text


def _joined(texts: Sequence[tuple[DocItem, str]], headings: tuple[str, ...]) -> _Unit | None:
    if not texts:
        return None
    parts: list[_Part] = []
    pieces: list[str] = []
    start = 0
    for item, text in texts:
        if pieces:
            start += 1  # the "\n" between parts
        parts.append(_Part(item, start, start + len(text)))
        pieces.append(text)
        start += len(text)
    return _Unit("\n".join(pieces), headings, parts)


# ---------------------------------------------------------------------------------------------
# Token counting


class _TokenCounter:
    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        # [CLS] + [SEP] for BERT-style tokenizers: what encode("") adds
        self.specials = len(tokenizer.encode("").ids)
        self._heading_cost: dict[tuple[str, ...], int] = {}
        self.additive = _is_wordpiece(tokenizer)
        self._words: _Words | None = None

    def count_all(self, units: list[_Unit]) -> None:
        """Each unit's token count (special tokens excluded), by ``count_texts``."""
        for unit, count in zip(units, self.count_texts([unit.text for unit in units]), strict=True):
            unit.tokens = count

    def count_texts(self, texts: list[str]) -> list[int]:
        """Token counts of ``texts``, special tokens excluded: for WordPiece, from the
        document's distinct words (``_Words``), each tokenised once whichever texts it comes
        in (a table's rows, counted to cut the table into units, are not tokenised again
        when the units are counted); else encoded whole, in one batch call."""
        if self.additive:
            split = [_SPACES.split(text) for text in texts]  # split once, used twice
            known = self._learn(split)
            if known is not None:
                return [known.count_words(words) for words in split]
        return [count - self.specials for count in self.count_many(texts)]

    def _learn(self, texts: list[list[str]]) -> _Words | None:
        """The document's words, knowing every word of ``texts`` (the new ones tokenised now,
        in one call); None when a token of theirs is not inside one word (see
        ``_Words.from_words``)."""
        known = self._words
        new = [word for word in dict.fromkeys(w for text in texts for w in text) if known is None or word not in known]
        if not new:
            return known
        learned = _Words.from_words(self._tokenizer, [new])
        if learned is None:
            return None
        if known is None:
            self._words = learned
            return learned
        known.learn(learned)
        return known

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Each token's character span in ``text``, special tokens left out."""
        if self._words is not None:
            known = self._words.offsets(text)
            if known is not None:
                return known
        encoding = self._tokenizer.encode(text)
        return [
            offset
            for offset, special in zip(encoding.offsets, encoding.special_tokens_mask, strict=True)
            if not special
        ]

    def count(self, text: str) -> int:
        """Tokens of ``text`` as the embedder sees it, special tokens included."""
        return len(self._tokenizer.encode(text).ids)

    def count_many(self, texts: list[str]) -> list[int]:
        """Token counts of many texts, special tokens included."""
        # encode_batch_fast skips computing offsets: half the time of encode_batch
        for name in ("encode_batch_fast", "encode_batch"):
            encode_batch = getattr(self._tokenizer, name, None)
            if encode_batch is not None:
                return [len(e.ids) for e in encode_batch(texts)]
        return [self.count(t) for t in texts]

    def heading_cost(self, headings: tuple[str, ...]) -> int:
        """Tokens the heading prefix adds to a chunk's ``embed_text`` (specials excluded)."""
        cost = self._heading_cost.get(headings)
        if cost is None:
            cost = self.count(_prefix(headings)) - self.specials if headings else 0
            self._heading_cost[headings] = cost
        return cost


# What WordPiece splits words on, at the least: its normaliser maps these to a space and its
# pre-tokeniser splits on every space (it also splits on other whitespace and punctuation,
# which only ever happens inside the pieces this gives). Other Unicode "whitespace" is left
# inside the pieces on purpose: BERT's normaliser deletes some of it (\x0b, \x0c, \x85 are
# control characters to it), so splitting there could join or part words differently.
_SPACES = re.compile(r"[ \t\n\r]+")
_WORD = re.compile(r"[^ \t\n\r]+")


class _Words:
    """A document's distinct words (runs of characters between spaces, tabs and line
    breaks), tokenised once, as one text: each word's tokens with their offsets in the word.

    WordPiece tokenises each word on its own (``_is_wordpiece``), so a text's tokens are its
    words' tokens in order: its count is the sum of its words' counts, and its offsets are
    theirs moved to where each word sits. A document repeats its words (the 1,144 real PDF
    pages: 2.7 M characters of text, 0.47 M in each document's distinct words), so counting
    that way cost 0.39 CPU-s where encoding every unit (``encode_batch_fast``) cost 0.77,
    and the units that must be cut get their offsets without being encoded again (0.20 ->
    0.10 CPU-s for the cutting)."""

    __slots__ = ("_index", "_first", "_count", "_start", "_offsets")

    def __init__(self, words: list[str], starts: list[int], offsets: list[tuple[int, int]], counts: list[int]) -> None:
        first, total = [0] * len(words), 0
        for i, count in enumerate(counts):
            first[i] = total
            total += count
        self._index = {word: i for i, word in enumerate(words)}
        self._count: dict[str, int] = dict(zip(words, counts, strict=True))
        self._first = first
        self._start = starts
        self._offsets = offsets

    @classmethod
    def of(cls, tokenizer: Any, texts: list[str]) -> _Words | None:
        return cls.from_words(tokenizer, [_SPACES.split(text) for text in texts])

    @classmethod
    def from_words(cls, tokenizer: Any, texts: list[list[str]]) -> _Words | None:
        """From the texts split on ``_SPACES``. None when a token of the joined words is not
        inside one word (an added token that strips the space next to it would be): the
        caller then encodes each text whole."""
        import numpy as np

        words = list(dict.fromkeys(word for text in texts for word in text))
        offsets: list[tuple[int, int]] = tokenizer.encode(" ".join(words), add_special_tokens=False).offsets
        starts = [0] * len(words)
        position = 0
        for i, word in enumerate(words):
            starts[i] = position
            position += len(word) + 1  # the " " joining them
        word_starts = np.asarray(starts, dtype=np.int64)
        word_ends = word_starts + np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        spans = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
        # the word each token starts in; every token must end inside it too
        owner = np.searchsorted(word_starts, spans[:, 0], side="right") - 1
        if len(spans) and (owner.min() < 0 or np.any(spans[:, 1] > word_ends[owner])):
            return None
        counts = np.bincount(owner, minlength=len(words)).tolist()
        return cls(words, starts, offsets, counts)

    def __contains__(self, word: str) -> bool:
        return word in self._count

    def learn(self, other: _Words) -> None:
        """Know ``other``'s words too (tokenised apart from these: a word's offsets are kept
        relative to where it starts in the text it was tokenised in)."""
        base = len(self._offsets)
        for word, i in other._index.items():
            if word not in self._index:
                self._index[word] = len(self._first)
                self._first.append(base + other._first[i])
                self._start.append(other._start[i])
                self._count[word] = other._count[word]
        self._offsets.extend(other._offsets)

    def count(self, text: str) -> int:
        """Tokens of ``text`` (one of the texts given, or made of their words), no specials."""
        return self.count_words(_SPACES.split(text))

    def count_words(self, words: list[str]) -> int:
        """Tokens of a text split on ``_SPACES``."""
        return sum(map(self._count.__getitem__, words))

    def offsets(self, text: str) -> list[tuple[int, int]] | None:
        """Each token's character span in ``text``; None when a word of it is not known."""
        spans: list[tuple[int, int]] = []
        index, first, count, starts, offsets = self._index, self._first, self._count, self._start, self._offsets
        for match in _WORD.finditer(text):
            word = match.group()
            i = index.get(word)
            if i is None:
                return None
            shift = match.start() - starts[i]
            for s, e in offsets[first[i] : first[i] + count[word]]:
                spans.append((s + shift, e + shift))
        return spans


_WORDPIECE: dict[int, tuple[Any, bool]] = {}


def _is_wordpiece(tokenizer: Any) -> bool:
    """Whether ``tokenizer`` is BERT's WordPiece (per-character normaliser, whitespace and
    punctuation pre-tokeniser), whose count of texts joined on whitespace is the sum."""
    known = _WORDPIECE.get(id(tokenizer))
    if known is not None and known[0] is tokenizer:
        return known[1]
    to_str = getattr(tokenizer, "to_str", None)
    answer = False
    if to_str is not None:
        config = json.loads(to_str())
        answer = (
            (config.get("model") or {}).get("type") == "WordPiece"
            and (config.get("pre_tokenizer") or {}).get("type") == "BertPreTokenizer"
            and (config.get("normalizer") or {}).get("type", "BertNormalizer") == "BertNormalizer"
        )
    _WORDPIECE[id(tokenizer)] = (tokenizer, answer)  # kept alive, so the id stays its own
    return answer


def _untruncated(tokenizer: Any) -> Any:
    if tokenizer is None:
        from haiku.rag.embeddings.local import default_tokenizer

        return default_tokenizer()
    if getattr(tokenizer, "truncation", None) is not None or getattr(tokenizer, "padding", None) is not None:
        # a truncating tokenizer would under-count long texts; reconfigure a copy, not the
        # caller's object
        tokenizer = type(tokenizer).from_str(tokenizer.to_str())
        tokenizer.no_truncation()
        tokenizer.no_padding()
    return tokenizer


def _prefix(headings: Sequence[str]) -> str:
    return "".join(heading + "\n" for heading in headings)


def _budget(headings: tuple[str, ...], counter: _TokenCounter, max_tokens: int) -> int:
    """Tokens left for text under ``headings``; at least a quarter of the limit, so a
    chunk under an absurdly long heading still holds text (``_fit`` then shortens it)."""
    return max(max_tokens - counter.specials - counter.heading_cost(headings), max_tokens // 4, 1)


# ---------------------------------------------------------------------------------------------
# Splitting a unit into pieces of at most the budget


@dataclass(slots=True)
class _Piece:
    unit: _Unit
    start: int  # characters [start, end) of the unit text
    end: int
    tokens: int  # without special tokens
    exact: bool = True  # cut on whitespace (False: inside a word, its count may change)

    @property
    def text(self) -> str:
        return self.unit.text[self.start : self.end]


def _split_unit(unit: _Unit, counter: _TokenCounter, max_tokens: int) -> list[_Piece]:
    text = unit.text
    if unit.tokens <= 0:
        return []
    budget = _budget(unit.headings, counter, max_tokens)
    if unit.tokens <= budget:
        start = len(text) - len(text.lstrip())
        return [_Piece(unit, start, len(text.rstrip()), unit.tokens)]
    offsets = counter.offsets(text)  # only the units that must be cut need them
    pieces: list[_Piece] = []
    first, exact = 0, True
    while first < len(offsets):
        last, clean = (len(offsets), True) if len(offsets) - first <= budget else _cut(text, offsets, first, first + budget)
        # a cut inside a word changes how both sides tokenise
        pieces.append(_Piece(unit, offsets[first][0], offsets[last - 1][1], last - first, exact and clean))
        first, exact = last, clean
    return pieces


_SENTENCE_END = frozenset(".!?")


def _cut(text: str, offsets: list[tuple[int, int]], first: int, limit: int) -> tuple[int, bool]:
    """Where to end a piece of tokens ``[first, limit)`` (exclusive, > ``first``): before the
    last token that opens a line, else after the last sentence end, else before the last token
    that starts a word; looked for in the second half of the window so pieces stay full.
    Also says whether the cut is on whitespace (else it falls inside a word)."""
    low = first + max((limit - first) // 2, 1)
    word = sentence = line = 0
    for i in range(limit, low - 1, -1):
        if i >= len(offsets) or i <= first:
            continue
        start = offsets[i][0]
        gap = text[offsets[i - 1][1] : start]
        if not gap or not gap.isspace():
            continue  # inside a word, or a token glued to the previous one
        if "\n" in gap:
            line = i
            break
        if not sentence and text[offsets[i - 1][1] - 1] in _SENTENCE_END:
            sentence = i
        if not word:
            word = i
    best = line or sentence or word
    return (best, True) if best else (limit, False)


# ---------------------------------------------------------------------------------------------
# Packing pieces into chunks


def _pack(pieces: list[_Piece], counter: _TokenCounter, max_tokens: int) -> list[list[_Piece]]:
    """Consecutive pieces under the same headings, greedily, while they fit the budget."""
    groups: list[list[_Piece]] = []
    current: list[_Piece] = []
    used = 0
    for piece in pieces:
        same_table = piece.unit.table is not None and any(
            p.unit.table == piece.unit.table and p.unit is not piece.unit for p in current
        )
        if current and current[0].unit.headings == piece.unit.headings and not same_table:
            budget = _budget(piece.unit.headings, counter, max_tokens)
            if used + piece.tokens <= budget:
                current.append(piece)
                used += piece.tokens
                continue
        if current:
            groups.append(current)
        current, used = [piece], piece.tokens
    if current:
        groups.append(current)
    return groups


def _fit(groups: list[list[_Piece]], counter: _TokenCounter, max_tokens: int) -> list[list[_Piece]]:
    """Groups counted as a whole where the sum of their parts' counts may be wrong (any
    tokenizer but WordPiece, a piece cut inside a word); one over the limit is split until
    each part fits. WordPiece splits text on whitespace and punctuation before looking words
    up, so pieces cut on whitespace and joined by newlines count exactly their sum."""
    counts = [
        counter.specials + counter.heading_cost(group[0].unit.headings) + sum(p.tokens for p in group)
        for group in groups
    ]
    unsure = [i for i, group in enumerate(groups) if not (counter.additive and all(p.exact for p in group))]
    for index, count in zip(unsure, counter.count_many([_embed_text(groups[i]) for i in unsure]), strict=True):
        counts[index] = count
    fitted: list[list[_Piece]] = []
    for group, count in zip(groups, counts, strict=True):
        if count <= max_tokens:
            fitted.append(group)
            continue
        parts = _halves(group, counter, excess=count - max_tokens)
        if parts is None:
            fitted.append(group)  # one token under a heading path over the limit: no smaller part
            continue
        fitted.extend(_fit(parts, counter, max_tokens))
    return fitted


def _halves(group: list[_Piece], counter: _TokenCounter, *, excess: int) -> list[list[_Piece]] | None:
    if len(group) > 1:
        middle = len(group) // 2
        return [group[:middle], group[middle:]]
    (piece,) = group
    unit = piece.unit
    offsets = [(s + piece.start, e + piece.start) for s, e in counter.offsets(piece.text)]
    count = len(offsets)
    if count <= 1:
        return None
    keep = count - excess - 1 if count - excess - 1 >= 1 else max(1, count // 2)
    cut, _clean = _cut(unit.text, offsets, 0, keep) if keep > 1 else (1, False)
    left = _Piece(unit, offsets[0][0], offsets[cut - 1][1], cut, exact=False)
    right = _Piece(unit, offsets[cut][0], offsets[-1][1], count - cut, exact=False)
    return [[left], [right]]


def _embed_text(group: list[_Piece]) -> str:
    return _prefix(group[0].unit.headings) + _group_text(group)


def _group_text(group: list[_Piece]) -> str:
    return "\n".join(piece.text for piece in group)


# ---------------------------------------------------------------------------------------------
# Records


def _record(item_boxes: ItemBoxes, order: int, group: list[_Piece]) -> ChunkRecord:
    items: list[DocItem] = []
    boxes: list[Box] = []
    for piece in group:
        for part in piece.unit.parts:
            if part.end <= piece.start or part.start >= piece.end:
                continue
            if not items or items[-1] is not part.item:
                items.append(part.item)
            boxes.extend(_part_boxes(item_boxes, part, piece))
    text = _group_text(group)
    headings = list(group[0].unit.headings)
    return ChunkRecord(
        order=order,
        text=text,
        embed_text=_prefix(headings) + text,
        headings=headings,
        labels=[item.label.value for item in items],
        doc_item_refs=[item.self_ref for item in items],
        page_numbers=sorted({box.page for box in boxes}),
        boxes=boxes,
    )


def _part_boxes(item_boxes: ItemBoxes, part: _Part, piece: _Piece) -> list[Box]:
    """The provenance lines of ``part.item`` that the piece overlaps (all when it holds the
    whole item, or when the item's lines carry no character spans)."""
    if part.boxes is not None:
        return part.boxes
    provs = part.item.prov
    boxes = item_boxes.of(part.item)
    start, end = piece.start - part.start, piece.end - part.start
    whole = start <= 0 and end >= part.end - part.start
    if not whole and len(provs) > 1 and isinstance(part.item, TextItem):
        inside = [box for p, box in zip(provs, boxes, strict=True) if p.charspan[0] < end and p.charspan[1] > start]
        return inside or boxes
    return boxes


# above this many characters per allowed token, a text is too long for its tokens
_LONG_TEXT_CHARS_PER_TOKEN = 16
def _last_whitespace(text: str, before: int) -> int:
    """Index of the last whitespace character in ``text[:before]``, or -1."""
    return max(text.rfind(space, 0, before) for space in (" ", "\n", "\t"))


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
