r"""Training throughput, like for like: zoo against the PyTorch peer at its best, same batches.

  python bench/train_throughput.py >> bench/results/train_throughput.jsonl   # ./install.sh bench
  python bench/train_throughput.py --task=squad >> bench/results/squad_throughput.jsonl

MRPC train, MiniLM-L6-H384, batch 32, length 128; or (--task=squad) SQuAD v1.1 windows of
length 384 (the first --questions questions of --squad_file, cut into windows by the peer's
tokenizer, `peer_train.py --write_windows`; both sides train on those ids; every window has the
full length, so the one policy is fixed). One plan of batches per padding policy
(fixed, dynamic, bucketed) is computed here (`common.batch_plan`, from the peer tokenizer's
lengths) and both sides take exactly those batches: `bench/peer_train.py` (transformers +
PyTorch) in each --peer_configs setting, `bench/zoo_train.py` (zoo's training step) in each
--zoo_configs setting, each a process of its own. --repeats rounds; each round runs every
setting once, the sides alternating which goes first. Each run skips the same --warmup_steps
per policy and times the next --steps.

Prints one JSON line per run, then a summary line: per setting and policy the median (and min,
max) examples/s over the rounds, real (unpadded) tokens/s, minor page faults per step (pages the
kernel mapped for new allocations), MFU (model FLOPs of the computed, padded tokens, as that
side computes them: zoo's classifier computes its last layer at [CLS] alone, see
`common.train_flops_per_token`; over the matmul peak of the precision that setting used,
measured by its own framework in the same process), and the ratios zoo / peer: fp32 against fp32
and each side's best (any precision) against the other's, per policy and best policy against
best. The machine line (CPU model, its amx / avx512_bf16 flags, git) is in every line.
"""
import json
import os
import statistics
import tempfile

from absl import app, flags

from common import (BENCH, batch_plan, batch_tokens, encoder_build_config, last_json, machine,
                    onednn_env, run_script, train_flops_per_token)

ROOT = os.path.dirname(BENCH)
flags.DEFINE_string("data_dir", os.path.join(ROOT, "..", "shared", "data", "mrpc"),
                    "GLUE MRPC folder (train.tsv is used).")
flags.DEFINE_integer("batch_size", 32, "Training batch size.")
flags.DEFINE_enum("task", "mrpc", ["mrpc", "squad"], "Which fine-tuning.")
flags.DEFINE_string("squad_file", os.path.join(ROOT, "..", "shared", "data", "squad_v1",
                                               "train-v1.1-explorer.json"), "SQuAD v1.1 train.")
flags.DEFINE_integer("questions", 400, "SQuAD: questions used (the first ones of the file).")
flags.DEFINE_integer("doc_stride", 128, "SQuAD: tokens between window starts.")
flags.DEFINE_integer("max_seq_length", None, "Sequence length (fixed padding pads to it); "
                     "default 128 for mrpc, 384 for squad.")
flags.DEFINE_integer("steps", 20, "Timed steps per policy and run.")
flags.DEFINE_integer("warmup_steps", 3, "Untimed steps before them, on both sides.")
flags.DEFINE_integer("repeats", 3, "Rounds of runs (the median is reported).")
flags.DEFINE_list("padding", ["fixed", "dynamic", "bucketed"], "Padding policies.")
flags.DEFINE_list("peer_configs", ["fp32-eager", "fp32-sdpa", "bf16-sdpa"],
                  "Peer settings: PRECISION-ATTENTION[-compile].")
flags.DEFINE_list("zoo_configs", ["fp32", "bf16"], "zoo settings: PRECISION[-fusion_off|"
                  "-fusion_on][-onednn_on|-onednn_off][-tfmalloc] (fusion: --xla_fusion=off or "
                  "on, else auto; onednn: TF_ENABLE_ONEDNN_OPTS=1 or 0 in the run's environment, "
                  "else what zoo chooses for the CPU; "
                  "tfmalloc: glibc's thresholds left as TensorFlow's generator "
                  "datasets set them, not as `zoo.training.loop.fit` sets them back; an A/B, never "
                  "zoo's best).")
