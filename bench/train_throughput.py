r"""Training throughput and model-FLOP utilisation (MFU) of zoo's classifier fine-tuning.

  python bench/train_throughput.py              # MRPC, MiniLM, batch 32, length 128

First the peer, `bench/peer_train.py` (transformers + PyTorch on the same checkpoint, data, batch,
length and padding), in a subprocess: the baseline (--peer=false skips it). Then in this process:
an fp32 matmul peak measured by TensorFlow (and the bf16 one, for reference), then
`zoo.classification` training (the code path of `tasks.*.train`, at its default precision and
XLA fusion, so fixed padding is fused and the others are not) for
--steps steps with each padding policy: fixed (to --max_seq_length), dynamic, and bucketed
(dynamic over batches of similar lengths; the peer does the same grouping). Each run's steady rate leaves out the first
call, which traces. Prints one JSON line: examples/s and tokens/s of each policy, model FLOP/s and
MFU = model FLOP/s / matmul peak at fixed length (each side against its own framework's peak),
and the ratios zoo/peer for each policy and for each side's best policy.

Model FLOPs per example (training = 3x forward, the usual count): per token and layer
2 * (4 d^2 + 2 d d_ff) for the dense layers plus 4 S d for attention scores and values,
from the encoder's `zoo_build_info.json` (models built by zoo-build-hub).
"""
import json
import os
import shutil
import tempfile
import time

from absl import app, flags

from common import run_peer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_string("data_dir", os.path.join(ROOT, "..", "shared", "data", "mrpc"),
                    "GLUE MRPC folder (train.tsv is used).")
flags.DEFINE_string("encoder_handle", "minilm_l6_h384_uncased", "Encoder (zoo-build-hub model).")
flags.DEFINE_integer("batch_size", 32, "Training batch size.")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length (fixed padding pads to it).")
flags.DEFINE_integer("steps", 30, "Training steps per policy (the first call is not timed).")
flags.DEFINE_list("padding", ["fixed", "dynamic", "bucketed"],
                  "Padding policies; the first is the baseline.")
flags.DEFINE_enum("precision", "auto", ["auto", "bf16", "fp32"], "zoo's precision (zoo.precision).")
flags.DEFINE_enum("xla_fusion", "auto", ["auto", "on", "off"],
                  "zoo's XLA fusion (zoo.fusion; auto: on for fixed padding only).")
flags.DEFINE_integer("steps_per_execution", 1, "zoo's training steps per tf.function call (> 1 "
                     "turns XLA fusion off under auto).")
flags.DEFINE_integer("matmul_size", 2048, "Side of the square fp32 matmul of the peak.")
flags.DEFINE_bool("peer", True, "Run the PyTorch peer first (needs ./install.sh bench).")
FLAGS = flags.FLAGS


def matmul_peak_gflops(size, dtype="fp32", repeats=20):
    """Best GFLOP/s of a chain of `repeats` square matmuls in one tf.function, best of 5.

    Each product feeds the next, so no graph optimisation can merge or drop any of them.
    `dtype` "bf16" measures the matmuls as zoo.precision's bf16 rewrite runs them.
    """
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from zoo import precision  # pylint: disable=import-outside-toplevel

    precision.apply(dtype)

    a = tf.random.normal([size, size])
    b = tf.random.normal([size, size]) / size ** 0.5  # keeps the chain's scale near 1

    @tf.function
    def chain(x):
        for _ in range(repeats):
            x = tf.matmul(x, b)
        return x

    chain(a).numpy()
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        chain(a).numpy()
        best = min(best, time.perf_counter() - began)
    return 2.0 * size ** 3 * repeats / best / 1e9


def train_flops_per_token(config, seq_length):
    d, d_ff, layers = (config["hidden_size"], config["intermediate_size"],
                       config["num_hidden_layers"])
    forward = layers * (2 * (4 * d * d + 2 * d * d_ff) + 4 * seq_length * d)
    return 3 * forward


