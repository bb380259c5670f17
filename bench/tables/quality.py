"""What the models reach on real data: the tasks, multi-task, the defaults, calibration, warm
starts and many languages. Published anchors carry their source."""
from tables.base import (PYTHON, cpu, date, mean, newest_per_class, num, one_line, points, table,
                         where)

# XLM-T's README (cardiffnlp/xlm-t, "Macro F1 reported", test sets, monolingual fine-tuning).
XLMT_PUBLISHED = dict(english=(0.682, 0.669), french=(0.720, 0.682), german=(0.736, 0.761),
                      italian=(0.715, 0.709), portuguese=(0.671, 0.760), spanish=(0.659, 0.685))
# The google-deepmind/xquad README: mBERT fine-tuned on all of SQuAD v1.1, exact / F1.
XQUAD_MBERT = dict(en=(72.2, 83.5), de=(54.0, 70.6), el=(44.9, 62.6), es=(56.9, 75.5),
                   ro=(59.9, 72.7), ru=(53.3, 71.3), vi=(49.6, 69.5), zh=(48.3, 58.0))


def _training(run):
    t = run["training"]
    return f"{num(t['steps'])} steps, {num(t['wall_seconds'], 0)} s, {t['precision']}"


def _result(name, line):
    dev, test = line.get("eval_dev") or line.get("eval_eval"), line.get("eval_test", {})
    if name.startswith("stsb"):
        return f"dev Pearson **{num(dev['pearson'], 4)}**, Spearman {num(dev['spearman'], 4)}"
    if name in ("ner", "wnut"):
        return (f"dev F1 {num(dev['f1'], 4)}; test F1 **{num(test['f1'], 4)}** (P "
                f"{num(test['precision'], 4)}, R {num(test['recall'], 4)}; " +
                ", ".join(f"{k} {num(v, 3)}" for k, v in test["f1_per_type"].items()) + ")")
    if name == "go_emotions":
        return (f"dev micro F1 {num(dev['f1_micro'], 4)}; test micro F1 **{num(test['f1_micro'], 4)}**, "
                f"macro {num(test['f1_macro'], 4)}, exact match {num(test['exact_match'], 4)}")
    floor = line["always_no_answer"]
    return (f"threshold 0: exact {num(dev['exact'], 2)}, F1 **{num(dev['f1'], 2)}** (HasAns F1 "
            f"{num(dev['HasAns_f1'], 2)}, NoAns {num(dev['NoAns_exact'], 2)}); at dev's best "
            f"threshold F1 {num(dev['best_f1'], 2)}; always \"no answer\" {num(floor['f1'], 2)}")


def real_tasks(results):
    """The newest line of each run of `bench/real_tasks.sh`."""
    runs = {line["run"]: line for line in results["real_tasks"]}
    rows = []
    for name in ("stsb_cls", "stsb_mean", "ner", "wnut", "go_emotions", "squad2"):
        line = runs[name]
        check = line.get("export_check")
        rows.append([f"`{name}`", where(line), _training(line), _result(name, line),
                     f"{check['compared'] - check['differ']} of {check['compared']}" if check else ""])
    return table(["run", "CPU, date", "training", "result", "export = predict"], rows)


def multitask(results):
    runs = {line["run"]: line for line in results["real_tasks"]}
    joint = runs["mt_joint"]["eval_eval"]
    rows = []
    for task in ("mrpc", "sst2"):
        alone = runs[f"mt_single_{task}"]["eval_eval"]
        rows.append([task, f"{num(alone['accuracy'], 4)} / {num(alone['f1'], 4)}",
                     f"{num(joint[task + '/accuracy'], 4)} / {num(joint[task + '/f1'], 4)}",
                     f"{points(joint[task + '/accuracy'] - alone['accuracy'])} / "
                     f"{points(joint[task + '/f1'] - alone['f1'])}"])
    export = results.newest("multitask_export")
    return (f"{where(runs['mt_joint'])}, dev accuracy / F1 (joint: {_training(runs['mt_joint'])}; "
            f"alone: {_training(runs['mt_single_mrpc'])} and {_training(runs['mt_single_sst2'])}):\n\n" +
            table(["task", "alone", "jointly", "difference, points"], rows) +
            f"\nThe multi-task export against the two single-task ones ({where(export)}): size "
            f"**{num(export['ratio_bytes_multi_over_sum_of_singles'])}** of theirs together, a fresh "
            "process loading it and calling each task "
            f"**{num(export['ratio_load_multi_over_sum_of_singles'])}** of their time "
            f"({num(export['load_seconds']['multi'], 2)} s against "
            f"{num(export['load_seconds']['sum_of_singles'], 2)} s).\n")


