r"""Fine-tune, evaluate, predict and export extractive question answering on SQuAD v1.1 or 2.0
JSON.

  zoo train squad --train_file=train-v1.1.json --eval_file=dev-v1.1.json \
      --model_dir=runs/squad --export_dir=runs/squad/export/1
  zoo train squad --version_2_with_negative --train_file=train-v1.1.json \
      --unanswerable_fraction=0.5 --eval_file=dev-v2.0.json --model_dir=runs/squad2
  zoo predict squad --predict_file=dev-v1.1.json --model_dir=runs/squad \
      --output_file=runs/squad/predictions.json

`predict` writes predictions.json (question id -> answer text) and, beside it,
nbest_predictions.json. `eval` writes the official SQuAD v1.1 exact match and F1 to
MODEL_DIR/eval_results.json. Files are read as streams, article by article.
"""
from zoo.cli import common

KIND = common.define_kind_flags("squad")
main = common.main_of(KIND)
