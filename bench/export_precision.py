r"""What a bf16 export (`--export_precision=bf16`) costs in accuracy: fp32 and bf16 exports of the
same trained models, scored on the dev set as TF Serving would answer.

  .venv/bin/python bench/export_precision.py --task=mrpc \
      --model_dirs=runs/intent/mrpc/head10_seed0,... >> bench/results/export_precision.jsonl

For each trained model dir (made by `bench/intent_defaults.py`; `tasks.mrpc.train` for mrpc,
`tasks.sst2.train` for sst2), the task's own `--mode=export` writes an fp32 and a bf16 export
(with the model dir's flags.txt). Each export is loaded by a fresh process that imports only
tensorflow and tensorflow_text and answers every dev row (MRPC dev: 408 pairs; SST-2 dev: 872
sentences) in requests of --batch_size rows, in file order. One JSON line per model: accuracy
(and F1 of the positive class for MRPC) of each export, the differences, how many rows change
label, the largest change of a probability, and the machine.
"""
import csv
import json
import os
import tempfile

from absl import app, flags

from common import last_json, machine, mrpc_pairs, run_script, serving_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "..", "shared", "data")
flags.DEFINE_enum("task", "mrpc", ["mrpc", "sst2"], "Which dev set and task module.")
flags.DEFINE_list("model_dirs", [], "Trained model dirs of the task.")
flags.DEFINE_integer("batch_size", 64, "Rows a request (1: one-text requests, which a bf16 "
                     "export of a few tokens answers with its small-request copy).")
flags.DEFINE_string("score_export", None, "(internal) score this export, print the JSON.")
FLAGS = flags.FLAGS


def dev_rows():
    """(inputs {name: [texts]}, gold labels as strings) of the task's dev set."""
    if FLAGS.task == "mrpc":
        pairs = mrpc_pairs(os.path.join(DATA, "mrpc", "dev.tsv"))
        return ({"text_a": [p[0] for p in pairs], "text_b": [p[1] for p in pairs]},
                [str(p[2]) for p in pairs])
    with open(os.path.join(DATA, "sst2", "dev.tsv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return {"text": [r["sentence"].strip() for r in rows]}, [r["label"] for r in rows]


def score_export(export_dir):
    """Label ids and probabilities of the export on every dev row (run in a fresh process)."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    inputs, _ = dev_rows()
    rows = len(next(iter(inputs.values())))
    labels, probabilities = [], []
    size = FLAGS.batch_size
    for start in range(0, rows, size):
        out = serve(**{k: tf.constant(v[start:start + size]) for k, v in inputs.items()})
        labels += out["label_id"].numpy().tolist()
        probabilities += out["probabilities"].numpy().tolist()
    return dict(label_ids=labels, probabilities=probabilities)


def scores(labels, gold):
    result = dict(accuracy=round(sum(a == b for a, b in zip(labels, gold)) / len(gold), 4))
    if FLAGS.task == "mrpc":
        tp = sum(a == b == "1" for a, b in zip(labels, gold))
        predicted, actual = labels.count("1"), gold.count("1")
        result["f1"] = round(2 * tp / (predicted + actual), 4)
    return result


def main(argv):
    del argv
    if FLAGS.score_export:
        print(json.dumps(score_export(FLAGS.score_export)))
        return
    _, gold = dev_rows()
    where = machine(ROOT)
    for model_dir in FLAGS.model_dirs:
        result = dict(task=FLAGS.task, model_dir=os.path.relpath(model_dir, ROOT),
                      batch_size=FLAGS.batch_size, machine=where)
        with open(os.path.join(model_dir, "labels.json"), encoding="utf-8") as f:
            raw_labels = json.load(f)["raw_labels"]  # the dev file's value of each label id
        answers = {}
        with tempfile.TemporaryDirectory(prefix="zoo-export-precision-") as work:
            for precision in ("fp32", "bf16"):
                export_dir = os.path.join(work, precision, "1")
                run_script(["-m", f"tasks.{FLAGS.task}.train",
                            f"--flagfile={os.path.join(model_dir, 'flags.txt')}", "--mode=export",
                            f"--export_dir={export_dir}", f"--export_precision={precision}"],
                           cwd=ROOT)
                answers[precision] = last_json(run_script(
                    [os.path.abspath(__file__), f"--task={FLAGS.task}",
                     f"--batch_size={FLAGS.batch_size}", f"--score_export={export_dir}"],
                    cwd=ROOT, env=serving_env()))
                answers[precision]["labels"] = [raw_labels[i]
                                                for i in answers[precision]["label_ids"]]
                result[precision] = scores(answers[precision]["labels"], gold)
        for metric in result["fp32"]:
            result[f"{metric}_bf16_minus_fp32"] = round(
                result["bf16"][metric] - result["fp32"][metric], 4)
        result["rows"] = len(gold)
        result["labels_changed"] = sum(a != b for a, b in zip(answers["fp32"]["labels"],
                                                             answers["bf16"]["labels"]))
        result["max_probability_change"] = round(max(
            abs(x - y) for p, q in zip(answers["fp32"]["probabilities"],
                                       answers["bf16"]["probabilities"])
            for x, y in zip(p, q)), 4)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    app.run(main)
