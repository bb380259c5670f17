r"""The same training command on two commits, alternating, in one command: is the new code slower?

  python bench/commits_ab.py --base=5ce1382 -- tasks.squad.train --mode=train \
      --train_file=../shared/data/squad_v1/train-v1.1-explorer.json --max_train_questions=400 \
      --max_train_steps=9 --train_batch_size=32

The base commit (and --this, if given) is checked out into a temporary git worktree; each of
--repeats rounds runs the command (a `python -m` module and its flags, after `--`) once in each
tree, in alternating order
(base first in even rounds), each in a fresh process with a fresh --model_dir, with the same
Python and installed packages. Each tree has a model cache of its own (`ZOO_CACHE_DIR`: a
commit may write another build format of the models the command names) and first makes
--warmup_runs untimed runs, which build them. From each run's train_results.json: the steady
training rate (examples, i.e. windows for SQuAD, per second without the first call) and the
first call's seconds, and the whole command's seconds (process start to exit); from its
eval_results.json (a train_and_eval run), the last evaluation's numbers.
Prints one JSON line: per tree the runs, median and spread, and the ratio of the medians (this
tree over the base).
"""
import json
import os
import statistics
import tempfile
import time

from absl import app, flags

from common import run_script, two_commits

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_string("base", None, "The commit to compare with (a git revision).")
flags.DEFINE_string("this", None, "The commit measured against it (default: the working tree "
                    "as it is; a revision gets its own worktree, so edits cannot reach a run).")
flags.DEFINE_integer("repeats", 3, "Rounds; each runs the command once per tree.")
flags.DEFINE_integer("warmup_runs", 1, "Untimed runs of the command per tree before its first "
                     "timed one.")
flags.mark_flag_as_required("base")
FLAGS = flags.FLAGS


def timed_run(tree, module, args, model_dir, env):
    began = time.perf_counter()
    run_script(["-m", module, *args, f"--model_dir={model_dir}"], cwd=tree, env=env,
               name=f"{tree}: the run")
    seconds = time.perf_counter() - began
    with open(os.path.join(model_dir, "train_results.json"), encoding="utf-8") as f:
        timing = json.load(f)
    evaluated = {}
    if os.path.exists(os.path.join(model_dir, "eval_results.json")):
        with open(os.path.join(model_dir, "eval_results.json"), encoding="utf-8") as f:
            evaluated = {k: round(v, 4) for k, v in json.load(f).items()
                         if isinstance(v, float)}
    return dict(steady_examples_per_second=round(timing["steady_examples_per_second"], 3),
                first_call_seconds=round(timing["first_call_seconds"], 1),
                seconds=round(seconds, 1),
                precision=timing["precision"], xla_fusion=timing["xla_fusion"], eval=evaluated)


def main(argv):
    if len(argv) < 2:
        raise SystemExit("give the command after --: MODULE FLAGS...")
    module, args = argv[1], argv[2:]
    envs = {}  # {tree: its runs' environment}

    def measure(tree, model_dir):
        if tree not in envs:  # the tree's first run
            envs[tree] = dict(os.environ, ZOO_CACHE_DIR=os.path.join(caches, str(len(envs))))
            for i in range(FLAGS.warmup_runs):
                timed_run(tree, module, args, f"{model_dir}_warmup{i}", envs[tree])
        return timed_run(tree, module, args, model_dir, envs[tree])

    with tempfile.TemporaryDirectory(prefix="zoo-bench-ab-caches-") as caches:
        measured_on, commits, runs = two_commits(ROOT, FLAGS.base, FLAGS.this, FLAGS.repeats,
                                                 measure, "zoo-bench-ab-")
    results = dict(machine=measured_on, **commits, command=[module, *args],
                   warmup_runs=FLAGS.warmup_runs)
    for name, measured in runs.items():
        rates = [r["steady_examples_per_second"] for r in measured]
        seconds = [r["seconds"] for r in measured]
        results[name] = dict(runs=measured, median=statistics.median(rates),
                             spread=[min(rates), max(rates)],
                             median_seconds=statistics.median(seconds))
    results["ratio_this_over_base"] = round(results["this"]["median"]
                                            / results["base"]["median"], 3)
    print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
