"""Flags of every task's train.py, derived from the task's settings, and turned back into them.

A task's train.py calls `define_flags(modes, SettingsClass)` at the top: `--mode` with the
modes the task has, and one flag per field of its settings class (`zoo.settings`: the name,
type, default, choices and help text are declared there once), then its own data flags
(`define_file_flags`, or its own). `--help` lists exactly these. `settings_from_flags` builds
the settings back from the parsed flags.
"""
import os
import sys
import traceback

from absl import flags

from zoo import settings as zoo_settings

FLAGS = flags.FLAGS


def _define(field):
    meta = field.metadata
    name, default, help_text = field.name, field.default, meta["help"]
    if meta.get("choices"):
        flags.DEFINE_enum(name, default, list(meta["choices"]), help_text)
    elif field.type is bool:
        flags.DEFINE_bool(name, default, help_text)
    elif field.type is int:
        flags.DEFINE_integer(name, default, help_text)
    elif field.type is float:
        flags.DEFINE_float(name, default, help_text)
    else:
        flags.DEFINE_string(name, default, help_text)


def define_flags(modes, *settings_classes):
    """`--mode` (one of `modes`) and a flag for every flag field of the settings classes (of
    several, e.g. a task that runs as classification or regression, each field once)."""
    flags.DEFINE_enum("mode", "train_and_eval", list(modes), "; ".join(
        f"{mode}: {zoo_settings.MODE_HELP[mode]}" for mode in modes) + ".")
    defined = set()
    for settings_class in settings_classes:
        for field in zoo_settings.flag_fields(settings_class):
            if field.name not in defined:
                _define(field)
                defined.add(field.name)
    flags.mark_flag_as_required("model_dir")


def define_file_flags(glue_dir=True, formats="file, glob or comma-separated list"):
    """--train_file, --eval_file, --predict_file (and, for GLUE-layout tasks, --data_dir)."""
    flags.DEFINE_string("train_file", None, f"Training data ({formats}).")
    flags.DEFINE_string("eval_file", None, f"Evaluation data ({formats}).")
    flags.DEFINE_string("predict_file", None, f"Data to predict on ({formats}).")
    if glue_dir:
        flags.DEFINE_string("data_dir", None, "A GLUE-layout folder: train.tsv (train), dev.tsv "
                            "(eval) and test.tsv (predict). --train_file etc. override single "
                            "files.")


def settings_from_flags(settings_class, **values):
    """An instance of `settings_class` from the parsed flags (and `values` set by code)."""
    for field in zoo_settings.flag_fields(settings_class):
        values.setdefault(field.name, FLAGS[field.name].value)
    return settings_class(**values)


def save_flags():
    """Writes the task's flags to MODEL_DIR/flags.txt (reusable with --flagfile).

    Training modes write flags.txt; eval, predict and export write flags_<mode>.txt, so the
    flags that trained the model are never overwritten.

    Only flags that zoo's tasks define are written: flags that libraries define as they are
    imported would make the file unreadable to a run that has not imported them yet.
    """
    main = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    lines = []
    for module, module_flags in FLAGS.flags_by_module_dict().items():
        is_task = (module.startswith("tasks.") or module == "__main__"
                   or os.path.abspath(module) == main)
        if is_task:
            lines += [f.serialize() for f in module_flags if f.value is not None]
    os.makedirs(FLAGS.model_dir, exist_ok=True)
    name = "flags.txt" if FLAGS.mode in ("train", "train_and_eval") else f"flags_{FLAGS.mode}.txt"
    with open(os.path.join(FLAGS.model_dir, name), "w", encoding="utf-8") as f:
        f.write("\n".join(line for line in lines if line) + "\n")


def split_file(split):
    """The file of a split: --train_file/--eval_file/--predict_file, else in --data_dir."""
    from zoo.data.sources import MissingSplit  # pylint: disable=import-outside-toplevel

    explicit = FLAGS[f"{split}_file"].value
    if explicit:
        return explicit
    data_dir = FLAGS["data_dir"].value if "data_dir" in FLAGS else None
    if data_dir:
        from zoo.data import glue  # pylint: disable=import-outside-toplevel
        return glue.split_file(data_dir, split)
    raise MissingSplit(f"no {split} data: pass --{split}_file"
                       + (" or --data_dir" if "data_dir" in FLAGS else ""))


