"""Token tagging in the graph: tags, words, windows, and entities from tags.

The model's unit is the *word* as the preprocessor splits text (BERT splits at white space and
punctuation), and a word's first wordpiece carries its tag (its other pieces are left out of
the loss). A CoNLL token is one or more words (`U.S.` is `u . s .`): its first word gets the
token's tag, the others continue it (`I-TYPE`, or `O`). A token that gives no word at all (a
control character, a lone accent such as `\u00b4`) is trained on as one `[MASK]` word, so its
tag is not lost; evaluation and prediction give it no word and tag it `O`, as the export, which
splits raw text (the tokens joined by spaces) into words the same way, has no word there: the
words, windows and tags of predict and of the export are the same.

Sentences longer than one window are windowed (`zoo.data.windows`, the rule SQuAD uses: a word
is predicted in the window where its first piece has the most context). Entities are decoded
from tags as the CoNLL scorer reads them (`decode_entities`).
"""
import itertools

import numpy as np
import tensorflow as tf
import tensorflow_text as text

from zoo.base import fs
from zoo.base.errors import UsageError
from zoo.compute.pipelines import eager_call
from zoo.data import labels, windows
from zoo.data.conll import Sentence, entity_type

LABELS_FILE = labels.LABELS_FILE
SENTENCES_PER_CALL = 32  # sentences windowed by one call in the datasets
WINDOW_SHUFFLE_BUFFER = 1024


class OpenTags:
    """The training sentences' tags before the tag set is known: any well-formed tag (the
    reader has checked the form)."""

    @staticmethod
    def keys(tags):
        return list(tags)

    @staticmethod
    def problem(tags):
        del tags


class TagVocab:
    """The tags of the training data (IOB2), with `B-` and `I-` of every entity type, "O" first.

    `continuation[i]`: the tag that continues tag i onto the next word of the same token
    (`I-TYPE` for `B-TYPE` and `I-TYPE`, `O` for `O`).
    """

    KIND = "tagging"

    def __init__(self, tags):
        types = sorted({entity_type(t) for t in tags} - {None})
        self.tags = ["O"] + [f"{p}-{t}" for t in types for p in ("B", "I")]
        self.types = types
        self._ids = {tag: i for i, tag in enumerate(self.tags)}
        self.continuation = [self._ids["O" if t == "O" else "I-" + t[2:]] for t in self.tags]
        self.tag_type = [-1 if t == "O" else types.index(t[2:]) for t in self.tags]
        self.tag_begins = [t.startswith("B-") for t in self.tags]
        self.names = self.tags

    def __len__(self):
        return len(self.tags)

    def keys(self, tags):
        return list(tags)

    def problem(self, tags):
        unknown = sorted({t for t in tags if t not in self._ids})
        if unknown:
            return (f"tag {', '.join(map(repr, unknown))} is not in the training data's tags "
                    f"{self.tags}")
        return None

    def encode(self, tags):
        return np.array([self._ids[t] for t in tags], np.int32)

    def outputs(self):
        return self.tags

    def save(self, model_dir):
        labels.save_kind(model_dir, self.KIND, dict(tags=self.tags))

    @classmethod
    def load(cls, model_dir):
        kind, saved = labels.load_kind(model_dir)
        if kind != cls.KIND:
            raise UsageError(f"{fs.join(model_dir, LABELS_FILE)}: labels of a {kind} "
                             "model, not tags; use the model dir of a tagging run")
        return cls(saved["tags"])


