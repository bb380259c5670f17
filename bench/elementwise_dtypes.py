r"""TensorFlow's elementwise CPU kernels in float32 and in bfloat16, on one activation-sized tensor:
is a bf16 pass over the activations cheaper than an fp32 one?

  .venv/bin/python bench/elementwise_dtypes.py >> bench/results/elementwise_dtypes.jsonl

The ops of a BERT training step outside its matmuls (products, sums, the GELU's erf and its
gradient's exp, candidates for that exp, the casts the bf16 rewrite inserts), each timed on a
`[rows, width]` tensor (default: a bucketed MRPC batch of MiniLM's feed-forward activations, 32
rows of 54 tokens by 1536) in one tf.function per op and dtype that returns one value of the
result (so that copying the result out is not timed), the median of --repeats calls after
--warmup calls. Prints one JSON line: per op the median milliseconds in each dtype and their
ratio (bf16 over fp32).
"""
import json
import statistics
import time

from absl import app, flags

import zoo  # noqa: F401  (before TensorFlow: oneDNN's setting, as zoo runs)
from common import machine

flags.DEFINE_integer("rows", 32 * 54, "Rows of the tensor (tokens of a batch).")
flags.DEFINE_integer("width", 1536, "Its width (MiniLM's feed-forward size).")
flags.DEFINE_integer("warmup", 3, "Untimed calls per op and dtype.")
flags.DEFINE_integer("repeats", 30, "Timed calls per op and dtype.")
FLAGS = flags.FLAGS


def _ops(tf):
    """{name: function of one tensor}: each one pass (or the pair named) over it."""
    return {
        "Mul": lambda x: x * x,
        "AddV2": lambda x: x + x,
        "Square": tf.square,
        "Erf": tf.math.erf,
        "Exp of -|x| (Abs, Neg, Exp)": lambda x: tf.exp(-tf.abs(x)),
        "Elu": tf.nn.elu,
        "Tanh": tf.tanh,
        "Sigmoid": tf.sigmoid,
        "Cast to the other dtype": lambda x: tf.cast(
            x, tf.float32 if x.dtype == tf.bfloat16 else tf.bfloat16),
    }


def _median_ms(fn, x):
    for _ in range(FLAGS.warmup):
        fn(x).numpy()
    times = []
    for _ in range(FLAGS.repeats):
        start = time.perf_counter()
        fn(x).numpy()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main(argv):
    del argv
    import tensorflow as tf
    x = tf.random.stateless_normal([FLAGS.rows, FLAGS.width], seed=[0, 1])
    inputs = {"float32": x, "bfloat16": tf.cast(x, tf.bfloat16)}
    ops = {}
    for name, op in _ops(tf).items():
        ms = {}
        for dtype in ("float32", "bfloat16"):
            one_value = tf.function(lambda t, op=op: op(t)[:1, :1])
            ms[dtype] = round(_median_ms(one_value, inputs[dtype]), 3)
        ms["bf16_over_fp32"] = round(ms["bfloat16"] / ms["float32"], 3)
        ops[name] = ms
    print(json.dumps(dict(summary="elementwise_dtypes", machine=machine(),
                          framework=f"tensorflow {tf.__version__}", rows=FLAGS.rows,
                          width=FLAGS.width, repeats=FLAGS.repeats, ops=ops)))


if __name__ == "__main__":
    app.run(main)
