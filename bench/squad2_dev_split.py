r"""Splits the SQuAD 2.0 dev set by article into a training half and an evaluation half.

  .venv/bin/python bench/squad2_dev_split.py --out_dir=runs/squad2_split

No SQuAD 2.0 training set is available offline, and unanswerable copies made from SQuAD v1.1
(`--unanswerable_fraction`) are unlike SQuAD 2.0's own unanswerable questions. This writes
`train.json` (the articles at even positions of the dev file: 0, 2, 4, ...) and `eval.json` (odd
positions), each a SQuAD 2.0 file (`--eval_every=N`: every Nth article to eval.json), so a model
can learn from real unanswerable questions and be evaluated on articles it never saw. Prints one
JSON line: articles and questions (and unanswerable ones) per half. The files go to --out_dir,
never into the project.
"""
import json
import os

from absl import app, flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_string("dev_file", os.path.join(ROOT, "..", "shared", "data", "squad_v2",
                                             "dev-v2.0-rebuilt.json"), "SQuAD 2.0 dev file.")
flags.DEFINE_integer("eval_every", 2, "Every Nth article goes to eval.json, the others to "
                     "train.json (2: halves).")
flags.DEFINE_string("out_dir", os.path.join(ROOT, "runs", "squad2_split"), "Where to write.")
FLAGS = flags.FLAGS


def _counts(articles):
    questions = [qa for a in articles for p in a["paragraphs"] for qa in p["qas"]]
    return dict(articles=len(articles), questions=len(questions),
                unanswerable=sum(bool(qa.get("is_impossible")) for qa in questions))


def main(argv):
    del argv
    with open(FLAGS.dev_file, encoding="utf-8") as f:
        dev = json.load(f)
    every = FLAGS.eval_every
    halves = dict(train=[a for i, a in enumerate(dev["data"]) if i % every != every - 1],
                  eval=[a for i, a in enumerate(dev["data"]) if i % every == every - 1])
    os.makedirs(FLAGS.out_dir, exist_ok=True)
    for name, articles in halves.items():
        with open(os.path.join(FLAGS.out_dir, f"{name}.json"), "w", encoding="utf-8") as f:
            json.dump(dict(version=dev.get("version", "v2.0"), data=articles), f)
    print(json.dumps(dict(dev_file=os.path.abspath(FLAGS.dev_file),
                          **{name: _counts(a) for name, a in halves.items()})))


if __name__ == "__main__":
    app.run(main)
