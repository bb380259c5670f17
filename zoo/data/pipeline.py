"""tf.data pipelines: examples -> batches of packed BERT inputs (+ label ids).

Tokenization and packing run inside the tf.data graph (the preprocessor's own tensorflow_text
ops), batch by batch, in parallel with training; nothing is tokenized up front in Python.
"""
import numpy as np
import tensorflow as tf


def _columns(examples, labels=None):
    columns = {"text_a": [e.text_a for e in examples]}
    if examples and examples[0].text_b is not None:
        columns["text_b"] = [e.text_b for e in examples]
    if labels is not None:
        columns["label"] = [labels.id(e) for e in examples]
    return columns


def trim_to_longest(packed):
    """Cuts packed inputs to the longest row of the batch (the rest is masked padding)."""
    longest = tf.reduce_max(tf.reduce_sum(packed["input_mask"], axis=1))
    return {k: v[:, :longest] for k, v in packed.items()}


def classification_dataset(examples, packer, batch_size, labels=None, shuffle_seed=None,
                           drop_remainder=False, dynamic_padding=False):
    """Batches of `(packed inputs, label ids)` (or packed inputs alone when `labels` is None).

    `shuffle_seed` shuffles the whole set (a fixed seed gives the same order every time, which
    is what makes an interrupted epoch resumable); None keeps file order. `dynamic_padding`
    trims each batch to its longest row instead of the packer's full sequence length.
    """
    if shuffle_seed is not None:
        # A NumPy permutation depends on the seed alone (tf.data's shuffle also depends on
        # TensorFlow's global seed), so a resumed run sees exactly the order it was interrupted in.
        order = np.random.default_rng(shuffle_seed).permutation(len(examples))
        examples = [examples[i] for i in order]
    ds = tf.data.Dataset.from_tensor_slices(_columns(examples, labels))
    ds = ds.batch(batch_size, drop_remainder=drop_remainder)

    def pack(batch):
        texts = [batch["text_a"]] + ([batch["text_b"]] if "text_b" in batch else [])
        packed = packer(*texts)
        if dynamic_padding:
            packed = trim_to_longest(packed)
        return (packed, batch["label"]) if "label" in batch else packed

    return ds.map(pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
