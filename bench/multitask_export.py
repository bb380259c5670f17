r"""A multi-task export beside the single-task exports of the same tasks: size and load time.

  .venv/bin/python bench/multitask_export.py --multi=runs/mt_joint/export/1 \
      --single=runs/mt_single_mrpc/export/1,runs/mt_single_sst2/export/1

Sizes are the bytes of each SavedModel folder. Load time: a fresh process that imports
tensorflow and tensorflow_text, loads the export and calls each of its task signatures once on
one text (wall time from the process's start), --rounds rounds alternating the multi-task
export and the single-task ones (all of them, one after another, as serving them would take).
One JSON line: sizes, median load times, and the ratios multi / sum of singles.
"""
import json
import os
import statistics
import time

from absl import app, flags

from common import machine, run_script, serving_env

flags.DEFINE_string("multi", None, "The multi-task export.")
flags.DEFINE_list("single", [], "The single-task exports of the same tasks.")
flags.DEFINE_integer("rounds", 3, "Alternating rounds.")
FLAGS = flags.FLAGS

LOAD = """
import sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
loaded = tf.saved_model.load(sys.argv[1])
for name, fn in loaded.signatures.items():
    if name == "serving_default" and len(loaded.signatures) > 1:
        continue
    inputs = {k: tf.constant(["a fine film"]) for k in fn.structured_input_signature[1]}
    fn(**inputs)
"""


def size(path):
    return sum(os.path.getsize(os.path.join(folder, f))
               for folder, _, files in os.walk(path) for f in files)


def load_seconds(path):
    began = time.perf_counter()
    run_script(["-c", LOAD, path], env=serving_env(), name="loading the export")
    return time.perf_counter() - began


def main(argv):
    del argv
    multi, singles = [], []
    for _ in range(FLAGS.rounds):
        multi.append(load_seconds(FLAGS.multi))
        singles.append(sum(load_seconds(path) for path in FLAGS.single))
    sizes = dict(multi=size(FLAGS.multi), single={p: size(p) for p in FLAGS.single})
    result = dict(machine=machine(), multi=FLAGS.multi, single=FLAGS.single, bytes=sizes,
                  ratio_bytes_multi_over_sum_of_singles=round(
                      sizes["multi"] / sum(sizes["single"].values()), 3),
                  load_seconds=dict(multi=round(statistics.median(multi), 2),
                                    sum_of_singles=round(statistics.median(singles), 2),
                                    multi_runs=[round(t, 2) for t in multi],
                                    sum_of_singles_runs=[round(t, 2) for t in singles]),
                  ratio_load_multi_over_sum_of_singles=round(
                      statistics.median(multi) / statistics.median(singles), 3))
    print(json.dumps(result))


if __name__ == "__main__":
    app.run(main)
