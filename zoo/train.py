"""The training loop shared by every task: plan, checkpoints, resume, summaries (the optimizer
and its schedule: `zoo.optimizer`).

`fit` runs epochs of `train_step`s over datasets that `dataset_fn(epoch)` builds (shuffled with a
per-epoch seed, so an interrupted epoch can be resumed exactly: the batches already trained on
are skipped). The step counter is the optimizer's own `iterations`, saved with the checkpoint.
"""
import collections
import math
import os
import time

import tensorflow as tf
from absl import logging

from zoo import checkpoints, distribute, fusion, malloc, precision, progress, stages
from zoo.errors import UsageError
from zoo.files import load_json, save_json
from zoo.settings import Compute
from zoo.steps import Mixture, step_functions

HISTORY_FILE = "history.json"


class Plan(collections.namedtuple("Plan", "steps_per_epoch epochs total_steps")):
    """How long a training run is: `total_steps` over `epochs` of `steps_per_epoch` (the last
    epoch may be cut short)."""


def plan_epochs(num_examples, settings, unit="examples"):
    """The `Plan` for `num_examples` at the settings' global batch size (times its
    `gradient_accumulation_steps`: a step is one update).

    A fraction of an epoch is trained, never rounded away: 2.5 epochs of 12 steps are two
    epochs and the first 6 steps of the third. `settings.max_train_steps` (if set) caps the
    total exactly, cutting the last epoch short.
    """
    accumulated = getattr(settings, "gradient_accumulation_steps", 1)
    batch = settings.train_batch_size * accumulated
    if num_examples < batch:
        raise UsageError(f"{num_examples} training {unit} is less than one batch of {batch}"
                         + (f" ({settings.train_batch_size} x {accumulated} accumulated)"
                            if accumulated > 1 else ""))
    if settings.num_train_epochs <= 0:
        raise UsageError(f"num_train_epochs must be more than 0, not {settings.num_train_epochs}")
    steps = num_examples // batch
    total = max(1, round(settings.num_train_epochs * steps))
    if settings.max_train_steps:
        total = min(total, settings.max_train_steps)
    return Plan(steps, math.ceil(total / steps), total)


def write_eval_summaries(model_dir, step, scalars):
    """TensorBoard scalars of an evaluation at training `step`, in MODEL_DIR/eval."""
    with tf.summary.create_file_writer(os.path.join(model_dir, "eval")).as_default(step):
        for name, value in scalars.items():
            tf.summary.scalar(name, value)


def load_history(model_dir):
    return load_json(os.path.join(model_dir, HISTORY_FILE), missing=[])


class Checkpoints:
    """The model + optimizer checkpoint of a model dir; `restore()` returns the step reached.

    Every worker restores from `model_dir`; a non-chief worker saves into its own `write_dir`
    (all workers must take part in saving under multi-worker training).
    """

    def __init__(self, model, optimizer, model_dir, write_dir=None, max_to_keep=3):
        self.optimizer = optimizer
        self.model_dir = model_dir
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, os.path.join(write_dir or model_dir, "checkpoints"),
            max_to_keep=max_to_keep)
        self.saved_step = None

    def restore(self):
        """Restores the newest readable checkpoint, if any (`zoo.checkpoints`)."""
        checkpoints.restore_newest(self.checkpoint, self.model_dir)
        self.saved_step = int(self.optimizer.iterations.numpy())
        return self.saved_step

    def save(self):
        """Saves unless the current step is already saved (step and epoch ends may coincide)."""
        step = int(self.optimizer.iterations.numpy())
        if step != self.saved_step:
            self.manager.save(checkpoint_number=step)
            self.saved_step = step


def restore_model(model, model_dir):
    """Loads the newest readable checkpoint's model weights (for eval / predict / export); every
    variable of `model` must be in it (`zoo.checkpoints`). Returns the checkpoint's path."""
    restored = checkpoints.restore_newest(tf.train.Checkpoint(model=model), model_dir)
    if not restored:
        raise FileNotFoundError(f"{checkpoints.directory(model_dir)}: no checkpoint; train first "
                                "(--mode=train)")
    return restored


def weights_fingerprint(weights):
    """A float summarising weights (a model's, or a list): equal on workers that hold equal
    weights."""
    weights = getattr(weights, "weights", weights)
    return float(sum(tf.reduce_sum(tf.cast(w, tf.float64) * (i + 1))
                     for i, w in enumerate(weights)))


def _unique(variables):
    """Variables without repeats (the encoder of several cores), in first-seen order."""
    seen, unique = set(), []
    for v in variables:
        if id(v) not in seen:
            seen.add(id(v))
            unique.append(v)
    return unique


