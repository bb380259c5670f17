"""SavedModels for TF Serving whose signatures take raw text (preprocessing inside the graph).

The exported model needs nothing of zoo: TF Serving, or a Python process that imports only
tensorflow and tensorflow_text, loads it and feeds it strings.
"""
import os

import numpy as np
import tensorflow as tf
import tensorflow_text as text

from zoo import stages
from zoo.data.pipeline import trim_to_longest
from zoo.errors import OutputError, UsageError
from zoo.files import atomic_directory
from zoo.models import text_input_names


def _save(module, export_dir, signature):
    """Writes the SavedModel; a failure (a full disk) leaves what was at `export_dir` as it was."""
    try:
        with atomic_directory(export_dir) as staging:
            tf.saved_model.save(module, staging, signatures={"serving_default": signature})
    except (OSError, tf.errors.OpError) as e:
        reason = getattr(e, "strerror", None) or stages.first_line(e)
        raise OutputError(f"export to {export_dir} failed ({reason}); the export that was there "
                          "is unchanged") from e
    return os.path.abspath(export_dir)


def export_classifier(export_dir, core, packer, label_names, pair=False, trim_padding=True):
    """`serving_default`: `text` (or `text_a`, `text_b`) -> `label`, `label_id`, `probabilities`.

    With `trim_padding` each request is cut to its longest row instead of the packer's full
    length: the same results (padding is masked), with less work for short texts, most of all
    when a client sends texts of similar length together.
    """
    module = tf.Module()
    module.core = core
    module.preprocessor = packer.preprocessor
    module.label_names = tf.Variable(list(label_names), trainable=False, name="label_names")
    specs = [tf.TensorSpec([None], tf.string, name=n) for n in text_input_names(pair)]

    def outputs(*texts):
        packed = packer(*texts)
        if trim_padding:
            packed = trim_to_longest(packed)
        probabilities = tf.nn.softmax(core(packed, training=False), axis=-1)
        label_id = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        return dict(label=tf.gather(module.label_names, label_id), label_id=label_id,
                    probabilities=probabilities)

    if pair:
        serve = tf.function(lambda text_a, text_b: outputs(text_a, text_b), input_signature=specs)
    else:
        serve = tf.function(lambda text: outputs(text), input_signature=specs)  # pylint: disable=unnecessary-lambda
    module.serve = serve
    return _save(module, export_dir, serve)


def _span_windows(preprocessor, question, context, seq_length, doc_stride, max_query_length):
    """In-graph windowing: every (question, context) -> [CLS] q [SEP] window [SEP] inputs."""
    special = preprocessor.tokenize.get_special_tokens_dict()
    q = preprocessor.tokenize(question).merge_dims(-2, -1)[:, :max_query_length]
    ids, byte_starts, byte_limits = preprocessor.tokenize_with_offsets(context)
    ids = ids.merge_dims(-2, -1)
    q_len, t_len = q.row_lengths(), ids.row_lengths()
    max_tokens = seq_length - q_len - 3
    stride = tf.minimum(tf.cast(doc_stride, tf.int64), max_tokens)
    count = 1 + (tf.maximum(t_len - max_tokens, 0) + stride - 1) // stride  # windows per example
    example = tf.repeat(tf.range(tf.size(count, out_type=tf.int64)), count)
    start = tf.ragged.range(count).flat_values * tf.gather(stride, example)
    length = tf.minimum(tf.gather(t_len, example) - start, tf.gather(max_tokens, example))
    first = tf.gather(ids.row_starts(), example) + start  # flat index of the window's 1st token
    token_index = tf.ragged.range(first, first + length)
    segments = [tf.gather(q, example), tf.gather(ids.flat_values, token_index)]
    combined, types = text.combine_segments(segments, special["start_of_sequence_id"],
                                            special["end_of_segment_id"])
    word_ids, mask = text.pad_model_inputs(combined, seq_length, special["padding_id"])
    type_ids, _ = text.pad_model_inputs(types, seq_length, 0)
    inputs = dict(input_word_ids=tf.cast(word_ids, tf.int32), input_mask=tf.cast(mask, tf.int32),
                  input_type_ids=tf.cast(type_ids, tf.int32))
    offset = tf.gather(q_len, example) + 2  # sequence position of the window's first token
    flat_starts = byte_starts.merge_dims(-2, -1).flat_values
    flat_limits = byte_limits.merge_dims(-2, -1).flat_values
    return inputs, example, first, length, offset, flat_starts, flat_limits, tf.size(count)


