"""Every document (README.md, BUILD.md, docs/*.md) says what the code does: each `zoo` command
names a real command and task (or the model dir of an earlier command of the same document that
names its task, as `zoo predict --model_dir=...` reads it from the model dir) with flags that
task's CLI parses (each task's flags defined afresh, as its own process defines them); each
Python snippet's imports import; each relative link and anchor leads somewhere."""
import ast
import collections
import glob
import importlib
import os
import re
import shlex

import pytest
from absl import flags

from tests.helpers import ROOT, forget_task_flags
from zoo.cli import main

DOCUMENTS = ["README.md", "BUILD.md", "BENCHMARKS.md", "bench/README.md"] + sorted(
    os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
TOOLS = ("serve-predict", "batch-predict", "check-export", "build-hub", "models")


def _text(document):
    with open(os.path.join(ROOT, document), encoding="utf-8") as f:
        return f.read()


def _commands(document):
    """The `zoo ...` lines of a document's bash blocks (continuation lines joined), as words."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", _text(document), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line.split("&&")[-1], comments=True) if line.strip() else []
            words = [w for w in words if "=" not in w or w.startswith("-")]  # VAR=... first
            if words and os.path.basename(words[0]) == "zoo":
                commands.append(words[1:])
    return commands


def _model_dir(args):
    return next((a.split("=", 1)[1] for a in args if a.startswith("--model_dir=")), None)


def _by_task(document):
    """{task: [its flags, ...]} of a document's task commands; its tools' commands checked."""
    by_task = collections.defaultdict(list)
    tasks_of = {}  # model dir -> the task of the command that named both
    for command, *rest in _commands(document):
        assert command in main.MODES or command in TOOLS, (document, command)
        if command in main.MODES and command != "train" and rest and rest[0] not in main.TASKS:
            assert _model_dir(rest) in tasks_of, (document, command, rest)  # trained above
            rest = [tasks_of[_model_dir(rest)], *rest]
        if command in main.MODES:
            assert rest and rest[0] in main.TASKS, (document, command, rest)
            if _model_dir(rest):
                tasks_of.setdefault(_model_dir(rest), rest[0])
            by_task[rest[0]].append(rest[1:])
        if command == "check-export":
            assert len(rest) == 1 and not rest[0].startswith("-"), rest  # the export folder
        if command == "batch-predict":
            from zoo.cli import batch_predict
            args, beam = batch_predict._parser().parse_known_args(rest)
            assert args.export_dir and args.input and args.output, (document, rest)
            assert all(b.startswith("--") for b in beam), (document, beam)  # Beam's options
    return by_task


def test_every_documented_zoo_command_parses():
    by_task = collections.defaultdict(list)
    for document in DOCUMENTS:
        for task, commands in _by_task(document).items():
            by_task[task] += [(document, args) for args in commands]
    assert len(by_task["classify"]) >= 3 and set(by_task) >= {"mrpc", "squad", "tagging"}
    try:
        for task, commands in by_task.items():
            forget_task_flags()
            importlib.import_module("zoo.cli." + task)
            for document, args in commands:
                flags.FLAGS.unparse_flags()
                try:
                    flags.FLAGS(["zoo"] + args)  # an unknown flag or a bad value raises
                except flags.Error as e:
                    pytest.fail(f"{document}: zoo ... {task} {' '.join(args)}: {e}")
    finally:
        flags.FLAGS.unparse_flags()
        forget_task_flags()


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_python_snippet_imports_what_it_names(document):
    for block in re.findall(r"```python\n(.*?)```", _text(document), re.S):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    importlib.import_module(alias.name)
            elif isinstance(node, ast.ImportFrom):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name) or importlib.util.find_spec(
                        f"{node.module}.{alias.name}"), (document, node.module, alias.name)


def _anchors(document):
    """GitHub's anchors of a document's headings."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", _text(document), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_relative_link_and_anchor_resolves(document):
    folder = os.path.dirname(document)
    for target in re.findall(r"\]\(([^)\s]+)\)", _text(document)):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        linked = os.path.normpath(os.path.join(folder, path)) if path else document
        assert os.path.exists(os.path.join(ROOT, linked)), (document, target)
        if anchor and linked.endswith(".md"):
            assert anchor in _anchors(linked), (document, target)


@pytest.mark.parametrize("document", DOCUMENTS)
def test_documents_say_what_is_not_what_changed(document):
    """No commit hash and no number of this project's issues: those belong to git and the raw
    lines (an upstream reference such as tensorflow/hub#903 is a source, and stays)."""
    for number, line in enumerate(_text(document).splitlines(), 1):
        assert not re.search(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b", line), (
            document, number, line)
        assert not re.search(r"(^|[^\w/-])#\d+\b|\b[Ii]ssues? #?\d+", line), (document, number, line)


def test_the_readme_stays_an_index():
    """README: what zoo is, set-up, an example per task, links; details live in docs/."""
    assert len(_text("README.md").splitlines()) <= 200
