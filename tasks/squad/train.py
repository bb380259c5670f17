r"""Fine-tune, evaluate, predict and export extractive question answering on SQuAD v1.1 or 2.0
JSON.

  python -m tasks.squad.train --train_file=train-v1.1.json --eval_file=dev-v1.1.json \
      --model_dir=runs/squad --export_dir=runs/squad/export/1
  python -m tasks.squad.train --version_2_with_negative --train_file=train-v1.1.json \
      --unanswerable_fraction=0.5 --eval_file=dev-v2.0.json --model_dir=runs/squad2
  python -m tasks.squad.train --mode=predict --predict_file=dev-v1.1.json --model_dir=runs/squad \
      --output_file=runs/squad/predictions.json

`predict` writes predictions.json (question id -> answer text) and, beside it,
nbest_predictions.json. `eval` writes the official SQuAD v1.1 exact match and F1 to
MODEL_DIR/eval_results.json. Files are read as streams, article by article.
"""
from absl import app, flags

from tasks import common
from zoo import squad
from zoo.data.squad import SquadFile, WithUnanswerable
from zoo.errors import UsageError

common.define_flags(squad.Squad.MODES, squad.Settings)
common.define_file_flags(glue_dir=False, formats="SQuAD v1.1 JSON")
flags.DEFINE_integer("max_train_questions", 0,
                     "Train on the first N questions only (0: all), e.g. to fit a time budget.")
flags.DEFINE_float("unanswerable_fraction", 0.0,
                   "SQuAD 2.0 from SQuAD 1.1 training data: copy this fraction of the training "
                   "questions as unanswerable, each paired with another paragraph of its "
                   "article that holds none of its answers (needs --version_2_with_negative).")
flags.adopt_module_key_flags(common)
FLAGS = flags.FLAGS


def main(argv):
    del argv

    version_2 = FLAGS.version_2_with_negative

    def read_split(split):
        if FLAGS.unanswerable_fraction and not version_2:  # (inside the run: a one-line error)
            raise UsageError("--unanswerable_fraction needs --version_2_with_negative")
        source = SquadFile(common.split_file(split), require_answers=split != "predict",
                           max_questions=FLAGS.max_train_questions if split == "train" else 0,
                           version_2=version_2)
        if split == "train" and FLAGS.unanswerable_fraction:
            source = WithUnanswerable(source, FLAGS.unanswerable_fraction, FLAGS.seed)
        return source

    common.run_task(squad.run, common.settings_from_flags(squad.Settings), read_split)


if __name__ == "__main__":
    app.run(main)
