r"""Fine-tune, evaluate, predict and export a sentiment classifier on GLUE SST-2.

  zoo train sst2 --data_dir=../shared/data/sst2 --model_dir=runs/sst2 \
      --export_dir=runs/sst2/export/1

DATA_DIR holds train.tsv, dev.tsv (eval) and test.tsv (predict) in the GLUE layout (columns
sentence, label; test.tsv: index, sentence). Labels: 0 = negative, 1 = positive. Without
--data_dir (or split files) the data comes from TensorFlow Datasets (glue/sst2).
"""
from zoo.cli import common

KIND = common.define_kind_flags("sst2")
main = common.main_of(KIND)
