"""The training loop shared by every task: plan, checkpoints, resume, summaries (the optimizer
and its schedule: `zoo.training.optimizer`).

`fit` runs epochs of `train_step`s over datasets that `dataset_fn(epoch)` builds (shuffled with a
per-epoch seed, so an interrupted epoch can be resumed exactly: the batches already trained on
are skipped). The step counter is the optimizer's own `iterations`, saved with the checkpoint.
"""
import collections
import dataclasses
import math
import time
from typing import Optional

import tensorflow as tf
from absl import logging

from zoo.base import fs
from zoo.base import progress, stages
from zoo.base.errors import DivergedError, UsageError
from zoo.base.files import load_json, save_json
from zoo.compute import Compute, fusion, malloc, precision
from zoo.training import checkpoints, distribute
from zoo.training.steps import Mixture, step_functions

HISTORY_FILE = "history.json"


class Plan(collections.namedtuple("Plan", "steps_per_epoch epochs total_steps left_out",
                                   defaults=(0,))):
    """How long a training run is: `total_steps` over `epochs` of `steps_per_epoch` (the last
    epoch may be cut short). An epoch is whole batches: `left_out` examples (fewer than a
    batch) are not in it, other ones each epoch as the order changes."""

    def note(self, unit="examples"):
        """What a person should know of the examples each epoch leaves out (None: none)."""
        if not self.left_out:
            return None
        return (f"each epoch is {self.steps_per_epoch} whole batches: {self.left_out} of the "
                f"training {unit} are left out of each, other ones each epoch as the order "
                "changes (a batch size that divides their number trains on all of them)")


def plan_epochs(num_examples, trainer, unit="examples"):
    """The `Plan` for `num_examples` at the trainer settings' global batch size (times its
    `gradient_accumulation_steps`: a step is one update; `trainer`: the run's trainer group,
    `zoo.base.fields.group_of`).

    A fraction of an epoch is trained, never rounded away: 2.5 epochs of 12 steps are two
    epochs and the first 6 steps of the third. `trainer.max_train_steps` (if set) caps the
    total exactly, cutting the last epoch short.
    """
    accumulated = trainer.gradient_accumulation_steps
    batch = trainer.train_batch_size * accumulated
    if num_examples < batch:
        raise UsageError(f"{num_examples} training {unit} is less than one batch of {batch}"
                         + (f" ({trainer.train_batch_size} x {accumulated} accumulated)"
                            if accumulated > 1 else ""))
    if trainer.num_train_epochs <= 0:
        raise UsageError(f"num_train_epochs must be more than 0, not {trainer.num_train_epochs}")
    steps = num_examples // batch
    total = max(1, round(trainer.num_train_epochs * steps))
    if trainer.max_train_steps:
        total = min(total, trainer.max_train_steps)
    return Plan(steps, math.ceil(total / steps), total, num_examples - steps * batch)


def write_eval_summaries(model_dir, step, scalars):
    """TensorBoard scalars of an evaluation at training `step`, in MODEL_DIR/eval."""
    with tf.summary.create_file_writer(fs.join(model_dir, "eval")).as_default(step):
        for name, value in scalars.items():
            tf.summary.scalar(name, value)


def load_history(model_dir):
    return load_json(fs.join(model_dir, HISTORY_FILE), missing=[])


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


