"""TensorFlow's oneDNN graph rewrites, on every x86 CPU.

TensorFlow turns its oneDNN rewrites on by default only on x86 CPUs with AVX-512 VNNI, BF16 or
AMX: matmuls with their bias add and activation fused into one oneDNN primitive, and oneDNN's
own matmul, softmax and layer-norm kernels. On CPUs with AVX2 alone (AMD EPYC Zen 1 to 3, older
Xeons) it leaves them off and runs Eigen's kernels, which reached a smaller share of the CPU's
matmul peak in zoo's training step and export than oneDNN's did on the same machine
(BENCHMARKS.md, "Training, like for like"). `enable`, called by `import zoo`, sets
TF_ENABLE_ONEDNN_OPTS=1 on x86 unless the variable is set already: a user's
TF_ENABLE_ONEDNN_OPTS=0 keeps Eigen's kernels. TensorFlow reads the variable once, when it
starts; a process that imported TensorFlow before zoo keeps TensorFlow's own choice.

On other machines (aarch64, where TensorFlow's oneDNN path goes through the Arm Compute Library)
nothing is set.
"""
import os
import platform

VARIABLE = "TF_ENABLE_ONEDNN_OPTS"


def enable():
    """TF_ENABLE_ONEDNN_OPTS=1 on an x86 machine, unless already set; returns its value."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        os.environ.setdefault(VARIABLE, "1")
    return os.environ.get(VARIABLE)