class TagWindower:
    """Sentences -> windows `[CLS] pieces [SEP]` of their words' wordpieces.

    Args:
        packer: a `zoo.model.cores.TextPacker` (the preprocessor's tokenizer and special tokens).
        seq_length: tokens per window; `doc_stride`: the step between window starts, in pieces.
    """

    def __init__(self, packer, seq_length=128, doc_stride=64):
        if seq_length < 3:
            raise UsageError(f"max_seq_length {seq_length} leaves no room for a word")
        self.packer = packer
        self.seq_length = seq_length
        self.doc_stride = doc_stride
        strings, ints = tf.RaggedTensorSpec([None, None], tf.string), \
            tf.RaggedTensorSpec([None, None], tf.int32)
        self.training = tf.function(self.from_tokens, input_signature=[
            strings, ints, tf.TensorSpec([None], tf.int32)])
        self.inference = tf.function(lambda tokens: self.from_tokens(tokens, empty_words=False),
                                     input_signature=[strings])
        self.count = tf.function(self.counts, input_signature=[strings])

    def counts(self, tokens):
        """Windows of each sentence (ragged `[sentences, (tokens)]`), without making them."""
        per_token = self.words_of_tokens(tokens.flat_values)  # [T, (words), (pieces)]
        token_pieces = tf.math.unsorted_segment_sum(
            per_token.values.row_lengths(), per_token.value_rowids(), per_token.nrows())
        pieces = tf.math.unsorted_segment_sum(token_pieces, tokens.value_rowids(),
                                              tokens.nrows())
        _, count = windows.layout(self.seq_length - 2, pieces, self.doc_stride)
        return count

    def words_of_tokens(self, tokens, empty_words=True):
        """Ragged `[tokens, (words), (pieces)]` of a flat batch of tokens; a token with no
        word gets one `[MASK]` word if `empty_words`, none otherwise."""
        pieces = self.packer.preprocessor.tokenize(tokens)
        if not empty_words:
            return pieces
        empty = tf.cast(tf.equal(pieces.row_lengths(), 0), tf.int64)
        mask_word = tf.RaggedTensor.from_row_lengths(
            tf.RaggedTensor.from_row_lengths(
                tf.fill([tf.reduce_sum(empty)], tf.cast(self.packer.special_tokens["mask_id"],
                                                        pieces.dtype)),
                tf.ones([tf.reduce_sum(empty)], tf.int64), validate=False),
            empty, validate=False)
        return tf.concat([pieces, mask_word], axis=1)

    def from_tokens(self, tokens, tags=None, continuation=None, empty_words=True):
        """Windows of sentences given as tokens (ragged `[sentences, (tokens)]` strings), with
        `labels` from the tokens' tag ids (ragged, like `tokens`) if given; see `windows`.
        Adds per position `token`: the token (within its sentence) whose first word's first
        piece is there, -1 elsewhere (a token with no word, without `empty_words`, is in no
        window)."""
        per_token = self.words_of_tokens(tokens.flat_values, empty_words)  # [T, (words), (pieces)]
        token_of_word = per_token.value_rowids()  # flat token index of each word
        first_word = tf.equal(tf.range(tf.size(token_of_word, out_type=tf.int64)),
                              tf.gather(per_token.row_starts(), token_of_word))
        words = tf.RaggedTensor.from_row_lengths(per_token.values, tf.math.unsorted_segment_sum(
            per_token.row_lengths(), tokens.value_rowids(), tokens.nrows()), validate=False)
        token_in_sentence = token_of_word - tf.gather(
            tokens.row_starts(), tf.gather(tokens.value_rowids(), token_of_word))
        word_labels = None
        if tags is not None:
            token_tags = tf.gather(tags.flat_values, token_of_word)
            word_labels = tf.where(first_word, token_tags, tf.gather(continuation, token_tags))
        result = self.windows(words, word_labels)
        word = tf.maximum(result["word"], 0)
        result["token"] = tf.where((result["word"] >= 0) & tf.gather(first_word, word),
                                   tf.gather(token_in_sentence, word), -1)
        return result

    def windows(self, words, word_labels=None):
        """Windows of sentences given as words (ragged `[sentences, (words), (pieces)]`).

        Returns per-window tensors: the three int32 inputs, `example` (the sentence's row),
        `window`, `windows`; per position `word` (the flat index of the word whose first piece
        is there; -1 elsewhere), `word_index` (the same word's index within its sentence) and
        `max_context`; with `word_labels` (flat, one per word), `labels` (the word's tag at its
        first piece, -1 elsewhere: left out of the loss).
        """
        special = self.packer.special_tokens
        pieces = words.values  # [all words, (pieces)]
        piece_word = pieces.value_rowids()  # flat word index of each piece
        first_piece = tf.equal(tf.range(tf.size(piece_word, out_type=tf.int64)),
                               tf.gather(pieces.row_starts(), piece_word))
        sentence_pieces = tf.RaggedTensor.from_row_lengths(
            pieces.flat_values,
            tf.math.unsorted_segment_sum(pieces.row_lengths(), words.value_rowids(),
                                         words.nrows()), validate=False)
        spans = windows.spans(self.seq_length - 2, sentence_pieces.row_lengths(),
                              sentence_pieces.row_starts(), self.doc_stride)
        first, length = spans["first"], spans["length"]
        combined, types = text.combine_segments(
            [tf.gather(sentence_pieces.flat_values, tf.ragged.range(first, first + length))],
            special["start_of_sequence_id"], special["end_of_segment_id"])
        word_ids, mask = text.pad_model_inputs(combined, self.seq_length, special["padding_id"])
        type_ids, _ = text.pad_model_inputs(types, self.seq_length, 0)
        num_pieces = tf.size(piece_word, out_type=tf.int64)
        placed = windows.positions(first, length, tf.ones_like(first), self.seq_length,
                                   num_pieces)
        piece = placed["token"]
        at_first = tf.gather(tf.concat([first_piece, [False]], 0), piece)
        word = tf.gather(tf.concat([piece_word, [0]], 0), piece)
        word_in_sentence = word - tf.gather(words.row_starts(), spans["example"])[:, None]
        result = dict(input_word_ids=tf.cast(word_ids, tf.int32),
                      input_mask=tf.cast(mask, tf.int32),
                      input_type_ids=tf.cast(type_ids, tf.int32),
                      example=spans["example"], window=spans["window"],
                      windows=spans["windows"],
                      word=tf.where(at_first, word, -1),
                      word_index=tf.where(at_first, word_in_sentence, -1),
                      max_context=placed["max_context"] & at_first)
        if word_labels is not None:
            result["labels"] = tf.where(at_first, tf.gather(
                tf.concat([tf.cast(word_labels, tf.int32), [0]], 0), word), -1)
        return result


