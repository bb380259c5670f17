r"""Collects what bench/real_tasks.sh left in runs/: one JSON line per run.

  .venv/bin/python bench/real_tasks.py [--runs=runs] > bench/results/real_tasks.jsonl

Each line: the run's name, the machine, its training time and rate (train_results.json), its
metrics on each evaluated split (eval_results_<split>.json, or eval_results.json), the export
check (export_vs_predict.py's line) and, for SQuAD 2.0, the always-no-answer floor. Runs that
are not there are left out.
"""
import glob
import json
import os

from absl import app, flags

from common import machine, result_json as _json

flags.DEFINE_string("runs", os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "runs"), "The folder bench/real_tasks.sh wrote to.")
FLAGS = flags.FLAGS
NAMES = ("stsb_cls", "stsb_mean", "ner", "wnut", "go_emotions", "squad2", "squad2_dev",
         "mt_single_mrpc", "mt_single_sst2", "mt_joint")
TIMING = ("wall_seconds", "steps", "steps_per_task", "examples_per_second", "precision",
          "xla_fusion", "max_seq_length", "batch_size")
DROP = ("confusion_matrix", "f1_per_label", "label_names", "per_type")


def _metrics(results):
    kept = {k: v for k, v in results.items() if k not in DROP}
    if "per_type" in results:  # tagging: F1 per entity type
        kept["f1_per_type"] = {t: round(v["f1"], 4) for t, v in results["per_type"].items()}
    return kept


def main(argv):
    del argv
    for name in NAMES:
        folder = os.path.join(FLAGS.runs, name)
        if not os.path.isdir(folder):
            continue
        line = dict(run=name, machine=machine())
        timing = _json(os.path.join(folder, "train_results.json")) or {}
        line["training"] = {k: timing[k] for k in TIMING if k in timing}
        splits = sorted(glob.glob(os.path.join(folder, "eval_results_*.json")))
        for path in splits or [os.path.join(folder, "eval_results.json")]:
            split = os.path.basename(path)[len("eval_results_"):-len(".json")] or "eval"
            results = _json(path)
            if results:
                line[f"eval_{split}"] = _metrics(results)
        check = _json(os.path.join(FLAGS.runs, f"{name}.export_check.json"))
        if check:
            line["export_check"] = {k: check[k] for k in ("compared", "differ")}
        floor = _json(os.path.join(FLAGS.runs, f"{name}_floor.json"))
        if floor:
            line["always_no_answer"] = {k: v for k, v in floor.items() if k != "eval_file"}
        print(json.dumps(line))


if __name__ == "__main__":
    app.run(main)
