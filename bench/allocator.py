r"""Training steps before and after a tf.data generator dataset has run, in one process.

  .venv/bin/python bench/allocator.py            # MiniLM span model, batch 8, length 384

The first time TensorFlow runs a generator dataset (`tf.data.Dataset.from_generator`) it sets
glibc's M_TRIM_THRESHOLD (its log line "Memory patch applied"), which also freezes glibc's
dynamic mmap threshold at 128 KB: from then on every large tensor of a training step is a fresh
mmap and munmap. `zoo.data.generators.from_generator` puts the thresholds back where glibc's
dynamic threshold would have settled. This script times the same fixed-shape training step
(forward, backward, Adam update) in phases, alternating:

  fresh      no generator dataset has run yet
  patched    after a plain `tf.data.Dataset.from_generator` ran (TensorFlow's setting)
  restored   after `zoo.data.generators.restore_allocator()`
  patched    the plain generator again
  restored   ...

and prints one JSON line: each phase's median step time and the ratio of the patched phases'
median to the restored phases' median (> 1: TensorFlow's setting slows training down).
"""
import json
import os
import statistics
import sys
import time

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import machine  # noqa: E402  pylint: disable=wrong-import-position

flags.DEFINE_string("encoder", "minilm_l6_h384_uncased", "Encoder name or handle.")
flags.DEFINE_integer("batch_size", 8, "Windows per step.")
flags.DEFINE_integer("seq_length", 384, "Tokens per window.")
flags.DEFINE_integer("steps", 4, "Timed steps per phase (after one untimed step).")
flags.DEFINE_integer("rounds", 2, "Patched/restored pairs after the fresh phase.")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    import numpy as np  # pylint: disable=import-outside-toplevel
    import zoo  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    import tf_keras as keras  # pylint: disable=import-outside-toplevel
    from zoo import hub  # pylint: disable=import-outside-toplevel
    from zoo.data import generators  # pylint: disable=import-outside-toplevel
    from zoo.models import span_core  # pylint: disable=import-outside-toplevel

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

    def timed():
        step().numpy()  # untimed: the first step of a phase
        times = []
        for _ in range(FLAGS.steps):
            began = time.perf_counter()
            step().numpy()
            times.append(time.perf_counter() - began)
        return times

    def plain_generator():
        ds = tf.data.Dataset.from_generator(lambda: iter([1, 2, 3]),
                                            output_signature=tf.TensorSpec([], tf.int32))
        return [int(x) for x in ds]

    phases = [("fresh", timed())]
    for _ in range(FLAGS.rounds):
        plain_generator()
        phases.append(("patched", timed()))
        restored = generators.restore_allocator()
        phases.append(("restored", timed()))
    medians = {kind: statistics.median(t for k, times in phases if k == kind for t in times)
               for kind in ("fresh", "patched", "restored")}
    print(json.dumps(dict(
        machine=machine(), encoder=FLAGS.encoder, batch_size=FLAGS.batch_size,
        seq_length=FLAGS.seq_length, steps_per_phase=FLAGS.steps, restore_worked=restored,
        phases=[dict(phase=k, step_seconds=[round(t, 3) for t in times]) for k, times in phases],
        median_step_seconds={k: round(v, 3) for k, v in medians.items()},
        ratio_patched_over_restored=round(medians["patched"] / medians["restored"], 3),
        ratio_patched_over_fresh=round(medians["patched"] / medians["fresh"], 3))))


if __name__ == "__main__":
    app.run(main)
