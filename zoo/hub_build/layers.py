"""Layer normalization and dropout for the encoder `zoo-build-hub` writes, with cheaper training
kernels than tf_keras's and the same functions.

A bf16 training step of a small encoder on a CPU spends about half its time outside the matmuls,
in passes over the activations (dropout's random numbers and masks, layer normalization's dozen
elementwise ops and their gradients). These two layers do the same work in fewer passes when
training; in inference they are tf_keras's own (TensorFlow fuses tf_keras's layer-norm ops into
one oneDNN kernel when serving, and dropout is then the identity). They keep tf_keras's weights,
names and configs, so checkpoints load into them unchanged.
"""
import tensorflow as tf
import tf_keras as keras

RANDOM_BITS = 16  # per dropped-or-kept value: two values from each 32-bit random number


def by_mode(training, in_training, in_inference):
    """`in_training()` or `in_inference()` as `training` says: a Python bool picks one when
    traced, a tensor picks at run time (`tf.cond`), and None means inference."""
    if training is None:
        return in_inference()
    return tf.__internal__.smart_cond.smart_cond(training, in_training, in_inference)


class LayerNorm(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` over the last axis whose training computation is one
    `FusedBatchNormV3` kernel (each row a channel of a 1 x rows x width x 1 image) and its
    gradient one `FusedBatchNormGradV3`, instead of a dozen elementwise ops each way.

    tf_keras uses that kernel itself only for epsilons of at least 1.001e-5 (cuDNN's minimum,
    which TensorFlow's Python wrapper applies on every device); BERT's is 1e-12, which the raw
    op takes on a CPU (tested there; not tested on a GPU, where cuDNN has that minimum).

    Args:
        epsilon: added to the variance, as in tf_keras.
        **kwargs: the other arguments of `keras.layers.LayerNormalization` (axis must be -1).

    Example:
        norm = LayerNorm(epsilon=1e-12)
        y = norm(tf.random.normal([4, 8, 32]), training=True)
    """

    def build(self, input_shape):
        super().build(input_shape)
        if self.axis != [len(input_shape) - 1]:
            raise ValueError(f"LayerNorm normalizes the last axis only, not {self.axis}")

    def call(self, inputs, training=None):
        return by_mode(training, lambda: self._training_norm(inputs),
                       lambda: super(LayerNorm, self).call(inputs))

    def _training_norm(self, inputs):
        shape = tf.shape(inputs)
        rows = tf.reduce_prod(shape[:-1])
        images = tf.reshape(inputs, [1, rows, shape[-1], 1])
        normalized, *_ = tf.raw_ops.FusedBatchNormV3(
            x=images, scale=tf.ones([rows], tf.float32), offset=tf.zeros([rows], tf.float32),
            mean=tf.zeros([0], tf.float32), variance=tf.zeros([0], tf.float32),
            epsilon=self.epsilon, data_format="NCHW", is_training=True)
        normalized = tf.reshape(normalized, shape)
        if self.gamma is not None:  # scale=False has none
            normalized *= tf.cast(self.gamma, normalized.dtype)
        if self.beta is not None:  # center=False has none
            normalized += tf.cast(self.beta, normalized.dtype)
        return normalized


class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` (without `noise_shape`) that draws 16 random bits per value
    rather than a 32-bit float, and applies its mask as one multiplication by 0 or
    1 / (1 - rate), whose gradient is one multiplication too.

    The drop probability is `rate` rounded to a multiple of 1/65536 (0.1 becomes 0.1000061),
    and kept values are scaled by the inverse of the rounded keep probability, so the expected
    output still equals the input. The random bits come from a counter-based (stateless)
    generator seeded by a draw of tf_keras's usual stateful kind, so runs seeded with
    `keras.utils.set_random_seed` repeat.

    Args:
        rate: fraction of the values to drop in training.
        seed: optional seed of the random draws.
        **kwargs: the other arguments of `keras.layers.Dropout`, except `noise_shape`.

    Example:
        dropout = Dropout(0.1)
        y = dropout(tf.ones([4, 8]), training=True)
    """

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        if noise_shape is not None:
            raise ValueError("Dropout draws an independent mask value per element: no noise_shape")
        super().__init__(rate, seed=seed, **kwargs)

    def call(self, inputs, training=None):
        if not self.rate:
            return tf.identity(inputs)
        return by_mode(training, lambda: dropout(inputs, self.rate, self.seed),
                       lambda: tf.identity(inputs))


def dropout(inputs, rate, seed=None):
    """`inputs` with each value zeroed with probability `rate` (rounded to a multiple of
    2^-16), the others divided by the keep probability; see `Dropout`."""
    levels = 2 ** RANDOM_BITS
    threshold = round(rate * levels)
    if not 0 <= threshold < levels:
        raise ValueError(f"dropout rate must be in [0, 1), not {rate}")
    shape = tf.shape(inputs)
    count = _count(inputs, shape)
    key = tf.random.uniform([2], maxval=tf.int32.max, dtype=tf.int32, seed=seed)
    words = tf.random.stateless_uniform([(count + 1) // 2], seed=key, minval=None, maxval=None,
                                        dtype=tf.uint32)
    bits = tf.reshape(tf.bitcast(words, tf.uint16), [-1])[:count]
    keep = tf.reshape(bits >= threshold, shape)
    scale = levels / (levels - threshold)
    mask = tf.where(keep, tf.constant(scale, inputs.dtype), tf.constant(0.0, inputs.dtype))
    return inputs * mask


def _count(inputs, shape):
    """The number of values in `inputs` (of dynamic shape `shape`), as the product of its
    dimensions: TensorFlow's graph optimizer turns `tf.size`, or the product of a shape, into a
    Size op, and the bf16 rewrite keeps a Size op's input in fp32: it would cast the whole bf16
    tensor back to fp32 to count it."""
    if inputs.shape.rank is None:
        return tf.size(inputs)
    count = tf.constant(1, tf.int32)
    for dimension in range(inputs.shape.rank):
        count *= shape[dimension]
    return count
