"""zoo.training.checkpoints: a restore matches every variable of the model, and skips corrupt files."""
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from zoo.base.errors import UsageError
from zoo.training import checkpoints, run_record


def _model(hidden=8, outputs=2, extra=False):
    layers = [keras.Input((4,)), keras.layers.Dense(hidden), keras.layers.Dense(outputs)]
    if extra:
        layers.append(keras.layers.Dense(outputs))
    return keras.Sequential(layers)


def _save(model, model_dir, steps=(1,)):
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model),
                                         checkpoints.directory(model_dir), max_to_keep=5)
    for step in steps:
        model.layers[0].kernel.assign_add(tf.ones_like(model.layers[0].kernel))
        manager.save(checkpoint_number=step)
    return manager


def test_the_newest_checkpoint_is_restored_in_full(tmp_path):
    trained = _model()
    _save(trained, str(tmp_path), steps=(1, 2))
    fresh = _model()
    path = checkpoints.restore_newest(tf.train.Checkpoint(model=fresh), str(tmp_path))
    assert path.endswith("ckpt-2")
    for got, want in zip(fresh.weights, trained.weights):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert checkpoints.restore_newest(tf.train.Checkpoint(model=fresh), str(tmp_path / "new")) \
        is None


def test_a_checkpoint_of_another_model_is_refused_naming_what_it_was(tmp_path):
    model_dir = str(tmp_path)
    _save(_model(), model_dir)
    run_record.save(model_dir, dict(task="classification", encoder_handle="tiny",
                                    preprocessor_handle=None, outputs=["0", "1"]))
    # Another head size: a variable of another shape.
    with pytest.raises(UsageError, match=r"ckpt-1: this checkpoint does not fit .*trained as: "
                       r"task='classification', encoder_handle='tiny'"):
        checkpoints.restore_newest(tf.train.Checkpoint(model=_model(outputs=3)), model_dir)
    # An extra layer the checkpoint does not hold: before, expect_partial() let it through with
    # its random initial weights.
    with pytest.raises(UsageError, match="does not fit the model this run builds"):
        checkpoints.restore_newest(tf.train.Checkpoint(model=_model(extra=True)), model_dir)


def _truncate(path):
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


def test_a_corrupt_newest_checkpoint_falls_back_to_the_one_before(tmp_path, capsys):
    model_dir = str(tmp_path)
    trained = _model()
    _save(trained, model_dir, steps=(1,))
    step_one = [w.numpy() for w in trained.weights]
    _save(trained, model_dir, steps=(2,))
    for name in os.listdir(checkpoints.directory(model_dir)):
        if name.startswith("ckpt-2.data"):
            _truncate(os.path.join(checkpoints.directory(model_dir), name))
    fresh = _model()
    path = checkpoints.restore_newest(tf.train.Checkpoint(model=fresh), model_dir)
    assert path.endswith("ckpt-1")
    assert "ckpt-2: unreadable checkpoint" in capsys.readouterr().out
    for got, want in zip(fresh.weights, step_one):
        np.testing.assert_array_equal(got.numpy(), want)
    # Every checkpoint corrupt: a clear error naming them, not a crash inside TensorFlow.
    with open(os.path.join(checkpoints.directory(model_dir), "ckpt-1.index"), "wb") as f:
        f.write(b"garbage")
    with pytest.raises(UsageError, match=r"no readable checkpoint \(tried ckpt-2, ckpt-1\)"):
        checkpoints.restore_newest(tf.train.Checkpoint(model=_model()), model_dir)


def test_a_relative_model_dir_restores_too(tmp_path, monkeypatch):
    # `--model_dir=runs/mrpc`, as README writes it: TensorFlow records the checkpoints'
    # paths relative to their folder and hands them back with the folder in front.
    monkeypatch.chdir(tmp_path)
    trained = _model()
    _save(trained, os.path.join("runs", "model"), steps=(1, 2))
    fresh = _model()
    path = checkpoints.restore_newest(tf.train.Checkpoint(model=fresh),
                                      os.path.join("runs", "model"))
    assert path == os.path.join("runs", "model", "checkpoints", "ckpt-2")
    np.testing.assert_array_equal(fresh.weights[0].numpy(), trained.weights[0].numpy())
    assert [os.path.basename(p) for p in checkpoints.newest_first("runs/model")] == [
        "ckpt-2", "ckpt-1"]
