r"""Fine-tune, evaluate, predict and export extractive question answering on SQuAD v1.1 JSON.

  python -m tasks.squad.train --train_file=train-v1.1.json --eval_file=dev-v1.1.json \
      --model_dir=runs/squad --export_dir=runs/squad/export/1
  python -m tasks.squad.train --mode=predict --predict_file=dev-v1.1.json --model_dir=runs/squad \
      --output_file=runs/squad/predictions.json

`predict` writes predictions.json (question id -> answer text) and, beside it,
nbest_predictions.json. `eval` writes the official SQuAD v1.1 exact match and F1 to
MODEL_DIR/eval_results.json.
"""
from absl import app, flags

from tasks import common

flags.DEFINE_integer("doc_stride", 128,
                     "Step, in tokens, between the starts of consecutive context windows (the "
                     "step, as in Google's BERT; not the overlap, as Hugging Face's `stride`).")
flags.DEFINE_integer("max_query_length", 64, "Question tokens kept (longer questions are cut).")
flags.DEFINE_integer("n_best_size", 20, "Start and end candidates considered per window.")
flags.DEFINE_integer("max_answer_length", 30, "Longest answer, in tokens.")
flags.DEFINE_integer("max_train_questions", 0,
                     "Train on the first N questions only (0: all), e.g. to fit a time budget.")
FLAGS = flags.FLAGS
FLAGS.set_default("max_seq_length", 384)
FLAGS.set_default("num_train_epochs", 2)


def main(argv):
    del argv
    from zoo import squad  # pylint: disable=import-outside-toplevel
    from zoo.data.squad import read_squad  # pylint: disable=import-outside-toplevel
    from zoo.errors import UsageError  # pylint: disable=import-outside-toplevel

    def read_split(split):
        path = {"train": FLAGS.train_file, "eval": FLAGS.eval_file,
                "predict": FLAGS.predict_file}[split]
        if not path:
            raise UsageError(f"no {split} data: pass --{split}_file")
        examples = read_squad(path, require_answers=split != "predict")
        if split == "train" and FLAGS.max_train_questions:
            examples = examples[:FLAGS.max_train_questions]
        return examples

    settings = squad.Settings(**common.settings_kwargs(), doc_stride=FLAGS.doc_stride,
                              max_query_length=FLAGS.max_query_length,
                              n_best_size=FLAGS.n_best_size,
                              max_answer_length=FLAGS.max_answer_length)
    common.run_task(squad.run, settings, read_split)


if __name__ == "__main__":
    app.run(main)
