r"""Fine-tune one encoder on several tasks at once, evaluate each, and export one SavedModel
with a signature per task.

  zoo train multitask --tasks_file=tasks.json --model_dir=runs/multi \
      --export_dir=runs/multi/export/1
  zoo train multitask --tasks=mrpc,sst2 --mrpc_data_dir=../shared/data/mrpc \
      --sst2_data_dir=../shared/data/sst2 --model_dir=runs/glue2

tasks.json names each task, its kind and its data, and may set any of that kind's settings:

  {"mrpc": {"kind": "mrpc", "data_dir": "../shared/data/mrpc"},
   "sst2": {"kind": "sst2", "data_dir": "../shared/data/sst2"},
   "squad": {"kind": "squad", "train_file": "train-v1.1.json", "eval_file": "dev-v1.1.json",
             "max_seq_length": 384, "max_train_questions": 5000},
   "tweets": {"kind": "classify", "train_file": "tweets.csv", "eval_file": "tweets_dev.csv",
              "text_column": "tweet", "label_column": "sentiment"}}

Kinds (zoo.kinds.table.KINDS; each takes the data keys of its task's data flags): mrpc, sst2, stsb
(GLUE folders: data_dir), classify, regression, multi_label (files and the column keys of
tasks.classify: text_column, text_b_column, label_column, id_column, delimiter, header, quoting,
label_map, label_names_file, tfds_name...), squad (SQuAD JSON; max_train_questions,
unanswerable_fraction), tagging (CoNLL files). The flags below are every task's (learning rate,
epochs, batch size, ...). --tasks with --<task>_data_dir is a shortcut for GLUE tasks in their own
folders.
"""
import json

from absl import flags

from zoo.cli import common
from zoo.kinds import multitask

common.define_flags(multitask.MultiTask.CAN.modes, multitask.Settings)
_DATA = common.SECTIONS["data"]
flags.DEFINE_string("tasks_file", None, "JSON file of the tasks: {name: {\"kind\": ..., data, "
                    "settings}} (see this module's help).", module_name=_DATA)
flags.DEFINE_list("tasks", [], "Tasks to train, in this order (the first is the export's "
                  "serving_default): all of --tasks_file if not given; with no --tasks_file, "
                  "GLUE tasks (mrpc, sst2, stsb) read from --<task>_data_dir.", module_name=_DATA)
for _glue in ("mrpc", "sst2", "stsb"):
    flags.DEFINE_string(f"{_glue}_data_dir", None, f"GLUE {_glue} folder (with --tasks).",
                        module_name=_DATA)
flags.DEFINE_string("predict_file", None, "--mode=predict or explain: the data of the tasks "
                    "of --tasks (all if not given), instead of their specs' own.",
                    module_name=_DATA)
FLAGS = flags.FLAGS


def _record():
    """The model dir's run.json for a mode that uses the trained model ({} for one that trains,
    or a model dir without one)."""
    from zoo.kinds.kind import USING_MODES
    from zoo.training import run_record

    return (run_record.load(FLAGS.model_dir) if FLAGS.mode in USING_MODES else None) or {}


def _specs(record):
    """{task name: spec}: of --tasks_file, of --tasks with their GLUE folders, or (a mode that
    uses a trained model, given neither) as its run.json `record` holds them; with
    --predict_file, the predict data of the tasks chosen."""
    specs = _given_specs(record)
    if FLAGS.predict_file:
        specs = {name: dict(spec, predict_file=FLAGS.predict_file) if name in (
            FLAGS.tasks or specs) else spec for name, spec in specs.items()}
    return specs


def _recorded_model(record):
    """The encoder, preprocessor, sequence length and best-checkpoint metric of the model dir's
    run.json `record` that the command line does not give."""
    values = dict(record, **record.get("values", {}))
    return {key: values[key] for key in ("encoder_handle", "preprocessor_handle",
                                         "max_seq_length", "keep_best")
            if key in values and not FLAGS[key].present}


def _given_specs(record):
    from zoo.base import fs
    from zoo.base.errors import UsageError

    recorded = None if FLAGS.tasks_file else record.get("tasks")
    if recorded and not any(FLAGS[f"{g}_data_dir"].value for g in ("mrpc", "sst2", "stsb")):
        missing = [t for t in FLAGS.tasks if t not in recorded]
        if missing:
            raise UsageError(f"--tasks: {missing} not among the tasks {FLAGS.model_dir} was "
                             f"trained on ({', '.join(recorded)})")
        return recorded
    if FLAGS.tasks_file:
        try:
            with fs.open(fs.check(FLAGS.tasks_file, "--tasks_file"), encoding="utf-8") as f:
                specs = json.load(f)
        except OSError as e:
            raise UsageError(f"{FLAGS.tasks_file}: cannot read it ({e.strerror})") from None
        except json.JSONDecodeError as e:
            raise UsageError(f"{FLAGS.tasks_file}:{e.lineno}: not valid JSON ({e.msg})") from None
        if not isinstance(specs, dict):
            raise UsageError(f"{FLAGS.tasks_file}: expected a JSON object {{task name: spec}}")
        missing = [t for t in FLAGS.tasks if t not in specs]
        if missing:
            raise UsageError(f"--tasks: {missing} not in {FLAGS.tasks_file}")
        return {t: specs[t] for t in FLAGS.tasks or specs}
    specs = {}
    for name in FLAGS.tasks:
        folder = FLAGS[f"{name}_data_dir"].value if f"{name}_data_dir" in FLAGS else None
        if not folder:
            raise UsageError(f"--tasks={name}: pass --{name}_data_dir (a GLUE folder), or "
                             "describe the tasks in --tasks_file")
        specs[name] = dict(kind=name, data_dir=folder)
    if not specs:
        raise UsageError("pass --tasks_file, or --tasks with --<task>_data_dir")
    return specs


def main(argv):
    del argv
    from zoo.run import runner

    def run():
        record = _record()
        settings = common.settings_from_flags(multitask.Settings, tasks=_specs(record),
                                              tasks_file=FLAGS.tasks_file or "",
                                              **_recorded_model(record))
        return runner.run(FLAGS.mode, multitask.MultiTask, settings, None, common.started,
                          recorded=dict(kind="multitask", values=dict(
                              keep_best=settings.keep_best)))

    common.run_task(run)