def _epoch_batches(data, strategy, done, epoch_steps, accumulation_steps):
    """({task: distributed iterator}, [task of each step of the epoch]) for the rest of an
    epoch: `data` is one dataset (task None) or a `Mixture`; the `done` steps are skipped."""
    if not isinstance(data, Mixture):
        return {None: iter(strategy.experimental_distribute_dataset(
            data.skip(done * accumulation_steps)
            .take((epoch_steps - done) * accumulation_steps)))}, [None] * epoch_steps
    order = data.schedule[:epoch_steps]
    iterators = {}
    for task, dataset in data.datasets.items():
        skip, left = order[:done].count(task), order[done:].count(task)
        iterators[task] = iter(strategy.experimental_distribute_dataset(
            dataset.skip(skip * accumulation_steps).take(left * accumulation_steps)))
    return iterators, order


def fit(model, optimizer, loss_fn, dataset_fn, steps_per_epoch, epochs, batch_size, model_dir,
        checkpoint_every=0, on_epoch_end=None, summary_every=20, metrics=None, strategy=None,
        steps_per_execution=1, compute=Compute(), total_steps=None, accumulation_steps=1,
        stop=None):
    """Trains `model`; resumes from the model dir's latest checkpoint. Returns timing results.

    Create `model`, `optimizer` and `metrics` inside `strategy.scope()`.

    Args:
        model: a Keras model, or (multi-task) {task: core model}, cores sharing the encoder.
        loss_fn: (labels, model outputs) -> per-example losses; {task: that} for a multi-task
            model.
        dataset_fn: epoch -> dataset of (inputs, labels) batches of exactly `batch_size`, the
            global batch: each replica gets its share, and the loss is averaged over the global
            batch, so one replica and N replicas with the same global batch take the same step.
            For a multi-task model: epoch -> `zoo.steps.Mixture` (a dataset per task and the
            task of each step).
        on_epoch_end: optional (epoch, train_metrics) -> eval metrics dict, for the history.
        stop: optional () -> bool, asked after each `on_epoch_end`: True ends training there
            (early stopping).
        metrics: optional {name: tf_keras metric} updated with (labels, outputs) in training,
            reported per epoch as `train_<name>` (multi-task: names `task/metric`, updated in
            that task's steps).
        strategy: a tf.distribute.Strategy (default: the current one).
        steps_per_execution: training steps run inside one tf.function call.
        total_steps: steps in all (default `steps_per_epoch * epochs`); fewer cut the last
            epoch short (`plan_epochs` of a fractional epoch count).
        accumulation_steps: batches whose gradients are summed into one update (a step): the
            same update as one batch of `accumulation_steps * batch_size` examples, with the
            memory of one batch. The datasets give batches of `batch_size`; a step takes
            `accumulation_steps` of them.
        compute: the run's `zoo.settings.Compute`: the training steps run in its `precision`,
            `on_epoch_end` in its `eval_precision`; with `xla_fusion` the training step is
            XLA auto-clustered (`zoo.fusion`; needs `steps_per_execution` 1), only during the
            step's calls: the datasets, `on_epoch_end` and everything after `fit` run
            unclustered.
    """
    xla_fusion = compute.xla_fusion
    if xla_fusion and steps_per_execution != 1:
        raise UsageError("xla_fusion needs steps_per_execution=1")
    if accumulation_steps > 1 and steps_per_execution != 1:
        raise UsageError("gradient_accumulation_steps needs steps_per_execution=1")
    strategy = strategy or tf.distribute.get_strategy()
    malloc.settle()  # after TensorFlow's generator datasets freeze glibc's thresholds
    chief = distribute.is_chief(strategy)
    write_dir = distribute.write_dir(model_dir, strategy)
    metrics = metrics or {}
    saver = Checkpoints(model, optimizer, model_dir, write_dir)
    start_step = saver.restore()
    total_steps = total_steps or steps_per_epoch * epochs
    history = load_history(model_dir)
    writer = (tf.summary.create_file_writer(os.path.join(model_dir, "train")) if chief
              else tf.summary.create_noop_writer())

    update_batch = batch_size * accumulation_steps
    # One model, or a multi-task run's {task: core} (cores that share the encoder): a step
    # function per task, each updating the encoder and that task's head.
    models = model if isinstance(model, dict) else {None: model}
    loss_fns = loss_fn if isinstance(loss_fn, dict) else {None: loss_fn}
    if len(models) > 1:
        if steps_per_execution != 1:
            raise UsageError("a multi-task run needs steps_per_execution=1")
        optimizer.build(_unique(v for m in models.values() for v in m.trainable_variables))
    steps = {task: step_functions(
        core, optimizer, loss_fns[task],
        {k: m for k, m in metrics.items() if task is None or k.startswith(f"{task}/")},
        strategy, batch_size, accumulation_steps) for task, core in models.items()}

    hints = []
    if xla_fusion:
        hints.append("XLA fusion was on (--xla_fusion=off turns it off).")
    if compute.precision == "bf16":
        hints.append("bf16 was on (--precision=fp32 turns it off).")
    timing = dict(steps=0, seconds=0.0)
    first_epoch = start_step // steps_per_epoch if start_step < total_steps else epochs
    for epoch in range(first_epoch, epochs):
        done = int(optimizer.iterations.numpy()) - epoch * steps_per_epoch
        epoch_steps = min(steps_per_epoch, total_steps - epoch * steps_per_epoch)
        losses = []
        for metric in metrics.values():
            metric.reset_state()
        iterators, order = _epoch_batches(dataset_fn(epoch), strategy, done, epoch_steps,
                                          accumulation_steps)
        with progress.bar(f"train epoch {epoch + 1}/{epochs}", "ex", epoch_steps * update_batch,
                          done * update_batch, enabled=chief) as bar, \
                precision.scope(compute.precision):  # the bar is closed also when a step fails
            while done < epoch_steps:
                num_steps = min(steps_per_execution, epoch_steps - done)
                began = time.perf_counter()
                task = order[done]
                train_step, train_steps = steps[task]
                with stages.stage(f"training step {done + epoch * steps_per_epoch + 1}"
                                  + (f" ({task})" if task else ""), hints):
                    with fusion.scope(xla_fusion):
                        loss = (train_step(iterators[task]) if steps_per_execution == 1
                                else train_steps(iterators[task], tf.constant(num_steps)))
                    loss = float(loss)
                seconds = time.perf_counter() - began
                if not timing["steps"]:  # the first call also traces: kept out of the steady rate
                    timing.update(first_call_seconds=seconds, first_call_steps=num_steps)
                timing["seconds"] += seconds
                timing["steps"] += num_steps
                if task is not None:  # multi-task: the steps each task took
                    per_task = timing.setdefault("steps_per_task", {})
                    per_task[task] = per_task.get(task, 0) + num_steps
                done += num_steps
                losses.append((loss, num_steps))
                step = int(optimizer.iterations.numpy())
                bar.update(update_batch * num_steps)
                bar.set_postfix(loss=f"{loss:.4f}", step=f"{step}/{total_steps}")
                crossed = lambda every: step // every != (step - num_steps) // every  # noqa: E731
                if crossed(summary_every) or step == total_steps:
                    with writer.as_default(step=step):
                        tf.summary.scalar("loss", loss)
                        tf.summary.scalar("learning_rate", optimizer.learning_rate)
                if checkpoint_every and crossed(checkpoint_every):
                    saver.save()
        saver.save()
        record = dict(epoch=epoch + 1, step=int(optimizer.iterations.numpy()))
        if losses:
            record["train_loss"] = sum(l * n for l, n in losses) / sum(n for _, n in losses)
            record.update({f"train_{name}": float(m.result()) for name, m in metrics.items()})
            with writer.as_default(step=record["step"]):
                for name, metric in metrics.items():
                    tf.summary.scalar(name, metric.result())
        if on_epoch_end is not None:
            with precision.scope(compute.eval_precision), \
                    stages.stage(f"evaluation after epoch {epoch + 1}"):
                evaluated = on_epoch_end(epoch, record)
            record.update({f"eval_{k}": v for k, v in evaluated.items() if isinstance(v, float)})
        history = [h for h in history if h["epoch"] != epoch + 1] + [record]
        if chief:
            save_json(os.path.join(model_dir, HISTORY_FILE), history)
        if stop is not None and stop():
            timing["stopped_early_after_epoch"] = epoch + 1
            break
    writer.flush()
    distribute.cleanup_write_dir(write_dir, strategy)
    timing["examples"] = timing["steps"] * update_batch
    timing["examples_per_second"] = (timing["examples"] / timing["seconds"]
                                     if timing["seconds"] else 0.0)
    steady_steps = timing["steps"] - timing.get("first_call_steps", 0)
    steady_seconds = timing["seconds"] - timing.get("first_call_seconds", 0.0)
    timing["steady_examples_per_second"] = (steady_steps * update_batch / steady_seconds
                                            if steady_steps and steady_seconds > 0 else 0.0)
    timing["gradient_accumulation_steps"] = accumulation_steps
    timing["precision"] = compute.precision
    timing["xla_fusion"] = xla_fusion
    timing["weights_fingerprint"] = weights_fingerprint(
        _unique(w for m in models.values() for w in m.weights))
    logging.info("weights fingerprint: %r", timing["weights_fingerprint"])
    return timing
