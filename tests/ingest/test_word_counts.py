"""The chunker's WordPiece counting from a document's distinct words (``chunker._Words``):
every count and every token offset equals the embedder tokenizer's own encoding of the text,
and the chunks are those of encoding each unit whole."""

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"  # must precede docling-core/transformers imports

import tokenizers
from docling_core.types.doc import DocItemLabel, DoclingDocument

from haiku.rag.embeddings.local import default_tokenizer
from haiku.rag.ingest.chunker import (
    _is_wordpiece,
    _split_unit,
    _TokenCounter,
    _Unit,
    _untruncated,
    _Words,
)

# Texts where a tokenizer could part words differently from splitting on spaces: accents
# (stripped after NFD), CJK (a token per character), punctuation glued to words, control
# characters BERT deletes (\x0b \x0c \x85), other Unicode spaces (NBSP, ideographic, thin),
# zero-width characters, a word over WordPiece's 100-character limit ([UNK]), U+FFFD,
# runs of blanks, tabs and line breaks, and words repeated across texts.
TRICKY = [
    "Café au lait, déjà vu — naïve coöperation; Ærø, straße.",
    "東京大学の研究 (2024): 結果は良好。Mixed日本語text here.",
    "e-mail:someone@example.org;path/to/file.txt?x=1&y=2 [ref 12]",
    "ab\x0bcd ef\x0cgh ij\x85kl mn\u00a0op qr\u3000st uv\u2009wx yz\u200bzz soft\u00adhyphen",
    "x" * 150 + " short " + "pneumonoultramicroscopicsilicovolcanoconiosis" * 3,
    "replacement \ufffd char and NUL\x00 in text",
    "  leading and trailing blanks \t\t tabs \n\n\r\n line breaks  ",
    "Row 1, Value = 1.5\nRow 2, Value = 2.5\nRow 3, Value = 3.5",
    "",
    "   \n\t ",
    "Café au lait, déjà vu again: repeated words across texts.",
    "İstanbul ǅemal ﬁnance ﬂow Ⅻ ½ ² ℃ ＡＢＣ ｶﾀｶﾅ",
    "emoji 👍🏽 and flags 🇫🇷 between words",
    "literal special tokens: a [MASK] b, x[SEP]y [CLS] z, [UNK] [PAD]w",
]


def tokenizer_offsets(tokenizer, text: str) -> list[tuple[int, int]]:
    encoding = tokenizer.encode(text)
    return [o for o, special in zip(encoding.offsets, encoding.special_tokens_mask, strict=True) if not special]


def test_counts_and_offsets_equal_the_tokenizers_own_encoding() -> None:
    tokenizer = _untruncated(default_tokenizer())
    words = _Words.of(tokenizer, TRICKY)
    for text in TRICKY:
        expected = tokenizer_offsets(tokenizer, text)
        assert words.count(text) == len(expected), text
        assert words.offsets(text) == expected, text
    # a text made of known words, in another order and spacing: still exact
    mixed = "vu déjà\tlait,   straße.\nCafé"
    assert words.offsets(mixed) == tokenizer_offsets(tokenizer, mixed)
    # a word it has not seen: no offsets (the caller encodes that text itself)
    assert words.offsets("unseenword here") is None


def test_a_unit_that_must_be_cut_is_cut_where_its_own_encoding_would_cut_it() -> None:
    """The same pieces, counts and character spans as with the whole unit encoded (the
    path every non-WordPiece tokenizer takes)."""
    tokenizer = _untruncated(default_tokenizer())
    doc = DoclingDocument(name="cut")
    text = " ".join(f"Sentence {i} of the long naïve paragraph, 東京 déjà vu; ratio {i / 7:.3f}." for i in range(120))
    item = doc.add_text(label=DocItemLabel.TEXT, text=text)
    from haiku.rag.ingest.chunker import _Part

    def pieces(counter: _TokenCounter) -> list[tuple[int, int, int, bool]]:
        unit = _Unit(text, ("A heading",), [_Part(item, 0, len(text))])
        counter.count_all([unit])
        return [(p.start, p.end, p.tokens, p.exact) for p in _split_unit(unit, counter, 64)]

    by_words = _TokenCounter(tokenizer)
    assert by_words.additive
    whole = _TokenCounter(tokenizer)
    whole.additive = False  # count and cut from the unit's own encoding
    expected = pieces(whole)
    assert len(expected) > 10
    assert pieces(by_words) == expected
    assert by_words._words is not None and whole._words is None


def test_a_token_that_takes_the_space_before_it_falls_back_to_encoding_each_text() -> None:
    """An added token with ``lstrip`` takes the space before it: its offsets start in the
    space joining two words, so counting by words would give it to the wrong word."""
    config = json.loads(_untruncated(default_tokenizer()).to_str())
    for token in config["added_tokens"]:
        if token["content"] == "[MASK]":
            token["lstrip"] = True
    tokenizer = tokenizers.Tokenizer.from_str(json.dumps(config))
    assert _is_wordpiece(tokenizer)
    texts = ["a [MASK] b", "a b", "[MASK] first"]
    assert _Words.of(tokenizer, texts) is None
    counter = _TokenCounter(tokenizer)
    units = [_Unit(text, (), []) for text in texts]
    counter.count_all(units)
    assert [unit.tokens for unit in units] == [len(tokenizer.encode(t).ids) - 2 for t in texts]
    assert counter.offsets(texts[0]) == tokenizer_offsets(tokenizer, texts[0])
