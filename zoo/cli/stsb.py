r"""Fine-tune, evaluate, predict and export a sentence-similarity regressor on GLUE STS-B.

  zoo train stsb --data_dir=../shared/data/stsb --model_dir=runs/stsb \
      --export_dir=runs/stsb/export/1

DATA_DIR holds train.tsv, dev.tsv (eval) and test.tsv (predict) in the GLUE layout (columns
index, genre, filename, year, old_index, source1, source2, sentence1, sentence2, score; test.tsv
has no score). Scores go from 0 (unrelated) to 5 (equivalent); evaluation reports Pearson and
Spearman correlation, and `predict` and the export give a `score` per pair.
"""
from zoo.cli import common

KIND = common.define_kind_flags("stsb")
main = common.main_of(KIND)
