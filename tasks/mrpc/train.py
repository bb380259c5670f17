r"""Fine-tune, evaluate, predict and export a paraphrase classifier on GLUE MRPC.

  python -m tasks.mrpc.train --data_dir=../shared/data/mrpc --model_dir=runs/mrpc \
      --export_dir=runs/mrpc/export/1

DATA_DIR holds train.tsv, dev.tsv (eval) and test.tsv (predict) in the GLUE layout (columns
Quality, #1 ID, #2 ID, #1 String, #2 String). Labels: 0 = not a paraphrase, 1 = paraphrase.
Without --data_dir (or split files) the data comes from TensorFlow Datasets (glue/mrpc).
"""
from absl import app, flags

from tasks import common
from zoo import classification
from zoo.data import glue

common.define_flags(classification.Classification.MODES, classification.Settings)
common.define_file_flags()
flags.adopt_module_key_flags(common)


def main(argv):
    del argv

    mrpc = glue.TASKS["mrpc"]

    def read_split(split):
        return common.glue_source(split, mrpc.columns(split), "glue/mrpc")

    common.run_classification(read_split, pair=mrpc.pair, label_map=mrpc.label_map)


if __name__ == "__main__":
    app.run(main)
