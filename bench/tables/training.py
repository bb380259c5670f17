"""Training speed against the peer (MRPC, SQuAD), and what zoo's training defaults rest on:
oneDNN on AVX2, bf16's accuracy, XLA fusion, glibc's malloc, SQuAD's memory, buckets."""
from tables.base import (PYTHON, command, command_of, cpu, mean, newest_per_class, num, spread,
                         table, where)


def _configs(line, side):
    return [name.split(":", 1)[1] for name in line["settings"] if name.startswith(side + ":")]


def _throughput_command(line, task):
    """The `bench/train_throughput.py` command of a summary line, from its own fields."""
    words = [PYTHON, "bench/train_throughput.py"] + (["--task=squad"] if task == "squad" else [])
    words += [f"--steps={line['steps']}", f"--warmup_steps={line['warmup_steps']}",
              f"--repeats={line['repeats']}", "--peer_configs=" + ",".join(_configs(line, "peer")),
              "--zoo_configs=" + ",".join(_configs(line, "zoo")),
              "--padding=" + ",".join(line["work"])]
    return command_of(line, words)


def _settings_table(line, unit):
    policies = list(line["work"])
    header = ["setting", "matmul peak, GFLOP/s"] + [f"{p}: {unit}/s (min-max)" for p in policies]
    header += ["MFU " + " / ".join(policies)]
    rows = []
    for name, setting in line["settings"].items():
        cells = [spread(setting[p]["examples_per_second"], setting[p]["min"], setting[p]["max"])
                 for p in policies]
        rows.append([name.replace(":", " "), num(setting["matmul_peak_gflops"], 1), *cells,
                     " / ".join(num(setting[p]["mfu"]) for p in policies)])
    return table(header, rows)


def _ratio_row(line):
    """CPU, date; fp32 vs fp32 and best vs best per policy; best policy vs best policy."""
    ratios, policies = line["ratios"], list(line["work"])

    def per_policy(kind):
        return " / ".join(num(ratios[f"{kind}_{p}"]["ratio"]) if f"{kind}_{p}" in ratios else "-"
                          for p in policies)
    best = ratios["best_policy_vs_best_policy"]
    return [where(line), "/".join(policies), per_policy("fp32_vs_fp32"), per_policy("best_vs_best"),
            f"**{num(best['ratio'])}** ({best['zoo'][0]} vs {best['peer'][0]})"]


def throughput(results, name, task, unit):
    """Per CPU kind, the newest summary line that ran the peer: the ratios, then the settings."""
    newest = results.newest_per_cpu(name, lambda line: line.get("summary") and any(
        s.startswith("peer:") for s in line.get("settings", {})))
    parts = [table(["CPU, date", "policies", "zoo / peer, fp32 vs fp32", "best vs best",
                    "best policy vs best policy"], [_ratio_row(line) for line in newest.values()])]
    for line in newest_per_class(newest):
        parts.append(f"**{where(line)}** ({line['data']}):\n\n" + _throughput_command(line, task) +
                     "\n" + _settings_table(line, unit))
    return "\n".join(parts)


def training(results):
    return throughput(results, "train_throughput", "mrpc", "examples")


def squad_training(results):
    return throughput(results, "squad_throughput", "squad", "windows")


def fusion(results):
    """MRPC, the newest line per CPU kind with XLA-fused settings beside the plain ones."""
    commands, rows = [], []
    for line in results.newest_per_cpu("train_throughput", lambda ln: ln.get("summary") and any(
            s.endswith("fusion_on") for s in ln.get("settings", {}))).values():
        commands.append(_throughput_command(line, "mrpc"))
        for setting, values in line["settings"].items():
            if values["side"] == "zoo":
                fixed = values["fixed"]
                rows.append([where(line), setting.split(":", 1)[1],
                             spread(fixed["examples_per_second"], fixed["min"], fixed["max"]),
                             num(fixed["mfu"]), num(fixed["warmup_seconds"], 1)])
    return "\n".join(commands) + "\n" + table(
        ["CPU, date", "zoo setting", "examples/s", "MFU", "untimed first steps, s"], rows)


def onednn_accuracy(results):
    """MRPC trained by the commit before oneDNN was turned on for every x86 CPU and by it."""
    lines = results["onednn_accuracy"]
    rows = []
    for line in lines:
        seed = next(w.split("=")[1] for w in line["command"] if w.startswith("--seed="))
        cells = [" / ".join(num(line[side]["runs"][0]["eval"][k], 4)
                            for k in ("accuracy", "f1", "loss")) for side in ("base", "this")]
        rows.append([seed, *cells])
    words = [PYTHON, "bench/commits_ab.py", "--base=BEFORE", "--this=AFTER", "--repeats=1", "--",
             *[w if not w.startswith("--seed=") else "--seed=SEED" for w in lines[-1]["command"]]]
    return (f"{where(lines[-1])}:\n\n" + command(words) + "\n" +
            table(["seed", "oneDNN off: accuracy / F1 / loss", "oneDNN on"], rows))


