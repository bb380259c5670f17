r"""`zoo.serving`'s load of an export: TensorFlow's whole load against `zoo.export.python_load`'s,
which leaves out the functions Python never runs, in fresh processes.

  .venv/bin/python bench/load_ab.py >> bench/results/load_ab.jsonl

A fresh MiniLM classifier (a head on [CLS], seed 0) is exported at --precision by
`zoo.models.export_classifier` (--small_requests: with the small-request copy or without; unset:
that precision's default). Then --processes fresh processes, half with each load and the order
alternating (whole, lean, lean, whole, ...), each import `zoo.serving`, load the export with
`zoo.serving.load` and predict one SST-2 dev sentence, as a first answer does; the whole side
has `zoo.serving` call `tf.saved_model.load`, which reads the file again. Prints one JSON line:
per side the median, min and max over its processes of the import, load and first-call seconds
and of their sum, the functions the load turned into graphs, whether both sides gave the same
probability, and the machine.
"""
import json
import os
import statistics
import tempfile
import time

from absl import app, flags

from common import (BENCH, define_fresh_export_flags, last_json, machine, run_script,
                    serving_env, sst2_sentences, write_fresh_export, wrote_fresh_export)

ROOT = os.path.dirname(BENCH)
define_fresh_export_flags()
flags.DEFINE_integer("processes", 12, "Fresh processes, half with each load.")
flags.DEFINE_string("data_dir", os.path.join(ROOT, "..", "shared", "data", "sst2"),
                    "GLUE SST-2 folder (the first sentence of dev.tsv is predicted).")
flags.DEFINE_string("time_export", None, "(internal) time this export's first answer.")
flags.DEFINE_enum("side", "lean", ["whole", "lean"], "(internal) which load.")
FLAGS = flags.FLAGS
SIDES = ("whole", "lean")
PARTS = ("import_s", "load_s", "first_call_s", "total_s")


def time_export(folder, side):
    """{import_s, load_s, first_call_s, total_s, functions converted, the probability}."""
    import sys
    sys.path.insert(0, ROOT)
    text = sst2_sentences(os.path.join(FLAGS.data_dir, "dev.tsv"))[0]
    began = time.perf_counter()
    from zoo import serving
    imported = time.perf_counter()
    from tensorflow.python.saved_model import function_deserialization
    if side == "whole":  # zoo.serving as it was: TensorFlow's loader reads the file again
        serving.python_load.load = lambda path, saved_model: serving.tf.saved_model.load(path)
    library = function_deserialization.function_def_lib
    convert, converted = library.function_def_to_graph, []

    def counting(fdef, *args, **kwargs):
        converted.append(fdef.signature.name)
        return convert(fdef, *args, **kwargs)

    library.function_def_to_graph = counting
    model = serving.load(folder)
    loaded = time.perf_counter()
    row = model.predict([text])[0]
    answered = time.perf_counter()
    return dict(side=side, import_s=round(imported - began, 3), load_s=round(loaded - imported, 3),
                first_call_s=round(answered - loaded, 3), total_s=round(answered - began, 3),
                functions=len(converted), probability=row["probabilities"]["positive"])


def _summary(runs):
    return {side: {part: dict(median=round(statistics.median(r[part] for r in runs[side]), 3),
                              min=min(r[part] for r in runs[side]),
                              max=max(r[part] for r in runs[side])) for part in PARTS}
            for side in SIDES}


def main(argv):
    del argv
    if wrote_fresh_export(FLAGS):
        return
    if FLAGS.time_export:
        print(json.dumps(time_export(FLAGS.time_export, FLAGS.side)))
        return
    script = os.path.abspath(__file__)
    runs, in_order = {side: [] for side in SIDES}, []
    with tempfile.TemporaryDirectory(prefix="zoo-load-ab-") as work:
        export = write_fresh_export(script, os.path.join(work, "export"), FLAGS)
        for p in range(FLAGS.processes):
            side = SIDES[(p + p // 2) % 2]  # whole, lean, lean, whole, whole, lean, ...
            run = last_json(run_script(
                [script, f"--time_export={export}", f"--side={side}",
                 f"--data_dir={os.path.abspath(FLAGS.data_dir)}"], env=serving_env()))
            runs[side].append(run)
            in_order.append({k: v for k, v in run.items() if k != "probability"})
    probabilities = {r["probability"] for side in SIDES for r in runs[side]}
    print(json.dumps(dict(
        summary="load_ab", machine=machine(), precision=FLAGS.precision,
        small_requests=FLAGS.small_requests, processes=FLAGS.processes,
        seconds=_summary(runs),
        functions={side: runs[side][0]["functions"] for side in SIDES},
        same_probability=len(probabilities) == 1,
        runs=in_order)))


if __name__ == "__main__":
    app.run(main)
