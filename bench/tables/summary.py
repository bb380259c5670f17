"""The summary at the top of BENCHMARKS.md: the headline ratio of each benchmark per CPU kind
against today's goal, met or not, computed from the same lines as the sections below."""
from tables.base import cpu, mean, num, points, table, where
from tables.quality import FROZEN, encoder_speeds, frozen_accuracy, model_dir_size, speed_ratios


def _bf16(line):
    return "avx512_bf16" in line["machine"].get("cpu_flags", [])


def _check(value, goal, lower=False):
    met = value <= goal if lower else value >= goal
    return f"{'<=' if lower else '>='} {num(goal, 2)}: {'met' if met else '**not met**'}"


def _by_class(by_cpu):
    """[lines of the CPUs without bf16, lines of those with it] of {CPU name: line}, each
    in the order given, without an empty one."""
    lines = list(by_cpu.values())
    return [group for group in ([ln for ln in lines if not _bf16(ln)],
                                [ln for ln in lines if _bf16(ln)]) if group]


def _row(what, figures, checks, lines, section):
    """One summary row for a CPU class: each line's `figures` (a cell's text) named by its CPU,
    the goals checked on all of them (`checks`: [(label, values, goal, lower)]: met when the worst
    CPU meets it)."""
    cells = [f"{cpu(line)}: {figure}" if len(lines) > 1 else figure
             for figure, line in zip(figures, lines)]
    goal = "; ".join(label + _check(max(values) if lower else min(values), goal, lower)
                     for label, values, goal, lower in checks)
    return [what, "; ".join(cells), goal, "; ".join(where(line) for line in lines), section]


def _ratios(line, kind, policies):
    return [line["ratios"][f"{kind}_{policy}"]["ratio"] for policy in policies]


def _policies(lines):
    """Each line's padding policies, and how a row names them: in its label where every line
    has the same ones (then each cell's suffix is empty), else after each cell's figures."""
    policies = [list(ln["work"]) for ln in lines]
    names = [" / ".join(one) for one in policies]
    if len(set(names)) == 1:
        return policies, names[0], [""] * len(lines)
    return policies, "by padding policy", [f" ({name})" for name in names]


def _training_rows(results):
    rows = []
    newest = results.newest_per_cpu("train_throughput", lambda ln: ln.get("summary") and any(
        s.startswith("peer:") for s in ln.get("settings", {})))
    for lines in _by_class(newest):
        policies, label, suffixes = _policies(lines)
        if _bf16(lines[0]):
            best = [_ratios(ln, "best_vs_best", one) for ln, one in zip(lines, policies)]
            rows.append(_row(f"MRPC training, best vs best, {label}",
                             ["**" + " / ".join(num(b) for b in one) + "**" + suffix
                              for one, suffix in zip(best, suffixes)],
                             [("", [min(one) for one in best], 1.5, False)], lines,
                             "[Training](#training)"))
            continue
        fp32 = [_ratios(ln, "fp32_vs_fp32", one) for ln, one in zip(lines, policies)]
        mfu = [[ln["settings"]["zoo:fp32"][p]["mfu"] for p in one]
               for ln, one in zip(lines, policies)]
        rows.append(_row(f"MRPC training, fp32 vs fp32, {label}; zoo's MFU",
                         ["**" + " / ".join(num(f) for f in one) + "; MFU " + " / ".join(
                             num(m) for m in share) + "**" + suffix
                          for one, share, suffix in zip(fp32, mfu, suffixes)],
                         [("", [min(one) for one in fp32], 1.2, False),
                          ("MFU ", [min(share) for share in mfu], 0.75, False)], lines,
                         "[Training](#training)"))
    return rows


def _inference_rows(results):
    rows = []
    newest = results.newest_per_cpu("inference", lambda ln: ln.get("summary") == "inference")
    for lines in _by_class(newest):
        batched, one, first = ([ln["ratios"][key]["ratio"] for ln in lines] for key in (
            "batched_best_vs_best", "batch_1_p50_ms_zoo_over_peer",
            "first_prediction_seconds_zoo_over_peer"))
        rows.append(_row(
            "export, best vs best batched; one text p50; first answer (lower is better)",
            [f"**{num(b)}**; {num(o)}; {num(f)}" for b, o, f in zip(batched, one, first)],
            [("", batched, 1.75, False), ("", one, 0.7, True), ("", first, 0.8, True)], lines,
            "[Inference](#inference)"))
    return rows


