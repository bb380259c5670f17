r"""zoo's side of the training benchmark: the fine-tuning step of `tasks.*.train` on MiniLM, for
MRPC (classifier) or SQuAD (span head, on the windows the peer wrote).

  python bench/zoo_train.py --plan_file=PLAN [--precision=bf16] [--xla_fusion=auto]
  python bench/zoo_train.py --task=squad --windows_file=WINDOWS --plan_file=PLAN

Run by `bench/train_throughput.py` beside `bench/peer_train.py`, on the same plan: for each
padding policy the batches (row indices of MRPC train.tsv) in order (`common.batch_plan`). The
texts are packed up front with zoo's preprocessor (as the peer tokenizes up front; SQuAD: the ids
of the peer's windows, --windows_file, so both sides train on the same windows); each step is
zoo's own training step (`zoo.training.steps.step_functions`: forward, loss, backward, clipping,
AdamW from `zoo.training.optimizer`) on the classifier or span core of `zoo.model.cores` with its
task's loss, in `zoo.compute.precision` and with `zoo.compute.fusion` and `zoo.compute.malloc` as
`zoo.training.loop.fit` runs it (fusion auto: on for fixed padding on a CPU with AMX). Batches are
cut to their longest row except with fixed padding. The first --warmup_steps of each policy are
not timed. Prints one JSON line: the seconds and the page faults of each policy's timed steps, the
seconds of its untimed first steps (tracing and, with XLA fusion, compiling), the settings
(`pooled_only`: the encoder computed its last layer at [CLS] alone), threads and the matmul peak
of the precision used, measured by TensorFlow in the same process.
"""
import json
import os

import numpy as np
from absl import app, flags

import zoo  # noqa: F401  (before TensorFlow: tf_keras and the XLA flags)
from common import mrpc_pairs, tf_matmul_peak_gflops, timed_steps

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_string("data_dir", os.path.join(ROOT, "..", "shared", "data", "mrpc"),
                    "GLUE MRPC folder (train.tsv is used).")
flags.DEFINE_enum("task", "mrpc", ["mrpc", "squad"], "Which fine-tuning.")
flags.DEFINE_string("windows_file", None, "SQuAD: the windows `peer_train.py --task=squad "
                    "--write_windows` wrote (ids, mask, type ids, start and end positions).")
flags.DEFINE_string("plan_file", None, "JSON: {padding: [[row, ...], ...]}.", required=True)
flags.DEFINE_string("encoder_handle", "minilm_l6_h384_uncased", "Encoder (zoo-build-hub model).")
flags.DEFINE_bool("freeze_word_embeddings", False, "The encoder's word-piece embedding table "
                  "frozen (zoo's --freeze_word_embeddings).")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length (fixed padding pads to it).")
flags.DEFINE_integer("warmup_steps", 3, "Untimed steps at the start of each policy.")
flags.DEFINE_enum("precision", "fp32", ["fp32", "bf16"], "zoo.compute.precision of the steps.")
flags.DEFINE_enum("xla_fusion", "auto", ["auto", "on", "off"], "zoo.compute.fusion of the steps.")
flags.DEFINE_enum("malloc", "settled", ["settled", "tensorflow"], "glibc's thresholds: "
                  "`zoo.compute.malloc.settle` as `zoo.training.loop.fit` runs it, or as "
                  "TensorFlow's generator datasets leave them (an A/B of that setting).")
flags.DEFINE_string("profile_dir", None, "If set, TensorFlow's profiler traces each policy's "
                    "timed steps into DIR/POLICY (for `bench/step_profile.py`; the trace slows "
                    "the steps, so such a run's seconds are not a rate).")
