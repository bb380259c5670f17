r"""LiteRT exports of a real model against its SavedModel: accuracy, size and one-text latency.

  .venv/bin/python bench/litert_export.py --tasks=mrpc,sst2     # about 25 minutes on a 2-core Xeon

The models: MiniLM (`minilm_l6_h384_uncased`) fine-tuned with the CLI's defaults on GLUE MRPC
(all of train, 3 epochs, length 128) and on the first --sst2_train_rows sentences of SST-2's
training set (one epoch, length 64), each exported at the end of training as the default fp32
SavedModel, then by `--mode=export --export_format=litert` at --litert_quantization none,
dynamic and int8 (int8 calibrated on the first 200 training rows, the default).

- **Accuracy** on the task's dev set (MRPC 408 pairs, SST-2 872 sentences) of each export, run
  through `zoo.serving` (SavedModel) and `zoo.litert` (LiteRT) in batches of 32, and the share
  of dev rows whose LiteRT label is the SavedModel's.
- **Size**: the SavedModel folder against each `.tflite` file.
- **Latency**: one text (or pair) per call over the first --latency_texts dev rows, after 20
  untimed calls, p50 and p95 in ms: the SavedModel through `zoo.serving` (fp32, and the bf16
  export where this CPU writes one: the SavedModel at its best here), and each LiteRT file
  through `zoo.litert` with 1 thread and with every core.

One JSON line per task with the machine and every figure (bench/results/litert.jsonl).
"""
import json
import os
import sys
import tempfile

from absl import app, flags

from common import latency_ms, machine, mrpc_pairs, sst2_sentences

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
DATA = os.path.join(ROOT, "..", "shared", "data")
flags.DEFINE_list("tasks", ["mrpc", "sst2"], "Tasks to run: mrpc, sst2.")
flags.DEFINE_integer("sst2_train_rows", 8000, "SST-2 training sentences (the first ones).")
flags.DEFINE_integer("latency_texts", 200, "Dev rows timed one per call.")
flags.DEFINE_string("work", "", "Folder for model dirs and exports (default: a temporary one); "
                    "what it already holds is reused.")
flags.DEFINE_string("output", os.path.join(ROOT, "bench", "results", "litert.jsonl"),
                    "JSON lines file the results are appended to.")
FLAGS = flags.FLAGS
QUANTIZATIONS = ("none", "dynamic", "int8")


def _sst2_folder(work):
    """A GLUE-layout folder: the first --sst2_train_rows training sentences, the real dev set."""
    folder = os.path.join(work, "sst2_data")
    if not os.path.exists(os.path.join(folder, "dev.tsv")):
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(DATA, "sst2", "train.tsv"), encoding="utf-8") as f, \
                open(os.path.join(folder, "train.tsv"), "w", encoding="utf-8") as out:
            for i, line in enumerate(f):
                if i > FLAGS.sst2_train_rows:
                    break
                out.write(line)
        os.symlink(os.path.abspath(os.path.join(DATA, "sst2", "dev.tsv")),
                   os.path.join(folder, "dev.tsv"))
    return folder


def _dev(task):
    """(inputs for predict, gold labels as strings) of the task's dev set."""
    if task == "mrpc":
        rows = mrpc_pairs(os.path.join(DATA, "mrpc", "dev.tsv"))
        return [(a, b) for a, b, _ in rows], [str(label) for _, _, label in rows]
    path = os.path.join(DATA, "sst2", "dev.tsv")
    with open(path, encoding="utf-8") as f:
        labels = [line.rstrip("\n").split("\t")[-1] for line in f.readlines()[1:] if line.strip()]
    return sst2_sentences(path), labels


def _exports(task, work):
    """{name: path} of the task's exports, trained and written unless `work` holds them."""
    from zoo.base.errors import UsageError
    from zoo.kinds import table
    model_dir = os.path.join(work, task)
    values = dict(model_dir=model_dir)
    if task == "mrpc":
        values.update(data_dir=os.path.join(DATA, "mrpc"))
    else:
        values.update(data_dir=_sst2_folder(work), max_seq_length=64)
    paths = dict(savedmodel_fp32=os.path.join(model_dir, "export", "1"),
                 savedmodel_bf16=os.path.join(model_dir, "export_bf16", "1"))
    if not os.path.exists(os.path.join(paths["savedmodel_fp32"], "saved_model.pb")):
        table.run(task, "train", export_dir=paths["savedmodel_fp32"],
                  num_train_epochs=3.0 if task == "mrpc" else 1.0, **values)
    for quantization in QUANTIZATIONS:
        paths[f"litert_{quantization}"] = os.path.join(model_dir, f"litert_{quantization}")
    for name, path in list(paths.items()):
        if name == "savedmodel_fp32" or os.path.exists(path):
            continue
        extra = (dict(export_precision="bf16") if name == "savedmodel_bf16" else
                 dict(export_format="litert", litert_quantization=name.split("_")[1]))
        try:
            table.run(task, "export", export_dir=path, **extra, **values)
        except UsageError:
            if name != "savedmodel_bf16":
                raise
            del paths[name]  # this CPU writes no bf16 export (it says why)
    return paths


def _size_mb(path):
    if os.path.isfile(path):
        return os.path.getsize(path) / 2 ** 20
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path)
               for f in files) / 2 ** 20


def _measure(task, paths):
    from zoo import litert, serving
    inputs, gold = _dev(task)
    reference = None
    result = {}
    for name, path in paths.items():
        models = ({"": serving.load(path)} if name.startswith("savedmodel") else
                  {"_1_thread": litert.load(path, num_threads=1),
                   "_all_threads": litert.load(path, num_threads=os.cpu_count())})
        first = next(iter(models.values()))
        rows = first.predict(inputs)
        labels = [row["label"] for row in rows]
        if reference is None:
            reference = labels
        # gold is the raw label ("0"/"1"), the model's names are mapped: compare by class id
        correct = sum(str(row["label_id"]) == g for row, g in zip(rows, gold))
        entry = dict(accuracy=correct / len(gold),
                     agreement_with_savedmodel_fp32=sum(
                         a == b for a, b in zip(labels, reference)) / len(gold),
                     size_mb=round(_size_mb(path), 2))
        for suffix, model in models.items():
            entry[f"latency{suffix}"] = latency_ms(
                lambda batch, m=model: m.predict(batch), inputs[:FLAGS.latency_texts])
        result[name] = entry
    fp32 = result["savedmodel_fp32"]["size_mb"]
    for entry in result.values():
        entry["size_over_savedmodel_fp32"] = round(entry["size_mb"] / fp32, 4)
    return dict(dev_rows=len(gold), exports=result)


def main(argv):
    del argv
    with tempfile.TemporaryDirectory(prefix="zoo-bench-litert-") as scratch:
        work = FLAGS.work or scratch
        for task in FLAGS.tasks:
            paths = _exports(task, work)
            line = dict(run="litert", task=task, machine=machine(),
                        sst2_train_rows=FLAGS.sst2_train_rows if task == "sst2" else None,
                        **_measure(task, paths))
            print(json.dumps(line))
            with open(FLAGS.output, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    app.run(main)