flags.DEFINE_string("encoder_config", None, "The encoder's zoo_build_info.json (default: the "
                    "built MiniLM's, from zoo's cache).")
FLAGS = flags.FLAGS


def data_flags(side, work):
    """The flags that say which data a run of `side` trains on."""
    if FLAGS.task == "squad":
        return ["--task=squad"] + ([f"--windows_file={os.path.join(work, 'windows.json')}"]
                                   if side == "zoo" else
                                   [f"--squad_file={FLAGS.squad_file}",
                                    f"--questions={FLAGS.questions}",
                                    f"--doc_stride={FLAGS.doc_stride}"])
    return [f"--data_dir={FLAGS.data_dir}"]


def command(side, config, work):
    """The command line of one run of `side` ("peer" or "zoo") in setting `config`."""
    parts = config.split("-")
    common = [f"--plan_file={os.path.join(work, 'plan.json')}", *data_flags(side, work),
              f"--max_seq_length={FLAGS.max_seq_length}", f"--warmup_steps={FLAGS.warmup_steps}",
              f"--precision={parts[0]}"]
    if side == "peer":
        return ["peer_train.py", *common, f"--attention={parts[1]}"] + (
            ["--compile"] if "compile" in parts[2:] else [])
    fusion = [f"--xla_fusion={p[len('fusion_'):]}" for p in parts if p.startswith("fusion_")]
    return ["zoo_train.py", *common, *fusion] + (
        ["--malloc=tensorflow"] if "tfmalloc" in parts else [])


def token_lengths(work):
    """Real (unpadded) token count of every training row, written by the peer's tokenizer."""
    if FLAGS.task == "squad":
        path = os.path.join(work, "windows.json")
        run_script(["peer_train.py", *data_flags("peer", work), f"--write_windows={path}",
                    f"--max_seq_length={FLAGS.max_seq_length}"], cwd=BENCH)
        with open(path, encoding="utf-8") as f:
            return [sum(mask) for mask in json.load(f)["attention_mask"]]
    path = os.path.join(work, "lengths.json")
    run_script(["peer_train.py", *data_flags("peer", work), f"--write_lengths={path}",
                f"--max_seq_length={FLAGS.max_seq_length}"], cwd=BENCH)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def encoder_config():
    if not FLAGS.encoder_config:
        return encoder_build_config("minilm_l6_h384_uncased")
    with open(FLAGS.encoder_config, encoding="utf-8") as f:
        return json.load(f)["config"]