def main(argv):
    del argv
    peer = None
    if FLAGS.peer:  # first, before TensorFlow is loaded in this process
        peer = run_peer("peer_train.py", data_dir=FLAGS.data_dir, batch_size=FLAGS.batch_size,
                        max_seq_length=FLAGS.max_seq_length, steps=FLAGS.steps,
                        padding=",".join(FLAGS.padding))
    from zoo import classification, hub  # pylint: disable=import-outside-toplevel
    from zoo.data.sources import FileSource  # pylint: disable=import-outside-toplevel
    from zoo.data.text_files import glue_columns  # pylint: disable=import-outside-toplevel

    encoder, _ = hub.resolve_handles(FLAGS.encoder_handle, None)
    with open(os.path.join(os.path.dirname(encoder), "zoo_build_info.json"),
              encoding="utf-8") as f:
        config = json.load(f)["config"]
    source = FileSource(os.path.join(FLAGS.data_dir, "train.tsv"), glue_columns("mrpc"))
    results = dict(encoder=FLAGS.encoder_handle, batch_size=FLAGS.batch_size,
                   max_seq_length=FLAGS.max_seq_length, steps=FLAGS.steps,
                   steps_per_execution=FLAGS.steps_per_execution,
                   matmul_peak_gflops=round(matmul_peak_gflops(FLAGS.matmul_size), 1),
                   bf16_matmul_peak_gflops=round(matmul_peak_gflops(FLAGS.matmul_size, "bf16"), 1))
    for padding in FLAGS.padding:
        model_dir = tempfile.mkdtemp(prefix=f"zoo-bench-{padding}-")
        try:
            settings = classification.Settings(
                model_dir=model_dir, encoder_handle=FLAGS.encoder_handle,
                max_seq_length=FLAGS.max_seq_length, train_batch_size=FLAGS.batch_size,
                max_train_steps=FLAGS.steps, num_train_epochs=1, padding=padding, pair=True,
                learning_rate=5e-5, precision=FLAGS.precision, xla_fusion=FLAGS.xla_fusion,
                steps_per_execution=FLAGS.steps_per_execution)
            classification.run("train", settings, lambda split: source)
            with open(os.path.join(model_dir, "train_results.json"), encoding="utf-8") as f:
                timing = json.load(f)
        finally:
            shutil.rmtree(model_dir, ignore_errors=True)
        rate = timing["steady_examples_per_second"]
        entry = dict(examples_per_second=round(rate, 2),
                     timed_steps=timing["steps"] - timing["first_call_steps"],
                     precision=timing["precision"], xla_fusion=timing["xla_fusion"],
                     first_call_seconds=round(timing["first_call_seconds"], 1))
        if padding == "fixed":
            tokens = rate * FLAGS.max_seq_length
            flops = tokens * train_flops_per_token(config, FLAGS.max_seq_length)
            entry.update(tokens_per_second=round(tokens, 1),
                         model_gflops=round(flops / 1e9, 1),
                         mfu=round(flops / 1e9 / results["matmul_peak_gflops"], 3),
                         mfu_of_bf16_peak=round(flops / 1e9 / results["bf16_matmul_peak_gflops"], 3))
        results[padding] = entry
    first = FLAGS.padding[0]
    for padding in FLAGS.padding[1:]:
        results[f"ratio_{padding}_over_{first}"] = round(
            results[padding]["examples_per_second"] / results[first]["examples_per_second"], 3)
    if peer:
        results["peer"] = peer
        rate = lambda side, p: side[p]["examples_per_second"]  # noqa: E731
        for padding in FLAGS.padding:
            results[f"ratio_zoo_over_peer_{padding}"] = round(
                rate(results, padding) / rate(peer, padding), 3)
        if "fixed" in peer:
            peer["fixed"]["mfu"] = round(
                rate(peer, "fixed") * FLAGS.max_seq_length
                * train_flops_per_token(config, FLAGS.max_seq_length) / 1e9
                / peer["matmul_peak_gflops"], 3)
        zoo_best = max(rate(results, p) for p in FLAGS.padding)
        results["ratio_zoo_best_over_peer_best"] = round(
            zoo_best / max(rate(peer, p) for p in FLAGS.padding), 3)
        if "dynamic" in peer:  # the "peer's best": dynamic padding
            results["ratio_zoo_best_over_peer_dynamic"] = round(
                zoo_best / rate(peer, "dynamic"), 3)
    print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
