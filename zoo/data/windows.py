"""Cutting token sequences longer than a model input into overlapping windows, in the graph.

Shared by SQuAD (`zoo.data.squad_windows`: a question, then part of the context) and token
tagging (`zoo.data.tagging`: part of a sentence). A sequence of `length` tokens that leaves
`max_tokens` per window is covered by windows whose starts are `doc_stride` tokens apart (the
*step*, as in Google's BERT). A token in several windows counts in its *max-context* window:
the one where it has the most context on its shorter side (plus 0.01 x the window's length);
of windows that tie, the first wins (Google BERT's `_check_is_max_context`).
"""
import numpy as np
import tensorflow as tf

BIG = np.iinfo(np.int64).max


def layout(max_tokens, lengths, doc_stride):
    """Per sequence `[batch]`: the step between window starts and the number of windows.

    `max_tokens`: tokens of the sequence each window holds (a scalar or `[batch]`).
    """
    max_tokens = tf.broadcast_to(tf.cast(max_tokens, tf.int64), tf.shape(lengths))
    step = tf.minimum(tf.cast(doc_stride, tf.int64), max_tokens)
    count = 1 + (tf.maximum(lengths - max_tokens, 0) + step - 1) // step
    return step, count


def spans(max_tokens, lengths, row_starts, doc_stride):
    """The windows of a batch of sequences (flat, in order): `example` (the sequence's row),
    `window` (its index among the sequence's), `windows` (their number), `length` (tokens of
    the sequence in it) and `first` (the flat index of its first token)."""
    max_tokens = tf.broadcast_to(tf.cast(max_tokens, tf.int64), tf.shape(lengths))
    step, count = layout(max_tokens, lengths, doc_stride)
    example = tf.repeat(tf.range(tf.size(count, out_type=tf.int64)), count)
    window = tf.ragged.range(count).flat_values
    start = window * tf.gather(step, example)
    length = tf.maximum(tf.minimum(tf.gather(lengths, example) - start,
                                   tf.gather(max_tokens, example)), 0)
    return dict(example=example, window=window, windows=tf.gather(count, example),
                length=length, first=tf.gather(row_starts, example) + start)


def positions(first, length, offset, seq_length, num_tokens):
    """Per window position `[windows, seq_length]`: whether it holds a token of the sequence
    (`inside`), that token's flat index (`token`; `num_tokens` outside) and whether this window
    is the token's max-context window (`max_context`). `offset`: the position of each window's
    first sequence token."""
    position = tf.range(seq_length, dtype=tf.int64)[tf.newaxis, :]
    rel = position - offset[:, None]  # index of the token within the window
    inside = (rel >= 0) & (rel < length[:, None])
    token = tf.where(inside, first[:, None] + rel, num_tokens)  # outside: an extra id
    # min(left, right context) + 0.01 x window length, times 100: exact in integers
    score = tf.where(inside, 100 * tf.minimum(rel, length[:, None] - 1 - rel) + length[:, None],
                     -1)
    best = tf.math.unsorted_segment_max(score, token, num_tokens + 1)
    windows = tf.broadcast_to(tf.range(tf.size(first, out_type=tf.int64))[:, None],
                              tf.shape(token))
    chosen = tf.math.unsorted_segment_min(
        tf.where(inside & (score == tf.gather(best, token)), windows, BIG), token,
        num_tokens + 1)
    return dict(inside=inside, token=token,
                max_context=inside & (tf.gather(chosen, token) == windows))


def complete_groups(batches, index_key="index", count_key="windows"):
    """Groups windows by their sequence as batches of them come out of a model.

    `batches` yields dicts of NumPy arrays, one row per window, windows in the order of their
    sequence (`index_key`), a sequence's windows one after another, possibly across batches;
    `count_key` is the number of windows of each window's sequence. Yields (the rows of the
    sequences complete so far, as one dict of arrays; per sequence, its (first, end) rows).
    """
    held = None
    for batch in batches:
        held = batch if held is None else {k: np.concatenate([held[k], batch[k]])
                                           for k in batch}
        index = held[index_key]
        if not len(index):
            continue
        firsts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
        ends = np.r_[firsts[1:], len(index)]
        # only the last sequence may not be complete yet
        done = len(firsts) - int(ends[-1] - firsts[-1] < held[count_key][firsts[-1]])
        if not done:
            continue
        cut = ends[done - 1]
        ready = {k: v[:cut] for k, v in held.items()}
        held = {k: v[cut:] for k, v in held.items()}
        yield ready, list(zip(firsts[:done].tolist(), ends[:done].tolist()))
