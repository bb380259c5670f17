r"""Inference, like for like: zoo's exported SavedModel against the PyTorch peer at its best.

  python bench/inference.py >> bench/results/inference.jsonl    # needs ./install.sh bench

SST-2 dev (872 sentences), MiniLM-L6-H384, length 128. zoo writes one export per --zoo_configs
precision (`zoo.models.export_classifier`: fp32, or bf16 weights and matmuls; a fresh MiniLM
classifier on [CLS], the peer's `BertForSequenceClassification` head, for which zoo's encoder
computes its last layer at [CLS] alone, `zoo.model.hub.pooled_view`; or --model_dir's trained one,
with its own pooling) in a process of its own. Then --rounds rounds; each runs every setting once
in a fresh process, the sides alternating which goes first: `bench/zoo_infer.py` (the export
loaded by a process with only tensorflow and tensorflow_text, as TF Serving runs it) and
`bench/peer_infer.py` in each --peer_configs setting (PRECISION-ATTENTION[-compile]). Both take
the same batches (`common.inference_groups`), tokenize inside the timing, and report the best of
--repeats passes per batch size and policy after one untimed pass, then batch-1 latency (p50,
p95). Each round also times, per setting, a new process from its start to its first prediction (to
the moment it has the answer; its exit is not counted), in three parts: the imports (the
framework), the load (export, or checkpoint and tokenizer) and the first call; there each side is
used as its users use it in Python: zoo through `zoo.serving`, the peer through transformers'
classes.

Prints one JSON line per run, then a summary: the real and padded tokens of each batch size and
policy (`tokens`: zoo's encoder computes the real ones alone, the peer the padded batch), per
setting the median over rounds (min, max) of every figure and its MFU (`mfu`: the model FLOPs of
the real tokens per second, over the matmul peak each run measured in its precision and
framework after its timing; one text: the average request's FLOPs over the p50), and the ratios
zoo / peer: the best batched rate of each precision against the
other side's of the same precision, best against best (any precision, batch size and policy),
the best batch-1 p50 and the best time to a first prediction (lower is better for both: a ratio
under 1 means zoo is faster). Every line carries the machine (CPU model, flags, git).
"""
import json
import os
import statistics
import sys
import tempfile
import time

from absl import app, flags

from common import (BENCH, batch_tokens, encoder_build_config, forward_flops, inference_groups,
                    last_json, machine, onednn_env, run_script, serving_env, sst2_sentences)

ROOT = os.path.dirname(BENCH)
flags.DEFINE_string("data_dir", os.path.join(ROOT, "..", "shared", "data", "sst2"),
                    "GLUE SST-2 folder (dev.tsv is used).")
flags.DEFINE_string("model_dir", None, "A trained classification model dir (default: a fresh "
                    "classifier on --encoder_handle).")
flags.DEFINE_string("encoder_handle", "minilm_l6_h384_uncased", "Encoder handle.")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length of the exports and the peer.")
flags.DEFINE_list("batch_sizes", ["32", "64"], "Batch sizes of the throughput runs.")
flags.DEFINE_list("policies", ["dynamic", "sorted"], "Batch policies: dynamic (file order, "
                  "padded to the longest), sorted (by length), fixed (padded to the length).")
flags.DEFINE_integer("repeats", 2, "Timed passes over dev per policy in a run (best kept).")
flags.DEFINE_integer("rounds", 3, "Rounds of runs (medians are reported).")
flags.DEFINE_integer("latency_requests", 200, "One-text requests of the latency run.")
flags.DEFINE_list("peer_configs", ["fp32-sdpa", "bf16-sdpa", "bf16-sdpa-compile"],
                  "Peer settings: PRECISION-ATTENTION[-compile].")
flags.DEFINE_list("zoo_configs", ["fp32", "bf16"], "zoo settings: PRECISION[-small]"
                  "[-onednn_on|-onednn_off]: the export's precision; small: an fp32 export with "
                  "the small-request copy (`export_classifier(small_requests=True)`); onednn: "
                  "TF_ENABLE_ONEDNN_OPTS=1 or 0 "
                  "in the runs' environment, else the throughput and latency run (plain "
                  "TensorFlow, as TF Serving) takes TensorFlow's default and the first "
                  "prediction (zoo.serving) zoo's.")
