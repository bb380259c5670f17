"""A run's seed, set without dropping the functions the process has instantiated.

`keras.utils.set_random_seed` seeds Python's `random`, NumPy, tf_keras's seed generator and
TensorFlow's global seed. TensorFlow's part, run eagerly, also clears the eager runtime's cache
of kernels, so that stateful random kernels start their sequences again; every instantiated
function goes with it. The next call of each then instantiates it again, through grappler's
passes: the packing and windowing functions of the process's packer
(`zoo.model.cores.TextPacker.shared`), much of a small run's time. Clearing them would cost a
run once (its data check runs before its model is built and seeded) and every later run in the
process all over again (a notebook's, a test session's).

`set_seed` seeds the same generators and keeps the cache. What that leaves out does not touch
zoo's results: its random draws never come from a stateful kernel that outlives a run. The
model's (initial weights, dropout) are drawn in the model's own functions, new to each run, or
by tf_keras's initializers from seeds its generator gives; the data's (shuffles, windows of
similar length) come from dataset ops made for each iterator with explicit seeds, or stateless
ops. Only an eager stateful draw (`tf.random.uniform` outside any function) would go on with
its sequence where TensorFlow's own seeding starts it again, and zoo makes none.
"""
import random

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context
from tf_keras.src import backend as keras_backend


def set_seed(seed):
    """Seeds what `keras.utils.set_random_seed(seed)` seeds, with the same draws after it, but
    leaves TensorFlow's instantiated functions (and their kernels' random state) as they are."""
    if not isinstance(seed, int):
        raise TypeError(f"the seed must be an int, not {seed!r}")
    random.seed(seed)
    np.random.seed(seed)
    if tf.executing_eagerly():  # `context.set_global_seed` without its cache clear
        eager = context.context()
        eager._seed = seed  # (TensorFlow has no public way: set_seed clears the cache)
        eager._rng = random.Random(seed)
    else:
        tf.random.set_seed(seed)  # a graph's seed: no cache to clear
    keras_backend._SEED_GENERATOR.generator = random.Random(seed)
