"""Every `zoo` command in README.md's examples names a real command and task (or the model dir
of an earlier command that names its task, as `zoo predict --model_dir=...` reads it from the
model dir), and flags that task's CLI parses (each task's flags defined afresh, as its own
process defines them)."""
import collections
import importlib
import os
import re
import shlex

from absl import flags

from tests.helpers import ROOT, forget_task_flags
from zoo.cli import main


def _commands():
    """The `zoo ...` lines of README's bash blocks (continuation lines joined), as words."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line.split("&&")[-1]) if line.strip() else []
            if words and os.path.basename(words[0]) == "zoo":
                commands.append(words[1:])
    return commands


def _model_dir(args):
    return next((a.split("=", 1)[1] for a in args if a.startswith("--model_dir=")), None)


def test_readmes_zoo_commands_parse():
    by_task = collections.defaultdict(list)
    tasks_of = {}  # model dir -> the task of the command that named both
    for command, *rest in _commands():
        if command in main.MODES and command != "train" and rest and rest[0] not in main.TASKS:
            assert _model_dir(rest) in tasks_of, (command, rest)  # trained above
            rest = [tasks_of[_model_dir(rest)], *rest]
        if command in main.MODES and rest and rest[0] in main.TASKS and _model_dir(rest):
            tasks_of.setdefault(_model_dir(rest), rest[0])
        assert command in main.MODES or command in (
            "serve-predict", "batch-predict", "check-export"), command
        if command == "check-export":
            assert len(rest) == 1 and not rest[0].startswith("-"), rest  # the export folder
        if command == "batch-predict":
            from zoo.cli import batch_predict  # pylint: disable=import-outside-toplevel
            args, beam_args = batch_predict._parser().parse_known_args(rest)  # pylint: disable=protected-access
            assert args.export_dir and args.input and args.output and not beam_args, rest
        if command in main.MODES:
            assert rest and rest[0] in main.TASKS, (command, rest)
            by_task[rest[0]].append(rest[1:])
    assert sum(map(len, by_task.values())) >= 8, dict(by_task)
    try:
        for task, commands in by_task.items():
            forget_task_flags()
            importlib.import_module("zoo.cli." + task)
            for args in commands:
                flags.FLAGS.unparse_flags()
                flags.FLAGS(["zoo"] + args)  # an unknown flag or a bad value raises
    finally:
        flags.FLAGS.unparse_flags()
        forget_task_flags()