flags.DEFINE_string("write_exports", None, "(internal) write the exports under this folder.")
FLAGS = flags.FLAGS
TOKENS_FILE = "tokens.json"  # beside the exports: `token_counts`


def write_exports(folder):
    """One export per --zoo_configs precision under `folder` (and `<precision>_fixed`, padded
    to full length, if the fixed policy is asked for)."""
    sys.path.insert(0, ROOT)
    from zoo import models
    from zoo.kinds import classification
    from zoo.run import runner

    if FLAGS.model_dir:  # (restoring a trained core has no public function: the runner's)
        task = runner.start("export", classification.Classification, classification.Settings(
            model_dir=FLAGS.model_dir, encoder_handle=FLAGS.encoder_handle,
            max_seq_length=FLAGS.max_seq_length))
        core, _ = runner.restored(task)
        packer, labels = task.run.packer, task.labels.names
    else:
        encoder, preprocessor = models.resolve_handles(FLAGS.encoder_handle)
        core = models.classifier_core(encoder, 2, pooling="cls")
        packer = models.TextPacker(preprocessor, FLAGS.max_seq_length)
        labels = ["negative", "positive"]
    os.makedirs(folder, exist_ok=True)
    texts = sst2_sentences(os.path.join(FLAGS.data_dir, "dev.tsv"))
    lengths = sentence_lengths(packer, texts)
    with open(os.path.join(folder, TOKENS_FILE), "w", encoding="utf-8") as f:
        json.dump(dict(token_counts(texts, lengths), lengths=lengths,
                       encoder_config=encoder_build_config(FLAGS.encoder_handle)), f)
    for export in sorted({export_name(config) for config in FLAGS.zoo_configs}):
        precision, small = export.split("_")[0], export.endswith("_small")
        for trim in [True] + ([False] if "fixed" in FLAGS.policies else []):
            name = export if trim else f"{export}_fixed"
            models.export_classifier(os.path.join(folder, name), core, packer, labels,
                                     precision=precision, trim_padding=trim,
                                     small_requests=True if small else None)


def export_name(config):
    """The export a zoo setting runs: its precision, `_small` with the small-request copy
    asked for (`PRECISION-small`; a bf16 export has it anyway)."""
    parts = config.split("-")
    return parts[0] + ("_small" if "small" in parts[1:] else "")


def sentence_lengths(packer, texts):
    """The tokens of each of `texts`, as zoo's preprocessor cuts it ([CLS], [SEP] included)."""
    import tensorflow as tf
    return tf.reduce_sum(packer(tf.constant(texts))["input_mask"], 1).numpy().tolist()


def token_counts(texts, lengths):
    """{batch_B_POLICY: {real, padded}}: the tokens of the batches both sides take of the dev
    `texts`, whose token counts are `lengths`: `real` the rows' own, `padded` rows x the batch's
    longest (--max_seq_length for fixed), what a padded batch computes (`common.batch_tokens`)."""
    row = {text: i for i, text in enumerate(texts)}  # (a repeated sentence: the same length)
    counts = {}
    for batch_size in FLAGS.batch_sizes:
        for policy in FLAGS.policies:
            real = padded = 0
            for group in inference_groups(texts, int(batch_size), policy):
                tokens = batch_tokens([row[text] for text in group], lengths, policy,
                                      FLAGS.max_seq_length)
                real, padded = real + tokens[0], padded + tokens[1]
            counts[f"batch_{batch_size}_{policy}"] = dict(real=real, padded=padded)
    return counts


