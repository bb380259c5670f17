"""tf.data pipelines: sources -> batches of packed BERT inputs (+ label ids), as streams.

Rows are read shard by shard in Python generators (parsing and row checks need Python), several
shards interleaved, shuffled through a bounded buffer, then batched; tokenization and packing run
in the tf.data pipeline (the preprocessor's own tensorflow_text ops, a function instantiated once
in the process: `zoo.compute.pipelines.eager_call`), batch by batch, in parallel with training.
Nothing is read or tokenized up front, so memory does not grow with the data.
"""
import numpy as np
import tensorflow as tf

from zoo.compute.pipelines import eager_call
from zoo.data.sources import with_valid_labels
from zoo.data.text_files import BadRow

DEFAULT_SHUFFLE_BUFFER = 100_000
DEFAULT_GROUP_WINDOW = 50  # batches whose rows are sorted together by `group_by_length`


def trim_to_longest(packed):
    """Cuts packed inputs to the longest row of the batch (the rest is masked padding)."""
    longest = tf.reduce_max(tf.reduce_sum(packed["input_mask"], axis=1))
    return {k: v[:, :longest] for k, v in packed.items()}


def good_rows(source, shard, labels):
    """The good rows (`Example`s) of one shard, in file order.

    Bad rows are passed over: the data check that runs before training and evaluation has
    already stopped the run on them (`--bad_rows=error`) or written them out (`skip`).
    """
    items = source.read(shard)
    if labels is not None:  # rows with labels outside the vocabulary are bad rows too
        items = with_valid_labels(items, labels)
    return (item for item in items if not isinstance(item, BadRow))


def evaluated_rows(source, labels):
    """The `Example`s of `source` in the order an unshuffled `classification_dataset` of it
    (no `drop`) gives them: what each evaluation output belongs to."""
    for shard in range(len(source.shards)):
        yield from good_rows(source, shard, labels)


def _rows(source, shard, labels, drop):
    """The good rows of one shard as (text_a, text_b, target) tuples (`labels.encode`), less
    the ordinals `drop` lists for it."""
    skip = drop.get(shard, ())
    for ordinal, item in enumerate(good_rows(source, shard, labels)):
        if ordinal in skip:
            continue
        label = labels.encode(item.label) if labels is not None else -1
        yield item.text_a, item.text_b or "", label


def example_dataset(source, labels=None, shuffle_seed=None, shuffle_buffer=DEFAULT_SHUFFLE_BUFFER,
                    drop=None, cycle_length=4):
    """Unbatched `{"text_a", "text_b", "label"}` rows of `source`, streamed.

    `shuffle_seed` shuffles the order of the shards (a NumPy permutation) and the rows, through a
    buffer of `shuffle_buffer` rows; the same seed gives the same order every time, which is what
    makes an interrupted epoch resumable. None reads shards one after another in file order.
    `drop` maps a shard index to the ordinals of its good rows to leave out (`--dedupe`).
    """
    drop = drop or {}
    shards = np.arange(len(source.shards))
    if shuffle_seed is not None:
        shards = np.random.default_rng(shuffle_seed).permutation(shards)
    signature = (tf.TensorSpec([], tf.string), tf.TensorSpec([], tf.string),
                 labels.spec if labels is not None else tf.TensorSpec([], tf.int32))

    def shard_rows(shard):
        return tf.data.Dataset.from_generator(
            lambda i: _rows(source, int(i), labels, drop), args=(shard,),
            output_signature=signature)

    ds = tf.data.Dataset.from_tensor_slices(shards.astype(np.int64))
    if shuffle_seed is None or len(shards) == 1:
        ds = ds.flat_map(shard_rows)
    else:
        ds = ds.interleave(shard_rows, cycle_length=min(cycle_length, len(shards)),
                           block_length=1, deterministic=True)
    if shuffle_seed is not None:
        ds = ds.shuffle(shuffle_buffer, seed=shuffle_seed, reshuffle_each_iteration=False)
    return ds.map(lambda a, b, y: {"text_a": a, "text_b": b, "label": y})


def group_by_length(ds, packer, pair, batch_size, seed, window_batches=DEFAULT_GROUP_WINDOW):
    """Reorders rows so that each run of `batch_size` rows has similar token lengths.

    Windows of `window_batches * batch_size` consecutive (already shuffled) rows are sorted by
    token count and cut into batches, and the full batches of each window are put in a seeded
    random order; a window's leftover rows (only the last window has any) stay at its end. Every
    row is kept, and the same seed gives the same order. Batched with dynamic padding, batches
    of similar lengths carry much less padding than random ones.
    """

    def sort_window(index, rows):
        texts = [rows["text_a"]] + ([rows["text_b"]] if pair else [])
        counts = eager_call(packer.compiled(len(texts), counts=True), *texts)
        order = tf.argsort(counts, stable=True)
        full = tf.size(order) // batch_size * batch_size
        window_seed = tf.stack([tf.constant(seed, tf.int64), index])
        blocks = tf.random.experimental.stateless_shuffle(
            tf.reshape(order[:full], [-1, batch_size]), seed=window_seed)
        order = tf.concat([tf.reshape(blocks, [-1]), order[full:]], axis=0)
        return {k: tf.gather(v, order) for k, v in rows.items()}

    return ds.batch(batch_size * window_batches).enumerate().map(sort_window).unbatch()


def pack_batches(ds, packer, pair, batch_size, with_labels, drop_remainder=False,
                 dynamic_padding=False):
    """Batches rows and packs them in the graph: `(packed, label ids)` or `packed`."""
    ds = ds.batch(batch_size, drop_remainder=drop_remainder)

    def pack(batch):
        texts = [batch["text_a"]] + ([batch["text_b"]] if pair else [])
        packed = eager_call(packer.compiled(len(texts)), *texts)
        if dynamic_padding:
            packed = trim_to_longest(packed)
        return (packed, batch["label"]) if with_labels else packed

    return ds.map(pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def classification_dataset(source, packer, batch_size, labels=None, shuffle_seed=None,
                           drop_remainder=False, dynamic_padding=False,
                           shuffle_buffer=DEFAULT_SHUFFLE_BUFFER, drop=None,
                           group_by_lengths=False):
    """Batches of `(packed inputs, label ids)` (or packed inputs alone when `labels` is None)
    from a source, streamed; see `example_dataset` for shuffling and `drop`.

    `dynamic_padding` trims each batch to its longest row instead of the packer's full length;
    `group_by_lengths` (with a `shuffle_seed`) makes batches of rows of similar length first.
    """
    ds = example_dataset(source, labels, shuffle_seed, shuffle_buffer, drop)
    if group_by_lengths:
        ds = group_by_length(ds, packer, source.pair, batch_size, shuffle_seed or 0)
    return pack_batches(ds, packer, source.pair, batch_size, labels is not None, drop_remainder,
                        dynamic_padding)
