"""SQuAD windows, made in the graph: the one windowing of training, evaluation, prediction and
the exported model.

A (question, context) pair becomes one or more windows `[CLS] question [SEP] part of the
context [SEP]`, padded to `seq_length`. The question is cut to `max_query_length` tokens; the
windows' starts are `doc_stride` context tokens apart (the *step* between starts, as in Google's
BERT; Hugging Face's `stride` is the overlap). Tokenization is the preprocessor's own
(`tokenize` for questions, `tokenize_with_offsets` for contexts: byte offsets into the original
text, turned into character offsets here).

Each window position inside the context carries its character span and whether this window is
the token's *max-context* window (`zoo.data.windows`: the most context on its shorter side;
the first window wins a tie, as in Google's BERT). An answer may start only at a max-context
token, so every start token is scored in exactly one window.

Datasets (`training_windows`, `inference_windows`) stream questions from a `SquadFile` through
this function in batches; nothing is built up front.
"""
import itertools

import numpy as np
import tensorflow as tf
import tensorflow_text as text

from zoo.base.errors import UsageError
from zoo.compute.pipelines import eager_call
from zoo.data import windows

QUESTIONS_PER_CALL = 32  # questions windowed by one call in the datasets
WINDOW_SHUFFLE_BUFFER = 1024  # windows: mixes the windows of long contexts while training


def no_room_message(seq_length, max_query_length, specials=3):
    return (f"max_seq_length {seq_length} leaves no room for the context after a question of "
            f"max_query_length {max_query_length} tokens (and {specials} special tokens): raise "
            f"`max_seq_length` above {max_query_length + specials} or lower `max_query_length`")


def check_room(seq_length, max_query_length):
    """A `UsageError` when a window could hold no context token after the longest question."""
    if seq_length - max_query_length - 3 < 1:
        raise UsageError(no_room_message(seq_length, max_query_length))


class Windower:
    """Cuts batches of (question, context) into windows; see the module docstring.

    Args:
        packer: a `zoo.model.cores.TextPacker` (its preprocessor's tokenizer and special tokens).
        seq_length, doc_stride, max_query_length: the window layout.
    """

    def __init__(self, packer, seq_length=384, doc_stride=128, max_query_length=64):
        check_room(seq_length, max_query_length)
        # special tokens of a window: [CLS] q [SEP] c [SEP], or XLM-R's <s> q </s></s> c </s>
        self.specials = 1 + packer.pair_separators
        if seq_length - max_query_length - self.specials < 1:
            raise UsageError(no_room_message(seq_length, max_query_length, self.specials))
        self.packer = packer
        self.seq_length = seq_length
        self.doc_stride = doc_stride
        self.max_query_length = max_query_length
        strings, ints = tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.int64)
        # Traced once, called by every dataset (a new epoch's pipeline does not trace again).
        self.training = tf.function(
            lambda q, c, s, e: self(q, c, s, e, offsets=False),
            input_signature=[strings, strings, ints, ints])
        self.inference = tf.function(lambda q, c: self(q, c), input_signature=[strings, strings])
        self.count = tf.function(self.counts, input_signature=[strings, strings])

    def _questions(self, question):
        return self.packer.tokens(question)[:, :self.max_query_length]

    def counts(self, question, context):
        """Windows of each (question, context) `[batch]`, without making them."""
        _, count = windows.layout(self._max_tokens(self._questions(question)),
                                  self.packer.tokens(context).row_lengths(), self.doc_stride)
        return count

    def _max_tokens(self, questions):
        """Context tokens per window after [CLS] question [SEP] ... [SEP]."""
        return tf.cast(self.seq_length, tf.int64) - questions.row_lengths() - self.specials

    def __call__(self, question, context, answer_start=None, answer_end=None, offsets=True):
        """Windows of a batch of questions and contexts (strings `[batch]`).

        `answer_start`, `answer_end` (int `[batch]`, characters; -1 for none) add the training
        targets `start_position`, `end_position` (0, i.e. [CLS], where the answer is not inside
        the window). Returns a dict of per-window tensors `[windows, ...]`: the three int32
        inputs, `example` (the question's row in the batch), `window` and `windows` (its index
        among, and the number of, its question's windows), and with `offsets` the context
        positions' `char_start`, `char_end` (-1 outside the context) and `max_context`.
        """
        special = self.packer.special_tokens
        seq = self.seq_length
        q = self._questions(question)
        ids, byte_starts, byte_limits = self.packer.tokens_with_offsets(context)
        spans = windows.spans(self._max_tokens(q), ids.row_lengths(), ids.row_starts(),
                              self.doc_stride)
        example, first, length = spans["example"], spans["first"], spans["length"]
        token_index = tf.ragged.range(first, first + length)
        segments = [tf.gather(q, example), tf.gather(ids.flat_values, token_index)]
        if self.specials == 4:  # an empty segment between them: one more separator
            segments.insert(1, tf.RaggedTensor.from_row_lengths(
                tf.zeros([0], ids.dtype), tf.zeros_like(example), validate=False))
        combined, types = text.combine_segments(
            segments, special["start_of_sequence_id"], special["end_of_segment_id"])
        if not self.packer.pair_types:
            types = tf.zeros_like(types)
        word_ids, mask = text.pad_model_inputs(combined, seq, special["padding_id"])
        type_ids, _ = text.pad_model_inputs(types, seq, 0)
        result = dict(input_word_ids=tf.cast(word_ids, tf.int32),
                      input_mask=tf.cast(mask, tf.int32),
                      input_type_ids=tf.cast(type_ids, tf.int32),
                      example=example, window=spans["window"], windows=spans["windows"])
        # position of the first context token
        offset = tf.gather(q.row_lengths(), example) + self.specials - 1
        need_chars = offsets or answer_start is not None
        if need_chars:
            char_starts = self.packer.char_offsets(context, byte_starts).flat_values
            char_limits = self.packer.char_offsets(context, byte_limits).flat_values
        if offsets:
            result.update(self._positions(first, length, offset, char_starts, char_limits))
        if answer_start is not None:
            result.update(self._targets(ids, first, length, offset, char_starts, char_limits,
                                        example, answer_start, answer_end))
        return result

    def _positions(self, first, length, offset, char_starts, char_limits):
        """Per window position: character span and max-context flag (`zoo.data.windows`)."""
        placed = windows.positions(first, length, offset, self.seq_length,
                                   tf.size(char_starts, out_type=tf.int64))
        padded_starts = tf.concat([char_starts, [-1]], 0)
        padded_limits = tf.concat([char_limits, [-1]], 0)
        return dict(char_start=tf.cast(tf.gather(padded_starts, placed["token"]), tf.int32),
                    char_end=tf.cast(tf.gather(padded_limits, placed["token"]), tf.int32),
                    max_context=placed["max_context"])

    @staticmethod
    def _targets(ids, first, length, offset, char_starts, char_limits, example, answer_start,
                 answer_end):
        """Start and end positions of the answer's tokens where a window holds all of them."""
        answer_start = tf.cast(tf.gather(answer_start, ids.value_rowids()), tf.int64)
        answer_end = tf.cast(tf.gather(answer_end, ids.value_rowids()), tf.int64)
        overlaps = (char_limits > answer_start) & (char_starts < answer_end) & (answer_start >= 0)
        flat = tf.range(tf.size(char_starts, out_type=tf.int64))
        rows = ids.nrows()
        answer_first = tf.math.unsorted_segment_min(tf.where(overlaps, flat, windows.BIG),
                                                    ids.value_rowids(), rows)
        answer_last = tf.math.unsorted_segment_max(tf.where(overlaps, flat, -1),
                                                   ids.value_rowids(), rows)
        a_first, a_last = tf.gather(answer_first, example), tf.gather(answer_last, example)
        fits = (a_last >= 0) & (a_first >= first) & (a_last < first + length)
        return dict(start_position=tf.cast(tf.where(fits, a_first - first + offset, 0), tf.int32),
                    end_position=tf.cast(tf.where(fits, a_last - first + offset, 0), tf.int32))


