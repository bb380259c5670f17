"""The shared training loop: checkpoints, exact resume and gradient accumulation."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from tests.helpers import ROOT
from zoo.base import stages
from zoo.training import checkpoints, loop
from zoo.training.optimizer import create_optimizer


def _toy_model(seed=0):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                             keras.layers.Dense(2)])


def _toy_data():
    x = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.int64)


def _toy_loss(labels, logits):
    return keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)


def _toy_setup(model_dir, seed=0):
    model = _toy_model(seed)
    optimizer = create_optimizer(0.05, total_steps=12, warmup_steps=2)
    x, y = _toy_data()

    def dataset_fn(epoch):  # an order that depends on the epoch alone, as zoo's pipelines do
        order = np.random.default_rng(epoch).permutation(32)
        return tf.data.Dataset.from_tensor_slices((x[order], y[order])).batch(8)

    return model, optimizer, dataset_fn, _toy_loss


class _Crash(Exception):
    pass


def test_an_interrupted_run_resumes_to_the_same_weights(tmp_path):
    straight_dir, resumed_dir = str(tmp_path / "straight"), str(tmp_path / "resumed")
    model, optimizer, dataset_fn, loss_fn = _toy_setup(straight_dir)
    loop.fit(model, optimizer, loss_fn, dataset_fn, loop.FitConfig(4, 3, 8, straight_dir))
    expected = [w.numpy() for w in model.weights]

    model, optimizer, dataset_fn, loss_fn = _toy_setup(resumed_dir)

    def crashing(epoch):  # fails fetching batch 4 of epoch 2: after step 7, checkpointed at 6
        if epoch != 1:
            return dataset_fn(epoch)

        def poison(i, batch):
            x, y = batch
            x = tf.cond(i >= 3, lambda: x * np.nan, lambda: x)
            return tf.debugging.check_numerics(x, "simulated crash"), y

        return dataset_fn(epoch).enumerate().map(poison)

    # The error names the step it happened in, with TensorFlow's error as its cause.
    with pytest.raises(stages.StageError, match="training step 8 failed inside TensorFlow: "
                       ".*simulated crash") as raised:
        loop.fit(model, optimizer, loss_fn, crashing,
                 loop.FitConfig(4, 3, 8, resumed_dir, checkpoint_every=3))
    assert isinstance(raised.value.__cause__, tf.errors.InvalidArgumentError)
    assert tf.train.latest_checkpoint(os.path.join(resumed_dir, "checkpoints")).endswith("-6")

    model, optimizer, dataset_fn, loss_fn = _toy_setup(resumed_dir, seed=123)  # fresh weights
    timing = loop.fit(model, optimizer, loss_fn, dataset_fn, loop.FitConfig(4, 3, 8, resumed_dir))
    assert timing["steps"] == 12 - 6 and int(optimizer.iterations) == 12
    # The first call (which traces) is kept out of the steady rate: 5 of the 6 steps count.
    assert timing["first_call_steps"] == 1 and timing["steady_examples_per_second"] > 0
    for got, want in zip(model.weights, expected):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    history = json.load(open(os.path.join(resumed_dir, loop.HISTORY_FILE)))
    assert [h["epoch"] for h in history] == [1, 2, 3]


def test_a_finished_run_is_not_trained_again(tmp_path):
    model, optimizer, dataset_fn, loss_fn = _toy_setup(str(tmp_path))
    loop.fit(model, optimizer, loss_fn, dataset_fn, loop.FitConfig(4, 2, 8, str(tmp_path)))
    model, optimizer, dataset_fn, loss_fn = _toy_setup(str(tmp_path))
    assert loop.fit(model, optimizer, loss_fn, dataset_fn,
                    loop.FitConfig(4, 2, 8, str(tmp_path)))["steps"] == 0


def test_the_training_step_is_traced_once(tmp_path):
    """The optimizer's slots are made before the first step: a step function that creates
    variables is traced twice, each trace as long as the model is large."""
    model, optimizer, dataset_fn, loss_fn = _toy_setup(str(tmp_path))
    traces = []

    def counting_loss(labels, logits):  # its Python body runs once per trace
        traces.append(1)
        return loss_fn(labels, logits)

    timing = loop.fit(model, optimizer, counting_loss, dataset_fn,
                      loop.FitConfig(4, 2, 8, str(tmp_path)))
    assert timing["steps"] == 8 and len(traces) == 1


def test_summaries_and_restore_model(tmp_path):
    model, optimizer, dataset_fn, loss_fn = _toy_setup(str(tmp_path))
    loop.fit(model, optimizer, loss_fn, dataset_fn,
             loop.FitConfig(4, 1, 8, str(tmp_path), summary_every=2))
    assert os.listdir(tmp_path / "train")  # TensorBoard event file
    fresh, *_ = _toy_setup(str(tmp_path), seed=7)
    checkpoints.restore_model(fresh, str(tmp_path))
    for a, b in zip(fresh.weights, model.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        checkpoints.restore_model(fresh, str(tmp_path / "nothing"))


def _trainer(**values):
    """The trainer group of a run's settings (what `plan_epochs` takes)."""
    from zoo.base.fields import group_of
    from zoo.run.settings import RunSettings
    return group_of(RunSettings(model_dir="unused", **values), "trainer")


def test_plan_epochs_needs_at_least_one_batch():
    assert loop.plan_epochs(100, _trainer(train_batch_size=8, num_train_epochs=3)) == \
        (12, 3, 36, 4)
    with pytest.raises(ValueError, match="7 training windows is less than one batch of 8"):
        loop.plan_epochs(7, _trainer(train_batch_size=8), "windows")
    with pytest.raises(ValueError, match="num_train_epochs must be more than 0"):
        loop.plan_epochs(100, _trainer(train_batch_size=8, num_train_epochs=0))


