r"""Fine-tune, evaluate, predict and export a classifier on any labelled CSV, TSV, JSONL or TFDS.

  python -m tasks.classify.train --train_file=tweets.csv --eval_file=tweets_dev.csv \
      --text_column=tweet --label_column=sentiment --label_map=-1:negative,0:neutral,1:positive \
      --model_dir=runs/tweets --export_dir=runs/tweets/export/1
  python -m tasks.classify.train --tfds_name=glue/mrpc --model_dir=runs/mrpc_tfds

Label names are learned from the training data (and renamed by --label_map); they are saved in
the model dir and come back in predictions and in the exported model's `label` output.
"""
from absl import app, flags

from tasks import common
from zoo import classification
from zoo.data import sources, text_files

common.define_flags(classification.Settings, classification.Classification.MODES)
common.define_file_flags()
flags.DEFINE_string("text_column", "text", "Column (or JSON key) of the text.")
flags.DEFINE_string("text_b_column", None, "Column of the second text, for text pairs.")
flags.DEFINE_string("label_column", "label", "Column of the label.")
flags.DEFINE_string("id_column", None, "Column of an id to copy into the predictions.")
flags.DEFINE_string("delimiter", None,
                    "Field delimiter (default: ',' for .csv, tab for .tsv; 'tab' or '\\t' for tab).")
flags.DEFINE_string("label_map", "",
                    "Names for raw labels, e.g. '-1:negative,0:neutral,1:positive'.")
flags.DEFINE_string("tfds_name", None, "Read a TensorFlow Datasets dataset instead of files, "
                    "e.g. glue/mrpc (text columns of common GLUE configs are known).")
flags.DEFINE_string("tfds_data_dir", None, "TFDS data directory (default: TFDS's own).")
flags.DEFINE_string("tfds_train_split", "train", "TFDS split for training.")
flags.DEFINE_string("tfds_eval_split", "validation", "TFDS split for evaluation.")
flags.DEFINE_string("tfds_predict_split", "test", "TFDS split for prediction.")
flags.adopt_module_key_flags(common)
FLAGS = flags.FLAGS


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
            FLAGS.delimiter))

    pair = bool(FLAGS.text_b_column) or (
        FLAGS.tfds_name is not None
        and tfds_source.TFDS_COLUMNS.get(FLAGS.tfds_name, (None, None))[1] is not None)
    common.run_classification(read_split, pair=pair, label_map=FLAGS.label_map)


if __name__ == "__main__":
    app.run(main)
