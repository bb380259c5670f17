r"""Fine-tune, evaluate, predict and export a sentiment classifier on GLUE SST-2.

  python -m tasks.sst2.train --data_dir=../shared/data/sst2 --model_dir=runs/sst2 \
      --export_dir=runs/sst2/export/1

DATA_DIR holds train.tsv, dev.tsv (eval) and test.tsv (predict) in the GLUE layout (columns
sentence, label; test.tsv: index, sentence). Labels: 0 = negative, 1 = positive. Without
--data_dir (or split files) the data comes from TensorFlow Datasets (glue/sst2).
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

    sst2 = glue.TASKS["sst2"]

    def read_split(split):
        return common.glue_source(split, sst2.columns(split), "glue/sst2")

    common.run_classification(read_split, pair=sst2.pair, label_map=sst2.label_map)


if __name__ == "__main__":
    app.run(main)
