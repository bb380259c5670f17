"""The training step functions that `zoo.training.loop.fit` calls, and `Mixture`, the batches of a
multi-task epoch.

`step_functions` builds, for one model and its loss, `train_step(iterator)` (one global step on
the next batch, or with gradient accumulation on the next N batches; its loss summed over
replicas) and `train_steps(iterator, n)` (n steps inside one tf.function call). A multi-task run
builds one pair per task: each task's core shares the encoder, so each step updates the encoder
and that task's head.
"""
import dataclasses
from typing import Dict, List

import numpy as np
import tensorflow as tf


@dataclasses.dataclass
class Mixture:
    """One epoch of a multi-task run: `datasets` {task: batches} and `schedule`, the task of
    each step (`sample_schedule`). A task's dataset gives at least as many batches as the
    schedule asks of it."""

    datasets: Dict[str, tf.data.Dataset]
    schedule: List[str]


def sampling_probabilities(counts, sampling="proportional", temperature=1.0):
    """{task: probability of a step being that task's} from {task: training examples}:
    proportional (p ~ n), uniform (p = 1/tasks) or temperature (p ~ n^(1/T), as in multi-task
    BERT papers: T=1 is proportional, large T approaches uniform)."""
    if sampling == "uniform":
        weights = {task: 1.0 for task in counts}
    elif sampling == "proportional":
        weights = {task: float(n) for task, n in counts.items()}
    elif sampling == "temperature":
        weights = {task: float(n) ** (1.0 / temperature) for task, n in counts.items()}
    else:
        raise ValueError(f"unknown task sampling {sampling!r}")
    total = sum(weights.values())
    return {task: w / total for task, w in weights.items()}


def sample_schedule(probabilities, steps, seed):
    """The task of each of `steps` steps, drawn with `probabilities` (seeded: the same epoch
    gives the same schedule, so a resumed epoch continues exactly)."""
    tasks = list(probabilities)
    chosen = np.random.default_rng(seed).choice(
        len(tasks), size=steps, p=[probabilities[t] for t in tasks])
    return [tasks[i] for i in chosen]


def step_functions(model, optimizer, loss_fn, metrics, strategy, batch_size,
                   accumulation_steps=1):
    """(train_step, train_steps) of `model`; see the module docstring. `metrics` are updated
    with (labels, outputs) of every batch."""
    update_batch = batch_size * accumulation_steps

    def gradients(inputs, labels):
        """(loss, gradients) of one batch, as a share of the update's batch."""
        with tf.GradientTape() as tape:
            outputs = model(inputs, training=True)
            loss = tf.nn.compute_average_loss(loss_fn(labels, outputs),
                                              global_batch_size=update_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        if strategy.num_replicas_in_sync > 1 or accumulation_steps > 1:
            # Embedding gradients are sparse, and replicas all-gather sparse gradients: with
            # batches of different lengths their shapes differ and the collective fails. Dense
            # gradients all-reduce with the variable's own, fixed shape (and add up in place).
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                     for g in grads]
        for metric in metrics.values():
            metric.update_state(labels, outputs)
        return loss, grads

    def step_fn(inputs, labels):
        loss, grads = gradients(inputs, labels)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def next_step(iterator):
        """One global step on the next batch; its loss, summed over replicas."""
        inputs, labels = next(iterator)
        losses = strategy.run(step_fn, args=(inputs, labels))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    @tf.function(reduce_retracing=True)
    def train_steps(iterator, num_steps):
        total = tf.constant(0.0)
        for _ in tf.range(num_steps):
            total += next_step(iterator)
        return total / tf.cast(num_steps, tf.float32)

    if accumulation_steps == 1:
        # Batches may vary in length (dynamic padding). One step per call is a function of its
        # own, without the loop: XLA auto-clustering (zoo.compute.fusion) fails on the loop.
        return tf.function(next_step, reduce_retracing=True), train_steps

    with strategy.scope():  # each replica sums its own gradients; the update all-reduces
        sums = [tf.Variable(tf.zeros_like(v), trainable=False,
                            synchronization=tf.VariableSynchronization.ON_READ,
                            aggregation=tf.VariableAggregation.SUM)
                for v in model.trainable_variables]

    def accumulate_fn(inputs, labels):
        loss, grads = gradients(inputs, labels)
        for total, grad in zip(sums, grads):
            total.assign_add(grad)
        return loss

    def apply_fn():
        optimizer.apply_gradients(zip([tf.identity(t) for t in sums], model.trainable_variables))
        for total in sums:
            total.assign(tf.zeros_like(total))

    def next_batch(iterator):
        inputs, labels = next(iterator)
        losses = strategy.run(accumulate_fn, args=(inputs, labels))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    accumulate = tf.function(next_batch, reduce_retracing=True)
    apply_sums = tf.function(lambda: strategy.run(apply_fn))

    def next_update(iterator):
        """One update from the next `accumulation_steps` batches (each call of the accumulating
        function is one batch: XLA fusion works on it as on a step)."""
        loss = sum(float(accumulate(iterator)) for _ in range(accumulation_steps))
        apply_sums()
        return loss

    return next_update, None
