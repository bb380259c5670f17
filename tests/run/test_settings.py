"""Settings declared once (default, choices, help) and the run's compute state from start_run."""
import dataclasses

import pytest

from zoo.base.errors import UsageError
from zoo.base.fields import check_fields, flag_fields, group_of
from zoo.compute import precision
from zoo.kinds import classification, multitask, squad
from zoo.kinds.table import KINDS
from zoo.run.settings import GROUPS, RunSettings, start_run


def test_every_flag_field_has_help_and_enums_have_their_default_among_the_choices():
    for settings_class in (RunSettings, classification.Settings, squad.Settings):
        for field in flag_fields(settings_class):
            assert field.metadata["help"], field.name
            choices = field.metadata["choices"]
            assert choices is None or field.default in choices, field.name
    names = {f.name for f in flag_fields(squad.Settings)}
    # SQuAD has none of classification's own settings (padding, bad rows, dedupe, dropout)
    assert not names & {"padding", "bad_rows", "dedupe", "dropout", "label_map", "pair"}
    assert {"doc_stride", "max_query_length", "shuffle_buffer"} <= names
    assert "devices" not in names  # set by code only


def test_every_setting_of_every_kind_is_in_one_group():
    for settings_class in {kind.settings for kind in KINDS.values()} | {multitask.Settings}:
        for field in dataclasses.fields(settings_class):
            assert field.metadata["group"] in GROUPS, (settings_class, field.name)


def test_a_group_gives_its_settings_and_names_itself_for_another_groups():
    settings = classification.Settings(model_dir="m", learning_rate=3e-3, pooling="mean")
    trainer = group_of(settings, "trainer")
    assert (trainer.learning_rate, trainer.padding) == (3e-3, "bucketed")
    assert group_of(settings, "model").pooling == "mean"
    with pytest.raises(AttributeError, match="pooling is not a setting of the trainer group"):
        trainer.pooling  # noqa: B018  (the read is the test)
    names = [set(group_of(settings, g).as_dict()) for g in GROUPS]
    assert sum(len(n) for n in names) == len(dataclasses.fields(settings))  # each in one


def test_a_task_changes_a_default_once_and_keeps_the_help():
    base = {f.name: f for f in dataclasses.fields(RunSettings)}
    mine = {f.name: f for f in dataclasses.fields(squad.Settings)}
    assert (base["max_seq_length"].default, mine["max_seq_length"].default) == (128, 384)
    assert mine["num_train_epochs"].metadata["help"] == base["num_train_epochs"].metadata["help"]
    assert squad.Settings(model_dir="m").num_train_epochs == 2.0


def test_values_outside_the_choices_are_refused():
    with pytest.raises(UsageError, match="padding must be one of"):
        check_fields(classification.Settings(model_dir="m", padding="tight"))
    with pytest.raises(UsageError, match="mode must be one of"):
        start_run("serve", RunSettings(model_dir="m"), "fixed")


@pytest.mark.parametrize("asked", ["auto", "bf16", "fp32"])
def test_start_run_resolves_the_precisions_it_passes_on(tmp_path, asked):
    if asked == "bf16" and not precision.cpu_flags() & precision.REWRITE_CPU_FLAGS:
        with pytest.raises(UsageError, match="precision=bf16 needs a CPU"):
            start_run("train", RunSettings(model_dir=str(tmp_path), precision=asked), "fixed")
        return
    _, compute = start_run("train", RunSettings(model_dir=str(tmp_path), precision=asked,
                                                xla_fusion="off"), "fixed")
    assert compute.precision == precision.resolve(asked)
    assert compute.eval_precision == ("fp32" if asked == "auto" else asked)
    assert compute.xla_fusion is False
    assert precision.current() == "fp32"  # nothing is set process-wide by starting a run