@dataclasses.dataclass(frozen=True)
class FitConfig:
    """What `fit` runs: how many steps, of what batches, where it writes, how it computes.

    Args:
        steps_per_epoch, epochs: the plan (`plan_epochs`).
        batch_size: the global batch of the datasets: each replica gets its share, and the loss
            is averaged over the global batch, so one replica and N replicas with the same
            global batch take the same step.
        model_dir: checkpoints, `history.json` and the training summaries go here.
        total_steps: steps in all (default `steps_per_epoch * epochs`); fewer cut the last
            epoch short (`plan_epochs` of a fractional epoch count).
        accumulation_steps: batches whose gradients are summed into one update (a step): the
            same update as one batch of `accumulation_steps * batch_size` examples, with the
            memory of one batch. The datasets give batches of `batch_size`; a step takes
            `accumulation_steps` of them.
        steps_per_execution: training steps run inside one tf.function call.
        checkpoint_every: also checkpoint every N steps (0: at the end of each epoch only).
        summary_every: steps between two loss summaries.
        compute: the run's `zoo.compute.Compute`: the training steps run in its `precision`,
            `on_epoch_end` in its `eval_precision`; with `xla_fusion` the training step is XLA
            auto-clustered (`zoo.compute.fusion`; needs `steps_per_execution` 1), only during
            the step's calls: the datasets, `on_epoch_end` and everything after `fit` run
            unclustered.
    """

    steps_per_epoch: int
    epochs: int
    batch_size: int
    model_dir: str
    total_steps: Optional[int] = None
    accumulation_steps: int = 1
    steps_per_execution: int = 1
    checkpoint_every: int = 0
    summary_every: int = 20
    compute: Compute = Compute()

    @property
    def steps(self):
        return self.total_steps or self.steps_per_epoch * self.epochs

    @property
    def update_batch(self):
        """Examples per step (per update)."""
        return self.batch_size * self.accumulation_steps

    def check(self, tasks):
        """UsageErrors for what cannot run together (`tasks`: how many step functions)."""
        if self.compute.xla_fusion and self.steps_per_execution != 1:
            raise UsageError("xla_fusion needs steps_per_execution=1")
        if self.accumulation_steps > 1 and self.steps_per_execution != 1:
            raise UsageError("gradient_accumulation_steps needs steps_per_execution=1")
        if tasks > 1 and self.steps_per_execution != 1:
            raise UsageError("a multi-task run needs steps_per_execution=1")


def fit(model, optimizer, loss_fn, dataset_fn, config: FitConfig, metrics=None, strategy=None,
        on_epoch_end=None, stop=None):
    """Trains `model` as `config` says; resumes from the model dir's latest checkpoint. Returns
    timing results.

    Create `model`, `optimizer` and `metrics` inside `strategy.scope()`.

    Args:
        model: a Keras model, or (multi-task) {task: core model}, cores sharing the encoder.
        loss_fn: (labels, model outputs) -> per-example losses; {task: that} for a multi-task
            model.
        dataset_fn: epoch -> dataset of (inputs, labels) batches of exactly
            `config.batch_size`. For a multi-task model: epoch -> `zoo.training.steps.Mixture`
            (a dataset per task and the task of each step).
        metrics: optional {name: tf_keras metric} updated with (labels, outputs) in training,
            reported per epoch as `train_<name>` (multi-task: names `task/metric`, updated in
            that task's steps).
        strategy: a tf.distribute.Strategy (default: the current one).
        on_epoch_end: optional (epoch, train_metrics) -> eval metrics dict, for the history.
        stop: optional () -> bool, asked after each `on_epoch_end`: True ends training there
            (early stopping).
    """
    loop = _Loop(model, optimizer, loss_fn, metrics or {}, strategy, config)
    for epoch in range(loop.first_epoch(), config.epochs):
        record = loop.train_epoch(epoch, dataset_fn(epoch))
        if on_epoch_end is not None:
            with precision.scope(config.compute.eval_precision), \
                    stages.stage(f"evaluation after epoch {epoch + 1}"):
                evaluated = on_epoch_end(epoch, record)
            record.update({f"eval_{k}": v for k, v in evaluated.items() if isinstance(v, float)})
        loop.keep_history(record)
        if stop is not None and stop():
            loop.timing["stopped_early_after_epoch"] = epoch + 1
            break
    return loop.finish()