def model_gflops(tokens, requests):
    """(GFLOP of an average dev sentence, of an average one-text request): the encoder's
    forward FLOPs of the real tokens (`common.forward_flops`; a fresh classifier on [CLS] needs
    the last layer's other positions for keys and values alone, a --model_dir's is counted
    whole). None without the encoder's config."""
    config, lengths = tokens.get("encoder_config"), tokens.get("lengths")
    if not config or not lengths:
        return None
    flops = [forward_flops(config, n, pooled_only=FLAGS.model_dir is None) / 1e9
             for n in lengths]
    return statistics.mean(flops), statistics.mean(flops[:requests])


def command(side, config, exports):
    """(script and flags) of a run of `side` in setting `config`, timing everything."""
    timing = [f"--data_dir={FLAGS.data_dir}", f"--batch_sizes={','.join(FLAGS.batch_sizes)}",
              f"--policies={','.join(FLAGS.policies)}", f"--repeats={FLAGS.repeats}",
              f"--latency_requests={FLAGS.latency_requests}"]
    if side == "zoo":
        export = export_name(config)
        return ["zoo_infer.py", f"--export_dir={os.path.join(exports, export)}",
                f"--precision={config.split('-')[0]}",
                f"--fixed_export_dir={os.path.join(exports, export + '_fixed')}", *timing]
    parts = config.split("-")
    return ["peer_infer.py", f"--precision={parts[0]}", f"--attention={parts[1]}",
            f"--max_seq_length={FLAGS.max_seq_length}", *timing] + (
                ["--compile"] if "compile" in parts[2:] else [])


def run(args, first_prediction=False, config=""):
    """Runs a bench script in a fresh process; the JSON of its last line. A zoo process does
    not get the Keras 2 switch that zoo sets (TF Serving has none; `zoo.serving`, used for the
    first prediction, sets it itself). With `first_prediction`,
    the seconds from starting the process to its answer (the time it printed it answered at:
    the process's exit is not counted)."""
    began = time.time()
    result = last_json(run_script(args + (["--first_prediction"] if first_prediction else []),
                                  cwd=BENCH, env=onednn_env(config, serving_env())))
    if not first_prediction:
        return result
    return dict(seconds=result["answered_at"] - began, imports=result["imported_at"] - began,
                load=result["loaded_at"] - result["imported_at"],
                first_call=result["answered_at"] - result["loaded_at"])


def _spread(values, digits=1):
    return dict(median=round(statistics.median(values), digits),
                min=round(min(values), digits), max=round(max(values), digits))


def _mfu(entry, gflops):
    """{figure: MFU} of a setting's medians: model GFLOP/s over its matmul peak (batched: the
    average dev sentence's GFLOP x examples/s; one text: the average request's over the p50)."""
    if not gflops or "matmul_peak_gflops" not in entry:
        return {}
    peak, (sentence, request) = entry["matmul_peak_gflops"]["median"], gflops
    mfu = {k: round(sentence * v["median"] / peak, 3) for k, v in entry.items()
           if k.startswith("batch_") and "_ms" not in k}
    mfu["batch_1_p50"] = round(request / (entry["batch_1_p50_ms"]["median"] / 1000) / peak, 3)
    return mfu