INPUT_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


def _answer_span(example):
    """(start, end) characters of a question's first answer, or (-1, -1)."""
    if not example.answers:
        return -1, -1
    answer, start = example.answers[0]
    return start, start + len(answer)


def _question_rows(questions):
    for example in questions:
        yield (example.question, example.context) + _answer_span(example)


def count_windows(windower, source, batch_size=256):
    """(questions, windows) of a source, read once in file order (which also checks it: a
    `DataError` of the file comes out as it is)."""
    questions = windows = 0
    batch = []
    for example in itertools.chain(source.questions(), [None]):
        if example is not None:
            batch.append(example)
        if batch and (len(batch) == batch_size or example is None):
            counts = windower.count(tf.constant([e.question for e in batch]),
                                    tf.constant([e.context for e in batch]))
            questions += len(batch)
            windows += int(tf.reduce_sum(counts))
            batch = []
    return questions, windows


def training_windows(windower, source, batch_size, seed, question_buffer):
    """Batches of `(inputs, {"start_positions", "end_positions"})` for one epoch.

    Articles are read in a seeded random order, questions shuffled through a buffer of
    `question_buffer`, windowed, and windows shuffled through a small buffer (the windows of
    a long context would otherwise come together). The same seed gives the same batches: an
    interrupted epoch resumes exactly. Memory holds the buffers, not the data.
    """
    order = np.random.default_rng(seed).permutation(len(source.articles))
    signature = (tf.TensorSpec([], tf.string), tf.TensorSpec([], tf.string),
                 tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.int64))
    ds = tf.data.Dataset.from_generator(lambda: _question_rows(source.questions(order)),
                                        output_signature=signature)
    ds = ds.shuffle(question_buffer, seed=seed, reshuffle_each_iteration=False)

    def window(question, context, answer_start, answer_end):
        windows = eager_call(windower.training, question, context, answer_start, answer_end)
        return ({k: windows[k] for k in INPUT_KEYS},
                dict(start_positions=windows["start_position"],
                     end_positions=windows["end_position"]))

    ds = ds.batch(QUESTIONS_PER_CALL).map(window, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.unbatch().shuffle(WINDOW_SHUFFLE_BUFFER, seed=seed, reshuffle_each_iteration=False)
    return ds.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def inference_windows(windower, rows, batch_size):
    """Batches of `(inputs, meta)` of windows in question order, for evaluation and prediction.

    `rows` yields (question index, question, context); `meta` holds each window's `index` (its
    question's), `windows` (its question's window count), `char_start`, `char_end` and
    `max_context`.
    """
    signature = (tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.string),
                 tf.TensorSpec([], tf.string))
    ds = tf.data.Dataset.from_generator(rows, output_signature=signature)

    def window(index, question, context):
        windows = eager_call(windower.inference, question, context)
        meta = dict(index=tf.gather(index, windows["example"]), windows=windows["windows"],
                    char_start=windows["char_start"], char_end=windows["char_end"],
                    max_context=windows["max_context"])
        return {k: windows[k] for k in INPUT_KEYS}, meta

    ds = ds.batch(QUESTIONS_PER_CALL).map(window, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.unbatch().batch(batch_size).prefetch(tf.data.AUTOTUNE)