def run_task(run, settings, read_split):
    """Saves the flags (chief only) and runs `run(mode, settings, read_split)`.

    The user's errors (`zoo.errors`: bad flags, data, handles, missing files) end with one clear
    line and no traceback; a failure inside TensorFlow with its traceback and then a line naming
    the stage of the run (`zoo.stages`); anything else is a bug and keeps its traceback."""
    from zoo import distribute, hub  # pylint: disable=import-outside-toplevel
    from zoo.data.text_files import DataError  # pylint: disable=import-outside-toplevel
    from zoo.errors import OutputError, UsageError  # pylint: disable=import-outside-toplevel
    from zoo.stages import StageError  # pylint: disable=import-outside-toplevel

    if distribute.chief_from_env():  # under multi-worker training only the chief writes
        save_flags()
    try:
        return run(FLAGS.mode, settings, read_split)
    except (DataError, hub.HandleError, FileNotFoundError, UsageError, OutputError) as e:
        raise SystemExit(f"error: {e}") from None
    except StageError as e:  # TensorFlow failed: its traceback, then what zoo was doing
        traceback.print_exc()
        raise SystemExit(f"error: {e}") from None


def file_source(split, columns):
    """The streamed source of a split's file(s); labels are required except for predict."""
    from zoo.data.sources import FileSource  # pylint: disable=import-outside-toplevel

    return FileSource(split_file(split), columns, require_label=split != "predict")


TFDS_SPLITS = dict(train="train", eval="validation", predict="test")


def glue_source(split, columns, tfds_name):
    """A GLUE task's split: from --train_file / --eval_file / --predict_file or --data_dir, or,
    when none of them is given, from TensorFlow Datasets (`tfds_name`, downloaded on first
    use; labels as their ids, test rows with their `idx`)."""
    from zoo.data.sources import ListSource  # pylint: disable=import-outside-toplevel
    from zoo.data.tfds_source import read_tfds  # pylint: disable=import-outside-toplevel

    if FLAGS[f"{split}_file"].value or FLAGS.data_dir:
        return file_source(split, columns)
    tfds_split = TFDS_SPLITS[split]
    print(f"no --data_dir: reading {tfds_name} [{tfds_split}] from TensorFlow Datasets "
          "(downloaded on first use)")
    folder = tfds_name.split("/")[-1]
    return ListSource(read_tfds(
        tfds_name, tfds_split, id_column="idx" if split == "predict" else None,
        require_label=split != "predict", label_ids=True,
        unavailable=f"; without the internet, pass a local GLUE folder: --data_dir=DIR holding "
                    f"train.tsv, dev.tsv and test.tsv (e.g. ../shared/data/{folder})"),
        name=f"tfds:{tfds_name}[{tfds_split}]")


TEXT_TASKS = ("classification", "regression", "multi_label")  # --task_type of tasks.classify


def text_task(name):
    """(task class, settings class) of a task on labelled text, by its `TEXT_TASKS` name."""
    from zoo import classification, multilabel, regression  # pylint: disable=import-outside-toplevel
    return {"classification": (classification.Classification, classification.Settings),
            "regression": (regression.Regression, regression.Settings),
            "multi_label": (multilabel.MultiLabel, multilabel.Settings)}[name]


def run_classification(read_split, pair, label_map="", task="classification"):
    """Runs a task on labelled text (`text_task(task)`: classification, regression or
    multi-label) with the flags; `read_split(split)` returns a source."""
    from zoo import runner  # pylint: disable=import-outside-toplevel

    from zoo.errors import UsageError  # pylint: disable=import-outside-toplevel

    task_class, settings_class = text_task(task)
    own = {f.name for f in zoo_settings.flag_fields(settings_class)}
    foreign = [f"--{field.name} is for --task_type={other}, not {task}"
               for other in TEXT_TASKS  # tasks.classify defines the flags of every task type
               for field in zoo_settings.flag_fields(text_task(other)[1])
               if field.name not in own and field.name in FLAGS
               # (a flagfile holds every flag: one at its default is not a choice)
               and FLAGS[field.name].present and FLAGS[field.name].value != field.default]
    settings = settings_from_flags(settings_class, pair=pair, label_map=label_map)

    def run(mode, s, r):
        if foreign:
            raise UsageError(foreign[0])
        return runner.run(mode, task_class, s, r)

    return run_task(run, settings, read_split)
