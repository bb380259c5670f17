r"""Classifier settings (issue 19): chosen on BANKING77 validation data, checked on MRPC and SST-2.

  .venv/bin/python bench/intent_defaults.py --task=banking77 --configs=old,mean,mean_lr1e-4 \
      --seeds=0 >> bench/results/intent_defaults.jsonl
  .venv/bin/python bench/intent_defaults.py --task=mrpc --configs=old,defaults --seeds=0,1,2

banking77: splits the shared BANKING77 train set (its test split is not in ../shared) into a
training part and a validation part (--validation_fraction, stratified per intent, by
--split_seed; the files go to --work_dir, never into the project) and trains
`tasks.classify.train` on the one, evaluating on the other. mrpc, stsb: `tasks.mrpc.train`,
`tasks.stsb.train` on the GLUE folder (dev set). sst2: `tasks.sst2.train` on the first
--sst2_train_rows rows of SST-2 train (dev set). For each config and seed, one JSON line: task,
config, its flags, seed, machine, metrics on the validation / dev set, training wall time. A
config is a name from CONFIGS.
"""
import csv
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
flags.DEFINE_enum("task", "banking77", ["banking77", "mrpc", "sst2", "stsb"], "Which data.")
flags.DEFINE_string("data", os.path.join(DATA, "banking77", "train.csv"),
                    "BANKING77 train.csv (text, category).")
flags.DEFINE_integer("sst2_train_rows", 10000,
                     "SST-2 training rows (the first ones); 0: the whole train set (67,349).")
flags.DEFINE_string("work_dir", os.path.join(ROOT, "runs", "intent"), "Splits and model dirs.")
flags.DEFINE_float("validation_fraction", 0.1, "Part of each intent's rows held out.")
flags.DEFINE_integer("split_seed", 0, "Seed of the split.")
flags.DEFINE_list("configs", ["old", "mean"], "Configs to run (names in CONFIGS).")
flags.DEFINE_list("seeds", ["0"], "Training seeds.")
FLAGS = flags.FLAGS

OLD = ("--pooling=cls", "--learning_rate=5e-5", "--num_train_epochs=3")
CONFIGS = {
    "old": OLD,
    "mean": ("--pooling=mean", "--learning_rate=5e-5", "--num_train_epochs=3"),
    "mean_lr1e-4": ("--pooling=mean", "--learning_rate=1e-4", "--num_train_epochs=3"),
    "defaults": (),  # the CLI's defaults as they are now
    "one_rate": ("--head_learning_rate_multiplier=1",),  # the defaults before 10 was chosen
    "head10": ("--head_learning_rate_multiplier=10",),
    "lr5e-5_head20": ("--learning_rate=5e-5", "--head_learning_rate_multiplier=20"),
    "frozen100": ("--frozen_encoder_steps=100",),
    "bf16": ("--precision=bf16",),  # the defaults, training in bf16
    "fp32": ("--precision=fp32",),  # the defaults, training in fp32 (auto is bf16 on bf16 CPUs)
}


def split(work_dir):
    """Writes train.csv and validation.csv under work_dir; returns their paths."""
    with open(FLAGS.data, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    by_intent = {}
    for row in rows:
        by_intent.setdefault(row["category"], []).append(row)
    rng = random.Random(FLAGS.split_seed)
    train, validation = [], []
    for intent in sorted(by_intent):
        group = by_intent[intent]
        rng.shuffle(group)
        held = max(1, round(len(group) * FLAGS.validation_fraction))
        validation += group[:held]
        train += group[held:]
    rng.shuffle(train)
    paths = []
    for name, part in (("train", train), ("validation", validation)):
        path = os.path.join(work_dir, f"{name}.csv")
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=["text", "category"])
            writer.writeheader()
            writer.writerows(part)
        paths.append(path)
    return paths, len(train), len(validation)


def count_rows(tsv):
    """Rows of a TSV with a header line."""
    with open(tsv, encoding="utf-8") as f:
        return sum(1 for _ in f) - 1


def data_flags(work_dir):
    """(flags naming the task's data, what to report about it) for --task."""
    if FLAGS.task in ("mrpc", "stsb"):
        return [f"tasks.{FLAGS.task}.train", f"--data_dir={os.path.join(DATA, FLAGS.task)}"], {}
    if FLAGS.task == "sst2":
        path = os.path.join(DATA, "sst2", "train.tsv")
        if FLAGS.sst2_train_rows:
            path = os.path.join(work_dir, f"sst2_train_{FLAGS.sst2_train_rows}.tsv")
            with open(os.path.join(DATA, "sst2", "train.tsv"), encoding="utf-8") as f, \
                    open(path, "w", encoding="utf-8") as out:
                out.writelines(line for _, line in zip(range(FLAGS.sst2_train_rows + 1), f))
        return ["tasks.sst2.train", f"--train_file={path}",
                f"--eval_file={os.path.join(DATA, 'sst2', 'dev.tsv')}"], dict(
                    train_rows=FLAGS.sst2_train_rows or count_rows(path))
    (train, validation), n_train, n_validation = split(work_dir)
    return (["tasks.classify.train", f"--train_file={train}", f"--eval_file={validation}",
             "--text_column=text", "--label_column=category"],
            dict(train_rows=n_train, validation_rows=n_validation,
                 split=dict(fraction=FLAGS.validation_fraction, seed=FLAGS.split_seed)))


def main(argv):
    del argv
    task_dir = FLAGS.task
    if FLAGS.task == "sst2" and not FLAGS.sst2_train_rows:
        task_dir = "sst2_full"
    work_dir = os.path.join(FLAGS.work_dir, task_dir)
    os.makedirs(work_dir, exist_ok=True)
    (module, *data), report = data_flags(work_dir)
    for name in FLAGS.configs:
        for seed in FLAGS.seeds:
            model_dir = os.path.join(work_dir, f"{name}_seed{seed}")
            command = [sys.executable, "-m", module, *data, f"--model_dir={model_dir}",
                       f"--seed={seed}", *CONFIGS[name]]
            began = time.perf_counter()
            with open(model_dir + ".log", "w", encoding="utf-8") as log:
                done = subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                      check=False)
            if done.returncode:
                raise SystemExit(f"{name} seed {seed} failed: see {model_dir}.log")
            with open(os.path.join(model_dir, "eval_results.json"), encoding="utf-8") as f:
                results = json.load(f)
            with open(os.path.join(model_dir, "train_results.json"), encoding="utf-8") as f:
                timing = json.load(f)
            with open(os.path.join(model_dir, "run.json"), encoding="utf-8") as f:
                record = json.load(f)
            print(json.dumps(dict(
                task=FLAGS.task, config=name, flags=list(CONFIGS[name]), seed=int(seed),
                machine=machine(), **report,
                run=dict(pooling=record.get("pooling"), learning_rate=record["learning_rate"],
                         head_learning_rate_multiplier=record.get(
                             "head_learning_rate_multiplier", 1.0),
                         frozen_encoder_steps=record.get("frozen_encoder_steps", 0),
                         num_train_epochs=record["num_train_epochs"]),
                validation={k: results[k] for k in ("accuracy", "f1", "f1_macro", "pearson",
                                                          "spearman", "loss")
                            if k in results},
                train_wall_seconds=round(timing.get("wall_seconds", 0.0), 1),
                command_seconds=round(time.perf_counter() - began, 1))), flush=True)


if __name__ == "__main__":
    app.run(main)