def summary(runs, gflops=None):
    """Medians per setting, their MFU and the ratios (see the module docstring)."""
    settings = {}
    for one in runs:
        entry = settings.setdefault(f"{one['side']}:{one['config']}", dict(
            side=one["side"], precision=one["config"].split("-")[0], runs=[]))
        entry["runs"].append(one)
    for entry in settings.values():
        measured = entry.pop("runs")
        for key in measured[0]:
            if key.startswith("batch_") and key != "batch_1_latency":
                entry[key] = _spread([m[key] for m in measured])
        entry["batch_1_p50_ms"] = _spread([m["batch_1_latency"]["p50_ms"] for m in measured], 2)
        entry["batch_1_p95_ms"] = _spread([m["batch_1_latency"]["p95_ms"] for m in measured], 2)
        entry["first_prediction_seconds"] = _spread(
            [m["first_prediction_seconds"] for m in measured], 2)
        for part in measured[0]["first_prediction_parts"]:
            entry[f"first_prediction_{part}_seconds"] = _spread(
                [m["first_prediction_parts"][part] for m in measured], 2)
        if all("matmul_peak_gflops" in m for m in measured):
            entry["matmul_peak_gflops"] = _spread([m["matmul_peak_gflops"] for m in measured])
            entry["mfu"] = _mfu(entry, gflops)

    def best(side, precision=None, key=None):
        """(setting, figure key, value) of `side`'s highest batched median."""
        return max(((name, k, e[k]["median"]) for name, e in settings.items()
                    if e["side"] == side and (precision is None or e["precision"] == precision)
                    for k in e if k.startswith("batch_") and "_ms" not in k
                    and (key is None or k == key)), key=lambda t: t[2], default=None)

    def lowest(side, key):
        return min(((name, e[key]["median"]) for name, e in settings.items()
                    if e["side"] == side), key=lambda t: t[1])

    ratios = {}
    for name, precision in (("fp32_vs_fp32", "fp32"), ("bf16_vs_bf16", "bf16"),
                            ("best_vs_best", None)):
        z, p = best("zoo", precision), best("peer", precision)
        if z and p:
            ratios[f"batched_{name}"] = dict(ratio=round(z[2] / p[2], 3), zoo=z, peer=p)
    keys = sorted({k for e in settings.values() for k in e
                   if k.startswith("batch_") and "_ms" not in k})
    for key in keys:
        z, p = best("zoo", key=key), best("peer", key=key)
        if z and p:
            ratios[f"best_vs_best_{key[6:]}"] = dict(ratio=round(z[2] / p[2], 3), zoo=z[0],
                                                     peer=p[0])
    for key in ("batch_1_p50_ms", "first_prediction_seconds"):
        z, p = lowest("zoo", key), lowest("peer", key)
        ratios[f"{key}_zoo_over_peer"] = dict(ratio=round(z[1] / p[1], 3), zoo=z, peer=p)
    return dict(settings=settings, ratios=ratios)


def main(argv):
    del argv
    if FLAGS.write_exports:
        write_exports(FLAGS.write_exports)
        print(json.dumps(dict(exports=sorted(name for name in os.listdir(FLAGS.write_exports)
                                             if name != TOKENS_FILE))))
        return
    where = machine(ROOT)
    runs = []
    with tempfile.TemporaryDirectory(prefix="zoo-inference-bench-") as exports:
        flags_now = [f"--{name}={','.join(value) if isinstance(value, list) else value}"
                     for name, value in FLAGS.flag_values_dict().items()
                     if name in ("model_dir", "encoder_handle", "max_seq_length", "policies",
                                 "zoo_configs", "data_dir", "batch_sizes")
                     and value is not None]
        run([os.path.abspath(__file__), f"--write_exports={exports}", *flags_now])
        with open(os.path.join(exports, TOKENS_FILE), encoding="utf-8") as f:
            tokens = json.load(f)
        gflops = model_gflops(tokens, FLAGS.latency_requests)
        tokens = {k: v for k, v in tokens.items() if k.startswith("batch_")}
        sides = [("peer", c) for c in FLAGS.peer_configs] + [("zoo", c) for c in FLAGS.zoo_configs]
        for round_ in range(FLAGS.rounds):
            for side, config in (sides if round_ % 2 == 0 else sides[::-1]):
                args = command(side, config, exports)
                one = run(args, config=config)
                first = run(args, first_prediction=True, config=config)
                one["first_prediction_seconds"] = first.pop("seconds")
                one["first_prediction_parts"] = first
                one.update(side=side, config=config, round=round_, machine=where)
                print(json.dumps(one), flush=True)
                runs.append(one)
    print(json.dumps(dict(summary="inference", machine=where, data="SST-2 dev",
                          max_seq_length=FLAGS.max_seq_length, rounds=FLAGS.rounds,
                          repeats=FLAGS.repeats, model_dir=FLAGS.model_dir, tokens=tokens,
                          model_gflop_per_sentence=gflops and round(gflops[0], 4),
                          model_gflop_per_request=gflops and round(gflops[1], 4),
                          **summary(runs, gflops))),
          flush=True)


if __name__ == "__main__":
    app.run(main)
