r"""Does TensorFlow's allocator setting for generator datasets slow training down here?

  .venv/bin/python bench/allocator.py            # MiniLM span model, batch 8, length 384

The first time TensorFlow runs a generator dataset (`tf.data.Dataset.from_generator`, which
zoo's data pipelines use) it sets glibc's M_TRIM_THRESHOLD (its log line "Memory patch
applied"). That also freezes glibc's dynamic mmap threshold where it is: in a training run the
data pipeline starts before the first step, so the threshold would stay at 128 KB and every
large tensor of every step be a fresh mmap and munmap. The same fixed-shape training step
(forward, backward, Adam update) is timed in fresh processes of three kinds, alternating,
`--repeats` of each:

  none       no generator dataset runs
  patched    a generator dataset runs before the first step (TensorFlow's setting)
  restored   the same, then glibc's thresholds are set where its dynamic threshold settles
             (mmap 32 MB, trim 64 MB: `zoo.compute.malloc.settle`, as `zoo.training.loop.fit` does)

and one JSON line gives each kind's median step time over its processes and the ratios. On the
family 26 EPYC these SQuAD-shaped steps showed no difference; on a Zen 4 EPYC bucketed bf16
MRPC steps did (`bench/train_throughput.py`, zoo config `bf16-tfmalloc`; BENCHMARKS.md), and
`zoo.training.loop.fit` now sets the thresholds back.
"""
import json
import os
import statistics
import subprocess
import sys
import time

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import machine  # noqa: E402

KINDS = ("none", "patched", "restored")
flags.DEFINE_string("encoder", "minilm_l6_h384_uncased", "Encoder name or handle.")
flags.DEFINE_integer("batch_size", 8, "Windows per step.")
flags.DEFINE_integer("seq_length", 384, "Tokens per window.")
flags.DEFINE_integer("steps", 5, "Timed steps per process (after two untimed ones).")
flags.DEFINE_integer("repeats", 3, "Processes of each kind.")
flags.DEFINE_enum("child", None, KINDS, "(internal) time one process of this kind.")
FLAGS = flags.FLAGS


def child(kind):
    """Step times of one process of `kind`."""
    import numpy as np
    import zoo  # noqa: F401
    import tensorflow as tf
    import tf_keras as keras
    from zoo.compute import malloc
    from zoo.model import hub
    from zoo.model.cores import span_core

    if kind != "none":
        list(tf.data.Dataset.from_generator(lambda: iter([1, 2]),
                                            output_signature=tf.TensorSpec([], tf.int32)))
    if kind == "restored" and not malloc.settle():
        raise SystemExit("glibc's mallopt is not available here")
    encoder, _ = hub.resolve_handles(FLAGS.encoder, None)
    core = span_core(encoder)
    optimizer = keras.optimizers.Adam(1e-5)
    rng = np.random.default_rng(0)
    shape = (FLAGS.batch_size, FLAGS.seq_length)
    inputs = dict(input_word_ids=tf.constant(rng.integers(1000, 20000, shape), tf.int32),
                  input_mask=tf.ones(shape, tf.int32), input_type_ids=tf.zeros(shape, tf.int32))
    positions = tf.constant(rng.integers(0, FLAGS.seq_length, FLAGS.batch_size), tf.int32)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            logits = core(inputs, training=True)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(positions, logits["start_logits"])
                + tf.nn.sparse_softmax_cross_entropy_with_logits(positions, logits["end_logits"]))
        optimizer.apply_gradients(zip(tape.gradient(loss, core.trainable_variables),
                                      core.trainable_variables))
        return loss

    for _ in range(2):
        step().numpy()
    times = []
    for _ in range(FLAGS.steps):
        began = time.perf_counter()
        step().numpy()
        times.append(time.perf_counter() - began)
    return times


def main(argv):
    del argv
    if FLAGS.child:
        print(json.dumps(child(FLAGS.child)))
        return
    runs = {kind: [] for kind in KINDS}
    for round_ in range(FLAGS.repeats):
        order = KINDS if round_ % 2 == 0 else KINDS[::-1]
        for kind in order:
            args = [sys.executable, os.path.abspath(__file__), f"--child={kind}"] + [
                f"--{name}={getattr(FLAGS, name)}"
                for name in ("encoder", "batch_size", "seq_length", "steps")]
            finished = subprocess.run(args, capture_output=True, text=True, check=False)
            if finished.returncode:
                raise SystemExit(f"{kind}: failed\n{finished.stderr[-3000:]}")
            runs[kind].append(json.loads(finished.stdout.strip().splitlines()[-1]))
    medians = {kind: statistics.median(t for times in runs[kind] for t in times)
               for kind in KINDS}
    print(json.dumps(dict(
        machine=machine(), encoder=FLAGS.encoder, batch_size=FLAGS.batch_size,
        seq_length=FLAGS.seq_length, steps_per_process=FLAGS.steps, repeats=FLAGS.repeats,
        step_seconds={k: [[round(t, 3) for t in times] for times in v] for k, v in runs.items()},
        median_step_seconds={k: round(v, 3) for k, v in medians.items()},
        ratio_patched_over_restored=round(medians["patched"] / medians["restored"], 3),
        ratio_patched_over_none=round(medians["patched"] / medians["none"], 3),
        ratio_restored_over_none=round(medians["restored"] / medians["none"], 3))))


if __name__ == "__main__":
    app.run(main)
