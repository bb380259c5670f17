"""Naming what zoo was doing when TensorFlow fails inside a run.

An error raised deep inside TensorFlow (a graph that XLA cannot compile, an op that fails on
some input) says which node failed, not which part of the run or which flag led there. `stage`
turns such an error into a `StageError` whose message names the stage (e.g. "training step
12", "SQuAD windowing of 1,417 questions") and, where a zoo feature was involved, the flag that
turns it off. The TensorFlow error stays attached as the cause, traceback included.
"""
import contextlib

import tensorflow as tf


class StageError(RuntimeError):
    """TensorFlow failed during a stage of a run; the message names the stage."""


_NOT_THE_MESSAGE = ("Graph execution error", "Detected at node", "<stack traces", "[[",
                    "Stack trace for op definition", "dummy_file_name")


def first_line(error):
    """The line of a TensorFlow error that says what went wrong (not where: no stack frames)."""
    for line in str(getattr(error, "message", error)).splitlines():
        if line.strip() and not line[0].isspace() and not line.startswith(_NOT_THE_MESSAGE):
            return line.strip()
    return type(error).__name__


@contextlib.contextmanager
def stage(name, hints=()):
    """Runs the block as stage `name`; a TensorFlow error inside it becomes a `StageError`.

    Args:
        name: what zoo was doing, e.g. "training step 3".
        hints: sentences to add, e.g. "XLA fusion was on (--xla_fusion=off turns it off)".
    A `StageError` from an inner stage passes through unchanged (the innermost stage names it).
    """
    try:
        yield
    except tf.errors.OpError as e:
        message = f"{name} failed inside TensorFlow: {first_line(e)}"
        if hints:
            message += ". " + " ".join(hints)
        raise StageError(message) from e
