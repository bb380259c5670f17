r"""Fine-tune, evaluate, predict and export a model on any labelled CSV, TSV, JSONL or TFDS:
one class per text (default), a score (--task_type=regression) or several classes
(--task_type=multi_label).

  zoo train classify --train_file=tweets.csv --eval_file=tweets_dev.csv \
      --text_column=tweet --label_column=sentiment --label_map=-1:negative,0:neutral,1:positive \
      --model_dir=runs/tweets --export_dir=runs/tweets/export/1
  zoo train classify --tfds_name=glue/mrpc --model_dir=runs/mrpc_tfds
  zoo train classify --task_type=multi_label --noheader --quoting=csv \
      --train_file=go_emotions/train.tsv --eval_file=go_emotions/dev.tsv --text_column=0 \
      --label_column=1 --id_column=2 --label_names_file=go_emotions/emotions.txt \
      --model_dir=runs/go_emotions

Label names are learned from the training data (and renamed by --label_map or
--label_names_file); they are saved in the model dir and come back in predictions and in the
exported model's outputs.
"""
from absl import flags

from zoo.cli import common
from zoo.base.fields import flag_fields

TASK_TYPES = dict(zip(("classification", "regression", "multi_label"),
                      common.define_kind_flags("classify", "regression", "multi_label")))
flags.DEFINE_enum("task_type", "classification", list(TASK_TYPES),
                  "classification: one class per row; regression: a number per row (--score_range"
                  "); multi_label: a list of classes per row (--label_separator, --threshold).",
                  module_name=common.SECTIONS["run"])
FLAGS = flags.FLAGS


def _no_foreign_flags():
    """A flag of another --task_type, set to something else than its default, is a mistake."""
    from zoo.base.errors import UsageError

    own = {f.name for f in flag_fields(TASK_TYPES[FLAGS.task_type].settings)}
    for other, kind in TASK_TYPES.items():
        for field in flag_fields(kind.settings):
            # (a flagfile holds every flag: one at its default is not a choice)
            if (field.name not in own and FLAGS[field.name].present
                    and FLAGS[field.name].value != field.default):
                raise UsageError(f"--{field.name} is for --task_type={other}, not "
                                 f"{FLAGS.task_type}")


def _task_type():
    """--task_type, or, for a mode that uses a trained model and leaves it out, the kind the
    model dir records (a regression or multi-label model dir is used as one)."""
    from zoo.kinds.kind import USING_MODES
    from zoo.training import run_record

    if FLAGS["task_type"].present or FLAGS.mode not in USING_MODES:
        return FLAGS.task_type
    record = run_record.load(FLAGS.model_dir) or {}
    by_kind = {kind.name: name for name, kind in TASK_TYPES.items()}
    FLAGS.task_type = by_kind.get(record.get("kind"), FLAGS.task_type)
    return FLAGS.task_type


def main(argv):
    del argv
    common.run_kind(TASK_TYPES[_task_type()], check=_no_foreign_flags)
