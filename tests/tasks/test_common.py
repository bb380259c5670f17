"""zoo.cli.common.run_task: the user's errors end in one line, a bug keeps its traceback."""
import pytest

from zoo.cli import common
from zoo.base.errors import OutputError, UsageError
from zoo.base.stages import StageError
from zoo.data.sources import MissingSplit
from zoo.data.text_files import DataError
from zoo.model import hub
from zoo.base.fields import flag_fields
from zoo.kinds.table import KINDS
from zoo.run.settings import GROUPS, MODES, RunSettings


@pytest.fixture
def flags(tmp_path):
    if "model_dir" not in common.FLAGS:  # a task's train.py defines them as it is imported
        common.define_flags(MODES, RunSettings)
    common.FLAGS(["test", f"--model_dir={tmp_path}"])
    yield common.FLAGS
    common.FLAGS.unparse_flags()


def _raising(error):
    def run():
        raise error
    return run


@pytest.mark.parametrize("error", [
    UsageError("--mode=export needs --export_dir"), DataError("f.csv:3: empty text"),
    hub.HandleError("nope: not a model"), FileNotFoundError("x: no such file"),
    MissingSplit("no eval data: pass --eval_file"),
    OutputError("export to e/1 failed (No space left on device); the export that was there is "
                "unchanged")])
def test_a_users_error_is_one_line(flags, error):
    with pytest.raises(SystemExit) as raised:
        common.run_task(_raising(error))
    assert str(raised.value) == f"error: {error}"
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_the_command_line_names_flags_where_the_error_names_settings(flags):
    with pytest.raises(SystemExit) as raised:
        common.run_task(_raising(UsageError("`mode`=export needs `export_dir`")))
    assert str(raised.value) == "error: --mode=export needs --export_dir"


def test_a_bug_keeps_its_traceback(flags):
    # A ValueError that zoo did not raise for the user (here: a made-up bug) is not turned
    # into a one-line message: its traceback is what a bug report needs.
    with pytest.raises(ValueError, match="operands could not be broadcast"):
        common.run_task(_raising(ValueError("operands could not be broadcast")))
    with pytest.raises(KeyError):
        common.run_task(_raising(KeyError("start_logits")))


def test_a_tensorflow_failure_prints_its_traceback_then_the_stage(flags, capsys):
    try:
        raise RuntimeError("deep inside TensorFlow")
    except RuntimeError as cause:
        error = StageError("training step 3 failed inside TensorFlow: deep")
        error.__cause__ = cause
    with pytest.raises(SystemExit, match="error: training step 3 failed"):
        common.run_task(_raising(error))
    assert "deep inside TensorFlow" in capsys.readouterr().err  # the traceback was printed


def _help_sections(module):
    """{section heading: [flag names]} of a task's --help, in the order it lists them."""
    from tests.helpers import run_inline
    result = run_inline(module, "--help")  # absl prints the help and exits with 1
    assert "--model_dir" in result.stdout, result.stderr[-2000:]
    sections, headings = {}, {f"{heading}:" for heading in common.SECTIONS.values()}
    for line in result.stdout.split("\nflags:\n", 1)[1].splitlines():
        if line in headings:
            section = sections.setdefault(line[:-1], [])
        elif line.startswith("  --"):
            section.append(line.split(":")[0].strip().lstrip("-").replace("[no]", ""))
    return sections


def _help_flags(module):
    return {name for names in _help_sections(module).values() for name in names}


def test_a_setting_whose_default_is_unset_is_a_bool_flag_that_may_be_left_out(flags, tmp_path):
    assert flags.freeze_word_embeddings is None  # the run decides (by the encoder's vocabulary)
    for given, value in (("--freeze_word_embeddings", True), ("--nofreeze_word_embeddings", False),
                         ("--freeze_word_embeddings=false", False)):
        flags.unparse_flags()
        flags(["test", f"--model_dir={tmp_path}", given])
        assert flags.freeze_word_embeddings is value, given


def test_each_tasks_help_lists_only_the_flags_it_uses():
    squad_flags = _help_flags("tasks.squad.train")
    assert {"doc_stride", "max_query_length", "train_file", "model_dir", "precision",
            "shuffle_buffer", "max_train_questions"} <= squad_flags
    assert not squad_flags & {"padding", "bad_rows", "dedupe", "data_dir", "dropout",
                              "text_column", "label_map"}
    mrpc_flags = _help_flags("tasks.mrpc.train")
    assert {"padding", "bad_rows", "dedupe", "data_dir", "dropout", "model_dir"} <= mrpc_flags
    assert not mrpc_flags & {"doc_stride", "text_column", "label_map", "max_train_questions"}
    classify_flags = _help_flags("tasks.classify.train")
    assert {"text_column", "label_map", "tfds_name", "padding"} <= classify_flags


def test_the_new_tasks_help_lists_only_their_flags():
    stsb = _help_flags("tasks.stsb.train")
    assert {"score_range", "pooling", "data_dir"} <= stsb
    assert not stsb & {"class_weights", "threshold", "label_separator", "doc_stride"}
    tagging = _help_flags("tasks.tagging.train")
    assert {"doc_stride", "bad_rows", "train_file"} <= tagging
    assert not tagging & {"pooling", "padding", "label_map", "data_dir", "class_weights"}
    multi = _help_flags("tasks.multitask.train")
    assert {"tasks_file", "tasks", "task_sampling", "temperature", "mrpc_data_dir",
            "keep_best", "learning_rate"} <= multi
    assert not multi & {"doc_stride", "pooling", "train_file", "text_column"}


def test_a_tasks_help_lists_its_flags_in_sections_by_group():
    assert set(common.SECTIONS) == {"run", *GROUPS}
    sections = _help_sections("tasks.sst2.train")
    assert list(sections) == list(common.SECTIONS.values())  # every section, in that order
    where = {flag: heading for heading, names in sections.items() for flag in names}
    assert where["mode"] == common.SECTIONS["run"]
    for field in flag_fields(KINDS["sst2"].settings):
        assert where[field.name] == common.SECTIONS[field.metadata["group"]], field.name
    for field in flag_fields(KINDS["sst2"].data):
        assert where[field.name] == common.SECTIONS["data"], field.name
    assert len(where) == sum(len(names) for names in sections.values())  # each flag once
