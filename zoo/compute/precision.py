"""Compute precision of a run: bf16 matmuls on CPUs that have them, fp32 elsewhere.

A Keras mixed-precision policy does not reach inside a Hub encoder (tensorflow/hub#466): the
encoder's SavedModel functions were traced in fp32. TensorFlow's graph optimizer (Grappler) can
still rewrite the whole graph, Hub functions included, to run matmuls and the ops around them in
bfloat16 through oneDNN ("auto mixed precision"); variables, the optimizer's update, the loss
and the model's inputs and outputs stay fp32. On a CPU with AMX-BF16 or AVX512_BF16 that makes
matmuls and training steps faster (BENCHMARKS.md, with the accuracy it keeps); on a CPU without
native bf16 it would be emulated and slower, so `auto` turns it on only where the CPU reports
`amx_bf16` or `avx512_bf16`, and never when a GPU or TPU does the work. `auto` also keeps
evaluation, prediction and export in fp32: there bf16 gains little (weights are cast on every
call) and results would drift from the exported model, which TF Serving runs in fp32.

The setting is process-wide and takes effect for graphs optimized after it is set. A run
resolves its precisions once (`zoo.compute.Compute`) and passes them on; `scope` sets one
around the calls it is for.
"""
import contextlib

import tensorflow as tf

from zoo.base.errors import UsageError

PRECISIONS = ("auto", "bf16", "fp32")
EXPORT_PRECISIONS = ("fp32", "bf16")  # --export_precision: see zoo.export.frozen_core
GRAPPLER_OPTION = "auto_mixed_precision_onednn_bfloat16"
BF16_CPU_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})  # native bf16 matmuls: auto picks bf16
# TensorFlow applies its oneDNN bf16 rewrite only on CPUs with one of these (on others it leaves
# the graph in fp32: `IsBF16SupportedByOneDNNOnThisCPU` in TensorFlow's mkl_graph_util).
REWRITE_CPU_FLAGS = frozenset({"avx512f", "avx_ne_convert"})


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
        precision: "auto" picks bf16 on a CPU with AMX-BF16 or AVX512_BF16 and no
            accelerator, else fp32.
            "bf16" on a CPU alone needs one that TensorFlow's oneDNN rewrite works on (AVX-512
            or AVX-NE-CONVERT; elsewhere it would silently stay fp32): a `UsageError` if not.
        flags: CPU flags (default: this machine's, from `cpu_flags`).
        accelerators: number of GPUs/TPUs doing the work (default: the visible GPUs).
    """
    if precision not in PRECISIONS:
        raise UsageError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    if precision == "fp32":
        return precision
    accelerators = visible_gpus() if accelerators is None else accelerators
    flags = cpu_flags() if flags is None else flags
    if precision == "bf16":
        if not accelerators:
            _require_rewrite_cpu("`precision`", flags,
                                 ", so training would stay fp32: use `precision`=fp32 or auto")
        return precision
    return "bf16" if BF16_CPU_FLAGS & flags and not accelerators else "fp32"


def visible_gpus():
    """The GPUs TensorFlow sees: the accelerators of a run unless it says otherwise (a TPU
    strategy counts its TPUs)."""
    return len(tf.config.list_physical_devices("GPU"))


def check_export_cpu(precision, flags=None):
    """A `UsageError` if `precision` is "bf16" and TensorFlow's oneDNN bf16 rewrite, which
    writes a bf16 export (`zoo.export.frozen_core`), does not run on this CPU (`flags`: its feature
    flags, default this machine's); checked when a run starts, not after its training."""
    if precision != "bf16":
        return
    _require_rewrite_cpu("`export_precision`", cpu_flags() if flags is None else flags,
                         ": export in fp32, or on a machine that has one")


def _require_rewrite_cpu(flag, flags, advice):
    """A `UsageError` for `flag`=bf16 if TensorFlow's oneDNN bf16 rewrite does not run on a CPU
    with these `flags` (it would leave the graph in fp32); `advice` ends the message."""
    if not REWRITE_CPU_FLAGS & flags:
        raise UsageError(f"{flag}=bf16 needs a CPU that TensorFlow's oneDNN bf16 rewrite runs on "
                         f"(flags {' or '.join(sorted(REWRITE_CPU_FLAGS))}); this CPU has "
                         f"neither{advice}")


def for_inference(precision):
    """The precision asked for evaluation, prediction and export: "auto" means fp32 there
    (bf16 gains little when weights are cast on every call, and results would drift from the
    exported model, which TF Serving runs in fp32); "bf16" and "fp32" mean what they say."""
    return "fp32" if precision == "auto" else precision


def apply(chosen):
    """Sets this process's graph rewrite to `chosen` ("bf16" or "fp32"); returns it."""
    if chosen not in ("bf16", "fp32"):
        raise UsageError(f"apply needs 'bf16' or 'fp32', not {chosen!r}")
    if chosen != current():  # a change makes TensorFlow optimize every function again
        tf.config.optimizer.set_experimental_options({GRAPPLER_OPTION: chosen == "bf16"})
    return chosen


@contextlib.contextmanager
def scope(chosen):
    """`chosen` ("bf16" or "fp32") for the graphs first run inside the block; the setting
    before it is restored after it. `zoo.training.loop.fit` runs its training steps in the run's
    training precision and its evaluations in the evaluation precision (`Compute`)."""
    before = current()
    apply(chosen)
    try:
        yield
    finally:
        apply(before)


def current():
    """"bf16" if the bf16 graph rewrite is on in this process, else "fp32"."""
    return "bf16" if tf.config.optimizer.get_experimental_options().get(GRAPPLER_OPTION) else "fp32"
