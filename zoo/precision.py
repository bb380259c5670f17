"""Compute precision of a run: bf16 matmuls on CPUs that have them, fp32 elsewhere.

A Keras mixed-precision policy does not reach inside a Hub encoder (tensorflow/hub#466): the
encoder's SavedModel functions were traced in fp32. TensorFlow's graph optimizer (Grappler) can
still rewrite the whole graph, Hub functions included, to run matmuls and the ops around them in
bfloat16 through oneDNN ("auto mixed precision"); variables, the optimizer's update, the loss
and the model's inputs and outputs stay fp32. On a CPU with AMX-BF16 that makes a bf16 matmul
about 4x faster than fp32 (BENCHMARKS.md); on a CPU without native bf16 it would be emulated
and slower, so `auto` turns it on only where the CPU reports `amx_bf16`, and never when a GPU
or TPU does the work. `auto` also keeps evaluation, prediction and export in fp32: there bf16
gains little (weights are cast on every call) and results would drift from the exported model,
which TF Serving runs in fp32.

The setting is process-wide and takes effect for graphs optimized after it is set, so a run
sets it once, before it builds or calls any tf.function (`zoo.settings.start_run` does).
"""
import contextlib

import tensorflow as tf

from zoo.errors import UsageError

PRECISIONS = ("auto", "bf16", "fp32")
GRAPPLER_OPTION = "auto_mixed_precision_onednn_bfloat16"
BF16_CPU_FLAG = "amx_bf16"


def cpu_flags(cpuinfo="/proc/cpuinfo"):
    """The CPU feature flags the kernel reports (empty where /proc/cpuinfo does not exist)."""
    try:
        with open(cpuinfo, encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def resolve(precision, flags=None, accelerators=None):
    """"bf16" or "fp32" for a requested `precision` ("auto", "bf16" or "fp32").

    Args:
        precision: "auto" picks bf16 on a CPU with AMX-BF16 and no accelerator, else fp32.
        flags: CPU flags (default: this machine's, from `cpu_flags`).
        accelerators: number of GPUs/TPUs doing the work (default: the visible GPUs).
    """
    if precision not in PRECISIONS:
        raise UsageError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    if precision != "auto":
        return precision
    if accelerators is None:
        accelerators = len(tf.config.list_physical_devices("GPU"))
    flags = cpu_flags() if flags is None else flags
    return "bf16" if BF16_CPU_FLAG in flags and not accelerators else "fp32"


_evaluation = {"precision": "fp32"}  # what `for_evaluation` switches to, set by `apply`


def _set(chosen):
    tf.config.optimizer.set_experimental_options({GRAPPLER_OPTION: chosen == "bf16"})


def apply(precision, accelerators=None, training=True):
    """Sets this process's graph rewrite for `precision`; returns "bf16" or "fp32" as applied.

    With `training` False (evaluation, prediction, export), `auto` means fp32.
    """
    chosen = resolve(precision if training or precision != "auto" else "fp32",
                     accelerators=accelerators)
    _set(chosen)
    _evaluation["precision"] = "fp32" if precision == "auto" else chosen
    return chosen


@contextlib.contextmanager
def for_evaluation():
    """Evaluation inside a training run uses the precision `--mode=eval` would (fp32 for auto),
    so the two give the same numbers. Applies to graphs first run inside the block."""
    before = current()
    _set(_evaluation["precision"])
    try:
        yield
    finally:
        _set(before)


def current():
    """"bf16" if the bf16 graph rewrite is on in this process, else "fp32"."""
    return "bf16" if tf.config.optimizer.get_experimental_options().get(GRAPPLER_OPTION) else "fp32"