def _best_spans(start_logits, end_logits, example, first, length, offset, num_examples,
                num_tokens, n_best_size, max_answer_length):
    """Per example: (flat token index of start and end, score) of the best valid span."""
    seq_length = tf.shape(start_logits)[1]
    position = tf.range(seq_length, dtype=tf.int64)[tf.newaxis, :]
    inside = (position >= offset[:, None]) & (position < (offset + length)[:, None])
    token = first[:, None] + position - offset[:, None]  # flat context token index
    # A start token counts only in the window where it has the most context (as in predict).
    room = tf.cast(tf.minimum(position - offset[:, None], offset[:, None] + length[:, None] - 1
                              - position), tf.float32) + 0.01 * tf.cast(length[:, None], tf.float32)
    safe_token = tf.where(inside, token, num_tokens)  # outside: an extra, ignored segment
    best_room = tf.math.unsorted_segment_max(tf.where(inside, room, -1.0), safe_token,
                                             num_tokens + 1)
    max_context = inside & (room >= tf.gather(best_room, safe_token))
    k = tf.minimum(n_best_size, seq_length)
    start_ok = max_context & (start_logits >= tf.math.top_k(start_logits, k).values[:, -1:])
    end_ok = inside & (end_logits >= tf.math.top_k(end_logits, k).values[:, -1:])
    span = position[0][None, :] - position[0][:, None]  # [start, end] -> end - start
    allowed = (span >= 0) & (span < max_answer_length)
    valid = start_ok[:, :, None] & end_ok[:, None, :] & allowed[None]
    scores = tf.where(valid, start_logits[:, :, None] + end_logits[:, None, :], -np.inf)
    flat = tf.reshape(scores, [tf.shape(scores)[0], -1])
    best_in_window = tf.argmax(flat, axis=1, output_type=tf.int32)
    window_score = tf.reduce_max(flat, axis=1)
    best_score = tf.math.unsorted_segment_max(window_score, example, num_examples)
    windows = tf.range(tf.shape(flat)[0], dtype=tf.int64)
    is_best = window_score >= tf.gather(best_score, example)
    best_window = tf.math.unsorted_segment_min(
        tf.where(is_best, windows, tf.int64.max), example, num_examples)
    cell = tf.gather(best_in_window, best_window)
    start_pos = tf.cast(cell // seq_length, tf.int64)
    end_pos = tf.cast(cell % seq_length, tf.int64)
    start_token = tf.gather(first, best_window) + start_pos - tf.gather(offset, best_window)
    end_token = tf.gather(first, best_window) + end_pos - tf.gather(offset, best_window)
    return start_token, end_token, best_score


def no_room_message(seq_length, max_query_length):
    return (f"max_seq_length {seq_length} leaves no room for the context after a question of "
            f"max_query_length {max_query_length} tokens (and [CLS], [SEP], [SEP]): raise "
            f"--max_seq_length above {max_query_length + 3} or lower --max_query_length")


def export_span_model(export_dir, core, preprocessor, seq_length=384, doc_stride=128,
                      max_query_length=64, max_answer_length=30, n_best_size=20):
    """`serving_default`: `question`, `context` -> `answer`, `start`, `end` (character offsets
    into the context, end exclusive) and `score`, for contexts of any length: the windowing and
    the best span over all windows happen inside the graph.

    A question is cut to `max_query_length` tokens; `seq_length` must leave room after it for
    [CLS], two [SEP] and at least one context token, or the export is refused.
    """
    if seq_length - max_query_length - 3 < 1:
        raise UsageError(no_room_message(seq_length, max_query_length))
    module = tf.Module()
    module.core = core
    module.preprocessor = preprocessor
    specs = [tf.TensorSpec([None], tf.string, name="question"),
             tf.TensorSpec([None], tf.string, name="context")]

    @tf.function(input_signature=specs)
    def serve(question, context):
        inputs, example, first, length, offset, byte_starts, byte_limits, num_examples = (
            _span_windows(preprocessor, question, context, seq_length, doc_stride,
                          max_query_length))
        outputs = core(inputs, training=False)
        start_token, end_token, score = _best_spans(
            outputs["start_logits"], outputs["end_logits"], example, first, length, offset,
            num_examples, tf.size(byte_starts, out_type=tf.int64), n_best_size,
            max_answer_length)
        found = score > -np.inf
        safe = lambda i: tf.where(found, i, 0)  # noqa: E731
        padded_starts = tf.concat([byte_starts, [0]], 0)
        padded_limits = tf.concat([byte_limits, [0]], 0)
        begin = tf.where(found, tf.gather(padded_starts, safe(start_token)), 0)
        end = tf.where(found, tf.gather(padded_limits, safe(end_token)), 0)
        answer = tf.strings.substr(context, begin, end - begin, unit="BYTE")
        char_start = tf.strings.length(tf.strings.substr(context, tf.zeros_like(begin), begin,
                                                         unit="BYTE"),
                                       unit="UTF8_CHAR")
        return dict(answer=answer, start=tf.cast(char_start, tf.int64),
                    end=tf.cast(char_start + tf.strings.length(answer, unit="UTF8_CHAR"), tf.int64),
                    score=tf.where(found, score, tf.zeros_like(score)))

    module.serve = serve
    return _save(module, export_dir, serve)
