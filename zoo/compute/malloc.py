"""glibc's malloc thresholds put back where glibc itself would have them, after tf.data moved them.

The first time a process runs a generator dataset (`tf.data.Dataset.from_generator`, which every
zoo training pipeline uses), TensorFlow sets glibc's M_TRIM_THRESHOLD to 128 KB (its log line
"Memory patch applied"). Setting it also stops glibc from raising its mmap threshold as it
otherwise does, so the threshold stays where it happened to be, often its initial 128 KB. Every
larger block is then a fresh `mmap` and `munmap`: each activation, gradient and cast of a
training step, whose pages the kernel maps anew (a page fault per 4 KB) on every step: many
times the page faults, and a slower step (BENCHMARKS.md, training).

`settle` sets the mmap threshold to 32 MB, where glibc's own dynamic threshold stops rising on
a 64-bit machine, and the trim threshold to twice that, as glibc keeps them: larger blocks are
still mapped apart, and the heap still returns free memory above 64 MB to the system. TensorFlow
does its setting once per process, so `settle` first runs a generator dataset of its own to
have it done, then sets the thresholds; a later generator dataset does not move them again.
`zoo.training.loop.fit` calls it before training. It does nothing where the C library is not glibc.
"""
import ctypes

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # glibc raises the trim threshold to twice the mmap one

_state = {"settled": False}


def _mallopt():
    """glibc's `mallopt`, or None where the C library has none (or is not glibc)."""
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  (glibc only)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):  # TypeError: no CDLL(None) on Windows
        return None
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt


def settle():
    """Sets glibc's mmap and trim thresholds (see the module docstring), once per process.

    Returns whether they are set (False where the C library is not glibc).
    """
    if _state["settled"]:
        return True
    mallopt = _mallopt()
    if mallopt is None:
        return False
    import tensorflow as tf
    for _ in tf.data.Dataset.from_generator(  # TensorFlow's own setting, done now
            lambda: iter([0]), output_signature=tf.TensorSpec([], tf.int32)):
        pass
    _state["settled"] = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _state["settled"]
