"""zoo.kinds.table and zoo.kinds.kind: every task kind described once, read the same way by the
CLIs and by a multi-task tasks.json."""
import dataclasses

import pytest

from zoo.base.errors import UsageError
from zoo.kinds import multitask
from zoo.kinds.table import KINDS
from zoo.run.settings import RunSettings


def test_every_kind_names_its_task_settings_data_and_metric():
    assert sorted(KINDS) == ["classify", "mrpc", "multi_label", "regression", "squad", "sst2",
                             "stsb", "tagging"]
    for name, kind in KINDS.items():
        assert kind.name == name and kind.main_metrics
        assert issubclass(kind.settings, RunSettings)
        assert "train_file" in kind.data_keys()
        fields = {f.name for f in dataclasses.fields(kind.settings)}
        assert set(kind.defaults) <= fields


def test_a_glue_kind_fixes_its_layout_and_labels():
    mrpc = KINDS["mrpc"]
    data = mrpc.make_data({"data_dir": "glue/mrpc"})
    settings = mrpc.make_settings({"model_dir": "m"}, data)
    assert data.layout == "mrpc" and settings.pair
    assert settings.label_map == "0:not_paraphrase,1:paraphrase"
    stsb = KINDS["stsb"]
    assert stsb.make_settings({"model_dir": "m"}, stsb.make_data({})).score_range == "0,5"
    assert stsb.make_settings({"model_dir": "m", "score_range": "1,2"},
                              stsb.make_data({})).score_range == "1,2"  # a key changes it


def test_the_main_metric_is_the_first_one_found():
    assert KINDS["classify"].main_metric({"a/accuracy": 0.5}, "a/") == ("accuracy", 0.5)
    assert KINDS["classify"].main_metric({"f1": 0.7, "accuracy": 0.5}) == ("f1", 0.7)
    assert KINDS["squad"].main_metric({"exact_match": 1.0}) == ("exact_match", 1.0)
    assert KINDS["tagging"].main_metric({"accuracy": 1.0}) is None


def _multitask(tmp_path, **tasks):
    return multitask.Settings(model_dir=str(tmp_path), tasks=tasks, tasks_file="tasks.json",
                              learning_rate=3e-5, max_seq_length=64)


def test_a_task_spec_goes_through_its_kind(tmp_path):
    settings = _multitask(tmp_path, tweets=dict(
        kind="classify", train_file="t.csv", text_column="tweet", text_b_column="reply",
        label_map="0:no,1:yes", dropout=0.2))
    kind, data, task_settings = multitask.task_parts(settings, "tweets")
    assert kind is KINDS["classify"] and data.text_column == "tweet"
    assert task_settings.pair and task_settings.label_map == "0:no,1:yes"
    assert task_settings.dropout == 0.2  # the spec's own setting
    assert task_settings.learning_rate == 3e-5 and task_settings.max_seq_length == 64  # the run's
    assert task_settings.model_dir == str(tmp_path / "tasks" / "tweets")


@pytest.mark.parametrize("spec,message", [
    (dict(kind="nope"), r"tasks.json: task 'a': 'kind' must be one of"),
    (dict(kind="squad", train_file="t.json", text_column="x"),
     r"tasks.json: task 'a': unknown keys \['text_column'\]"),
    (dict(kind="mrpc", keep_best="f1"), r"unknown keys \['keep_best'\]"),  # the run's own
])
def test_a_spec_that_cannot_work_is_refused_before_any_work(tmp_path, spec, message):
    with pytest.raises(UsageError, match=message):
        multitask.check_specs(_multitask(tmp_path, a=spec))


def test_a_kinds_own_data_check_holds_in_a_multi_task_run(tmp_path):
    settings = _multitask(tmp_path, qa=dict(kind="squad", train_file="t.json",
                                            max_query_length=16, unanswerable_fraction=0.5))
    with pytest.raises(UsageError, match="unanswerable_fraction needs version_2_with_negative"):
        multitask.MultiTask.check_settings(settings)
