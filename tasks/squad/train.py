r"""Fine-tune, evaluate, predict and export extractive question answering on SQuAD v1.1 JSON.

  python -m tasks.squad.train --train_file=train-v1.1.json --eval_file=dev-v1.1.json \
      --model_dir=runs/squad --export_dir=runs/squad/export/1
  python -m tasks.squad.train --mode=predict --predict_file=dev-v1.1.json --model_dir=runs/squad \
      --output_file=runs/squad/predictions.json

`predict` writes predictions.json (question id -> answer text) and, beside it,
nbest_predictions.json. `eval` writes the official SQuAD v1.1 exact match and F1 to
MODEL_DIR/eval_results.json. Files are read as streams, article by article.
"""
from absl import app, flags

from tasks import common
from zoo import squad
from zoo.data.squad import SquadFile

common.define_flags(squad.Settings, squad.Squad.MODES)
common.define_file_flags(glue_dir=False, formats="SQuAD v1.1 JSON")
flags.DEFINE_integer("max_train_questions", 0,
                     "Train on the first N questions only (0: all), e.g. to fit a time budget.")
flags.adopt_module_key_flags(common)
FLAGS = flags.FLAGS


def main(argv):
    del argv

    def read_split(split):
        return SquadFile(common.split_file(split), require_answers=split != "predict",
                         max_questions=FLAGS.max_train_questions if split == "train" else 0)

    common.run_task(squad.run, common.settings_from_flags(squad.Settings), read_split)


if __name__ == "__main__":
    app.run(main)