flags.DEFINE_integer("inter_op_threads", 0, "TensorFlow's inter-op threads (0: its default); 1 "
                     "runs one op at a time, so that a profile's op times add up to the step.")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    import tensorflow as tf
    import tf_keras as keras
    from zoo.compute import fusion
    from zoo.compute import malloc
    from zoo.compute import precision
    from zoo.data.pipeline import trim_to_longest
    from zoo.kinds.classification import sparse_cross_entropy
    from zoo.kinds.squad import span_loss
    from zoo.model import cores
    from zoo.model import hub
    from zoo.training.optimizer import create_optimizer
    from zoo.training.steps import step_functions
    if FLAGS.inter_op_threads:
        tf.config.threading.set_inter_op_parallelism_threads(FLAGS.inter_op_threads)

    with open(FLAGS.plan_file, encoding="utf-8") as f:
        plan = json.load(f)
    encoder, preprocessor = hub.resolve_handles(FLAGS.encoder_handle, None)
    if FLAGS.task == "squad":
        with open(FLAGS.windows_file, encoding="utf-8") as f:
            windows = json.load(f)
        packed = {ours: np.array(windows[theirs], np.int32) for ours, theirs in (
            ("input_word_ids", "input_ids"), ("input_mask", "attention_mask"),
            ("input_type_ids", "token_type_ids"))}
        labels = {k: tf.constant(windows[k], tf.int64)
                  for k in ("start_positions", "end_positions")}
        label_spec = {k: tf.TensorSpec([None], tf.int64) for k in labels}
        build_core, loss = cores.span_core, span_loss
    else:
        pairs = mrpc_pairs(os.path.join(FLAGS.data_dir, "train.tsv"))
        packer = cores.TextPacker(preprocessor, FLAGS.max_seq_length)
        packed = {k: v.numpy() for k, v in packer(tf.constant([a for a, _, _ in pairs]),
                                                  tf.constant([b for _, b, _ in pairs])).items()}
        labels = tf.constant([y for _, _, y in pairs], tf.int64)
        label_spec = tf.TensorSpec([None], tf.int64)
        build_core = lambda encoder: cores.classifier_core(encoder, 2, pooling="cls")  # noqa: E731
        loss = sparse_cross_entropy
    strategy = tf.distribute.get_strategy()
    results = dict(side="zoo", framework=f"tensorflow {tf.__version__}",
                   threads=dict(intra_op=tf.config.threading.get_intra_op_parallelism_threads(),
                                inter_op=tf.config.threading.get_inter_op_parallelism_threads(),
                                cores=os.cpu_count()),
                   precision=FLAGS.precision, attention="Hub encoder (MatMul, Softmax)",
                   freeze_word_embeddings=FLAGS.freeze_word_embeddings,
                   warmup_steps=FLAGS.warmup_steps, xla_fusion={}, malloc=FLAGS.malloc,
                   seconds={}, warmup_seconds={}, page_faults_per_step={})
    if FLAGS.malloc == "settled":
        malloc.settle()  # once, before any dataset, as zoo.training.loop.fit does
    for padding, rows in plan.items():
        fused = fusion.resolve(FLAGS.xla_fusion, padding)
        results["xla_fusion"][padding] = fused

        def batches(rows=rows, padding=padding):
            for index in rows:
                inputs = {k: tf.gather(v, index) for k, v in packed.items()}
                if padding != "fixed":
                    inputs = trim_to_longest(inputs)
                yield inputs, tf.nest.map_structure(lambda t, i=index: tf.gather(t, i), labels)

        spec = {k: tf.TensorSpec([None, None], tf.int32) for k in packed}
        dataset = tf.data.Dataset.from_generator(
            batches, output_signature=(spec, label_spec))
        keras.utils.set_random_seed(0)
        layer = hub.encoder_layer(encoder, frozen_word_embeddings=FLAGS.freeze_word_embeddings)
        core = build_core(layer)
        # the classifier's encoder computes its last layer at [CLS] alone (zoo.model.hub.pooled_view)
        results["pooled_only"] = core.get_layer("encoder") is not layer
        optimizer = create_optimizer(5e-5, len(rows), 0, jit_compile=fused)
        train_step, _ = step_functions(core, optimizer, loss, {}, strategy,
                                       len(rows[0]))
        iterator = iter(strategy.experimental_distribute_dataset(dataset.prefetch(2)))

        calls = []

        def step(_, train_step=train_step, iterator=iterator, fused=fused, padding=padding,
                 calls=calls):
            if FLAGS.profile_dir and len(calls) == FLAGS.warmup_steps:
                tf.profiler.experimental.start(os.path.join(FLAGS.profile_dir, padding))
            calls.append(1)
            with fusion.scope(fused):
                float(train_step(iterator))

        faults, warmup = [], []
        with precision.scope(FLAGS.precision):
            results["seconds"][padding] = timed_steps(step, rows, FLAGS.warmup_steps, faults,
                                                      warmup)
        results["warmup_seconds"][padding] = round(warmup[0], 2)
        if FLAGS.profile_dir:
            tf.profiler.experimental.stop()
        results["page_faults_per_step"][padding] = faults[0]
    precision.apply(FLAGS.precision)  # the probe's fp32 matmuls in the precision in force
    results["matmul_peak_gflops"] = round(tf_matmul_peak_gflops(), 1)
    print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
