r"""The preprocessor's graphs on two commits, alternating, in one command: their size and what
each costs when TensorFlow first runs it (a trace, a load, a tf.data iterator).

  python bench/preprocessor_graph.py --base=87e86dc [--this=REV] [--repeats=3]

Each round builds the tiny model's preprocessor (BERT uncased vocabulary) in a fresh process per
tree, in alternating order (base first in even rounds), with that tree's zoo: the seconds to
trace and save it and to load it back; per function (`tokenize`, `tokenize_with_offsets`,
`bert_pack_inputs` of two segments) the nodes of its graph (nested functions included) and the
median seconds of the first call of a fresh tf.function around it; and the median seconds to
create the iterator of a SQuAD inference windows dataset (`zoo.data.squad_windows`), which
instantiates the tokenizer and the windowing graph. Prints one JSON line: per tree the runs and
medians, and the ratio of the medians (this tree over the base).
"""
import json
import os
import statistics
import time

from absl import app, flags

from common import last_json, run_script, two_commits

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_string("base", None, "The commit to compare with (a git revision).")
flags.DEFINE_string("this", None, "The commit measured against it (default: the working tree).")
flags.DEFINE_integer("repeats", 3, "Rounds; each measures once per tree.")
flags.DEFINE_string("child", None, "(internal) measure the zoo on sys.path, writing there.")
FLAGS = flags.FLAGS
CALLS = 5  # fresh tf.functions (iterators) per measure; their median is kept
TEXTS = ["The Café façade is naïve.", "Ünïcödé and more words here", ""]


def _median_seconds(fn):
    times = []
    for _ in range(CALLS):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return round(statistics.median(times), 3)


def _measure(work):
    """One tree's figures (run in a child process whose sys.path starts with that tree)."""
    import tensorflow as tf
    import zoo  # noqa: F401
    from zoo.data import squad_windows
    from zoo.hub_build import build
    from zoo.model import cores

    vocab_file, lower = build.source_checkpoint(build.TINY, None)[2:4]
    path = os.path.join(work, "preprocessor")
    began = time.perf_counter()
    build.save_preprocessor(path, vocab_file, lower)
    saved = time.perf_counter() - began
    began = time.perf_counter()
    pre = tf.saved_model.load(path)
    result = dict(zoo=os.path.dirname(os.path.dirname(zoo.__file__)),
                  save_seconds=round(saved, 2), load_seconds=round(time.perf_counter() - began, 2))
    strings = tf.constant(TEXTS)
    functions = dict(
        tokenize=pre.tokenize, tokenize_with_offsets=pre.tokenize_with_offsets,
        bert_pack_inputs=lambda s: pre.bert_pack_inputs([pre.tokenize(s)] * 2, seq_length=16))
    for name, fn in functions.items():
        traced = lambda fn=fn: tf.function(fn).get_concrete_function(  # noqa: E731
            tf.TensorSpec([None], tf.string))
        graph = traced().graph.as_graph_def()
        result[f"{name}_nodes"] = len(graph.node) + sum(len(f.node_def)
                                                        for f in graph.library.function)
        result[f"{name}_first_call_seconds"] = _median_seconds(
            lambda traced=traced: traced()(strings))
    windower = squad_windows.Windower(cores.TextPacker(path, 64), 64, 24, 24)
    rows = lambda: ((i, "Which city?", "The capital is Paris. " * 5)  # noqa: E731
                    for i in range(4))
    result["squad_iterator_seconds"] = _median_seconds(
        lambda: iter(squad_windows.inference_windows(windower, rows, 16)))
    return result


def _run(tree, work):
    """One tree's figures, measured in a fresh process with that tree's zoo."""
    return last_json(run_script([os.path.abspath(__file__), f"--child={work}"], cwd=tree,
                                env=dict(os.environ, PYTHONPATH=tree), name=f"{tree}: measuring"))


def main(argv):
    del argv
    if FLAGS.child:
        print(json.dumps(_measure(FLAGS.child)))
        return
    if not FLAGS.base:
        raise SystemExit("--base is required")
    measured_on, commits, runs = two_commits(ROOT, FLAGS.base, FLAGS.this, FLAGS.repeats, _run,
                                             "zoo-bench-pre-")
    results = dict(machine=measured_on, **commits)
    keys = [k for k in runs["this"][0] if k != "zoo"]
    for name, measured in runs.items():
        results[name] = dict(runs=measured, median={
            k: statistics.median(r[k] for r in measured) for k in keys})
    results["ratio_this_over_base"] = {
        k: round(results["this"]["median"][k] / results["base"]["median"][k], 3) for k in keys}
    print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
