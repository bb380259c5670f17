"""zoo: fine-tune, evaluate, predict with and export BERT-family models, and build the models.

usage: zoo COMMAND [TASK] [--flags]

  zoo train TASK        fine-tune (and evaluate after every epoch; export with --export_dir)
  zoo eval [TASK]       evaluate a trained model dir
  zoo predict [TASK]    write predictions for --predict_file
  zoo export [TASK]     write a TF Serving SavedModel (or, --export_format=litert, a LiteRT file)
  zoo explain [TASK]    why each row of --predict_file got its label: attributions per word
                        (mrpc, sst2, stsb, classify)
  zoo check-data TASK   check the data of every split given (not squad, multitask)
  zoo build-hub         build TF Hub-format models offline from a checkpoint
  zoo models            list the model names zoo knows
  zoo serve-predict     predict with an export, JSON lines in and out (zoo.serving)
  zoo check-export      check that an export would load and answer under TF Serving
  zoo batch-predict     predict files of rows with an export on Apache Beam (zoo.batch)

TASK is mrpc, sst2, stsb, classify, squad, tagging or multitask. `zoo COMMAND TASK --help`
lists the flags of a task. A trained model dir knows its task and model: eval, predict, export
and explain take both from it (the TASK, encoder, sequence length, labels, columns) unless given.
For example:

  zoo train mrpc --data_dir=../shared/data/mrpc --model_dir=runs/mrpc
  zoo predict --model_dir=runs/mrpc --predict_file=pairs.tsv --output_file=runs/mrpc/pairs.csv
  zoo serve-predict runs/mrpc/export/1 < pairs.tsv
"""
import importlib
import sys

from zoo.cli import quiet

TASKS = ("mrpc", "sst2", "stsb", "classify", "squad", "tagging", "multitask")
# command -> --mode (train: the task's default)
MODES = {"train": None, "eval": "eval", "predict": "predict", "export": "export",
         "check-data": "check_data", "explain": "explain"}
TOOLS = {"build-hub": "zoo.cli.build_hub", "models": "zoo.cli.list_models",
         "check-export": "zoo.cli.check_export"}
# the command-line task that runs each kind a model dir records (run.json's `kind`)
TASK_OF_KIND = {"regression": "classify", "multi_label": "classify"}


def run_absl(module_name, args):
    """Imports the CLI module `module_name` (quietly: `zoo.cli.quiet`) and runs its absl `main`
    with `args`; `--help` shows that module's flags and docstring."""
    with quiet.startup():
        module = importlib.import_module(module_name)
    from absl import app, flags
    from zoo.cli import common

    def main(argv):
        quiet.python_logging(flags.FLAGS["verbosity"].present)
        module.main(argv)

    # absl's --help describes the flags of the module named by argv[0] and the docstring of
    # __main__: here, the task's module, then its flags in sections (--helpfull lists those
    # among every module's).
    sys.argv[0] = module_name
    sections = "" if "--helpfull" in args else common.sections_help()
    sys.modules["__main__"].__doc__ = module.__doc__ + sections
    app.run(main, argv=[module_name, *args])


def task_main(task, args=None):
    """Runs the CLI of `task` (`python -m tasks.<task>.train` in a checkout)."""
    run_absl(f"zoo.cli.{task}", sys.argv[1:] if args is None else args)


def recorded_task(args, command):
    """The TASK of the --model_dir in `args`, as its run.json records it; a usage message if
    there is none."""
    model_dir = None
    for i, arg in enumerate(args):
        if arg.startswith("--model_dir="):
            model_dir = arg.split("=", 1)[1]
        elif arg == "--model_dir" and i + 1 < len(args):
            model_dir = args[i + 1]
    if not model_dir:
        _usage(f"`zoo {command}` needs a TASK first (one of {', '.join(TASKS)}), or the "
               "--model_dir of a trained model")
    # run.json read here with zoo.base alone: zoo.training.run_record would import TensorFlow
    # before the task's quiet start-up
    from zoo.base import files, fs
    record = files.load_json(fs.join(model_dir, "run.json")) or {}
    kind = record.get("kind") or (record.get("task") if record.get("task") in TASKS else None)
    if not kind:
        _usage(f"--model_dir={model_dir} names no task (no run.json with its kind): give the "
               f"TASK first, one of {', '.join(TASKS)}")
    return TASK_OF_KIND.get(kind, kind)


def _usage(problem):
    raise SystemExit(f"zoo: {problem}\n\n{__doc__.split(chr(10) + chr(10))[1]}")


def run(argv=None):
    """The `zoo` console script."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return
    command, rest = argv[0], argv[1:]
    if command in MODES:
        if command != "train" and (not rest or rest[0] not in TASKS):
            rest = [recorded_task(rest, command), *rest]
        if not rest or rest[0] not in TASKS:
            _usage(f"`zoo {command}` needs a TASK first: one of {', '.join(TASKS)}")
        mode = MODES[command]
        task_main(rest[0], ([f"--mode={mode}"] if mode else []) + rest[1:])
    elif command in TOOLS:
        run_absl(TOOLS[command], rest)
    elif command == "batch-predict":
        from zoo.cli import batch_predict
        quiet.python_logging(False)
        batch_predict.main(rest)
    elif command == "serve-predict":
        with quiet.startup():
            from zoo.cli import serve_predict
        serve_predict.main(rest)
    else:
        _usage(f"unknown command {command!r}")


if __name__ == "__main__":
    run()
