"""A SentencePiece preprocessor SavedModel with the interface of zoo's BERT preprocessors
(`zoo.hub_build.preprocessor`), for the XLM-R family (multilingual-e5, XLM-RoBERTa).

The saved object offers:
- `preprocessor(strings)`: one segment per input, packed at `default_seq_length`;
- `preprocessor.tokenize(strings)`: int32 RaggedTensor `[batch, words, pieces]`, a word being a
  piece that starts with "▁" (SentencePiece's mark of a space before it) and the pieces after
  it; and `preprocessor.tokenize.get_special_tokens_dict()` (`<s>`, `</s>`, `<pad>`, `<mask>`);
- `preprocessor.tokenize_with_offsets(strings)`: the same ids plus int64 byte offsets (start,
  limit) of every piece into the input string, as SentencePiece aligns them through its
  normalization, less the whitespace before a word (a piece's "▁" covers no input byte);
- `preprocessor.bert_pack_inputs(segments, seq_length=...)`: one or two segments packed as
  `<s> a </s>` or `<s> a </s></s> b </s>` (every token type 0), trimmed round-robin.
Tokenization is tensorflow_text's `SentencepieceTokenizer` on the model that
`zoo.hub_build.sentencepiece_model` writes, kept as the asset `sentencepiece.model`; loading
the SavedModel needs `import tensorflow_text` first.
"""
import functools

import numpy as np
import tensorflow as tf
import tensorflow_text as text
from sentencepiece import sentencepiece_model_pb2 as sp_pb

from zoo.hub_build.preprocessor import STRINGS, PackInputs, _with_batch_rows, pack_inputs

WORD_MARK = "\u2581"
SPECIAL_PIECES = dict(start_of_sequence_id="<s>", end_of_segment_id="</s>",
                      padding_id="<pad>", mask_id="<mask>")


def special_tokens(pieces, model_file):
    """{start_of_sequence_id, end_of_segment_id, padding_id, mask_id, vocab_size}."""
    ids = {piece: i for i, piece in enumerate(pieces) if piece in SPECIAL_PIECES.values()}
    missing = [piece for piece in SPECIAL_PIECES.values() if piece not in ids]
    if missing:
        raise ValueError(f"{model_file}: special pieces {missing} are not in the model")
    return dict({k: ids[piece] for k, piece in SPECIAL_PIECES.items()}, vocab_size=len(pieces))


def _group_words(ids, starts_word):
    """`[batch, pieces]` -> `[batch, words, pieces]`: a new word at each piece whose
    `starts_word` entry is true, and at each row's first piece."""
    pieces, rows = ids.flat_values, ids.value_rowids()
    first = tf.range(tf.size(pieces, out_type=tf.int64)) == tf.gather(ids.row_starts(), rows)
    new_word = tf.logical_or(tf.gather(starts_word, pieces), first)
    words = tf.RaggedTensor.from_row_starts(pieces, tf.where(new_word)[:, 0],
                                            validate=False)
    per_row = tf.math.unsorted_segment_sum(tf.cast(new_word, tf.int64), rows, ids.nrows())
    return tf.RaggedTensor.from_row_lengths(words, per_row, validate=False)


class Tokenize(tf.Module):
    """Strings -> int32 RaggedTensor `[batch, words, pieces]`."""

    def __init__(self, tokenizer, starts_word, special):
        super().__init__()
        self._tokenizer = tokenizer
        self._starts_word = starts_word
        self.get_special_tokens_dict = tf.function(
            lambda: {k: tf.constant(v) for k, v in special.items()}, input_signature=[])

    @tf.function(input_signature=[STRINGS], autograph=False)
    def __call__(self, strings):
        ids = self._tokenizer.tokenize(strings)
        return _with_batch_rows(_group_words(ids, self._starts_word), tf.shape(strings)[0])


class TokenizeWithOffsets(tf.Module):
    """Strings -> (int32 ids, int64 start offsets, int64 limit offsets), each
    `[batch, words, pieces]`; byte offsets into the input strings."""

    def __init__(self, tokenizer, starts_word):
        super().__init__()
        self._tokenizer = tokenizer
        self._starts_word = starts_word

    @tf.function(input_signature=[STRINGS], autograph=False)
    def __call__(self, strings):
        ids, starts, limits = self._tokenizer.tokenize_with_offsets(strings)
        grouped = _group_words(ids, self._starts_word)
        starts = _skip_whitespace(strings, starts, limits)
        batch_size = tf.shape(strings)[0]
        return tuple(_with_batch_rows(grouped.with_flat_values(values), batch_size)
                     for values in (grouped.flat_values, starts.flat_values,
                                    limits.flat_values))


def _skip_whitespace(strings, starts, limits):
    """Start offsets moved past the whitespace a piece's "▁" stands for: SentencePiece's own
    span of "▁word" begins at the space before the word (a lone "▁" gets an empty span)."""
    row_strings = tf.gather(strings, starts.value_rowids())
    spans = tf.strings.substr(row_strings, starts.flat_values,
                              limits.flat_values - starts.flat_values)
    spaces = tf.strings.length(spans) - tf.strings.length(
        tf.strings.regex_replace(spans, r"^[\s\p{Z}]+", ""))
    return starts.with_flat_values(starts.flat_values + tf.cast(spaces, tf.int64))


class SentencePiecePreprocessor(tf.Module):
    """The root object of the preprocessor SavedModel (see the module docstring).

    Args:
        model_file: a SentencePiece model whose ids are the encoder's (as
            `zoo.hub_build.sentencepiece_model.unigram_model` writes them).
        default_seq_length: the sequence length of `preprocessor(strings)`.
    """

    def __init__(self, model_file, default_seq_length=128):
        super().__init__()
        with open(model_file, "rb") as f:
            model = f.read()
        proto = sp_pb.ModelProto()
        proto.ParseFromString(model)
        pieces = [p.piece for p in proto.pieces]
        self.sentencepiece_model = tf.saved_model.Asset(model_file)
        self.special_tokens = special_tokens(pieces, model_file)
        starts_word = tf.constant(np.array([p.startswith(WORD_MARK) for p in pieces]))
        tokenizer = text.SentencepieceTokenizer(model=model, out_type=tf.int32)
        self.tokenize = Tokenize(tokenizer, starts_word, self.special_tokens)
        self.tokenize_with_offsets = TokenizeWithOffsets(tokenizer, starts_word)
        self.bert_pack_inputs = PackInputs(
            self.special_tokens, default_seq_length,
            pack=functools.partial(pack_inputs, double_separator=True))
        self.default_seq_length = default_seq_length

    @tf.function(input_signature=[STRINGS], autograph=False)
    def __call__(self, strings):
        return self.bert_pack_inputs.__call__([self.tokenize(strings)], self.default_seq_length)