def defaults(results):
    """Mean validation metric (seeds) per configuration and task, on the CPU of the search (the
    precision A/B's lines are the training section's)."""
    groups, first = {}, results["intent_defaults"][0]
    for line in results["intent_defaults"]:
        if line.get("config") in ("fp32", "bf16") or cpu(line) != cpu(first):
            continue
        task = line.get("task") or "banking77"
        task += " (all rows)" if task == "sst2" and line["train_rows"] > 10000 else ""
        group = groups.setdefault(line["config"], {"flags": " ".join(line["flags"])})
        group.setdefault(task, []).append(line)
    tasks = ["banking77", "mrpc", "sst2", "sst2 (all rows)", "stsb"]
    metric = dict(banking77="f1_macro", stsb="pearson")
    rows = []
    for config, by_task in groups.items():
        cells = []
        for task in tasks:
            lines = by_task.get(task, [])
            values = [ln["validation"][metric.get(task, "accuracy")] for ln in lines]
            cells.append(f"{num(mean(values), 4)} ({', '.join(str(ln['seed']) for ln in lines)})"
                         if lines else "")
        rows.append([f"`{config}`", f"`{by_task['flags']}`" if by_task["flags"] else "", *cells])
    return (f"{cpu(first)}, from {date(first)}; the mean over the seeds in brackets:\n\n" +
            table(["config", "flags", "BANKING77 macro F1", "MRPC accuracy", "SST-2 accuracy, 10,000 rows",
                   "SST-2, all rows", "STS-B Pearson"], rows))


def calibration(results):
    rows = []
    for line in {ln["task"]: ln for ln in results["calibration"]}.values():
        b, a = line["before"], line["after"]
        cover = {round(c["coverage"], 2): c for c in line["coverage"]}
        rows.append([line["task"], where(line), f"{num(line['fit_rows'])} / {num(line['test_rows'])}",
                     num(line["temperature"]), f"{num(b['ece'], 4)} → **{num(a['ece'], 4)}**",
                     f"{num(b['mce'])} → {num(a['mce'])}", f"{num(b['nll'], 4)} → {num(a['nll'], 4)}",
                     num(line["accuracy"], 4),
                     f"{num(cover[0.9]['accuracy'], 4)} ({num(cover[0.9]['min_score'])})",
                     f"{num(cover[0.8]['accuracy'], 4)} ({num(cover[0.8]['min_score'])})",
                     f"{line['labels_changed']} of {num(line['labels_compared'])}"])
    return table(["data", "CPU, date", "fit / test rows", "T", "ECE before → after", "MCE", "NLL",
                  "accuracy", "at 90% coverage (min_score)", "at 80%", "labels changed"], rows)


def _squad2_row(name, line, start):
    run = line[start]
    held, schedule = run["held_out"], run.get("schedule", {})
    source = (line.get("source") or {}).get("training", {})
    what = (f"from a SQuAD v1.1 model ({num(source.get('train_questions'))} questions)"
            if start == "from_squad_v11" else "from the encoder")
    return [what, where(line), f"{num(schedule.get('num_train_epochs'), 0)} epochs, lr "
            f"{schedule.get('learning_rate')}", num(held["null_score_diff_threshold"], 2),
            num(held["exact"], 2), f"**{num(held['f1'], 2)}**", num(held["HasAns_f1"], 2),
            num(held["NoAns_exact"], 2)]


def _em_f1(scores, bold=False):
    f1 = num(scores["f1"], 2)
    return f"{num(scores['exact_match'], 2)} / {'**' + f1 + '**' if bold else f1}"


def _f1s(means):
    return f"{num(means['val_f1_macro'], 4)} / {num(means['test_f1_macro'], 4)}"


