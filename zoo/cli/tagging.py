r"""Fine-tune, evaluate, predict and export a token tagger (named entities) on CoNLL-style files.

  zoo train tagging --train_file=conll2003/iob2/train.txt \
      --eval_file=conll2003/iob2/valid.txt --model_dir=runs/ner --export_dir=runs/ner/export/1
  zoo predict tagging --model_dir=runs/ner \
      --predict_file=conll2003/iob2/test.txt --output_file=runs/ner/test_tags.txt

Files have one token per line with its tag in the last column (white-space separated), a blank
line between sentences; `-DOCSTART-` lines are skipped; tags are BIO/IOB2 or IOB1. Evaluation
gives entity precision, recall and F1 (overall and per type, as the CoNLL scorer counts them)
and token accuracy. The export takes raw text and returns its entities with character offsets,
type and score.
"""
from zoo.cli import common

KIND = common.define_kind_flags("tagging")
main = common.main_of(KIND)
