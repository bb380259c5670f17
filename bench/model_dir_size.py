r"""The size of a model dir after training multilingual-e5-small, with and without
`--freeze_word_embeddings`: what a user's disk holds once `zoo train` has checkpointed.

  .venv/bin/python bench/model_dir_size.py >> bench/results/multilingual.jsonl

Each setting trains --steps steps of `zoo train classify` (through `zoo.kinds.table.run`, in a
process of its own) on the English XLM-T tweets with the flags of `bench/multilingual.sh`, its
checkpoint saved at the end, into a fresh model dir; the line gives each model dir's size and
its checkpoints' share (MB of 2^20 bytes), and the frozen one's over the other's.
"""
import json
import os
import tempfile

from absl import app, flags

from common import BENCH, ROOT, last_json, machine, run_script

flags.DEFINE_string("encoder_handle", "multilingual_e5_small", "Encoder (a zoo-models name).")
flags.DEFINE_string("data_dir", os.path.join(BENCH, "..", "..", "shared", "data", "xlmt_sentiment",
                                             "english"), "XLM-T folder (train.csv is used).")
flags.DEFINE_integer("steps", 2, "Training steps.")
FLAGS = flags.FLAGS

TRAIN = """
import json, os, sys
from zoo.kinds import table
model_dir, train_file, encoder, steps, frozen = sys.argv[1:6]
table.run("classify", "train", train_file=train_file, text_column="text", label_column="label",
          label_map="0:negative,1:neutral,2:positive", encoder_handle=encoder,
          max_train_steps=int(steps), freeze_word_embeddings=frozen == "frozen",
          model_dir=model_dir)
def mb(folder):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(folder)
               for f in files) / 2 ** 20
print(json.dumps(dict(model_dir_mb=round(mb(model_dir), 1),
                      checkpoints_mb=round(mb(os.path.join(model_dir, "checkpoints")), 1))))
"""


def main(argv):
    del argv
    sizes = {}
    with tempfile.TemporaryDirectory(prefix="zoo-bench-model-dir-") as work:
        for setting in ("trained", "frozen"):
            sizes[setting] = last_json(run_script([
                "-c", TRAIN, os.path.join(work, setting),
                os.path.join(FLAGS.data_dir, "train.csv"), FLAGS.encoder_handle,
                str(FLAGS.steps), setting], cwd=ROOT))
    print(json.dumps(dict(
        run="model_dir_size", encoder_handle=FLAGS.encoder_handle, steps=FLAGS.steps,
        word_embeddings=sizes, frozen_over_trained=round(
            sizes["frozen"]["model_dir_mb"] / sizes["trained"]["model_dir_mb"], 3),
        machine=machine())))


if __name__ == "__main__":
    app.run(main)
