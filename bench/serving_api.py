r"""zoo's Python inference API (`zoo.serving`) beside the peer's `pipeline()`, on SST-2 dev.

  .venv/bin/python bench/serving_api.py        # needs ./install.sh bench for the peer

zoo: `zoo.serving.load(export).predict(texts)` on an export of a MiniLM classifier (head
untrained, as the peer's: the work is the same), in a process that imports only tensorflow,
tensorflow_text and zoo.serving (the export is written first, by another process). Peer:
transformers' `pipeline("text-classification")` on the same MiniLM checkpoint, fp32 (the
pipeline's default), as a user calls it: `classifier(texts, batch_size=B)`. Both get all 872
dev sentences per pass, in file order, at each of --batch_sizes (zoo's `predict` sorts by
length inside, the pipeline pads each batch to its longest); after one untimed pass, the best of
--repeats passes. Sides alternate in fresh processes for --rounds rounds (peer first in even
rounds). One JSON line: each side's best rate per batch size (median over rounds, with the
spread), each side's best batch size, and the ratio of zoo's best to the peer's best.
"""
import json
import os
import statistics
import sys
import tempfile
import time

from absl import app, flags

from common import last_json, machine, minilm_folder, run_script, sst2_sentences

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_string("data_dir", os.path.join(ROOT, "..", "shared", "data", "sst2"),
                    "GLUE SST-2 folder (dev.tsv is used).")
flags.DEFINE_list("batch_sizes", ["1", "8", "32", "64"], "Batch sizes tried on both sides.")
flags.DEFINE_integer("repeats", 2, "Timed passes per batch size in a process (best is kept).")
flags.DEFINE_integer("rounds", 3, "Alternating rounds of one process per side.")
flags.DEFINE_enum("side", None, ["zoo", "peer", "export"], "(internal) one side's process.")
flags.DEFINE_string("export_dir", None, "(internal) the export zoo's side loads.")
FLAGS = flags.FLAGS


def _rates(predict, texts):
    rates = {}
    for batch_size in (int(b) for b in FLAGS.batch_sizes):
        predict(texts, batch_size)
        best = float("inf")
        for _ in range(FLAGS.repeats):
            began = time.perf_counter()
            outputs = predict(texts, batch_size)
            best = min(best, time.perf_counter() - began)
            assert len(outputs) == len(texts)
        rates[str(batch_size)] = len(texts) / best
    return rates


def zoo_side(texts):
    sys.path.insert(0, ROOT)
    from zoo import serving
    models = {}

    def predict(group, batch_size):
        if batch_size not in models:
            models[batch_size] = serving.load(FLAGS.export_dir, batch_size=batch_size)
        return models[batch_size].predict(group)

    rates = _rates(predict, texts)
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("tf_keras", "tensorflow_hub"))
    return dict(rates=rates, heavy_modules=heavy)


def peer_side(texts):
    import torch
    from transformers import (
        BertForSequenceClassification, BertTokenizerFast, pipeline)
    folder = minilm_folder()
    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(folder, num_labels=2).eval()
    classifier = pipeline("text-classification", model=model,
                          tokenizer=BertTokenizerFast.from_pretrained(folder), device="cpu")
    rates = _rates(lambda group, batch_size: classifier(group, batch_size=batch_size), texts)
    return dict(rates=rates, framework=f"torch {torch.__version__}",
                threads=torch.get_num_threads())


def write_export(path):
    sys.path.insert(0, ROOT)
    from zoo import models
    encoder, preprocessor = models.resolve_handles("minilm_l6_h384_uncased")
    models.export_classifier(path, models.classifier_core(encoder, 2),
                             models.TextPacker(preprocessor, 128), ["negative", "positive"])


def _child(side, export_dir):
    return last_json(run_script(
        [os.path.abspath(__file__), f"--side={side}", f"--export_dir={export_dir}",
         f"--data_dir={FLAGS.data_dir}", f"--batch_sizes={','.join(FLAGS.batch_sizes)}",
         f"--repeats={FLAGS.repeats}"], name=side))


def main(argv):
    del argv
    texts = sst2_sentences(os.path.join(FLAGS.data_dir, "dev.tsv"))
    if FLAGS.side == "export":
        write_export(FLAGS.export_dir)
        print("{}")
        return
    if FLAGS.side:
        print(json.dumps((zoo_side if FLAGS.side == "zoo" else peer_side)(texts)))
        return
    runs = {"zoo": [], "peer": []}
    with tempfile.TemporaryDirectory(prefix="zoo-bench-serving-") as work:
        export_dir = os.path.join(work, "export", "1")
        _child("export", export_dir)
        for round_ in range(FLAGS.rounds):
            for side in (("peer", "zoo") if round_ % 2 == 0 else ("zoo", "peer")):
                runs[side].append(_child(side, export_dir))
    results = dict(machine=machine(), examples=len(texts), rounds=FLAGS.rounds,
                   repeats=FLAGS.repeats, peer_framework=runs["peer"][0]["framework"],
                   peer_threads=runs["peer"][0]["threads"], peer_precision="fp32",
                   zoo_precision="fp32",
                   zoo_heavy_modules=runs["zoo"][0]["heavy_modules"])
    for side, measured in runs.items():
        per_batch = {}
        for batch_size in FLAGS.batch_sizes:
            rates = [m["rates"][batch_size] for m in measured]
            per_batch[batch_size] = dict(median=round(statistics.median(rates), 1),
                                         spread=[round(min(rates), 1), round(max(rates), 1)])
        best = max(per_batch, key=lambda b: per_batch[b]["median"])
        results[side] = dict(examples_per_second=per_batch, best_batch_size=int(best),
                             best_examples_per_second=per_batch[best]["median"])
    results["ratio_zoo_best_over_peer_best"] = round(
        results["zoo"]["best_examples_per_second"] / results["peer"]["best_examples_per_second"],
        3)
    print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
