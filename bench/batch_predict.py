r"""Batch prediction on Beam (`zoo batch-predict`) beside the single-process ways to predict.

  .venv/bin/python bench/batch_predict.py          # needs ./install.sh beam (or test)

The rows: --rows sentences drawn (with a fixed seed) from real SST-2 training sentences, in
--shards CSV shards with an id column. The model: MiniLM with a classifier head, trained for one
step (so that `--mode=predict` has a model dir; the work is the same as for a trained head) and
exported in fp32. Each way predicts every row, in a fresh process, one after the other:
`zoo batch-predict` on Beam's local runner with 1 and with 2 worker processes, `zoo predict
classify` on the same shards, and `zoo serve-predict` on the same sentences (one per line). For
each: wall seconds from start to the last output (imports and model loading included, as a user
waits), rows/s, and the peak RSS of its largest process. One JSON line with the machine, every
way's figures and the ratios the issue names (2 workers against the best single process, 2
workers against 1).
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import time

from absl import app, flags

from common import machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZOO = [sys.executable, "-m", "zoo.cli.main"]
flags.DEFINE_string("data_dir", os.path.join(ROOT, "..", "shared", "data", "sst2"),
                    "GLUE SST-2 folder (train.tsv gives the sentences).")
flags.DEFINE_integer("rows", 100_000, "Rows to predict.")
flags.DEFINE_integer("shards", 10, "CSV shards the rows are written in.")
flags.DEFINE_string("encoder", "minilm_l6_h384_uncased", "Encoder of the model.")
flags.DEFINE_list("ways", ["beam1", "beam2", "predict", "serving"], "Which ways to run.")
FLAGS = flags.FLAGS

MEASURE = """
import json, resource, subprocess, sys, time
began = time.perf_counter()
stdin = open(sys.argv[2], "rb") if sys.argv[2] != "-" else None
stdout = open(sys.argv[3], "wb") if sys.argv[3] != "-" else subprocess.DEVNULL
done = subprocess.run(json.loads(sys.argv[1]), stdin=stdin, stdout=stdout,
                      stderr=subprocess.PIPE)
seconds = time.perf_counter() - began
if done.returncode:
    sys.exit(done.stderr.decode()[-3000:])
print(json.dumps(dict(seconds=seconds, peak_rss_mb=resource.getrusage(
    resource.RUSAGE_CHILDREN).ru_maxrss / 1024)))
"""


def _sentences(n):
    """`n` sentences drawn from SST-2's training set, and its first 64 (sentence, label)."""
    with open(os.path.join(FLAGS.data_dir, "train.tsv"), encoding="utf-8") as f:
        next(f)
        pool = [line.rstrip("\n").split("\t") for line in f]
    rng = random.Random(0)
    return [rng.choice(pool)[0].strip() for _ in range(n)], pool[:64]


def _write_rows(folder, sentences):
    os.makedirs(folder)
    for s in range(FLAGS.shards):
        with open(os.path.join(folder, f"part-{s:02d}.csv"), "w", encoding="utf-8") as f:
            f.write("id,sentence\n")
            f.writelines(f"r{i},\"{sentences[i].replace(chr(34), chr(34) * 2)}\"\n"
                         for i in range(s, len(sentences), FLAGS.shards))
    with open(os.path.join(folder, "..", "lines.txt"), "w", encoding="utf-8") as f:
        f.writelines(f"{text}\n" for text in sentences)
    return os.path.join(folder, "part-*.csv")


def _model(work, labelled):
    """A model dir trained for one step on labelled SST-2 rows, and its fp32 export."""
    model_dir, export = os.path.join(work, "model"), os.path.join(work, "export", "1")
    train = os.path.join(work, "train.tsv")
    with open(train, "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\n" + "".join(f"{s}\t{label}\n" for s, label in labelled))
    subprocess.run(ZOO + ["train", "classify", "--mode=train", f"--model_dir={model_dir}",
                          f"--encoder_handle={FLAGS.encoder}", f"--train_file={train}",
                          "--text_column=sentence", "--max_train_steps=1",
                          "--train_batch_size=8", f"--export_dir={export}"],
                   check=True, capture_output=True, cwd=ROOT)
    return model_dir, export


def _measure(command, stdin="-", stdout="-"):
    done = subprocess.run([sys.executable, "-c", MEASURE, json.dumps(command), stdin, stdout],
                          capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"{' '.join(command[:6])} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _count_lines(pattern_or_file):
    import glob
    return sum(sum(1 for _ in open(p, encoding="utf-8")) for p in glob.glob(pattern_or_file))


def _ways(work, pattern, model_dir, export):
    beam = ZOO + ["batch-predict", f"--export_dir={export}", f"--input={pattern}",
                  "--text_column=sentence", "--id_column=id"]
    return {
        "beam1": (beam + [f"--output={work}/beam1/out", "--direct_num_workers=1"],
                  f"{work}/beam1/out-0*.jsonl", 0),
        "beam2": (beam + [f"--output={work}/beam2/out", "--direct_num_workers=2"],
                  f"{work}/beam2/out-0*.jsonl", 0),
        "predict": (ZOO + ["predict", "classify", f"--model_dir={model_dir}",
                           f"--encoder_handle={FLAGS.encoder}", f"--predict_file={pattern}",
                           "--text_column=sentence", "--id_column=id",
                           f"--output_file={work}/predict.csv"], f"{work}/predict.csv", 1),
        "serving": (ZOO + ["serve-predict", export], f"{work}/serving.jsonl", 0),
    }


def main(argv):
    del argv
    sentences, labelled = _sentences(FLAGS.rows)
    results = {}
    with tempfile.TemporaryDirectory(prefix="zoo-bench-batch-") as work:
        pattern = _write_rows(os.path.join(work, "rows"), sentences)
        model_dir, export = _model(work, labelled)
        for way, (command, outputs, header) in _ways(work, pattern, model_dir, export).items():
            if way not in FLAGS.ways:
                continue
            serving = way == "serving"
            figures = _measure(command, os.path.join(work, "lines.txt") if serving else "-",
                               outputs if serving else "-")
            rows = _count_lines(outputs) - header
            assert rows == FLAGS.rows, (way, rows)
            figures["rows_per_second"] = rows / figures["seconds"]
            results[way] = figures
            print(way, json.dumps(figures), file=sys.stderr)
    single = max(results[w]["rows_per_second"] for w in ("predict", "serving") if w in results)
    line = dict(benchmark="batch_predict", date=time.strftime("%Y-%m-%d"), machine=machine(),
                rows=FLAGS.rows, shards=FLAGS.shards, encoder=FLAGS.encoder, results=results)
    if "beam2" in results:
        line["beam2_over_best_single_process"] = results["beam2"]["rows_per_second"] / single
    if "beam1" in results and "beam2" in results:
        line["beam2_over_beam1"] = (results["beam2"]["rows_per_second"]
                                    / results["beam1"]["rows_per_second"])
    print(json.dumps(line))


if __name__ == "__main__":
    app.run(main)
