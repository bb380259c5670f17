r"""Does a trained model's export give what `--mode=predict` gives? On its first N examples.

  .venv/bin/python bench/export_vs_predict.py --kind=tagging --model_dir=runs/ner \
      --data=../shared/data/conll2003/iob2/valid.txt -- tasks.tagging.train
  .venv/bin/python bench/export_vs_predict.py --kind=regression --model_dir=runs/stsb \
      --data=../shared/data/stsb/dev.tsv -- tasks.stsb.train
  .venv/bin/python bench/export_vs_predict.py --kind=multi_label --model_dir=runs/go_emotions \
      --data=../shared/data/go_emotions/dev.tsv -- tasks.classify.train --task_type=multi_label \
      --noheader --quoting=csv --text_column=0 --label_column=1 --id_column=2
  .venv/bin/python bench/export_vs_predict.py --kind=squad --model_dir=runs/squad2 \
      --data=../shared/data/squad_v2/dev-v2.0-rebuilt.json -- tasks.squad.train \
      --version_2_with_negative

The first `--examples` examples of `--data` (rows of a TSV, sentences of a CoNLL file, questions
of a SQuAD file) are written to a temporary file; the task (the module and flags after `--`)
predicts them with `--mode=predict`, and the export (`--export_dir`, default
MODEL_DIR/export/1) is loaded in a fresh process that imports only tensorflow and
tensorflow_text and is given the same raw texts. Prints one JSON line: how many examples were
compared and how many differ (a score or probability by more than `--tolerance`, a label, tag
or answer at all), with the first differences. Exits 1 if any differ.
"""
import csv
import json
import os
import sys
import tempfile

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import last_json, machine, run_script, serving_env  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = ("classification", "regression", "multi_label", "tagging", "squad")
flags.DEFINE_enum("kind", None, KINDS, "What the model predicts.")
flags.DEFINE_string("model_dir", None, "The trained model dir.")
flags.DEFINE_string("export_dir", None, "Its export (default MODEL_DIR/export/1).")
flags.DEFINE_string("data", None, "A labelled file of the task (dev): TSV/CSV, CoNLL or SQuAD.")
flags.DEFINE_integer("examples", 100, "How many examples, from the start of --data.")
flags.DEFINE_bool("header", True, "Delimited --data starts with a header line.")
flags.DEFINE_string("text_column", "sentence1", "Delimited --data: column of the text (a "
                    "position with --noheader).")
flags.DEFINE_string("text_b_column", None, "Delimited --data: column of the second text.")
flags.DEFINE_float("tolerance", 1e-3, "Largest difference of a score or probability.")
flags.mark_flags_as_required(["kind", "model_dir", "data"])
FLAGS = flags.FLAGS

# The export's side: only tensorflow and tensorflow_text, as TF Serving has.
SERVE = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401
fn = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
inputs = json.load(open(sys.argv[2]))
out = fn(**{k: tf.constant(v) for k, v in inputs.items()})
def plain(t):
    t = t.numpy()
    if t.dtype.kind in "SO":  # UTF-8 bytes (numpy's astype(str) would read them as ASCII)
        return np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(t).tolist()
    return t.tolist()