def _squad2(results):
    """The newest held-out line of each start (lines with a schedule: 3 epochs, best kept)."""
    def newest(start):
        return results.newest("warm_start", lambda ln: ln["run"] == "squad2" and "schedule" in
                              ln.get(start, {}))
    rows = [_squad2_row("squad2", newest(start), start) for start in ("from_encoder", "from_squad_v11")]
    floor = newest("from_squad_v11")["always_no_answer"]
    rows.insert(0, ["always \"no answer\"", "", "", "", num(floor["exact"], 2), num(floor["f1"], 2),
                    "0", "100"])
    return "SQuAD 2.0, the held-out dev articles:\n\n" + table(
        ["start", "CPU, date", "schedule", "threshold", "exact", "F1", "HasAns F1", "NoAns exact"], rows)


def warm_starts(results):
    xquad = results.newest("warm_start", lambda ln: ln["run"] == "xquad")
    tweets = results.newest("warm_start", lambda ln: ln["run"] == "tweets")
    recipes = results.newest("warm_start", lambda ln: ln["run"] == "recipes")
    questions = num(xquad["source"]["training"]["train_questions"])
    return (_squad2(results) +
            f"\nXQuAD English, held-out articles, exact / F1 ({where(xquad)}): from the encoder "
            f"{_em_f1(xquad['from_encoder']['held_out'])}; from a SQuAD v1.1 model ({questions} "
            f"questions) {_em_f1(xquad['from_squad_v11']['held_out'], bold=True)}; that model as it "
            f"is {_em_f1(xquad['v11_model_as_is'])}.\n\n"
            f"English tweets (XLM-T), macro F1 val / test, mean of seeds {', '.join(tweets['per_seed'])} "
            f"({where(tweets)}): from the encoder {_f1s(tweets['mean']['encoder'])}, from an SST-2 "
            f"model {_f1s(tweets['mean']['sst2'])}; " + "; ".join(
                f"from the encoder with `--{k}={recipes['settings'][k]}` {_f1s(v)}"
                for k, v in recipes["mean"].items()) + ".\n")


def _tweets(results):
    line = results.newest("multilingual", lambda ln: ln["run"] == "tweets")
    languages = line["languages"]
    rows = []
    for language, r in languages.items():
        zero = (f"{num(r['zero_shot_val_f1_macro'], 4)} / {num(r['zero_shot_test_f1_macro'], 4)}"
                if "zero_shot_test_f1_macro" in r else "(trained on it)")
        rows.append([language, num(r["val_f1_macro"], 4), num(r["test_f1_macro"], 4), zero,
                     *(num(v, 3) for v in XLMT_PUBLISHED[language])])
    zero_shot = [r["zero_shot_test_f1_macro"] for r in languages.values() if "zero_shot_test_f1_macro" in r]
    rows.append(["mean", num(mean(r["val_f1_macro"] for r in languages.values()), 4),
                 f"**{num(mean(r['test_f1_macro'] for r in languages.values()), 4)}**",
                 num(mean(zero_shot), 4) + " (test)",
                 *(num(mean(v[i] for v in XLMT_PUBLISHED.values()), 3) for i in (0, 1))])
    return f"XLM-T tweets, macro F1 ({where(line)}):\n\n" + table(
        ["language", "val", "test", "zero-shot from English, val / test",
         "XLM-R base, test (published)", "XLM-T, test (published)"], rows)


def _xquad(results):
    line = results.newest("multilingual", lambda ln: ln["run"] == "xquad")
    codes = list(line["languages"])
    others = [c for c in codes if c != "en"]
    scores = {c: (line["languages"][c]["exact_match"], line["languages"][c]["f1"]) for c in codes}
    rows = [[name, *(f"{num(by[c][0], digits)} / {num(by[c][1], digits)}" for c in codes),
             " / ".join(num(mean(by[c][i] for c in others), digits) for i in (0, 1))]
            for name, by, digits in (("multilingual-e5-small", scores, 2),
                                     ("mBERT, all of SQuAD (published)", XQUAD_MBERT, 1))]
    return (f"XQuAD from {num(line['source']['training']['train_questions'])} SQuAD v1.1 questions "
            f"({where(line)}), exact / F1:\n\n" + table(["", *codes, "mean of the others"], rows))


