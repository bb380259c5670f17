r"""Where a call of an export goes: TensorFlow's profiler over calls of one SST-2 sentence each
(or of --batch_size sentences sorted by length), by op type and by op (layer index folded), per
call, beside the call's wall time.

  .venv/bin/python bench/latency_profile.py --precision=fp32 --onednn=off \
      >> bench/results/latency_profile.jsonl

A fresh MiniLM classifier (a head on [CLS], as `bench/latency_ab.py` writes it) is exported at
--precision (with the small-request copy as --small_requests says) with
`zoo.models.export_classifier`; a process that imports only tensorflow and
tensorflow_text (as TF Serving runs an export, TF_ENABLE_ONEDNN_OPTS as --onednn says) loads it,
calls it untimed, then times the calls over --requests sentences (wall: their p50), then traces
them again. The op times of a call run on TensorFlow's default threads, so they may overlap
(inter-op parallelism: each op's time is its own span); what the wall time
has beyond them is the call itself (Python, the function's dispatch, the executor). The trace
slows the calls: compare its op times with each other, not with the wall time. Prints one JSON
line.
"""
import json
import os
import tempfile
import time

from absl import app, flags
import numpy as np

from common import (BENCH, inference_groups, last_json, machine, onednn_env, op_times, run_script,
                    serving_env, sst2_sentences, write_fresh_classifier)

ROOT = os.path.dirname(BENCH)
flags.DEFINE_enum("precision", "fp32", ["fp32", "bf16"], "Export precision.")
flags.DEFINE_bool("small_requests", None, "The export's small-request copy "
                  "(`export_classifier(small_requests=...)`; unset: on for bf16 only).")
flags.DEFINE_enum("onednn", "default", ["default", "on", "off"], "TF_ENABLE_ONEDNN_OPTS of the "
                  "serving process (default: TensorFlow's own choice for the CPU).")
flags.DEFINE_integer("requests", 200, "Sentences (the first of SST-2 dev), one a call.")
flags.DEFINE_integer("batch_size", 1, "Sentences a call: above 1, the --requests sentences "
                     "sorted by length and cut into batches (`common.inference_groups`).")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length of the export.")
flags.DEFINE_integer("top", 30, "Op types and ops listed.")
flags.DEFINE_string("export_dir", None, "An export to profile instead of writing one.")
flags.DEFINE_string("data_dir", os.path.join(ROOT, "..", "shared", "data", "sst2"),
                    "GLUE SST-2 folder (dev.tsv is used).")
flags.DEFINE_string("write_export", None, "(internal) write the export here.")
flags.DEFINE_string("profile", None, "(internal) time and trace this export.")
FLAGS = flags.FLAGS


def profile(export_dir):
    """{p50_ms, p95_ms, traced_ms_per_call, by_type, by_op} of one-text calls of `export_dir`."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    texts = sst2_sentences(os.path.join(FLAGS.data_dir, "dev.tsv"))[:FLAGS.requests]
    groups = inference_groups(texts, FLAGS.batch_size,
                              "sorted" if FLAGS.batch_size > 1 else "dynamic")

    def calls():
        times = []
        for group in groups:
            began = time.perf_counter()
            serve(text=tf.constant(group))["probabilities"].numpy()
            times.append((time.perf_counter() - began) * 1000)
        return np.array(times)

    calls()
    wall = calls()
    with tempfile.TemporaryDirectory(prefix="zoo-latency-profile-") as logdir:
        began = time.perf_counter()
        tf.profiler.experimental.start(logdir)
        calls()
        tf.profiler.experimental.stop()
        traced = (time.perf_counter() - began) * 1000 / len(groups)
        by_type, by_op = op_times(logdir, len(groups))
    rounded = lambda counter: {k: round(v, 3) for k, v in counter.most_common(FLAGS.top)}  # noqa: E731
    return dict(p50_ms=round(float(np.percentile(wall, 50)), 3),
                p95_ms=round(float(np.percentile(wall, 95)), 3),
                traced_ms_per_call=round(traced, 3), op_ms_per_call=round(sum(by_type.values()), 3),
                by_type=rounded(by_type), by_op=rounded(by_op))


def main(argv):
    del argv
    if FLAGS.write_export:
        write_fresh_classifier(FLAGS.write_export, FLAGS.precision, FLAGS.small_requests,
                               FLAGS.max_seq_length)
        return
    if FLAGS.profile:
        print(json.dumps(profile(FLAGS.profile)))
        return
    env = serving_env()
    env.pop("TF_ENABLE_ONEDNN_OPTS", None)  # default: TensorFlow's own choice
    env = onednn_env(f"onednn_{FLAGS.onednn}", env)
    script = os.path.abspath(__file__)
    with tempfile.TemporaryDirectory(prefix="zoo-latency-profile-") as work:
        export_dir = FLAGS.export_dir or os.path.join(work, "export")
        if not FLAGS.export_dir:
            run_script([script, f"--write_export={export_dir}", f"--precision={FLAGS.precision}",
                        f"--max_seq_length={FLAGS.max_seq_length}"] + (
                            [] if FLAGS.small_requests is None
                            else [f"--small_requests={FLAGS.small_requests}"]),
                       name="writing the export")
        result = last_json(run_script(
            [script, f"--profile={export_dir}", f"--requests={FLAGS.requests}",
             f"--batch_size={FLAGS.batch_size}",
             f"--data_dir={os.path.abspath(FLAGS.data_dir)}", f"--top={FLAGS.top}"], env=env))
    print(json.dumps(dict(summary="latency_profile", machine=machine(), precision=FLAGS.precision,
                          small_requests=FLAGS.small_requests, onednn=FLAGS.onednn,
                          export_dir=FLAGS.export_dir, requests=FLAGS.requests,
                          batch_size=FLAGS.batch_size, **result)))


if __name__ == "__main__":
    app.run(main)