print(json.dumps({k: plain(v) for k, v in out.items()}))
assert "zoo" not in sys.modules and "tf_keras" not in sys.modules
"""


def _first_rows(work):
    """The header (if any) and first N rows of a delimited file, written to `work`."""
    delimiter = "\t" if FLAGS.data.endswith(".tsv") else ","
    quoting = csv.QUOTE_NONE if delimiter == "\t" and FLAGS.header else csv.QUOTE_MINIMAL
    with open(FLAGS.data, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter=delimiter, quoting=quoting)
        header = next(reader) if FLAGS.header else None
        rows = [row for _, row in zip(range(FLAGS.examples), reader)]
    path = os.path.join(work, "first" + os.path.splitext(FLAGS.data)[1])
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter=delimiter, quoting=quoting, lineterminator="\n",
                            escapechar="\\" if quoting == csv.QUOTE_NONE else None)
        if header:
            writer.writerow(header)
        writer.writerows(rows)

    def column(name):
        return [row[int(name) if header is None else header.index(name)] for row in rows]

    texts = dict(text=column(FLAGS.text_column))
    if FLAGS.text_b_column:
        texts = dict(text_a=texts["text"], text_b=column(FLAGS.text_b_column))
    return path, texts


def _first_sentences(work):
    sentences, current = [], []
    with open(FLAGS.data, encoding="utf-8") as f:
        for line in f:
            if line.startswith("-DOCSTART-"):
                continue
            if not line.strip():
                if current:
                    sentences.append(current)
                    current = []
                if len(sentences) == FLAGS.examples:
                    break
                continue
            current.append(line.split()[0])
    if current and len(sentences) < FLAGS.examples:
        sentences.append(current)
    path = os.path.join(work, "first.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines("".join(f"{t}\n" for t in s) + "\n" for s in sentences)
    return path, sentences


def _first_questions(work):
    with open(FLAGS.data, encoding="utf-8") as f:
        data = json.load(f)
    kept, qas = [], []
    for article in data["data"]:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            take = paragraph["qas"][:FLAGS.examples - len(qas)]
            if take:
                paragraphs.append(dict(paragraph, qas=take))
                qas += [(qa, paragraph["context"]) for qa in take]
        if paragraphs:
            kept.append(dict(article, paragraphs=paragraphs))
        if len(qas) == FLAGS.examples:
            break
    path = os.path.join(work, "first.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dict(data, data=kept), f)
    return path, qas


def _serve(work, export_dir, inputs):
    path = os.path.join(work, "inputs.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(inputs, f)
    return last_json(run_script(["-c", SERVE, export_dir, path], env=serving_env(),
                                name="the export"))


def _predict(module, args, data, output):
    run_script(["-m", module, *args, "--mode=predict", f"--model_dir={FLAGS.model_dir}",
                f"--predict_file={data}", f"--output_file={output}"], cwd=ROOT, name="predict")


def _compare(work, module, args, export_dir):
    """[(example, what predict gave, what the export gave)] of the examples that differ, and
    how many were compared."""
    close = lambda a, b: abs(a - b) <= FLAGS.tolerance  # noqa: E731
    if FLAGS.kind == "tagging":
        data, sentences = _first_sentences(work)
        output = os.path.join(work, "tags.txt")
        _predict(module, args, data, output)
        with open(output, encoding="utf-8") as f:
            predicted = [[line.split("\t")[1] for line in block.split("\n")]
                         for block in f.read().strip("\n").split("\n\n")]
        served = _serve(work, export_dir, dict(text=[" ".join(s) for s in sentences]))
        differ = []
        for i, (tokens, tags) in enumerate(zip(sentences, predicted)):
            by_start = dict(zip(served["word_start"][i], served["tags"][i]))
            starts = [sum(len(t) + 1 for t in tokens[:k]) for k in range(len(tokens))]
            # a token that gives no word (a lone accent) has no word in the export; predict
            # tags it O
            exported = [by_start.get(s, "O") for s in starts]
            if exported != tags:
                differ.append((i, tags, exported))
        return differ, len(sentences)
    if FLAGS.kind == "squad":
        data, qas = _first_questions(work)
        output = os.path.join(work, "predictions.json")
        _predict(module, args, data, output)
        with open(output, encoding="utf-8") as f:
            predicted = json.load(f)
        served = _serve(work, export_dir, dict(question=[qa["question"] for qa, _ in qas],
                                               context=[c for _, c in qas]))
        differ = [(qa["id"], predicted[qa["id"]], answer)
                  for (qa, _), answer in zip(qas, served["answer"])
                  if predicted[qa["id"]] != answer]
        return differ, len(qas)
    data, texts = _first_rows(work)
    output = os.path.join(work, "predictions.jsonl")
    _predict(module, args, data, output)
    with open(output, encoding="utf-8") as f:
        predicted = [json.loads(line) for line in f]
    served = _serve(work, export_dir, texts)
    differ = []
    for i, row in enumerate(predicted):
        if FLAGS.kind == "regression":
            same = close(row["score"], served["score"][i])
        elif FLAGS.kind == "multi_label":
            names = list(row["probabilities"])
            same = (",".join(row["labels"]) == served["labels"][i] and all(
                close(row["probabilities"][n], p) for n, p in zip(names,
                                                                   served["probabilities"][i])))
        else:
            same = row["label"] == served["label"][i] and close(
                row["score"], max(served["probabilities"][i]))
        if not same:
            differ.append((i, row, {k: v[i] for k, v in served.items()}))
    return differ, len(predicted)


def main(argv):
    if len(argv) < 2:
        raise SystemExit("give the task after --: MODULE FLAGS...")
    module, args = argv[1], argv[2:]
    export_dir = FLAGS.export_dir or os.path.join(FLAGS.model_dir, "export", "1")
    with tempfile.TemporaryDirectory(prefix="zoo-export-check-") as work:
        differ, compared = _compare(work, module, args, export_dir)
    print(json.dumps(dict(machine=machine(), kind=FLAGS.kind, model_dir=FLAGS.model_dir,
                          export_dir=export_dir, data=FLAGS.data, compared=compared,
                          differ=len(differ), first_differences=differ[:5]), default=str))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    app.run(main)
