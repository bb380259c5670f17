r"""Inference of zoo's exported SavedModel beside the PyTorch peer, on SST-2 dev.

  python bench/inference.py                       # a fresh MiniLM classifier (head untrained)
  python bench/inference.py --model_dir=runs/sst2 # a trained classification model dir

First the peer, `bench/peer_infer.py`, in a subprocess (--peer=false skips it). Then zoo writes
two exports of the same model with `zoo.export.export_classifier`: the default, which trims each
request to its longest row, and one that always pads to --max_seq_length (`fixed`, the
baseline). Loaded with `tf.saved_model.load` in this process, after `zoo.precision.apply`
(--precision, as for inference; TF Serving does not apply that graph rewrite). The `serving_default` signature is
called on raw strings (tokenization inside the graph, inside the timing), for each batch size:
`fixed` and `trimmed` in file order, and `sorted` (trimmed, texts sorted by character length
first, as a client that groups requests of similar length would). Then batch-1 latency p50/p95,
and for both sides the wall time from starting a new Python process to its first prediction.
Prints one JSON line with the ratios.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from absl import app, flags

from common import best_rate, latency_ms, minilm_folder, run_peer, sst2_sentences

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

flags.DEFINE_string("data_dir", os.path.join(ROOT, "..", "shared", "data", "sst2"),
                    "GLUE SST-2 folder (dev.tsv is used).")
flags.DEFINE_string("model_dir", None, "A trained classification model dir (default: a fresh "
                    "classifier on --encoder_handle; the head's weights do not change the work).")
flags.DEFINE_string("encoder_handle", "minilm_l6_h384_uncased", "Encoder handle.")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length of the export.")
flags.DEFINE_list("batch_sizes", ["32", "64"], "Batch sizes of the throughput runs.")
flags.DEFINE_integer("repeats", 3, "Timed passes over dev per policy (best is kept).")
flags.DEFINE_integer("latency_requests", 200, "One-text requests of the latency run.")
flags.DEFINE_enum("precision", "auto", ["auto", "bf16", "fp32"],
                  "See zoo.precision (auto: fp32 outside training, as in tasks).")
flags.DEFINE_bool("peer", True, "Run the PyTorch peer first (needs ./install.sh bench).")
FLAGS = flags.FLAGS

ZOO_FIRST_PREDICTION = """
import sys, tensorflow as tf, tensorflow_text
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
print(serve(text=tf.constant(["a gripping, funny film"]))["label"].numpy())
"""
PEER_FIRST_PREDICTION = """
import sys, torch
from transformers import BertForSequenceClassification, BertTokenizerFast
tokenizer = BertTokenizerFast.from_pretrained(sys.argv[1])
model = BertForSequenceClassification.from_pretrained(sys.argv[1], num_labels=2).eval()
with torch.inference_mode():
    print(model(**tokenizer(["a gripping, funny film"], return_tensors="pt")).logits.argmax(-1))
"""


def first_prediction_seconds(script, *args, env=None):
    """Wall seconds from starting a new Python process to the end of its first prediction."""
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", script, *args], check=True, capture_output=True,
                   env=env)
    return round(time.perf_counter() - began, 2)


def write_exports(folder):
    """(trimmed export, fixed-length export) of one model."""
    from zoo import classification, export, hub, models, runner  # pylint: disable=import-outside-toplevel

    if FLAGS.model_dir:
        task = runner.start("export", classification.Classification, classification.Settings(
            model_dir=FLAGS.model_dir, encoder_handle=FLAGS.encoder_handle,
            max_seq_length=FLAGS.max_seq_length))
        core, _ = runner.restored(task)
        packer, labels = task.run.packer, task.labels.names
    else:
        encoder, preprocessor = hub.resolve_handles(FLAGS.encoder_handle, None)
        core = models.classifier_core(encoder, 2)
        packer = models.TextPacker(preprocessor, FLAGS.max_seq_length)
        labels = ["negative", "positive"]
    return tuple(export.export_classifier(os.path.join(folder, name), core, packer, labels,
                                          trim_padding=name == "trimmed")
                 for name in ("trimmed", "fixed"))


def main(argv):
    del argv
    peer = None
    if FLAGS.peer:
        peer = run_peer("peer_infer.py", data_dir=FLAGS.data_dir,
                        batch_sizes=",".join(FLAGS.batch_sizes),
                        max_seq_length=FLAGS.max_seq_length, repeats=FLAGS.repeats,
                        latency_requests=FLAGS.latency_requests)
        peer["first_prediction_seconds"] = first_prediction_seconds(
            PEER_FIRST_PREDICTION, minilm_folder())
    from zoo import precision  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    texts = sst2_sentences(os.path.join(FLAGS.data_dir, "dev.tsv"))
    by_length = sorted(texts, key=len)
    results = dict(examples=len(texts), max_seq_length=FLAGS.max_seq_length,
                   precision=precision.apply(precision.resolve(
                       precision.for_inference(FLAGS.precision))))
    with tempfile.TemporaryDirectory(prefix="zoo-bench-export-") as folder:
        trimmed_dir, fixed_dir = write_exports(folder)
        serving = {name: tf.saved_model.load(path).signatures["serving_default"]
                   for name, path in (("trimmed", trimmed_dir), ("fixed", fixed_dir))}
        calls = {name: (lambda group, fn=fn: fn(text=tf.constant(group))["probabilities"].numpy())
                 for name, fn in serving.items()}
        for batch_size in (int(b) for b in FLAGS.batch_sizes):
            rates = {"fixed": best_rate(calls["fixed"], texts, batch_size, FLAGS.repeats),
                     "trimmed": best_rate(calls["trimmed"], texts, batch_size, FLAGS.repeats),
                     "sorted": best_rate(calls["trimmed"], by_length, batch_size, FLAGS.repeats)}
            results[f"batch_{batch_size}"] = {k: round(v, 1) for k, v in rates.items()}
            results[f"ratio_sorted_over_fixed_batch_{batch_size}"] = round(
                rates["sorted"] / rates["fixed"], 3)
        results["batch_1_latency"] = latency_ms(calls["trimmed"], texts[:FLAGS.latency_requests])
        env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
        results["first_prediction_seconds"] = first_prediction_seconds(
            ZOO_FIRST_PREDICTION, trimmed_dir, env=env)
    results["best_batched_examples_per_second"] = max(
        rate for key, policies in results.items() if key.startswith("batch_") and key[6:].isdigit()
        for rate in policies.values())
    if peer:
        results["peer"] = peer
        best = results["best_batched_examples_per_second"]
        results["ratio_zoo_best_over_peer_best_batched"] = round(
            best / peer["best_batched_examples_per_second"], 3)
        results["ratio_zoo_best_over_peer_pipeline_default"] = round(
            best / peer["pipeline_default_examples_per_second"], 3)
        for batch_size in FLAGS.batch_sizes:
            for policy, peer_policy in (("fixed", "fixed"), ("sorted", "sorted")):
                results[f"ratio_zoo_over_peer_{policy}_batch_{batch_size}"] = round(
                    results[f"batch_{batch_size}"][policy]
                    / peer[f"batch_{batch_size}"][peer_policy], 3)
        results["ratio_peer_over_zoo_batch_1_p50"] = round(
            peer["batch_1_latency"]["p50_ms"] / results["batch_1_latency"]["p50_ms"], 3)
    print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
