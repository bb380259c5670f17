"""zoo.training.run_record: a model dir's run, and what changed since."""
import os

import pytest

from zoo.base.errors import UsageError
from zoo.data.fingerprint import data_fingerprint
from zoo.run.settings import RunSettings
from zoo.training import run_record


def _record(tmp_path, **changes):
    settings = RunSettings(model_dir=str(tmp_path), encoder_handle="tiny", train_batch_size=8)
    for key, value in changes.items():
        setattr(settings, key, value)
    data = tmp_path / "train.csv"
    if not data.exists():
        data.write_text("text,label\nhi,1\n")
    return run_record.describe("classification", settings, ["0", "1"],
                               data_fingerprint(files=[str(data)]))


def test_a_resume_with_changed_settings_lists_every_change(tmp_path, capsys):
    model_dir = str(tmp_path)
    saved = _record(tmp_path)
    run_record.save(model_dir, saved)
    assert run_record.check_resume(model_dir, _record(tmp_path)) == []
    (tmp_path / "train.csv").write_text("text,label\nhi,0\n")  # same size, other bytes
    changed = _record(tmp_path, train_batch_size=16, max_seq_length=64)
    with pytest.raises(UsageError) as raised:
        run_record.check_resume(model_dir, changed)
    message = str(raised.value)
    assert "train_batch_size: 8 -> 16" in message and "max_seq_length: 128 -> 64" in message
    assert "data: " in message and "pass allow_changed_settings" in message
    assert "pass --allow_changed_settings" in raised.value.for_command_line()
    assert len(run_record.check_resume(model_dir, changed, allow_changed_settings=True)) == 3
    assert "warning: resuming with a changed setting: train_batch_size: 8 -> 16" in \
        capsys.readouterr().out


def test_a_restore_checks_only_what_the_weights_depend_on(tmp_path):
    model_dir = str(tmp_path)
    run_record.save(model_dir, _record(tmp_path))
    run_record.check_restore(model_dir, _record(tmp_path, max_seq_length=64, seed=3))
    with pytest.raises(UsageError, match=r"encoder_handle: 'tiny' -> 'other'"):
        run_record.check_restore(model_dir, _record(tmp_path, encoder_handle="other"))
    run_record.check_restore(str(tmp_path / "older"), _record(tmp_path))  # no run.json: no check


def test_start_training_saves_the_record_and_checks_only_a_resume(tmp_path):
    model_dir = str(tmp_path)
    run_record.start_training(model_dir, _record(tmp_path))
    assert run_record.load(model_dir)["train_batch_size"] == 8
    # No checkpoint yet: nothing to resume, the new settings simply replace the record.
    run_record.start_training(model_dir, _record(tmp_path, train_batch_size=4))
    assert run_record.load(model_dir)["train_batch_size"] == 4
    os.makedirs(tmp_path / "checkpoints")
    (tmp_path / "checkpoints" / "checkpoint").write_text('model_checkpoint_path: "ckpt-1"\n')
    (tmp_path / "checkpoints" / "ckpt-1.index").write_bytes(b"")
    with pytest.raises(UsageError, match="train_batch_size: 4 -> 8"):
        run_record.start_training(model_dir, _record(tmp_path))