def summary(runs, plan, lengths, config):
    """Medians, tokens/s, MFU and ratios of `runs` (see the module docstring)."""
    work = {}
    for padding, rows in plan.items():
        timed = rows[FLAGS.warmup_steps:]
        real, computed, flops = 0, 0, {False: 0.0, True: 0.0}
        for batch in timed:
            r, c = batch_tokens(batch, lengths, padding, FLAGS.max_seq_length)
            real, computed = real + r, computed + c
            for pooled_only in flops:
                flops[pooled_only] += c * train_flops_per_token(config, c // len(batch),
                                                                pooled_only)
        work[padding] = dict(examples=len(timed) * FLAGS.batch_size, real_tokens=real,
                             computed_tokens=computed, flops=flops)
    settings = {}
    for one in runs:
        key = f"{one['side']}:{one['config']}"
        entry = settings.setdefault(key, dict(side=one["side"], precision=one["precision"],
                                              pooled_only=one.get("pooled_only", False),
                                              runs=[], peaks=[], faults=[], warmups=[]))
        if "tfmalloc" in one["config"].split("-"):
            entry["not_a_best"] = True  # an A/B of a setting zoo's users do not run
        entry["runs"].append(one["seconds"])
        entry["faults"].append(one.get("page_faults_per_step", {}))
        entry["warmups"].append(one.get("warmup_seconds", {}))
        entry["peaks"].append(one["matmul_peak_gflops"])
    for entry in settings.values():
        peak = statistics.median(entry.pop("peaks"))
        entry["matmul_peak_gflops"] = peak
        for padding, w in work.items():
            seconds = [r[padding] for r in entry["runs"]]
            rates = [w["examples"] / s for s in seconds]
            middle = statistics.median(seconds)
            entry[padding] = dict(
                examples_per_second=round(w["examples"] / middle, 2),
                min=round(min(rates), 2), max=round(max(rates), 2),
                real_tokens_per_second=round(w["real_tokens"] / middle, 1),
                mfu=round(w["flops"][entry["pooled_only"]] / middle / 1e9 / peak, 3))
            faults = [f[padding] for f in entry["faults"] if padding in f]
            if faults:
                entry[padding]["page_faults_per_step"] = statistics.median(faults)
            warmups = [f[padding] for f in entry["warmups"] if padding in f]
            if warmups:  # the untimed first steps: tracing and, with XLA fusion, compiling
                entry[padding]["warmup_seconds"] = round(statistics.median(warmups), 2)
        del entry["runs"], entry["faults"], entry["warmups"]
    rate = lambda key, p: settings[key][p]["examples_per_second"]  # noqa: E731

    def best(side, padding, precision=None):
        keys = [k for k, e in settings.items() if e["side"] == side
                and (precision is None or e["precision"] == precision)
                and not e.get("not_a_best")]
        return max(keys, key=lambda k: rate(k, padding)) if keys else None

    ratios = {}
    for padding in plan:
        for name, precision in (("fp32_vs_fp32", "fp32"), ("best_vs_best", None)):
            z, p = best("zoo", padding, precision), best("peer", padding, precision)
            if z and p:
                ratios[f"{name}_{padding}"] = dict(
                    ratio=round(rate(z, padding) / rate(p, padding), 3), zoo=z, peer=p)
    overall = lambda side: max(  # noqa: E731
        ((k, p) for k, e in settings.items() if e["side"] == side and not e.get("not_a_best")
         for p in plan),
        key=lambda kp: rate(*kp), default=None)
    z, p = overall("zoo"), overall("peer")
    if z and p:
        ratios["best_policy_vs_best_policy"] = dict(ratio=round(rate(*z) / rate(*p), 3),
                                                    zoo=list(z), peer=list(p))
    return dict(work=work, settings=settings, ratios=ratios)


def main(argv):
    del argv
    where = machine(ROOT)
    if FLAGS.max_seq_length is None:
        FLAGS.max_seq_length = 384 if FLAGS.task == "squad" else 128
    if FLAGS.task == "squad":
        if FLAGS["padding"].present and FLAGS.padding != ["fixed"]:
            raise SystemExit("--task=squad: every window has the full length: --padding=fixed")
        FLAGS.padding = ["fixed"]
    with tempfile.TemporaryDirectory(prefix="zoo-train-bench-") as work:
        lengths = token_lengths(work)
        plan = {p: batch_plan(lengths, FLAGS.batch_size, p, FLAGS.warmup_steps + FLAGS.steps)
                for p in FLAGS.padding}
        with open(os.path.join(work, "plan.json"), "w", encoding="utf-8") as f:
            json.dump(plan, f)
        runs = []
        sides = [("peer", c) for c in FLAGS.peer_configs] + [("zoo", c) for c in FLAGS.zoo_configs]
        for round_ in range(FLAGS.repeats):
            ordered = sides if round_ % 2 == 0 else sides[::-1]  # alternate who goes first
            for side, config in ordered:
                one = last_json(run_script(command(side, config, work), cwd=BENCH,
                                           env=onednn_env(config)))
                one.update(config=config, round=round_, machine=where)
                print(json.dumps(one), flush=True)
                runs.append(one)
    result = summary(runs, plan, lengths, encoder_config())
    print(json.dumps(dict(summary="train_throughput", machine=where, batch_size=FLAGS.batch_size,
                          max_seq_length=FLAGS.max_seq_length, steps=FLAGS.steps,
                          warmup_steps=FLAGS.warmup_steps, repeats=FLAGS.repeats,
                          data="MRPC train" if FLAGS.task == "mrpc" else
                          f"SQuAD v1.1 train, first {FLAGS.questions} questions, "
                          f"{len(lengths)} windows", **result)), flush=True)


if __name__ == "__main__":
    app.run(main)