class _Loop:
    """One `fit` call: its step functions, checkpoints, summaries, history and timing."""

    def __init__(self, model, optimizer, loss_fn, metrics, strategy, config):
        # One model, or a multi-task run's {task: core} (cores that share the encoder): a step
        # function per task, each updating the encoder and that task's head.
        self.models = model if isinstance(model, dict) else {None: model}
        config.check(len(self.models))
        self.config, self.optimizer, self.metrics = config, optimizer, metrics
        self.strategy = strategy or tf.distribute.get_strategy()
        malloc.settle()  # after TensorFlow's generator datasets freeze glibc's thresholds
        self.chief = distribute.is_chief(self.strategy)
        self.write_dir = distribute.write_dir(config.model_dir, self.strategy)
        self.saver = checkpoints.Saver(model, optimizer, config.model_dir, self.write_dir)
        self.start_step = self.saver.restore()
        self.history = load_history(config.model_dir)
        self.writer = (tf.summary.create_file_writer(fs.join(config.model_dir, "train"))
                       if self.chief else tf.summary.create_noop_writer())
        loss_fns = loss_fn if isinstance(loss_fn, dict) else {None: loss_fn}
        # The optimizer's slots made here, not in the first step's trace: a tf.function that
        # creates variables is traced twice (and a multi-task run's optimizer must know every
        # core's variables before the first task's step).
        with self.strategy.scope():
            optimizer.build(_unique(v for m in self.models.values()
                                    for v in m.trainable_variables))
        self.steps = {task: step_functions(
            core, optimizer, loss_fns[task],
            {k: m for k, m in metrics.items() if task is None or k.startswith(f"{task}/")},
            self.strategy, config.batch_size, config.accumulation_steps)
            for task, core in self.models.items()}
        self.hints = (["XLA fusion was on (--xla_fusion=off turns it off)."]
                      if config.compute.xla_fusion else []) + (
            ["bf16 was on (--precision=fp32 turns it off)."]
            if config.compute.precision == "bf16" else [])
        self.timing = dict(steps=0, seconds=0.0)

    def first_epoch(self):
        """The epoch to resume (the epoch count when training is complete)."""
        c = self.config
        return self.start_step // c.steps_per_epoch if self.start_step < c.steps else c.epochs

    def train_epoch(self, epoch, data):
        """Trains the rest of `epoch` on `data`; returns its history record."""
        c = self.config
        done = int(self.optimizer.iterations.numpy()) - epoch * c.steps_per_epoch
        epoch_steps = min(c.steps_per_epoch, c.steps - epoch * c.steps_per_epoch)
        losses = []
        for metric in self.metrics.values():
            metric.reset_state()
        iterators, order = _epoch_batches(data, self.strategy, done, epoch_steps,
                                          c.accumulation_steps)
        with progress.bar(f"train epoch {epoch + 1}/{c.epochs}", "ex",
                          epoch_steps * c.update_batch, done * c.update_batch,
                          enabled=self.chief) as bar, \
                precision.scope(c.compute.precision):  # the bar is closed also when a step fails
            while done < epoch_steps:
                num_steps = min(c.steps_per_execution, epoch_steps - done)
                loss = self._call(order[done], iterators, num_steps,
                                  done + epoch * c.steps_per_epoch + 1)
                done += num_steps
                losses.append((loss, num_steps))
                self._after_steps(loss, num_steps, bar)
        self._save()
        return self._epoch_record(epoch, losses)

    def _call(self, task, iterators, num_steps, first_step):
        """Runs `num_steps` training steps of `task` in one call; returns the loss."""
        train_step, train_steps = self.steps[task]
        began = time.perf_counter()
        with stages.stage(f"training step {first_step}" + (f" ({task})" if task else ""),
                          self.hints):
            with fusion.scope(self.config.compute.xla_fusion):
                loss = (train_step(iterators[task]) if self.config.steps_per_execution == 1
                        else train_steps(iterators[task], tf.constant(num_steps)))
            loss = float(loss)
        if not math.isfinite(loss):
            self._diverged(f"training step {first_step + num_steps - 1}" + (
                f" ({task})" if task else ""), f"the loss is {loss}")
        seconds = time.perf_counter() - began
        timing = self.timing
        if not timing["steps"]:  # the first call also traces: kept out of the steady rate
            timing.update(first_call_seconds=seconds, first_call_steps=num_steps)
        timing["seconds"] += seconds
        timing["steps"] += num_steps
        if task is not None:  # multi-task: the steps each task took
            per_task = timing.setdefault("steps_per_task", {})
            per_task[task] = per_task.get(task, 0) + num_steps
        return loss

    def _after_steps(self, loss, num_steps, bar):
        """The progress bar, loss summaries and step checkpoints after a call."""
        c = self.config
        step = int(self.optimizer.iterations.numpy())
        bar.update(c.update_batch * num_steps)
        bar.set_postfix(loss=f"{loss:.4f}", step=f"{step}/{c.steps}")
        crossed = lambda every: step // every != (step - num_steps) // every  # noqa: E731
        if crossed(c.summary_every) or step == c.steps:
            with self.writer.as_default(step=step):
                tf.summary.scalar("loss", loss)
                tf.summary.scalar("learning_rate", self.optimizer.learning_rate)
        if c.checkpoint_every and crossed(c.checkpoint_every):
            self._save()

    def _save(self):
        """A checkpoint, after checking every weight is a finite number (NaN weights are never
        saved, so never exported)."""
        weights = _unique(w for m in self.models.values() for w in m.trainable_weights)
        if not bool(tf.reduce_all([tf.reduce_all(tf.math.is_finite(w)) for w in weights])):
            self._diverged(f"step {int(self.optimizer.iterations.numpy())}",
                           "the weights are no longer finite numbers")
        self.saver.save()

    def _diverged(self, where, what):
        """Stops training: a `DivergedError` naming the step and the likely causes."""
        saved = self.saver.saved_step
        raise DivergedError(
            f"{where}: {what}; training stopped, and nothing after "
            + (f"the last checkpoint (step {saved})" if saved else "the start")
            + " was saved. Likely causes: a learning rate too high for this model (lower "
            "`learning_rate` or raise `warmup_proportion`), or labels or scores out of range"
            + "".join(f". {hint}" for hint in self.hints))

    def _epoch_record(self, epoch, losses):
        record = dict(epoch=epoch + 1, step=int(self.optimizer.iterations.numpy()))
        if losses:
            record["train_loss"] = sum(loss * n for loss, n in losses) / sum(n for _, n in losses)
            record.update({f"train_{name}": float(m.result())
                           for name, m in self.metrics.items()})
            with self.writer.as_default(step=record["step"]):
                for name, metric in self.metrics.items():
                    tf.summary.scalar(name, metric.result())
        return record

    def keep_history(self, record):
        """`record` into MODEL_DIR/history.json, replacing an earlier record of its epoch."""
        self.history = [h for h in self.history if h["epoch"] != record["epoch"]] + [record]
        if self.chief:
            save_json(fs.join(self.config.model_dir, HISTORY_FILE), self.history)

    def finish(self):
        """Closes the summaries and the worker's write dir; returns the timing results."""
        self.writer.flush()
        distribute.cleanup_write_dir(self.write_dir, self.strategy)
        c, timing = self.config, self.timing
        timing["examples"] = timing["steps"] * c.update_batch
        timing["examples_per_second"] = (timing["examples"] / timing["seconds"]
                                         if timing["seconds"] else 0.0)
        steady_steps = timing["steps"] - timing.get("first_call_steps", 0)
        steady_seconds = timing["seconds"] - timing.get("first_call_seconds", 0.0)
        timing["steady_examples_per_second"] = (steady_steps * c.update_batch / steady_seconds
                                                if steady_steps and steady_seconds > 0 else 0.0)
        timing.update(gradient_accumulation_steps=c.accumulation_steps,
                      precision=c.compute.precision, xla_fusion=c.compute.xla_fusion)
        timing["weights_fingerprint"] = weights_fingerprint(
            _unique(w for m in self.models.values() for w in m.weights))
        logging.info("weights fingerprint: %r", timing["weights_fingerprint"])
        return timing
