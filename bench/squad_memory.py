r"""Peak memory (RSS) of SQuAD training on a few thousand questions vs. the full train set.

  python bench/squad_memory.py      # tiny encoder; questions of ../shared/data/squad_v1

For each --questions count (the first N questions of the train file; "all" for every one), a
fresh process runs what a user runs, `tasks.squad.train --mode=train --max_train_questions=N
--max_train_steps=S`: it reads and counts the whole (limited) set, then trains S steps on
streamed windows. Peak RSS comes from the kernel (`wait4`). Prints one JSON line with each
peak and the ratio of the largest run to the first (the issue's goal: within 1.3x).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from absl import app, flags

from common import machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_string("train_file", os.path.join(ROOT, "..", "shared", "data", "squad_v1",
                                               "train-v1.1-explorer.json"), "SQuAD v1.1 train.")
flags.DEFINE_list("questions", ["5000", "20000", "all"], "Question counts; the first is the "
                  "baseline.")
flags.DEFINE_integer("train_steps", 2, "Training steps of each run.")
flags.DEFINE_integer("batch_size", 8, "Training batch size.")
flags.DEFINE_string("encoder_handle", "tiny", "Encoder of the runs.")
flags.DEFINE_string("code_dir", ROOT, "The checkout whose tasks.squad.train runs (another "
                    "commit's worktree, to measure it the same way).")
FLAGS = flags.FLAGS


def peak_rss(args, log_path):
    """Runs `python -m tasks.squad.train args`; returns (peak RSS in MB, seconds)."""
    began = time.perf_counter()
    with open(log_path, "w+", encoding="utf-8") as log:
        process = subprocess.Popen([sys.executable, "-m", "tasks.squad.train", *args],
                                   cwd=FLAGS.code_dir,
                                   stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            log.seek(0)
            raise SystemExit(f"run failed ({args}):\n{log.read()[-3000:]}")
    return usage.ru_maxrss / 1024.0, time.perf_counter() - began


def main(argv):
    del argv
    results = dict(machine=machine(FLAGS.code_dir), encoder=FLAGS.encoder_handle,
                   train_steps=FLAGS.train_steps, batch_size=FLAGS.batch_size, runs={})
    with tempfile.TemporaryDirectory(prefix="zoo-bench-squad-memory-") as work:
        for count in FLAGS.questions:
            limit = 0 if count == "all" else int(count)
            model_dir = os.path.join(work, f"model_{count}")
            rss, seconds = peak_rss(
                [f"--train_file={FLAGS.train_file}", f"--model_dir={model_dir}",
                 f"--encoder_handle={FLAGS.encoder_handle}", "--mode=train",
                 f"--max_train_questions={limit}", f"--max_train_steps={FLAGS.train_steps}",
                 f"--train_batch_size={FLAGS.batch_size}"], os.path.join(work, f"{count}.log"))
            with open(os.path.join(model_dir, "train_results.json"), encoding="utf-8") as f:
                timing = json.load(f)
            results["runs"][count] = dict(questions=timing["train_questions"],
                                          windows=timing["train_windows"],
                                          peak_rss_mb=round(rss, 1), seconds=round(seconds, 1))
    first, last = FLAGS.questions[0], FLAGS.questions[-1]
    results[f"ratio_{last}_over_{first}"] = round(
        results["runs"][last]["peak_rss_mb"] / results["runs"][first]["peak_rss_mb"], 3)
    print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
