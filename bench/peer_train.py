r"""The peer: Hugging Face transformers + PyTorch fine-tuning of the same MiniLM checkpoint on MRPC.

  python bench/peer_train.py --plan_file=PLAN [--precision=bf16] [--attention=sdpa] [--compile]
  python bench/peer_train.py --write_lengths=FILE    # token length of every MRPC train pair

Run by `bench/train_throughput.py` (needs ./install.sh bench: torch==2.13.0, transformers), which
writes the plan: for each padding policy the batches (row indices of MRPC train.tsv) that both
sides take, in order (`common.batch_plan`). Texts are tokenized up front (as `datasets.map`
would); each step collates its batch (fixed: pad to --max_seq_length; dynamic and bucketed: to
the batch's longest), runs forward, backward, clipping and AdamW. The peer at its best is one of
its settings: --precision=bf16 runs forward and loss under `torch.autocast("cpu",
torch.bfloat16)`; --attention picks transformers' attention implementation; --compile wraps the
model in `torch.compile`. The first --warmup_steps of each policy are not timed. Prints one JSON
line: the seconds of each policy's timed steps, the settings, threads and the matmul peak of the
precision used, measured by torch in the same process after training.
"""
import argparse
import contextlib
import json
import os
import time

import torch
from transformers import BertForSequenceClassification, BertTokenizerFast

from common import minilm_folder, mrpc_pairs, timed_steps

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def matmul_peak_gflops(dtype, size=2048, repeats=20):
    """Best GFLOP/s of a chain of `repeats` square matmuls in `dtype`, best of 5."""
    a = torch.randn(size, size).to(dtype)
    b = (torch.randn(size, size) / size ** 0.5).to(dtype)
    torch.matmul(a, b)
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        x = a
        for _ in range(repeats):
            x = torch.matmul(x, b)
        best = min(best, time.perf_counter() - began)
    return 2.0 * size ** 3 * repeats / best / 1e9


def train_seconds(model, batches, precision, warmup_steps):
    """Seconds of the timed steps (collate, forward, backward, clipping, AdamW) over
    `batches` of keyword inputs made by a collating function."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01)
    model.train()

    def step(collate):
        autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16"
                    else contextlib.nullcontext())
        with autocast:
            loss = model(**collate()).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()

    return timed_steps(step, batches, warmup_steps)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data_dir", default=os.path.join(ROOT, "..", "shared", "data", "mrpc"))
    parser.add_argument("--plan_file", help="JSON: {padding: [[row, ...], ...]}")
    parser.add_argument("--write_lengths", help="Write the token length of every pair here.")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--warmup_steps", type=int, default=3)
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--attention", choices=("eager", "sdpa"), default="sdpa")
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    folder = minilm_folder()
    tokenizer = BertTokenizerFast.from_pretrained(folder)
    pairs = mrpc_pairs(os.path.join(args.data_dir, "train.tsv"))
    encoded = tokenizer([a for a, _, _ in pairs], [b for _, b, _ in pairs], truncation=True,
                        max_length=args.max_seq_length)
    if args.write_lengths:
        with open(args.write_lengths, "w", encoding="utf-8") as f:
            json.dump([len(ids) for ids in encoded["input_ids"]], f)
        return
    with open(args.plan_file, encoding="utf-8") as f:
        plan = json.load(f)
    labels = [y for _, _, y in pairs]
    results = dict(side="peer", framework=f"torch {torch.__version__}",
                   transformers=__import__("transformers").__version__,
                   threads=torch.get_num_threads(), interop_threads=torch.get_num_interop_threads(),
                   precision=args.precision, attention=args.attention, compile=args.compile,
                   warmup_steps=args.warmup_steps, seconds={})
    for padding, rows in plan.items():
        torch.manual_seed(0)
        model = BertForSequenceClassification.from_pretrained(
            folder, num_labels=2, attn_implementation=args.attention)
        if args.compile:
            model = torch.compile(model)

        def collate(index, padding=padding):
            features = [{k: encoded[k][i] for k in encoded} for i in index]
            batch = tokenizer.pad(
                features, padding="max_length" if padding == "fixed" else "longest",
                max_length=args.max_seq_length if padding == "fixed" else None,
                return_tensors="pt")
            return dict(batch, labels=torch.tensor([labels[i] for i in index]))

        batches = [lambda index=index: collate(index) for index in rows]
        results["seconds"][padding] = train_seconds(model, batches, args.precision,
                                                    args.warmup_steps)
    results["matmul_peak_gflops"] = round(matmul_peak_gflops(
        torch.bfloat16 if args.precision == "bf16" else torch.float32), 1)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
