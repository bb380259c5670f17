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

Even without grappler, each new iterator instantiates its map functions again, and with them
every function of the preprocessor they call: on small data, a SQuAD evaluation or an epoch of
a few batches was mostly that. `eager_call` runs such a function through the eager runtime
instead (`tf.py_function`), which instantiates a `tf.function` once in a process: a new epoch,
evaluation or prediction run starts at once (`bench/results/pipeline_start_ab.jsonl`).
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


def eager_call(function, *args):
    """`function(*args)` from inside a `tf.data` map function, run by the eager runtime.

    `function` is a `tf.function` with an `input_signature` (e.g. the preprocessor's packing,
    `zoo.model.cores.TextPacker.compiled`); `args` are the map's tensors, dense or ragged. The
    map calls it through `tf.py_function`, so the traced and instantiated `function` serves
    every iterator of every dataset in the process instead of being instantiated again by each
    (see the module docstring). The outputs have `function`'s structure and static shapes.
    Eagerly it is the plain call. The dataset must run in this Python process, as
    `Dataset.from_generator`'s do; a graph that is saved (an export) calls `function` itself.
    """
    if tf.executing_eagerly():
        return function(*args)
    inputs = tuple(function.input_signature)
    concrete = function.get_concrete_function()
    outputs = tf.nest.map_structure(tf.type_spec_from_value, concrete.structured_outputs)
    components = tf.nest.flatten(outputs, expand_composites=True)

    def run(*flat):
        called = function(*tf.nest.pack_sequence_as(inputs, flat, expand_composites=True))
        return tf.nest.flatten(called, expand_composites=True)

    flat = tf.py_function(run, tf.nest.flatten(list(args), expand_composites=True),
                          [spec.dtype for spec in components])
    for tensor, spec in zip(flat, components):
        tensor.set_shape(spec.shape)
    return tf.nest.pack_sequence_as(outputs, flat, expand_composites=True)
