"""Tiny GGUF model files made in a test (random weights, a byte-level vocabulary).

``tiny_llama`` writes a llama-architecture model llama.cpp can load and run: a few layers,
a 16-wide embedding, a SentencePiece-style vocabulary of byte tokens (so any text tokenizes)
and a chat template. Its answers are noise; what it proves is the plumbing: discovery, the
header, the child process, streaming, stop, unload. ``tiny_bert`` writes a BERT encoder with
mean pooling and a WordPiece vocabulary (single characters, at a word's start and within one,
so any ASCII text tokenizes) that llama.cpp serves on ``/v1/embeddings``. Made with the ``gguf`` package (test
extra), so no weights are ever downloaded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
TOOLS_TEMPLATE = (
    "{% if tools %}<|tools|>{{ tools | tojson }}\n{% endif %}" + CHAT_TEMPLATE
)


def tiny_llama(
    path: Path,
    *,
    name: str = "Tiny Llama",
    layers: int = 2,
    embd: int = 16,
    heads: int = 2,
    kv_heads: int = 1,
    ff: int = 32,
    context: int = 2048,
    chat_template: str | None = CHAT_TEMPLATE,
    seed: int = 0,
    pooling: int | None = None,  # set: a decoder made to embed (as Qwen3-Embedding is)
) -> Path:
    import gguf

    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokens = [b"<unk>", b"<s>", b"</s>"] + [f"<0x{i:02X}>".encode() for i in range(256)]
    tokens += ["\u2581" .encode() + w for w in (b"the", b"page", b"a")]
    types = [2, 3, 3] + [6] * 256 + [1] * 3  # unknown, control, byte, normal
    vocab = len(tokens)
    head_dim = embd // heads

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(name)
    writer.add_context_length(context)
    writer.add_embedding_length(embd)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(head_dim)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * vocab)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    if chat_template is not None:
        writer.add_chat_template(chat_template)
    if pooling is not None:
        writer.add_pooling_type(gguf.PoolingType(pooling))

    def tensor(name: str, *shape: int) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    tensor("token_embd.weight", vocab, embd)
    for i in range(layers):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(embd, dtype=np.float32))
        tensor(f"blk.{i}.attn_q.weight", embd, embd)
        tensor(f"blk.{i}.attn_k.weight", kv_heads * head_dim, embd)
        tensor(f"blk.{i}.attn_v.weight", kv_heads * head_dim, embd)
        tensor(f"blk.{i}.attn_output.weight", embd, embd)
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(embd, dtype=np.float32))
        tensor(f"blk.{i}.ffn_gate.weight", ff, embd)
        tensor(f"blk.{i}.ffn_up.weight", ff, embd)
        tensor(f"blk.{i}.ffn_down.weight", embd, ff)
    writer.add_tensor("output_norm.weight", np.ones(embd, dtype=np.float32))
    tensor("output.weight", vocab, embd)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def parameter_count(layers: int = 2, embd: int = 16, heads: int = 2, kv_heads: int = 1, ff: int = 32) -> int:
    """What ``tiny_llama`` holds, counted by hand (for the header reader's test)."""
    vocab = 3 + 256 + 3
    kv = kv_heads * (embd // heads)
    per_layer = embd + embd * embd + 2 * kv * embd + embd * embd + embd + 3 * ff * embd
    return 2 * vocab * embd + layers * per_layer + embd


def tiny_bert(
    path: Path,
    *,
    name: str = "Tiny Bert Embed",
    layers: int = 2,
    embd: int = 16,
    heads: int = 2,
    ff: int = 32,
    context: int = 512,
    pooling: int = 1,  # mean
    architecture: str = "bert",
    seed: int = 0,
) -> Path:
    """An embedding model: what llama.cpp's bert loader needs (found by trying): a ``bert``
    (WordPiece) tokenizer with [CLS] as bos and [SEP] as eos/sep, token-type and position
    embeddings, biases on every projection, and the pooling type in the header."""
    import gguf

    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    # llama.cpp's WordPiece marks a word's start with "\u2581" (the converters turn "x" into
    # "\u2581x" and "##x" into "x"): single characters both ways, so any ASCII text tokenizes
    letters = [chr(c) for c in range(33, 127)]
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + ["\u2581" + c for c in letters] + letters
    tokens += ["\u2581" + w for w in ("the", "page", "cell", "energy", "model")]
    types = [3, 2, 3, 3, 3] + [1] * (len(tokens) - 5)  # control, unknown, then normal
    vocab = len(tokens)

    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_name(name)
    writer.add_context_length(context)
    writer.add_embedding_length(embd)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_layer_norm_eps(1e-12)
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType(pooling))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("bert")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_type_count(2)
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(3)
    writer.add_sep_token_id(3)
    writer.add_unk_token_id(1)
    writer.add_pad_token_id(0)
    writer.add_mask_token_id(4)

    def tensor(name: str, *shape: int, scale: float = 0.02) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    def filled(name: str, n: int, value: float) -> None:
        writer.add_tensor(name, np.full(n, value, dtype=np.float32))

    tensor("token_embd.weight", vocab, embd, scale=1.0)  # distinct texts, distinct vectors
    tensor("token_types.weight", 2, embd)
    tensor("position_embd.weight", context, embd)
    filled("token_embd_norm.weight", embd, 1.0)
    filled("token_embd_norm.bias", embd, 0.0)
    for i in range(layers):
        for proj in ("attn_q", "attn_k", "attn_v", "attn_output"):
            tensor(f"blk.{i}.{proj}.weight", embd, embd)
            filled(f"blk.{i}.{proj}.bias", embd, 0.0)
        filled(f"blk.{i}.attn_output_norm.weight", embd, 1.0)
        filled(f"blk.{i}.attn_output_norm.bias", embd, 0.0)
        tensor(f"blk.{i}.ffn_up.weight", ff, embd)
        filled(f"blk.{i}.ffn_up.bias", ff, 0.0)
        tensor(f"blk.{i}.ffn_down.weight", embd, ff)
        filled(f"blk.{i}.ffn_down.bias", embd, 0.0)
        filled(f"blk.{i}.layer_output_norm.weight", embd, 1.0)
        filled(f"blk.{i}.layer_output_norm.bias", embd, 0.0)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
