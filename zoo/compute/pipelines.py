"""Input pipelines that start quickly: grappler off for tf.data's functions, on for the model's.

Every time a tf.data iterator starts (each epoch's training batches, each evaluation, each
prediction run), TensorFlow instantiates the pipeline's functions again, and with them the
preprocessor's tokenizer graph, through grappler's whole optimizer pipeline: most of the start.
Those functions are instantiated with the graph options the eager context started with, while
a `tf.function` call takes the options in force when it is called. `start_context` starts the
context with grappler off and turns it back on at once: tf.data's functions then start without
grappler's passes, and the model's functions (the training step, evaluation, the export) keep
every rewrite, oneDNN's fused matmuls among them (`tests/compute/test_pipelines.py` checks both
against the installed TensorFlow; `bench/commits_ab.py` measured a training run before and
after, `bench/results/pipeline_start_ab.jsonl`).

It takes effect only in a process whose context has not started: a run's CLI starts it with the
strategy (which must come first, `zoo.run.settings.start_run`); a process that ran TensorFlow
ops before keeps TensorFlow's own behaviour.
"""
import tensorflow as tf
from tensorflow.python.eager import context

OPTION = "disable_meta_optimizer"


def started():
    """Whether this process's eager context has started."""
    return context.context()._context_handle is not None  # (TensorFlow has no public test)


def start_context(start=None):
    """Calls `start` (what must come before any TensorFlow op: a distribution strategy's
    creation) and starts the eager context, with grappler off, then turns grappler back on for
    every later `tf.function` call (as the user left it); returns what `start` returned. A
    context that has started already is left as it is."""
    start = start or (lambda: None)
    if started():
        return start()
    before = tf.config.optimizer.get_experimental_options().get(OPTION, False)
    tf.config.optimizer.set_experimental_options({OPTION: True})
    try:
        result = start()
        context.ensure_initialized()
        return result
    finally:
        tf.config.optimizer.set_experimental_options({OPTION: before})
