r"""SQuAD v1.1 training throughput (windows, i.e. features, per second at length 384), beside the peer.

  python bench/squad_throughput.py

First the peer, `bench/peer_squad.py` (transformers `BertForQuestionAnswering`, same checkpoint,
questions, batch size and length) in a subprocess (--peer=false skips it). Then zoo's own
training path (`zoo.squad.run`, what `tasks.squad.train` runs, at --precision and --xla_fusion)
for --steps steps on the first --questions questions of the train file. Each side's first steps
(zoo: the first call, which traces and compiles; the peer: --warmup_steps) are not timed. Prints
one JSON line.
"""
import json
import os
import shutil
import tempfile

from absl import app, flags

from common import run_peer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_string("train_file", os.path.join(ROOT, "..", "shared", "data", "squad_v1",
                                               "train-v1.1-explorer.json"), "SQuAD v1.1 train.")
flags.DEFINE_integer("questions", 400, "Questions used (the first ones of the file).")
flags.DEFINE_integer("batch_size", 32, "Training batch size (windows).")
flags.DEFINE_integer("steps", 8, "Timed training steps per side.")
flags.DEFINE_enum("precision", "auto", ["auto", "bf16", "fp32"], "zoo's precision.")
flags.DEFINE_enum("xla_fusion", "auto", ["auto", "on", "off"],
                  "zoo's XLA fusion (zoo.fusion; auto: on, SQuAD windows are one shape).")
flags.DEFINE_bool("peer", True, "Run the PyTorch peer first (needs ./install.sh bench).")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    peer = None
    if FLAGS.peer:
        peer = run_peer("peer_squad.py", train_file=FLAGS.train_file, questions=FLAGS.questions,
                        batch_size=FLAGS.batch_size, steps=FLAGS.steps)
    from zoo import squad  # pylint: disable=import-outside-toplevel
    from zoo.data.squad import SquadFile  # pylint: disable=import-outside-toplevel

    source = SquadFile(FLAGS.train_file, max_questions=FLAGS.questions)
    model_dir = tempfile.mkdtemp(prefix="zoo-bench-squad-")
    try:
        settings = squad.Settings(model_dir=model_dir, train_batch_size=FLAGS.batch_size,
                                  max_train_steps=FLAGS.steps + 1, num_train_epochs=1,
                                  precision=FLAGS.precision, xla_fusion=FLAGS.xla_fusion)
        squad.run("train", settings, lambda split: source)
        with open(os.path.join(model_dir, "train_results.json"), encoding="utf-8") as f:
            timing = json.load(f)
    finally:
        shutil.rmtree(model_dir, ignore_errors=True)
    results = dict(questions=timing["train_questions"], windows=timing["train_windows"],
                   batch_size=FLAGS.batch_size, max_seq_length=timing["max_seq_length"],
                   precision=timing["precision"], xla_fusion=timing["xla_fusion"],
                   first_call_seconds=round(timing["first_call_seconds"], 1),
                   timed_steps=timing["steps"] - timing["first_call_steps"],
                   windows_per_second=round(timing["steady_examples_per_second"], 3))
    if peer:
        results["peer"] = peer
        results["ratio_zoo_over_peer"] = round(
            results["windows_per_second"] / peer["windows_per_second"], 3)
    print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
