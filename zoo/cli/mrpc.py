r"""Fine-tune, evaluate, predict and export a paraphrase classifier on GLUE MRPC.

  zoo train mrpc --data_dir=../shared/data/mrpc --model_dir=runs/mrpc \
      --export_dir=runs/mrpc/export/1

DATA_DIR holds train.tsv, dev.tsv (eval) and test.tsv (predict) in the GLUE layout (columns
Quality, #1 ID, #2 ID, #1 String, #2 String). Labels: 0 = not a paraphrase, 1 = paraphrase.
Without --data_dir (or split files) the data comes from TensorFlow Datasets (glue/mrpc).
"""
from zoo.cli import common

KIND = common.define_kind_flags("mrpc")
main = common.main_of(KIND)
