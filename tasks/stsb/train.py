r"""Fine-tune, evaluate, predict and export a sentence-similarity regressor on GLUE STS-B.

  python -m tasks.stsb.train --data_dir=../shared/data/stsb --model_dir=runs/stsb \
      --export_dir=runs/stsb/export/1

DATA_DIR holds train.tsv, dev.tsv (eval) and test.tsv (predict) in the GLUE layout (columns
index, genre, filename, year, old_index, source1, source2, sentence1, sentence2, score; test.tsv
has no score). Scores go from 0 (unrelated) to 5 (equivalent); evaluation reports Pearson and
Spearman correlation, and `predict` and the export give a `score` per pair.
"""
from absl import app, flags

from tasks import common
from zoo import classification, regression
from zoo.data import glue

common.define_flags(classification.Classification.MODES, regression.Settings)
common.define_file_flags()
flags.adopt_module_key_flags(common)
FLAGS = flags.FLAGS
FLAGS.set_default("score_range", "0,5")


def main(argv):
    del argv

    stsb = glue.TASKS["stsb"]

    def read_split(split):
        return common.file_source(split, stsb.columns(split))

    common.run_classification(read_split, pair=stsb.pair, task=stsb.task_type)


if __name__ == "__main__":
    app.run(main)
