r"""Calibrated scores on real data: ECE before and after temperature scaling on rows the
temperature was never fitted on, accuracy at 80% and 90% coverage, and whether any label moved.

  .venv/bin/python bench/calibration.py --tasks=banking77,tweets,mrpc \
      >> bench/results/calibration.jsonl

For each task, with the classifier's defaults: `--mode=train_and_eval` fits the temperature on
its eval split after training (`fit` below), then `--mode=eval` on a split it never saw
(`test`) reports the calibration as the model gives it and without the temperature
(`calibration.uncalibrated`), and the export's `label_id` is compared with the argmax of its raw
`logits` on every test row.
- banking77: the shared train set (its test split is not in ../shared) cut per intent into
  train 80%, fit 10%, test 10% (--split_seed; the files go to --work_dir, never into the
  project).
- tweets: XLM-T's English sentiment tweets: train, val (fit), test.
- mrpc: GLUE MRPC: train, dev (fit), test (labelled in ../shared).
One JSON line per task: command, machine, date, rows, temperature, before / after (ECE, MCE,
Brier, NLL), the coverage table, accuracy, labels changed.
"""
import csv
import datetime
import json
import os
import random
import subprocess
import sys
import time

from absl import app, flags

from common import machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "..", "shared", "data")
flags.DEFINE_list("tasks", ["banking77", "tweets", "mrpc"], "Which data sets.")
flags.DEFINE_string("work_dir", os.path.join(ROOT, "runs", "calibration"),
                    "Splits and model dirs.")
flags.DEFINE_integer("split_seed", 0, "Seed of the BANKING77 split.")
flags.DEFINE_list("extra", [], "Flags added to every training command.")
FLAGS = flags.FLAGS


def banking77_split(work_dir):
    """train / fit / test CSVs cut per intent from BANKING77's train set."""
    with open(os.path.join(DATA, "banking77", "train.csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    by_intent = {}
    for row in rows:
        by_intent.setdefault(row["category"], []).append(row)
    rng = random.Random(FLAGS.split_seed)
    parts = {"train": [], "fit": [], "test": []}
    for intent in sorted(by_intent):
        group = by_intent[intent]
        rng.shuffle(group)
        tenth = max(1, round(len(group) * 0.1))
        parts["fit"] += group[:tenth]
        parts["test"] += group[tenth:2 * tenth]
        parts["train"] += group[2 * tenth:]
    paths = {}
    for name, part in parts.items():
        rng.shuffle(part)
        paths[name] = os.path.join(work_dir, f"{name}.csv")
        with open(paths[name], "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=["text", "category"])
            writer.writeheader()
            writer.writerows(part)
    return paths


def task_commands(name, work_dir):
    """(training module and data flags, eval flags of the test split, test texts and columns)."""
    if name == "banking77":
        paths = banking77_split(work_dir)
        columns = ["--text_column=text", "--label_column=category"]
        return (["tasks.classify.train", f"--train_file={paths['train']}",
                 f"--eval_file={paths['fit']}", *columns],
                [f"--eval_file={paths['test']}"], (paths["test"], ",", ["text"]))
    if name == "tweets":
        folder = os.path.join(DATA, "xlmt_sentiment", "english")
        return (["tasks.classify.train", f"--train_file={folder}/train.csv",
                 f"--eval_file={folder}/val.csv", "--text_column=text", "--label_column=label"],
                [f"--eval_file={folder}/test.csv"], (f"{folder}/test.csv", ",", ["text"]))
    folder = os.path.join(DATA, "mrpc")
    return (["tasks.mrpc.train", f"--data_dir={folder}"], [f"--eval_file={folder}/test.tsv"],
            (f"{folder}/test.tsv", "\t", ["#1 String", "#2 String"]))


def zoo(module, *args):
    command = [sys.executable, "-m", module, *args]
    print("+", " ".join(command), file=sys.stderr, flush=True)
    subprocess.run(command, cwd=ROOT, check=True, stdout=sys.stderr)
    return command


def labels_changed(export_dir, path, delimiter, columns):
    """Test rows whose served label is not the argmax of the export's raw logits."""
    import tensorflow as tf  # (after the runs: this process does not train)
    import tensorflow_text  # noqa: F401  (the export's preprocessing ops)

    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f, delimiter=delimiter, quoting=csv.QUOTE_NONE
                                   if delimiter == "\t" else csv.QUOTE_MINIMAL))
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    names = ["text_a", "text_b"] if len(columns) == 2 else ["text"]
    changed = 0
    for begin in range(0, len(rows), 64):
        batch = rows[begin:begin + 64]
        out = serve(**{n: tf.constant([r[c] for r in batch]) for n, c in zip(names, columns)})
        changed += int((out["label_id"].numpy() != out["logits"].numpy().argmax(-1)).sum())
    return changed, len(rows)


def measure(name):
    work_dir = os.path.join(FLAGS.work_dir, name)
    os.makedirs(work_dir, exist_ok=True)
    (module, *data), test, (test_path, delimiter, columns) = task_commands(name, work_dir)
    model_dir = os.path.join(work_dir, "model")
    export_dir = os.path.join(model_dir, "export", "1")
    began = time.time()
    command = zoo(module, "--mode=train_and_eval", *data, f"--model_dir={model_dir}",
                  f"--export_dir={export_dir}", *FLAGS.extra)
    seconds = time.time() - began
    zoo(module, "--mode=eval", f"--model_dir={model_dir}", *test)
    with open(os.path.join(model_dir, "eval_results.json"), encoding="utf-8") as f:
        results = json.load(f)
    with open(os.path.join(model_dir, "temperature.json"), encoding="utf-8") as f:
        fitted = json.load(f)
    report = results["calibration"]
    keys = ("ece", "mce", "brier", "nll")
    changed, rows = labels_changed(export_dir, test_path, delimiter, columns)
    return dict(
        task=name, command=[c if c != sys.executable else "python" for c in command],
        eval_command=test, date=datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"), machine=machine(ROOT), train_seconds=round(seconds, 1),
        temperature=fitted["temperature"], fit_rows=fitted["rows"], test_rows=results["examples"],
        binning=report["binning"], before={k: report["uncalibrated"][k] for k in keys},
        after={k: report[k] for k in keys}, accuracy=results["accuracy"],
        coverage=report["coverage"], labels_changed=changed, labels_compared=rows)


def main(argv):
    del argv
    for name in FLAGS.tasks:
        print(json.dumps(measure(name)), flush=True)


if __name__ == "__main__":
    app.run(main)
