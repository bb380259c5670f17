r"""Fine-tune, evaluate, predict and export a model on any labelled CSV, TSV, JSONL or TFDS:
one class per text (default), a score (--task_type=regression) or several classes
(--task_type=multi_label).

  python -m tasks.classify.train --train_file=tweets.csv --eval_file=tweets_dev.csv \
      --text_column=tweet --label_column=sentiment --label_map=-1:negative,0:neutral,1:positive \
      --model_dir=runs/tweets --export_dir=runs/tweets/export/1
  python -m tasks.classify.train --tfds_name=glue/mrpc --model_dir=runs/mrpc_tfds
  python -m tasks.classify.train --task_type=multi_label --noheader --quoting=csv \
      --train_file=go_emotions/train.tsv --eval_file=go_emotions/dev.tsv --text_column=0 \
      --label_column=1 --id_column=2 --label_names_file=go_emotions/emotions.txt \
      --model_dir=runs/go_emotions

Label names are learned from the training data (and renamed by --label_map or
--label_names_file); they are saved in the model dir and come back in predictions and in the
exported model's outputs.
"""
from absl import app, flags

from tasks import common
from zoo import classification, multilabel, regression
from zoo.data import sources, text_files

common.define_flags(classification.Classification.MODES, classification.Settings,
                    regression.Settings, multilabel.Settings)
common.define_file_flags()
flags.DEFINE_enum("task_type", "classification", list(common.TEXT_TASKS),
                  "classification: one class per row; regression: a number per row (--score_range"
                  "); multi_label: a list of classes per row (--label_separator, --threshold).")
flags.DEFINE_string("text_column", "text", "Column (or JSON key) of the text; a position (0, "
                    "1, ...) with --noheader.")
flags.DEFINE_string("text_b_column", None, "Column of the second text, for text pairs.")
flags.DEFINE_string("label_column", "label", "Column of the label.")
flags.DEFINE_string("id_column", None, "Column of an id to copy into the predictions.")
flags.DEFINE_string("delimiter", None,
                    "Field delimiter (default: ',' for .csv, tab for .tsv; 'tab' or '\\t' for tab).")
flags.DEFINE_bool("header", True, "Delimited files start with a header line naming the columns; "
                  "with --noheader the column flags are positions (0 is the first column).")
flags.DEFINE_enum("quoting", "auto", list(text_files.QUOTINGS),
                  "Quotes in delimited files: csv (a field in \"...\", inner quotes doubled), "
                  "none (quotes are text), auto (none for tab-separated, csv otherwise).")
flags.DEFINE_string("label_map", "",
                    "Names for raw labels, e.g. '-1:negative,0:neutral,1:positive'.")
flags.DEFINE_string("label_names_file", None, "A file whose line i names raw label i (e.g. "
                    "GoEmotions' emotions.txt); instead of --label_map.")
flags.DEFINE_string("tfds_name", None, "Read a TensorFlow Datasets dataset instead of files, "
                    "e.g. glue/mrpc (text columns of common GLUE configs are known).")
flags.DEFINE_string("tfds_data_dir", None, "TFDS data directory (default: TFDS's own).")
flags.DEFINE_string("tfds_train_split", "train", "TFDS split for training.")
flags.DEFINE_string("tfds_eval_split", "validation", "TFDS split for evaluation.")
flags.DEFINE_string("tfds_predict_split", "test", "TFDS split for prediction.")
flags.adopt_module_key_flags(common)
FLAGS = flags.FLAGS


def _label_map():
    from zoo.data.labels import label_names_file  # pylint: disable=import-outside-toplevel
    from zoo.errors import UsageError  # pylint: disable=import-outside-toplevel

    if not FLAGS.label_names_file:
        return FLAGS.label_map
    if FLAGS.label_map:
        raise UsageError("pass --label_map or --label_names_file, not both")
    return ",".join(f"{raw}:{name}" for raw, name in
                    label_names_file(FLAGS.label_names_file).items())


def main(argv):
    del argv
    from zoo.data import tfds_source  # pylint: disable=import-outside-toplevel  (imports TFDS)

    def read_split(split):
        labelled = split != "predict"
        if FLAGS.tfds_name:
            tfds_split = {"train": FLAGS.tfds_train_split, "eval": FLAGS.tfds_eval_split,
                          "predict": FLAGS.tfds_predict_split}[split]
            text_column = FLAGS.text_column if FLAGS["text_column"].present else None
            return sources.ListSource(tfds_source.read_tfds(
                FLAGS.tfds_name, tfds_split, text_column, FLAGS.text_b_column,
                FLAGS.label_column, FLAGS.id_column, FLAGS.tfds_data_dir, require_label=labelled),
                name=f"tfds:{FLAGS.tfds_name}[{tfds_split}]")
        return common.file_source(split, text_files.Columns(
            FLAGS.text_column, FLAGS.text_b_column, FLAGS.label_column, FLAGS.id_column,
            FLAGS.delimiter, FLAGS.header, FLAGS.quoting))

    pair = bool(FLAGS.text_b_column) or (
        FLAGS.tfds_name is not None
        and tfds_source.TFDS_COLUMNS.get(FLAGS.tfds_name, (None, None))[1] is not None)
    common.run_classification(read_split, pair=pair, label_map=_label_map(),
                              task=FLAGS.task_type)


if __name__ == "__main__":
    app.run(main)
