r"""One-text latency of the same export written by two commits, called in turn by one process.

  .venv/bin/python bench/latency_ab.py --base=24d298a >> bench/results/latency_ab.jsonl

The base commit (and --this, if given; default: the working tree as it is) is checked out into
a temporary git worktree, and each tree's zoo writes the same --precision export of the same
MiniLM classifier (a head on [CLS], initialized from --seed, as `bench/inference.py`'s fresh
classifier; this script, run with that tree on PYTHONPATH). Then one process that imports only
tensorflow and tensorflow_text (as TF Serving runs an export) loads both, and for --passes
passes over the first --requests SST-2 dev sentences calls both on each sentence, one after the
other, the order alternating from call to call. Paired calls on the same text in the same
process leave out the noise between processes and between minutes, which on these machines is
as large as the differences sought. Prints one JSON line: per export the p50 and p95 ms; this
tree's p50 over the base's; the median of the per-text ratios; the largest difference of a
probability between the two exports (the same weights: what the two graphs compute
differently); and the machine.
"""
import json
import os
import tempfile
import time

from absl import app, flags
import numpy as np

from common import (BENCH, last_json, machine, run_script, serving_env, short_sha,
                    sst2_sentences, worktrees)

ROOT = os.path.dirname(BENCH)
flags.DEFINE_string("base", None, "The commit to compare with (a git revision).")
flags.DEFINE_string("this", None, "The commit measured against it (default: the working tree "
                    "as it is; a revision gets its own worktree).")
flags.DEFINE_enum("precision", "bf16", ["fp32", "bf16"], "Export precision (`zoo.export.frozen_core`).")
flags.DEFINE_string("data_dir", os.path.join(ROOT, "..", "shared", "data", "sst2"),
                    "GLUE SST-2 folder (dev.tsv is used).")
flags.DEFINE_integer("requests", 300, "Sentences (the first of dev), one a call.")
flags.DEFINE_integer("passes", 2, "Timed passes over them (after 30 untimed calls each).")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length of the export.")
flags.DEFINE_integer("seed", 0, "Seed of the classifier head (the same in both trees).")
flags.DEFINE_string("write_export", None, "(internal) write the export here with the zoo on "
                    "PYTHONPATH.")
flags.DEFINE_list("time_exports", None, "(internal) time these exports against each other.")
FLAGS = flags.FLAGS


def write_export(folder):
    """The --precision export of a MiniLM classifier on [CLS] under `folder`. (zoo's own modules,
    not `zoo.models.export_classifier`: the base commit's tree may be older than it.)"""
    from zoo.export import frozen_core, savedmodel
    from zoo.model import cores, hub
    import tensorflow as tf
    tf.keras.utils.set_random_seed(FLAGS.seed)
    encoder, preprocessor = hub.resolve_handles("minilm_l6_h384_uncased", None)
    core = cores.classifier_core(encoder, 2, pooling="cls")
    packer = cores.TextPacker(preprocessor, FLAGS.max_seq_length)
    savedmodel.export_classifier(folder, frozen_core.serving_core(core, FLAGS.precision), packer,
                             ["negative", "positive"])


def time_exports(folders):
    """{p50_ms, p95_ms} per export and the paired ratios, calls alternating between them."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401
    serves = [tf.saved_model.load(f).signatures["serving_default"] for f in folders]
    texts = sst2_sentences(os.path.join(FLAGS.data_dir, "dev.tsv"))[:FLAGS.requests]

    def call(serve, text):
        began = time.perf_counter()
        probabilities = serve(text=tf.constant([text]))["probabilities"].numpy()[0]
        return (time.perf_counter() - began) * 1000, probabilities

    for text in texts[:30]:
        for serve in serves:
            call(serve, text)
    times, probabilities = [[], []], [[], []]
    for one_pass in range(FLAGS.passes):
        for i, text in enumerate(texts):
            for side in ((0, 1) if (i + one_pass) % 2 == 0 else (1, 0)):
                ms, answer = call(serves[side], text)
                times[side].append(ms)
                probabilities[side].append(answer)
    times = [np.array(t) for t in times]
    return dict(
        exports={name: dict(p50_ms=round(float(np.percentile(t, 50)), 3),
                            p95_ms=round(float(np.percentile(t, 95)), 3))
                 for name, t in zip(("base", "this"), times)},
        p50_ratio_this_over_base=round(float(np.median(times[1]) / np.median(times[0])), 3),
        median_paired_ratio=round(float(np.median(times[1] / times[0])), 3),
        max_probability_difference=round(float(np.abs(
            np.array(probabilities[1]) - np.array(probabilities[0])).max()), 4),
        calls=len(times[0]))


def main(argv):
    del argv
    if FLAGS.write_export:
        write_export(FLAGS.write_export)
        return
    if FLAGS.time_exports:
        print(json.dumps(time_exports(FLAGS.time_exports)))
        return
    if not FLAGS.base:
        raise SystemExit("--base is required")

    revisions = {"base": short_sha(ROOT, FLAGS.base),
                 "this": short_sha(ROOT, FLAGS.this) if FLAGS.this else None}
    script = os.path.abspath(__file__)
    with tempfile.TemporaryDirectory(prefix="zoo-latency-ab-") as work, \
            worktrees(ROOT, revisions) as trees:
        measured_on = machine(trees["this"])
        exports = {name: os.path.join(work, f"{name}_export") for name in ("base", "this")}
        for name, folder in exports.items():
            run_script([script, f"--write_export={folder}", f"--seed={FLAGS.seed}",
                        f"--precision={FLAGS.precision}",
                        f"--max_seq_length={FLAGS.max_seq_length}"],
                       env={**os.environ, "PYTHONPATH": trees[name]},
                       name=f"writing the {name} export")
        timed = last_json(run_script(
            [script, f"--time_exports={exports['base']},{exports['this']}",
             f"--data_dir={os.path.abspath(FLAGS.data_dir)}", f"--requests={FLAGS.requests}",
             f"--passes={FLAGS.passes}"], env=serving_env()))
    print(json.dumps(dict(summary="latency_ab", machine=measured_on, precision=FLAGS.precision,
                          # TensorFlow's oneDNN rewrites in the timing process: as set, or its
                          # default for the CPU when unset
                          tf_enable_onednn_opts=os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
                          base_commit=revisions["base"],
                          this_commit=revisions["this"] or measured_on["git"], **timed)))


if __name__ == "__main__":
    app.run(main)
