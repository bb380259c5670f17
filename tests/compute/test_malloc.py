"""zoo.compute.malloc: glibc's thresholds set back after TensorFlow's generator datasets froze them, by
`zoo.training.loop.fit` too. Each case runs in a fresh process: the setting is once per process."""
import subprocess
import sys

import pytest

from tests.helpers import ROOT
from zoo.compute import malloc

pytestmark = pytest.mark.skipif(malloc._mallopt() is None,
                                reason="the C library is not glibc")

PROBE = """
import ctypes
import zoo
import tensorflow as tf

libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]


class Info(ctypes.Structure):  # glibc's struct mallinfo2
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


libc.mallinfo2.restype = Info


def probe(size=16 << 20):
    # (whether a block of `size` was mmapped: the IS_MMAPPED bit of its chunk's size field;
    #  what the heap keeps at its top after the block is freed)
    block = libc.malloc(size)
    mmapped = bool(ctypes.c_size_t.from_address(block - ctypes.sizeof(ctypes.c_size_t)).value & 2)
    libc.free(block)
    return mmapped, libc.mallinfo2().keepcost >= size


def generator_dataset():
    for _ in tf.data.Dataset.from_generator(lambda: iter([1, 2]),
                                            output_signature=tf.TensorSpec([], tf.int32)):
        pass
"""


def _run(code):
    done = subprocess.run([sys.executable, "-c", PROBE + code], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


def test_settle_undoes_what_a_generator_dataset_froze_and_the_next_one_does_not_redo_it():
    before, settled, later = _run("""
generator_dataset()
first, second = probe(), probe()
print(first == second == (True, False))  # mmapped each time: the threshold no longer rises
from zoo.compute import malloc
assert malloc.settle()
print(probe() == (False, True))  # from the heap, which keeps it for the next block
generator_dataset()
print(probe() == (False, True))
""")
    assert before == "True", "TensorFlow no longer freezes the threshold: zoo.compute.malloc is moot"
    assert settled == "True"
    assert later == "True"


def test_thresholds_set_before_tensorflow_sets_its_own_would_be_undone():
    # why `settle` runs a generator dataset first
    assert _run(f"""
mallopt = ctypes.CDLL(None).mallopt
mallopt({malloc.M_MMAP_THRESHOLD}, {malloc.MMAP_THRESHOLD})
mallopt({malloc.M_TRIM_THRESHOLD}, {malloc.TRIM_THRESHOLD})
generator_dataset()
print(probe() == (True, False))
""") == ["True"]


def test_fit_settles_the_thresholds(tmp_path):
    assert _run(f"""
import numpy as np
import tf_keras as keras
from zoo.training import loop
from zoo.training.optimizer import create_optimizer
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
x = np.ones((8, 4), np.float32)
data = lambda epoch: tf.data.Dataset.from_generator(
    lambda: iter([(x, np.zeros(8, np.int64))]),
    output_signature=(tf.TensorSpec([8, 4], tf.float32), tf.TensorSpec([8], tf.int64)))
loss = lambda y, logits: keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
loop.fit(model, create_optimizer(0.1, 1, 0), loss, data, loop.FitConfig(1, 1, 8, {str(tmp_path)!r}))
print(probe() == (False, True))
""") == ["True"]


def test_settle_is_once_per_process_and_false_without_glibc(monkeypatch):
    monkeypatch.setattr(malloc, "_state", {"settled": False})
    monkeypatch.setattr(malloc, "_mallopt", lambda: None)
    assert malloc.settle() is False
    monkeypatch.setattr(malloc, "_state", {"settled": True})
    assert malloc.settle() is True