def test_the_examples_an_epoch_leaves_out_are_said_once():
    plan = loop.plan_epochs(39, _trainer(train_batch_size=8))
    assert plan.left_out == 7 and plan.note("windows").startswith(
        "each epoch is 4 whole batches: 7 of the training windows are left out of each")
    assert loop.plan_epochs(40, _trainer(train_batch_size=8)).note() is None


def test_a_fraction_of_an_epoch_is_trained_not_rounded_away():
    assert loop.plan_epochs(96, _trainer(train_batch_size=8, num_train_epochs=2.5)) == \
        (12, 3, 30, 0)  # half of the third epoch
    assert loop.plan_epochs(96, _trainer(train_batch_size=8, num_train_epochs=0.25)) == \
        (12, 1, 3, 0)


def test_fit_stops_inside_the_last_epoch_and_resumes_there(tmp_path):
    model, optimizer, dataset_fn, loss_fn = _toy_setup(str(tmp_path))
    timing = loop.fit(model, optimizer, loss_fn, dataset_fn,
                      loop.FitConfig(4, 2, 8, str(tmp_path), total_steps=6))
    assert timing["steps"] == 6 and int(optimizer.iterations) == 6
    history = json.load(open(os.path.join(str(tmp_path), loop.HISTORY_FILE)))
    assert [(h["epoch"], h["step"]) for h in history] == [(1, 4), (2, 6)]
    model, optimizer, dataset_fn, loss_fn = _toy_setup(str(tmp_path))
    assert loop.fit(model, optimizer, loss_fn, dataset_fn, loop.FitConfig(
        4, 2, 8, str(tmp_path), total_steps=6))["steps"] == 0  # finished: nothing more
    # asked for more: the rest of epoch 2, then 2 steps of epoch 3
    timing = loop.fit(model, optimizer, loss_fn, dataset_fn,
                      loop.FitConfig(4, 3, 8, str(tmp_path), total_steps=10))
    assert timing["steps"] == 4 and int(optimizer.iterations) == 10


def test_max_train_steps_caps_training():
    def plan(max_train_steps):
        return loop.plan_epochs(100, _trainer(train_batch_size=8, num_train_epochs=3,
                                              max_train_steps=max_train_steps))[:3]

    assert plan(5) == (12, 1, 5)  # one short epoch
    assert plan(30) == (12, 3, 30)  # exactly 30: no rounding
    assert plan(1000) == (12, 3, 36)  # the epochs come first


def test_fit_runs_its_steps_and_evaluations_in_the_precisions_it_is_given(tmp_path):
    """The run's `Compute` is passed in, not read from process-wide settings: the step is traced
    under the training precision, the evaluation runs under the evaluation one, and the process
    setting is as it was afterwards."""
    from zoo.compute import Compute
    from zoo.compute import precision
    model, optimizer, dataset_fn, loss_fn = _toy_setup(str(tmp_path))
    seen = []

    def traced_loss(labels, logits):
        seen.append(("step", precision.current()))
        return loss_fn(labels, logits)

    def on_epoch_end(epoch, record):
        seen.append(("evaluation", precision.current()))
        return {}

    timing = loop.fit(model, optimizer, traced_loss, dataset_fn, loop.FitConfig(
        4, 2, 8, str(tmp_path), compute=Compute(precision="bf16", eval_precision="fp32")),
        on_epoch_end=on_epoch_end)
    assert ("step", "bf16") in seen and ("step", "fp32") not in seen
    assert [s for s in seen if s[0] == "evaluation"] == [("evaluation", "fp32")] * 2
    assert timing["precision"] == "bf16" and precision.current() == "fp32"


def _one_update(model_dir, batch_size, accumulation_steps, strategy=None):
    """The weights after one update over the same 32 examples, in batches of `batch_size`."""
    strategy = strategy or tf.distribute.get_strategy()
    with strategy.scope():
        model = _toy_model()
        optimizer = create_optimizer(0.05, total_steps=10, warmup_steps=0)
    x, y = _toy_data()
    timing = loop.fit(model, optimizer, _toy_loss,
                      lambda epoch: tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size),
                      loop.FitConfig(1, 1, batch_size, model_dir,
                                     accumulation_steps=accumulation_steps),
                      strategy=strategy)
    assert timing["steps"] == 1 and int(optimizer.iterations.numpy()) == 1
    assert timing["examples"] == batch_size * accumulation_steps
    return [w.numpy() for w in model.weights]


def test_gradient_accumulation_gives_the_update_of_the_larger_batch(tmp_path):
    whole = _one_update(str(tmp_path / "whole"), 32, 1)
    accumulated = _one_update(str(tmp_path / "accumulated"), 8, 4)
    start = _one_update(str(tmp_path / "start"), 8, 1)  # one batch of 8: another update
    for a, b in zip(accumulated, whole):
        np.testing.assert_allclose(a, b, atol=1e-5)
    assert max(float(np.abs(a - b).max()) for a, b in zip(start, whole)) > 1e-3


MIRRORED_ACCUMULATION = """
import sys
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from tests.training.test_loop import _one_update
mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
accumulated = _one_update(sys.argv[1] + "/mirrored", 8, 4, mirrored)  # 4 a replica, 4 times
whole = _one_update(sys.argv[1] + "/whole", 32, 1)
print(max(float(np.abs(a - b).max()) for a, b in zip(accumulated, whole)))
"""


def test_gradient_accumulation_under_a_mirrored_strategy(tmp_path):
    result = subprocess.run([sys.executable, "-c", MIRRORED_ACCUMULATION, str(tmp_path)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert float(result.stdout.strip().splitlines()[-1]) < 1e-5
