r"""`zoo.serving`'s predictions of one input, with Grappler's passes and without, paired.

  .venv/bin/python bench/one_input_ab.py >> bench/results/one_input_ab.jsonl

A fresh MiniLM classifier (a head on [CLS], seed 0) is exported at --precision by
`zoo.models.export_classifier` (--small_requests: with the small-request copy or without; unset:
that precision's default). Then each
of --processes fresh processes loads it twice through `zoo.serving` and predicts one SST-2 dev
sentence a call with each: one copy's calls with Grappler's passes, the other's without
(`zoo.compute.call_options.without_grappler` around them, `zoo.serving`'s own choice for
one input turned off). Each copy's first call is timed
(which copy calls first alternates between processes: the process's first call also pays for
what both share); then, after 30 untimed calls each, the two copies answer each of --requests
sentences one after the other, the order alternating from sentence to sentence. Paired calls in
one process leave out the noise between processes. Prints one JSON line: per side the median
over processes of the first call's seconds and of the p50 ms, the median of the per-text ratios
(without / with), the largest difference of a probability, and the machine.
"""
import contextlib
import json
import os
import statistics
import tempfile
import time

from absl import app, flags
import numpy as np

from common import (BENCH, define_fresh_export_flags, last_json, machine, run_script,
                    serving_env, sst2_sentences, write_fresh_export, wrote_fresh_export)

ROOT = os.path.dirname(BENCH)
define_fresh_export_flags()
flags.DEFINE_integer("processes", 4, "Fresh processes, each timing both sides.")
flags.DEFINE_integer("requests", 200, "Sentences (the first of SST-2 dev), one a call.")
flags.DEFINE_string("data_dir", os.path.join(ROOT, "..", "shared", "data", "sst2"),
                    "GLUE SST-2 folder (dev.tsv is used).")
flags.DEFINE_string("time_export", None, "(internal) time this export's two sides.")
flags.DEFINE_integer("first", 0, "(internal) 0: the side with Grappler calls first, 1: without.")
FLAGS = flags.FLAGS
SIDES = ("with", "without")


def time_export(folder):
    """{first_call_s, p50_ms per side, paired ratio, largest probability difference}."""
    import sys
    sys.path.insert(0, ROOT)
    from zoo import serving
    from zoo.compute import call_options
    serving.ONE_INPUT_WITHOUT_GRAPPLER = False  # each side as it is asked for, whatever the export
    models = [serving.load(folder), serving.load(folder)]

    def call(side, text):
        began = time.perf_counter()
        with call_options.without_grappler() if side == 1 else contextlib.nullcontext():
            row = models[side].predict([text])[0]
        return time.perf_counter() - began, row["probabilities"]["positive"]

    texts = sst2_sentences(os.path.join(FLAGS.data_dir, "dev.tsv"))[:FLAGS.requests]
    first = {}
    for side in (FLAGS.first, 1 - FLAGS.first):
        first[side] = call(side, texts[0])[0]
    for text in texts[:30]:
        for side in (0, 1):
            call(side, text)
    seconds, scores = [[], []], [[], []]
    for i, text in enumerate(texts):
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            spent, score = call(side, text)
            seconds[side].append(spent)
            scores[side].append(score)
    seconds = [np.array(s) for s in seconds]
    return dict(first=FLAGS.first,
                first_call_s={SIDES[s]: round(first[s], 3) for s in (0, 1)},
                p50_ms={SIDES[s]: round(float(np.median(seconds[s])) * 1000, 3) for s in (0, 1)},
                median_paired_ratio=round(float(np.median(seconds[1] / seconds[0])), 3),
                max_probability_difference=round(float(np.abs(
                    np.array(scores[1]) - np.array(scores[0])).max()), 6))


def main(argv):
    del argv
    if wrote_fresh_export(FLAGS):
        return
    if FLAGS.time_export:
        print(json.dumps(time_export(FLAGS.time_export)))
        return
    script = os.path.abspath(__file__)
    with tempfile.TemporaryDirectory(prefix="zoo-one-input-ab-") as work:
        export = write_fresh_export(script, os.path.join(work, "export"), FLAGS)
        runs = [last_json(run_script(
            [script, f"--time_export={export}", f"--first={p % 2}", f"--requests={FLAGS.requests}",
             f"--data_dir={os.path.abspath(FLAGS.data_dir)}"], env=serving_env()))
            for p in range(FLAGS.processes)]
    summary = {name: {side: round(statistics.median(run[name][side] for run in runs), 4)
                      for side in SIDES} for name in ("first_call_s", "p50_ms")}
    print(json.dumps(dict(
        summary="one_input_ab", machine=machine(), precision=FLAGS.precision,
        small_requests=FLAGS.small_requests,
        tf_enable_onednn_opts=os.environ.get("TF_ENABLE_ONEDNN_OPTS"), **summary,
        median_paired_ratio=round(statistics.median(run["median_paired_ratio"] for run in runs), 4),
        max_probability_difference=max(run["max_probability_difference"] for run in runs),
        runs=runs)))


if __name__ == "__main__":
    app.run(main)