FROZEN = "multilingual_e5_small:frozen_word_embeddings"


def encoder_speeds(results):
    """The newest `bench/encoder_speed.py` line of a CPU with bf16 and of one without."""
    return newest_per_class(results.newest_per_cpu(
        "multilingual", lambda ln: ln["run"] == "encoder_speed"))


def speed_ratios(speed):
    """{encoder: its examples/s over MiniLM's} of an encoder_speed line (older lines give the
    second encoder's alone)."""
    return speed.get("ratios_over_base") or {"multilingual_e5_small": speed["ratio_this_over_base"]}


def _speed(speed):
    eps = speed["examples_per_second"]
    frozen = (f"; with `--freeze_word_embeddings` {num(eps[FROZEN], 2)} examples/s "
              f"(**{num(speed_ratios(speed)[FROZEN])}x**)" if FROZEN in eps else "")
    return (f"{where(speed)}, {speed['precision']}, batch {speed['batch_size']}: "
            f"{num(eps['multilingual_e5_small'], 2)} against {num(eps['minilm_l6_h384_uncased'], 2)} "
            f"examples/s (**{num(speed['ratio_this_over_base'])}x**){frozen}; "
            f"`{one_line(speed, [PYTHON, 'bench/encoder_speed.py'])}`")


def model_dir_size(results):
    """The newest `bench/model_dir_size.py` line."""
    return results.newest("multilingual", lambda ln: ln["run"] == "model_dir_size")


def _size(line):
    sizes = line["word_embeddings"]
    return (f"The model dir after training ({where(line)}, {num(line['steps'])} steps, "
            f"`{one_line(line, [PYTHON, 'bench/model_dir_size.py'])}`): "
            f"{num(sizes['trained']['model_dir_mb'], 0)} MB, of which checkpoints "
            f"{num(sizes['trained']['checkpoints_mb'], 0)}; with `--freeze_word_embeddings` "
            f"{num(sizes['frozen']['model_dir_mb'], 0)} MB, of which checkpoints "
            f"{num(sizes['frozen']['checkpoints_mb'], 0)} (**{num(line['frozen_over_trained'])}x**).")


def frozen_accuracy(results):
    """The newest `bench/multilingual.sh frozen` line, or None."""
    found = [ln for ln in results["multilingual"] if ln["run"] == "frozen_word_embeddings"]
    return found[-1] if found else None


def _frozen(line):
    if line is None:
        return ""
    rows = line["languages"]  # (one paragraph with the speed and size: BENCHMARKS.md's length)
    per_language = ", ".join(
        f"{language} {num(r['trained']['test_f1_macro'], 4)} / {num(r['frozen']['test_f1_macro'], 4)}"
        for language, r in rows.items())
    mean, change = line["mean"], line["frozen_minus_trained"]
    return (f"With `--freeze_word_embeddings` ({where(line)}, "
            f"{next(iter(rows.values()))['trained']['training']['precision']}, "
            f"`bench/multilingual.sh frozen`), test macro F1 trained / frozen: {per_language}; "
            f"mean {num(mean['trained']['test_f1_macro'], 4)} / "
            f"{num(mean['frozen']['test_f1_macro'], 4)} (**{points(change['test_f1_macro'])} "
            f"points**; val {points(change['val_f1_macro'])}).")


def multilingual(results):
    latency = results.newest("multilingual", lambda ln: ln["run"] == "speed")
    p50 = latency["latency"]
    return (_tweets(results) + "\n" + _xquad(results) +
            "\nTraining speed against MiniLM, the same MRPC batches (fixed length 128): " +
            "; ".join(_speed(speed) for speed in encoder_speeds(results)) + ". " +
            _size(model_dir_size(results)) +
            f" One text p50 ({where(latency)}): {num(p50['multilingual_e5_small']['p50_ms'], 1)} "
            f"against {num(p50['minilm']['p50_ms'], 1)} ms "
            f"({num(p50['p50_ratio_e5_over_minilm'], 2)}x). " + _frozen(frozen_accuracy(results))
            + "\n")


TABLES = dict(real_tasks=real_tasks, multitask=multitask, defaults=defaults,
              calibration=calibration, warm_starts=warm_starts, multilingual=multilingual)
