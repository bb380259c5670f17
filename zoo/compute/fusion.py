"""XLA fusion of a training step's elementwise ops on CPU, for batches of one fixed shape.

On a CPU, much of a BERT training step is memory-bound elementwise work: dropout masks, the
GELU, LayerNorm, bias and residual adds, and the optimizer's update of every weight, each a
separate pass over memory. XLA auto-clustering with `--tf_xla_ops_to_cluster=FUSIBLE` fuses
chains of such ops into single loops, inside Hub encoders too, and leaves matmuls to oneDNN (XLA's
own CPU matmuls are slower and do not use AMX: BENCHMARKS.md). The optimizer's per-weight update
is compiled with XLA as well (tf_keras only does that when it sees a GPU).

XLA compiles once per input shape, tens of seconds for a 6-layer encoder, so `auto` turns fusion on
only for training with fixed padding (every batch the same shape) on a CPU-only machine, with one
replica (fusion under distribution strategies is not tested; `on` allows it), and only on a CPU with
AMX. Since the encoder `zoo-build-hub` writes trains its layer norms and dropout with single kernels
and `zoo.training.optimizer` updates each weight in one, little is left for XLA to fuse: on an AMD
Zen 4 EPYC (AVX512_BF16, no AMX) the plain step was the faster one, in fp32 and bf16, as it was in
fp32 on a CPU with AVX2 alone, and XLA's compilation lengthens the first steps (BENCHMARKS.md, "XLA
fusion: off by default without AMX"). On an AMX CPU, whose bf16 matmuls are faster and leave the
elementwise ops a larger share of the step, fusion was faster when last measured, with the encoder
and optimizer of then; `auto` keeps it there. With bucketed or dynamic batches every new length
would compile again; `on` forces it anyway. It needs one training step per call: auto-clustering a
multi-step loop (`steps_per_execution` > 1) fails in TensorFlow 2.21 with "nodes in a cycle".

Fusion is confined to the training step: `scope` turns auto-clustering on around each call of
the step and off again after it. TensorFlow reads the setting at every call of a tf.function,
so everything called outside the block (tokenization and SQuAD windowing, tf.data pipelines,
evaluation, prediction, export) runs as plain TensorFlow. Auto-clustering those graphs fails:
the ragged ops of tensorflow_text tokenization cannot be compiled ("must be a compile-time
constant") once XLA decides to compile them, e.g. for long contexts.

XLA reads its flags once per process, so `import zoo` adds the two it needs to TF_XLA_FLAGS
before TensorFlow is imported (they do nothing until auto-clustering is turned on). If
TensorFlow was imported before zoo, fusion is unavailable and `auto` stays off.
"""
import contextlib
import os
import sys

from zoo.base.errors import UsageError

FUSIONS = ("auto", "on", "off")
FUSION_CPU_FLAGS = frozenset({"amx_bf16"})  # where `auto` fuses fixed-shape training
XLA_FLAGS = ("--tf_xla_cpu_global_jit", "--tf_xla_ops_to_cluster=FUSIBLE")

_state = {"flags_set": False}


def set_xla_flags(environ=None, modules=None):
    """Adds `XLA_FLAGS` to TF_XLA_FLAGS unless TensorFlow is already imported (then too late).

    A flag the user set already is left as it is. Returns whether fusion can work in this process.
    """
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    if "tensorflow" in modules:
        return False
    flags = environ.get("TF_XLA_FLAGS", "").split()
    names = {f.split("=")[0] for f in flags}
    flags += [f for f in XLA_FLAGS if f.split("=")[0] not in names]
    environ["TF_XLA_FLAGS"] = " ".join(flags)
    _state["flags_set"] = True
    return True


def available():
    """Whether `import zoo` set the XLA flags before TensorFlow was imported."""
    return _state["flags_set"]


def resolve(fusion, padding, training=True, accelerators=None, steps_per_execution=1,
            replicas=1, flags=None):
    """True if a run with these settings fuses its training step's elementwise ops.

    Args:
        fusion: "auto" (on for training with fixed padding on a CPU with AMX), "on" or "off".
        padding: the run's padding policy ("fixed", "dynamic" or "bucketed").
        training: False for evaluation, prediction and export (never fused under auto).
        accelerators: number of GPUs/TPUs doing the work (default: the visible GPUs).
        steps_per_execution: training steps per call; fusion needs 1.
        replicas: replicas of the run's strategy (auto fuses only with one).
        flags: the CPU's feature flags (default: this machine's, `zoo.compute.precision.cpu_flags`).
    """
    if fusion not in FUSIONS:
        raise UsageError(f"xla_fusion must be one of {FUSIONS}, not {fusion!r}")
    if fusion == "on" and steps_per_execution > 1:
        raise UsageError("xla_fusion=on needs steps_per_execution=1: XLA auto-clustering of the "
                         "multi-step training loop fails (\"nodes in a cycle\")")
    if fusion == "on" and not available():
        raise UsageError("xla_fusion=on needs zoo imported before TensorFlow (XLA reads the "
                         "flags it needs once, when TensorFlow starts)")
    if fusion == "off" or not available() or steps_per_execution > 1:
        return False
    if fusion == "on":
        return True
    if not (training and padding == "fixed" and replicas == 1):
        return False
    from zoo.compute import precision  # (imports TensorFlow)
    accelerators = precision.visible_gpus() if accelerators is None else accelerators
    flags = precision.cpu_flags() if flags is None else flags
    return not accelerators and bool(FUSION_CPU_FLAGS & set(flags))


@contextlib.contextmanager
def scope(enabled):
    """XLA auto-clustering for the tf.function calls inside the block (if `enabled`).

    The setting before the block is restored after it. `zoo.training.loop.fit` wraps each call of
    its training step in this, and nothing else: TensorFlow reads the setting at each call.
    """
    if not enabled:
        yield
        return
    import tensorflow as tf
    before = tf.config.optimizer.get_jit()
    tf.config.optimizer.set_jit("autoclustering")
    try:
        yield
    finally:
        tf.config.optimizer.set_jit(before or False)


def current():
    """Whether XLA auto-clustering is on at this point of this process."""
    import tensorflow as tf
    return available() and bool(tf.config.optimizer.get_jit())
