"""Flags of every task's train.py, derived from its task kind, and turned back into a run.

A task's CLI module (`zoo/cli/<task>.py`) calls `define_kind_flags(KINDS[name])` at the top:
`--mode` with the modes the kind has, one flag per field of its settings class
(`zoo.run.settings`) and one per data key of its data spec (`zoo.data.specs`): the name, type,
default, choices and help text are declared there once, so `--help` lists exactly what the task
uses, in sections by the settings' groups (`SECTIONS`). `main()` is `run_kind(kind)`, which
builds the data spec and the settings back from the parsed flags and runs the mode.
"""
import traceback
from typing import Optional

from absl import flags

from zoo.base import files, fs
from zoo.base.fields import flag_fields
from zoo.run import settings as zoo_settings

FLAGS = flags.FLAGS
# The sections of a task's --help, in order: {name: heading}. A setting's section is its group
# (`zoo.run.settings.GROUPS`), a data spec's key is in `data`. absl lists flags by the module
# that defines them, so each section is the module name its flags are defined under.
SECTIONS = {
    "run": "run (what the command does)",
    "data": "data (the files or dataset, their columns, how rows are read)",
    "model": "model (the encoder, sequence length, head and labels)",
    "trainer": "trainer (schedule, optimizer, warm start, checkpoints)",
    "runtime": "runtime (model dir, devices and strategy, precision)",
    "export": "export (the SavedModel or LiteRT file)",
    "output": "output (predictions and explanations)",
}


def _define(field):
    meta = field.metadata
    name, default, help_text = field.name, field.default, meta["help"]
    module_name = SECTIONS[meta.get("group") or "data"]
    if meta.get("choices"):
        flags.DEFINE_enum(name, default, list(meta["choices"]), help_text,
                          module_name=module_name)
    elif field.type in (bool, Optional[bool]):  # (unset: None, the setting's own default)
        flags.DEFINE_bool(name, default, help_text, module_name=module_name)
    elif field.type is int:
        flags.DEFINE_integer(name, default, help_text, module_name=module_name)
    elif field.type is float:
        flags.DEFINE_float(name, default, help_text, module_name=module_name)
    else:
        flags.DEFINE_string(name, default, help_text, module_name=module_name)


def define_flags(modes, *settings_classes):
    """`--mode` (one of `modes`) and a flag for every flag field of the settings classes (of
    several, e.g. a task that runs as classification or regression, each field once)."""
    flags.DEFINE_enum("mode", "train_and_eval", list(modes), "; ".join(
        f"{mode}: {zoo_settings.MODE_HELP[mode]}" for mode in modes) + ".",
        module_name=SECTIONS["run"])
    defined = set()
    for settings_class in settings_classes:
        for field in flag_fields(settings_class):
            if field.name not in defined:
                _define(field)
                defined.add(field.name)
    flags.mark_flag_as_required("model_dir")


def define_kind_flags(*names):
    """The flags of the task kinds named (`zoo.kinds.table.KINDS`): `--mode`, their settings and
    their data keys, with the first kind's defaults (STS-B's score range). Returns the kinds
    (one kind if one name is given)."""
    from zoo.kinds.table import KINDS

    kinds = [KINDS[name] for name in names]
    define_flags(kinds[0].task.CAN.modes, *(k.settings for k in kinds), *(k.data for k in kinds))
    for name, value in kinds[0].defaults.items():
        FLAGS.set_default(name, value)
    return kinds[0] if len(kinds) == 1 else kinds


def sections_help():
    """The defined flags of `SECTIONS`, each section under its heading, as absl's --help lists a
    module's flags ("" when a command line defines none)."""
    text = "".join(FLAGS.module_help(heading) for heading in SECTIONS.values())
    return "\nflags:\n" + text + "\n" if text else ""


def is_zoo_module(module):
    """Whether absl's `module` (the name a flag was defined under) is zoo's: a zoo.cli module or
    a section (`SECTIONS`)."""
    return module.startswith("zoo.cli.") or module in SECTIONS.values()


def values_from_flags(fields_class):
    """{field: parsed flag} for the flag fields of a settings or data spec class."""
    return {field.name: FLAGS[field.name].value for field in flag_fields(fields_class)}


def settings_from_flags(settings_class, **values):
    """An instance of `settings_class` from the parsed flags (and `values` set by code)."""
    return settings_class(**{**values_from_flags(settings_class), **values})


def save_flags():
    """Writes the task's flags to MODEL_DIR/flags.txt (reusable with --flagfile).

    Training modes write flags.txt; eval and check_data write flags_<mode>.txt, so the flags
    that trained the model are never overwritten. Predict and export write nothing into the
    model dir (it may be read-only).

    Only flags that zoo's tasks define are written: flags that libraries define as they are
    imported would make the file unreadable to a run that has not imported them yet.
    """
    lines = []
    for module, module_flags in FLAGS.flags_by_module_dict().items():
        if is_zoo_module(module):
            lines += [f.serialize() for f in module_flags if f.value is not None]
    name = "flags.txt" if FLAGS.mode in ("train", "train_and_eval") else f"flags_{FLAGS.mode}.txt"
    files.save_text(fs.join(FLAGS.model_dir, name),
                    "\n".join(line for line in lines if line) + "\n")


def run_task(run):
    """Calls `run()`, which builds the run from the flags and runs it (saving the flags once it
    has started: `started`).

    The user's errors (`zoo.base.errors`: bad flags, data, handles, missing files) end with one
    clear line, which names flags where the error names settings, and no traceback; a failure
    inside TensorFlow with its traceback and then a line naming the stage of the run
    (`zoo.base.stages`); anything else is a bug and keeps its traceback."""
    from zoo.base.errors import (
        DivergedError, ModelDirBusy, OutputError, UsageError, for_command_line)
    from zoo.base.stages import StageError
    from zoo.data.text_files import DataError
    from zoo.model import hub

    try:
        return run()
    except (DataError, hub.HandleError, FileNotFoundError, UsageError, OutputError,
            DivergedError, ModelDirBusy) as e:
        raise SystemExit(f"error: {for_command_line(e)}") from None
    except StageError as e:  # TensorFlow failed: its traceback, then what zoo was doing
        traceback.print_exc()
        raise SystemExit(f"error: {e}") from None


def run_kind(kind, check=None):
    """Runs `--mode` of task kind `kind` (`zoo.kinds.kind.Kind`) with the flags: its data spec
    and its settings from them, through `run_task`. `check()` may raise a `UsageError` first."""
    def run():
        if check:
            check()
        values = kind.with_record(FLAGS.mode, {**values_from_flags(kind.settings),
                                               **values_from_flags(kind.data)}, given_flags())
        data = kind.make_data({k: values[k] for k in kind.data_keys()})
        return kind.run(FLAGS.mode, kind.make_settings(
            {f.name: values[f.name] for f in flag_fields(kind.settings)}, data), data, started)
    return run_task(run)


def given_flags():
    """The names of the flags given on the command line (or in a --flagfile)."""
    return {name for name in FLAGS if FLAGS[name].present}


def started():
    """Once a run has started: the flags into the model dir, by the chief of a mode that writes
    there (`save_flags`)."""
    from zoo.run.paths import WRITING_MODES
    from zoo.training import distribute

    if FLAGS.mode in WRITING_MODES and distribute.chief_from_env():
        save_flags()


def main_of(kind):
    """The absl `main` of a task's CLI: `run_kind(kind)` (its result is in the model dir's files;
    absl would take a returned value for an exit status)."""
    def main(argv):
        del argv
        run_kind(kind)
    return main