INPUT_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


def count_windows(windower, source, vocab, batch_size=256):
    """Windows of one training epoch: those of the source's good sentences."""
    total, batch = 0, []
    rows = _sentence_rows(source, range(len(source.shards)), vocab, {})
    for row in itertools.chain(rows, [None]):
        if row is not None:
            batch.append(row[0])
        if batch and (len(batch) == batch_size or row is None):
            total += int(tf.reduce_sum(windower.count(tf.ragged.constant(batch))))
            batch = []
    return total


def _sentence_rows(source, shard_order, vocab, drop):
    for shard in shard_order:
        ordinal = 0
        for item in source.read(int(shard)):
            if not isinstance(item, Sentence) or vocab.problem(item.label):
                continue  # the data check has stopped the run on it, or set it aside
            ordinal += 1
            if ordinal - 1 in drop.get(int(shard), ()):
                continue
            yield item.tokens, vocab.encode(item.tags)


def training_windows(windower, vocab, source, batch_size, seed, sentence_buffer, drop=None):
    """Batches of `(inputs, labels [batch, seq_length])` of one epoch: shards in a seeded
    order, sentences shuffled through a buffer, windowed, windows shuffled (same seed, same
    batches: exact resume)."""
    order = np.random.default_rng(seed).permutation(len(source.shards))
    signature = (tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.int32))
    ds = tf.data.Dataset.from_generator(
        lambda: _sentence_rows(source, order, vocab, drop or {}), output_signature=signature)
    ds = ds.shuffle(sentence_buffer, seed=seed, reshuffle_each_iteration=False)
    continuation = tf.constant(vocab.continuation, tf.int32)

    def window(tokens, tags):
        result = eager_call(windower.training, tokens, tags, continuation)
        return {k: result[k] for k in INPUT_KEYS}, result["labels"]

    ds = ds.ragged_batch(SENTENCES_PER_CALL).map(window, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.unbatch().shuffle(WINDOW_SHUFFLE_BUFFER, seed=seed, reshuffle_each_iteration=False)
    return ds.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def inference_windows(windower, rows, batch_size):
    """Batches of `(inputs, meta)` of windows in sentence order, for evaluation and prediction.

    `rows` yields (sentence index, tokens); `meta` holds each window's `index` (its sentence),
    `windows` (the sentence's window count) and per position `token` (the token, within its
    sentence, whose first word's first piece is there, -1 elsewhere) and `max_context`.
    """
    signature = (tf.TensorSpec([], tf.int64), tf.TensorSpec([None], tf.string))
    ds = tf.data.Dataset.from_generator(rows, output_signature=signature)

    def window(index, tokens):
        result = eager_call(windower.inference, tokens)
        meta = dict(index=tf.gather(index, result["example"]), windows=result["windows"],
                    token=result["token"], max_context=result["max_context"])
        return {k: result[k] for k in INPUT_KEYS}, meta

    ds = ds.ragged_batch(SENTENCES_PER_CALL).map(window, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.unbatch().batch(batch_size).prefetch(tf.data.AUTOTUNE)


def decode_entities(tag_ids, tag_type, tag_begins):
    """Entities of tag sequences (ragged `[rows, (words)]` tag ids), as the CoNLL scorer
    reads them: a B- tag, or an I- tag after another type or O, starts one; following I- tags
    of its type continue it. Returns flat `row`, `start`, `end` (words, end inclusive) and
    `type` (index into the types), in order."""
    flat = tag_ids.flat_values
    kind = tf.gather(tag_type, flat)
    position = tf.range(tf.size(flat, out_type=tf.int64))
    row_start = tf.equal(position, tf.gather(tag_ids.row_starts(), tag_ids.value_rowids()))
    previous = tf.where(row_start, tf.constant(-1, kind.dtype), tf.roll(kind, 1, axis=0))
    begins = (kind >= 0) & (tf.gather(tag_begins, flat) | tf.not_equal(previous, kind))
    entity = tf.cumsum(tf.cast(begins, tf.int64)) - 1
    inside = kind >= 0
    count = tf.reduce_sum(tf.cast(begins, tf.int64))
    ids = tf.where(inside, entity, count)
    start = tf.math.unsorted_segment_min(position, ids, count + 1)[:count]
    end = tf.math.unsorted_segment_max(position, ids, count + 1)[:count]
    rows = tf.gather(tag_ids.value_rowids(), start)
    return dict(row=rows, start=start - tf.gather(tag_ids.row_starts(), rows),
                end=end - tf.gather(tag_ids.row_starts(), rows), type=tf.gather(kind, start))
