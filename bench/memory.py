r"""Peak memory (RSS) of training and of prediction over 10k and 1M rows: does it stay flat?

  python bench/memory.py                  # tiny encoder, rows of ../shared/data/sst2/train.tsv

The rows are real SST-2 training sentences, repeated in order to reach each size, written as
CSV shards into --work_dir (outside the project). For each size the bench runs, each in a fresh
process: `tasks.classify.train --mode=train` for --train_steps steps (the data check reads every
row first), then `--mode=predict` over every row with the model trained on the smallest size.
Peak RSS comes from the kernel (`wait4`). Prints one JSON line with the peaks and the ratio of the
largest size to the smallest (the goal: within 1.2x).

The encoder is `tiny` by default: the model's own memory is the same at every size, and a full
1M-row prediction with MiniLM would take about an hour on 2 cores; any handle can be passed.
"""
import csv
import json
import os
import subprocess
import sys
import time

from absl import app, flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_string("sst2_train", os.path.join(ROOT, "..", "shared", "data", "sst2", "train.tsv"),
                    "SST-2 train.tsv whose rows are repeated to build the inputs.")
flags.DEFINE_string("work_dir", "/tmp/zoo_bench_memory", "Inputs, model dirs and outputs go here.")
flags.DEFINE_list("sizes", ["10000", "1000000"], "Row counts; the first is the baseline.")
flags.DEFINE_integer("shards", 8, "CSV shards per input.")
flags.DEFINE_integer("train_steps", 200, "Training steps of each training run.")
flags.DEFINE_string("encoder_handle", "tiny", "Encoder of the runs.")
flags.DEFINE_integer("max_seq_length", 64, "Sequence length of the runs.")
flags.DEFINE_integer("batch_size", 32, "Training batch size (prediction uses 64).")
FLAGS = flags.FLAGS


def write_shards(rows, size, folder, shards):
    """`size` rows (repeating `rows` in order) as `shards` CSV files; returns their glob."""
    os.makedirs(folder, exist_ok=True)
    per_shard = -(-size // shards)
    for shard in range(shards):
        path = os.path.join(folder, f"part-{shard:03d}.csv")
        if os.path.exists(path):
            continue
        with open(path + ".tmp", "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["id", "sentence", "label"])
            for i in range(shard * per_shard, min(size, (shard + 1) * per_shard)):
                sentence, label = rows[i % len(rows)]
                writer.writerow([i, sentence, label])
        os.replace(path + ".tmp", path)
    return os.path.join(folder, "part-*.csv")


def peak_rss(args):
    """Runs `python -m tasks.classify.train args`; returns (peak RSS in MB, seconds)."""
    began = time.perf_counter()
    with open(os.path.join(FLAGS.work_dir, "last_run.log"), "w", encoding="utf-8") as log:
        process = subprocess.Popen([sys.executable, "-m", "tasks.classify.train", *args],
                                   cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"run failed ({args}); see {log.name}")
    return usage.ru_maxrss / 1024.0, time.perf_counter() - began


def main(argv):
    del argv
    with open(FLAGS.sst2_train, encoding="utf-8") as f:
        rows = [(r["sentence"], r["label"]) for r in csv.DictReader(f, delimiter="\t",
                                                                    quoting=csv.QUOTE_NONE)]
    common = [f"--encoder_handle={FLAGS.encoder_handle}", "--text_column=sentence",
              "--label_column=label", "--id_column=id", f"--max_seq_length={FLAGS.max_seq_length}"]
    sizes = [int(s) for s in FLAGS.sizes]
    results = dict(encoder=FLAGS.encoder_handle, train_steps=FLAGS.train_steps,
                   shards=FLAGS.shards, train={}, predict={})
    inputs = {size: write_shards(rows, size, os.path.join(FLAGS.work_dir, f"rows_{size}"),
                                 FLAGS.shards) for size in sizes}
    model_dirs = {}
    for size in sizes:
        model_dirs[size] = os.path.join(FLAGS.work_dir, f"model_{size}_{os.getpid()}")
        rss, seconds = peak_rss(common + [
            "--mode=train", f"--model_dir={model_dirs[size]}", f"--train_file={inputs[size]}",
            f"--max_train_steps={FLAGS.train_steps}", f"--train_batch_size={FLAGS.batch_size}"])
        results["train"][size] = dict(peak_rss_mb=round(rss, 1), seconds=round(seconds, 1))
    for size in sizes:
        output = os.path.join(FLAGS.work_dir, f"predictions_{size}.csv")
        rss, seconds = peak_rss(common + [
            "--mode=predict", f"--model_dir={model_dirs[sizes[0]]}",
            f"--predict_file={inputs[size]}", f"--output_file={output}"])
        with open(output, encoding="utf-8") as f:
            written = sum(1 for _ in f) - 1
        if written != size:
            raise SystemExit(f"{output}: {written} predictions for {size} rows")
        results["predict"][size] = dict(peak_rss_mb=round(rss, 1), seconds=round(seconds, 1),
                                        rows_per_second=round(size / seconds, 1))
    for phase in ("train", "predict"):
        peaks = results[phase]
        results[f"{phase}_ratio_{sizes[-1]}_over_{sizes[0]}"] = round(
            peaks[sizes[-1]]["peak_rss_mb"] / peaks[sizes[0]]["peak_rss_mb"], 3)
    print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