def _quality_rows(results):
    precision = [ln for ln in results["export_precision"] if ln.get("batch_size") and ln["task"] == "mrpc"
                 and cpu(ln) == cpu(results["export_precision"][-1])][-3:]
    change = 100 * mean(ln["accuracy_bf16_minus_fp32"] for ln in precision)
    litert = results["litert"]
    dynamic = [ln["exports"]["litert_dynamic"] for ln in litert]
    fp32 = [ln["exports"]["savedmodel_fp32"] for ln in litert]
    loss = max(100 * (f["accuracy"] - d["accuracy"]) for f, d in zip(fp32, dynamic))
    size = max(d["size_over_savedmodel_fp32"] for d in dynamic)
    calibration = list({ln["task"]: ln for ln in results["calibration"]}.values())
    calibrated = all(ln["after"]["ece"] <= max(ln["before"]["ece"] / 2, 0.03) and not ln["labels_changed"]
                     for ln in calibration)
    squad2 = results.newest("warm_start", lambda ln: ln["run"] == "squad2" and "from_squad_v11" in ln)
    f1 = squad2["from_squad_v11"]["held_out"]["f1"]
    beam = results.newest("batch_predict")
    buckets = results.newest("buckets")
    return [
        ["bf16 export minus fp32, MRPC accuracy (mean of 3 models, 64 rows a request)",
         f"{num(change, 2, sign=True)} points",
         f"within 0.5 point: {'met' if abs(change) <= 0.5 else '**not met**'}",
         where(precision[-1]), "[The bf16 export](#the-bf16-exports-accuracy)"],
        ["LiteRT `dynamic` minus the fp32 SavedModel, dev accuracy (worst task); size ratio",
         f"{num(-loss, 2, sign=True)} points; {num(size)}", f"within 1 point; {_check(size, 0.3, True)}"
         .replace("within 1 point", "within 1 point: " + ("met" if loss <= 1 else "**not met**")),
         where(litert[-1]), "[LiteRT](#litert-exports)"],
        ["ECE after temperature scaling: " + " / ".join(ln["task"] for ln in calibration),
         " / ".join(f"{num(ln['before']['ece'])} → **{num(ln['after']['ece'])}**" for ln in calibration),
         f"halved or <= 0.03, no label changed: {'met' if calibrated else '**not met**'}",
         where(calibration[-1]), "[Calibrated scores](#calibrated-scores)"],
        ["batch prediction on Beam, 2 workers / the best single process",
         f"**{num(beam['beam2_over_best_single_process'], 2)}**",
         _check(beam["beam2_over_best_single_process"], 0.9),
         where(beam), "[Batch prediction](#batch-prediction-on-beam)"],
        ["a model dir and batch prediction in a bucket / on local disk",
         f"{num(buckets['train']['bucket_over_local']['steady_examples_per_second'])}; "
         f"{num(buckets['batch_predict']['bucket_over_local']['rows_per_second'])}", "within noise",
         where(buckets), "[Buckets](#buckets)"],
        ["SQuAD 2.0 held-out F1 from a SQuAD v1.1 model", f"**{num(f1, 2)}**", _check(f1, 60),
         where(squad2), "[Warm starts](#warm-starts)"],
    ] + _e5_rows(results)


def _e5_rows(results):
    """multilingual-e5-small's goals, checked on zoo's default for it: its word pieces frozen
    (an encoder over `zoo.model.hub.LARGE_VOCABULARY` pieces). A line that did not measure
    the frozen step (older, or of another CPU) is checked on the trained one."""
    rows = []
    for speed in encoder_speeds(results):
        ratios = speed_ratios(speed)
        rows.append(["multilingual-e5-small's training step / MiniLM's" + (
            ", word pieces trained; frozen (the default)" if FROZEN in ratios else ""),
            "; ".join(f"{num(ratio)}x" for ratio in ratios.values()),
            _check(ratios.get(FROZEN, speed["ratio_this_over_base"]), 0.48), where(speed),
            "[Many languages](#many-languages)"])
    size = model_dir_size(results)
    rows.append(["multilingual-e5-small's model dir, GB, word pieces trained; frozen (the default)",
                 f"{num(_gb(size, 'trained'), 2)}; {num(_gb(size, 'frozen'), 2)}",
                 _check(_gb(size, "frozen"), 0.8, lower=True), where(size),
                 "[Many languages](#many-languages)"])
    return rows + _frozen_row(frozen_accuracy(results))


def _frozen_row(line):
    """The summary row of a `bench/multilingual.sh frozen` line (none without one)."""
    if line is None:
        return []
    change = line["frozen_minus_trained"]["test_f1_macro"]
    return [[f"`--freeze_word_embeddings` minus trained, XLM-T test macro F1 (mean of "
             f"{len(line['languages'])} languages)", f"{points(change)} points",
             f"at most 0.5 point lower: {'met' if change >= -0.005 else '**not met**'}",
             where(line), "[Many languages](#many-languages)"]]


def _gb(line, setting):
    """A model dir's size in GB (2^30 bytes) of a model_dir_size line."""
    return line["word_embeddings"][setting]["model_dir_mb"] / 1024


def summary(results):
    return table(["what", "zoo / peer, or zoo's figure", "goal", "CPU, date", "section"],
                 _training_rows(results) + _inference_rows(results) + _quality_rows(results))


TABLES = dict(summary=summary)