def bf16_accuracy(results):
    """MRPC dev per seed, fp32 against bf16, the newest run per CPU kind."""
    newest = {}
    for line in results["intent_defaults"]:
        if line.get("task") == "mrpc" and line.get("config") in ("fp32", "bf16"):
            newest[(cpu(line), line["config"], line["seed"])] = line
    cpus = list(dict.fromkeys(key[0] for key in newest))
    seeds = sorted({key[2] for key in newest})
    header = ["seed"] + [f"{c}, {p}" for c in cpus for p in ("fp32", "bf16")]

    def cell(c, p, metric):
        return [newest[(c, p, s)]["validation"][metric] for s in seeds]

    rows = [[s] + [" / ".join(num(newest[(c, p, s)]["validation"][m], 4) for m in ("accuracy", "f1"))
                   for c in cpus for p in ("fp32", "bf16")] for s in seeds]
    rows.append(["mean"] + [" / ".join(num(mean(cell(c, p, m)), 4) for m in ("accuracy", "f1"))
                            for c in cpus for p in ("fp32", "bf16")])
    line = list(newest.values())[-1]
    words = [PYTHON, "bench/intent_defaults.py", "--task=mrpc", "--configs=fp32,bf16",
             "--seeds=" + ",".join(str(s) for s in seeds)]
    return (f"MRPC dev accuracy / F1 per seed, the CLI's defaults otherwise ({where(line)} the "
            "newest):\n\n" + command(words) + "\n" + table(header, rows))


def _rate_and_faults(policy):
    return f"{num(policy['examples_per_second'], 2)} ({num(policy['page_faults_per_step'])})"


def malloc(results):
    """zoo's bf16 steps with glibc's thresholds set back (its default) and as TensorFlow's
    generator datasets leave them (`bf16-tfmalloc`); then the SQuAD-shaped A/B of allocator.py."""
    line = results.newest("train_throughput", lambda ln: "zoo:bf16-tfmalloc" in ln.get("settings", {}))
    ours, theirs = (line["settings"][n] for n in ("zoo:bf16", "zoo:bf16-tfmalloc"))
    step = results.newest("allocator")
    medians = step["median_step_seconds"]
    return (f"MRPC training ({where(line)}, the `bf16-tfmalloc` setting of the training command), "
            "examples/s and page faults a step, zoo's thresholds against TensorFlow's: " +
            "; ".join(f"{p} {_rate_and_faults(ours[p])} against {_rate_and_faults(theirs[p])}"
                      for p in line["work"]) +
            f". SQuAD-shaped steps ({step['encoder']}, batch {step['batch_size']} x {step['seq_length']}; "
            f"{where(step)}; `{PYTHON} bench/allocator.py`): median step {num(medians['none'])} s with "
            f"no generator dataset, {num(medians['patched'])} s with TensorFlow's setting, "
            f"{num(medians['restored'])} s with zoo's.\n")


def squad_memory(results):
    line = results.newest("squad_memory")
    runs = ", ".join(f"{num(r['questions'])} questions ({num(r['windows'])} windows) "
                     f"{num(r['peak_rss_mb'], 0)} MB" for r in line["runs"].values())
    return (f"{where(line)}, `{PYTHON} bench/squad_memory.py` (encoder `{line['encoder']}`, "
            f"{line['train_steps']} steps of {line['batch_size']}): peak RSS {runs}; all / 5,000 "
            f"questions: **{num(line['ratio_all_over_5000'])}**.\n")


def buckets(results):
    line = results.newest("buckets")
    train, batch = line["train"], line["batch_predict"]

    def runs(part, key, where_):
        return ", ".join(num(r[key], 1) for r in part["runs"] if r["where"] == where_)

    steady = "steady_examples_per_second"
    rows = [["training, steady examples/s", *(
        f"{num(train[w][steady], 2)} ({runs(train, steady, w)})" for w in ("local", "bucket")),
        f"**{num(train['bucket_over_local'][steady])}**"],
        ["training, wall seconds of the fit", num(train["local"]["wall_seconds"], 1),
         num(train["bucket"]["wall_seconds"], 1), num(train["bucket_over_local"]["wall_seconds"])],
        [f"batch prediction ({num(batch['rows'])} rows, {batch['workers']} workers), rows/s", *(
            f"{num(batch[w]['rows_per_second'], 1)} ({runs(batch, 'rows_per_second', w)})"
            for w in ("local", "bucket")), f"**{num(batch['bucket_over_local']['rows_per_second'])}**"]]
    return (f"{where(line)}:\n\n" + command_of(line, [PYTHON, "bench/buckets.py"]) + "\n" +
            table(["", "local", "bucket", "bucket / local"], rows))


TABLES = dict(training=training, squad_training=squad_training, fusion=fusion,
              onednn_accuracy=onednn_accuracy, bf16_accuracy=bf16_accuracy, malloc=malloc,
              squad_memory=squad_memory, buckets=buckets)
