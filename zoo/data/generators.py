"""`from_generator`: tf.data's generator dataset, without the allocator setting it brings.

When TensorFlow first runs a generator dataset it calls glibc's
`mallopt(M_TRIM_THRESHOLD, 128 KB)` (the log's "Memory patch applied" line). Setting any
threshold turns off glibc's dynamic mmap threshold, so the large, short-lived tensors of every
training step stay on the slow allocation path for the rest of the process: measured on an AMD
EPYC (Zen 3, 2 cores), MiniLM SQuAD training steps ran about 20% slower after a generator
dataset had run (BENCHMARKS.md, "Generator datasets and the allocator").

`from_generator` wraps the generator so that, each time it starts (after TensorFlow's call),
glibc's limits are put back where its dynamic threshold would settle: mmap threshold 32 MB
(glibc's ceiling for it on 64-bit), trim threshold twice that. Where glibc's `mallopt` is not
available (another C library, another OS) nothing changes.
"""
import ctypes
import functools

import tensorflow as tf

M_TRIM_THRESHOLD = -1  # glibc malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # DEFAULT_MMAP_THRESHOLD_MAX on 64-bit glibc
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # what the dynamic threshold sets beside it


@functools.lru_cache(maxsize=1)
def _mallopt():
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt


def restore_allocator():
    """Sets glibc's mmap and trim thresholds to the values its dynamic threshold settles at.
    Returns whether it could (False where glibc's `mallopt` is missing or refuses)."""
    mallopt = _mallopt()
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def from_generator(generator, output_signature, args=None):
    """`tf.data.Dataset.from_generator(generator, args=args, output_signature=...)`, with
    glibc's allocator thresholds restored whenever `generator` starts."""
    def restored(*call_args):
        restore_allocator()
        yield from generator(*call_args)

    return tf.data.Dataset.from_generator(restored, args=args, output_signature=output_signature)
