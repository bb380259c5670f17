"""A quiet start for the command line: TensorFlow's C++ start-up lines hidden.

When TensorFlow is imported and finds its devices it writes to the process's stderr, before any
logging is set up: the oneDNN notice, CUDA probing on a machine without a GPU ("Could not find
cuda drivers", "failed call to cuInit"), CPU features. `startup()` points stderr's file
descriptor at /dev/null for exactly that; for what comes later, TensorFlow's C++ logging is
turned off (TF_CPP_MIN_LOG_LEVEL=3: a failure still raises its Python error) and Python logging
shows warnings and errors only (`python_logging`), less two TensorFlow warnings that say nothing
to a user (`_DropNoise`). zoo's own progress, results, warnings and errors are printed as before.
ZOO_TF_LOGS=1 in the environment shows everything again; `--verbosity=0` shows the Python
side's INFO lines.
"""
import contextlib
import logging
import os
import sys

SHOW = "ZOO_TF_LOGS"


class _DropNoise(logging.Filter):
    """Two TensorFlow warnings that say nothing to a user of zoo: "Found untraced functions such
    as ..." on every SavedModel zoo writes (its serving functions are traced and saved whole:
    `zoo.export.flat_serving`), and "... triggered tf.function retracing" when evaluation meets
    batches of a new length (batches are cut to their longest text, on purpose)."""

    def filter(self, record):
        message = str(record.msg)
        return not (message.startswith("Found untraced functions")
                    or "triggered tf.function retracing" in message)


def verbose():
    return os.environ.get(SHOW, "") not in ("", "0")


@contextlib.contextmanager
def startup():
    """Runs the block (the imports that bring in TensorFlow) and TensorFlow's device discovery
    with stderr's file descriptor on /dev/null, unless ZOO_TF_LOGS is set."""
    if verbose():
        yield
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
        import tensorflow as tf
        tf.config.list_physical_devices()  # the CUDA probe happens here, once
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    logging.getLogger("tensorflow").addFilter(_DropNoise())


def python_logging(verbosity_given):
    """Warnings and errors only from absl's and TensorFlow's Python logging, unless ZOO_TF_LOGS
    is set or `--verbosity` was given."""
    if verbose() or verbosity_given:
        return
    from absl import logging as absl_logging

    absl_logging.set_verbosity(absl_logging.WARNING)
    logging.getLogger("tensorflow").setLevel(logging.WARNING)
