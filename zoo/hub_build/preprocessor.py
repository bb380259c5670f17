"""A BERT preprocessor SavedModel with the interface of TF Hub's `bert_en_uncased_preprocess/3`.

The saved object offers:
- `preprocessor(strings)`: one segment per input, packed at `default_seq_length`;
- `preprocessor.tokenize(strings)`: int32 RaggedTensor `[batch, words, wordpieces]`, and
  `preprocessor.tokenize.get_special_tokens_dict()`;
- `preprocessor.tokenize_with_offsets(strings)`: the same ids plus int64 byte offsets
  (start, limit) of every wordpiece into the input string (for span tasks such as SQuAD);
- `preprocessor.bert_pack_inputs(segments, seq_length=...)`: one or two segments (ragged, of rank
  2 or 3) packed as `[CLS] a [SEP] b [SEP]`, trimmed round-robin, into `input_word_ids`,
  `input_mask`, `input_type_ids`.
All tokenization is tensorflow_text's `BertTokenizer`; loading the SavedModel needs
`import tensorflow_text` first.
"""
import tensorflow as tf
import tensorflow_text as text

SPECIAL_TOKENS = dict(start_of_sequence_id="[CLS]", end_of_segment_id="[SEP]",
                      padding_id="[PAD]", mask_id="[MASK]")
STRINGS = tf.TensorSpec([None], tf.string)


def _with_batch_rows(rt, batch_size):
    """Rebuilds the outer ragged dimension with a known row count (shape inference help).

    Ragged tensors built here from splits or lengths that TensorFlow itself computed are not
    validated again (`validate=False`): each validation adds about sixty graph nodes of asserts
    and conditionals, which every trace, load and tf.data iterator of the preprocessor pays for.
    """
    return tf.RaggedTensor.from_row_splits(rt.values, tf.reshape(rt.row_splits, [batch_size + 1]),
                                           validate=False)


def pack_inputs(segments, seq_length, special_tokens, double_separator=False):
    """Packs a list of one or two ragged token tensors into the three BERT input tensors:
    `[CLS] a [SEP] b [SEP]` with token types 0 then 1; with `double_separator`, RoBERTa's and
    XLM-R's `<s> a </s></s> b </s>`, every token type 0."""
    segments = list(segments)
    segments = [s.merge_dims(1, -1) if s.shape.rank > 2 else s for s in segments]
    end = special_tokens["end_of_segment_id"]
    double = double_separator and len(segments) == 2
    trimmed = text.RoundRobinTrimmer(seq_length - len(segments) - 1 - double).trim(segments)
    if double:  # an empty segment between the two: one more separator
        first = trimmed[0]
        empty = tf.RaggedTensor.from_row_lengths(
            tf.zeros([0], first.dtype), tf.zeros([first.nrows()], tf.int64), validate=False)
        trimmed = [first, empty, trimmed[1]]
    ids, type_ids = text.combine_segments(
        trimmed, start_of_sequence_id=special_tokens["start_of_sequence_id"],
        end_of_segment_id=end)
    if double_separator:
        type_ids = tf.zeros_like(type_ids)
    word_ids, _ = text.pad_model_inputs(ids, seq_length, pad_value=special_tokens["padding_id"])
    type_ids, mask = text.pad_model_inputs(type_ids, seq_length, pad_value=0)
    shape = tf.stack([segments[0].nrows(out_type=tf.int32), tf.cast(seq_length, tf.int32)])
    return dict(input_word_ids=tf.reshape(tf.cast(word_ids, tf.int32), shape),
                input_mask=tf.reshape(tf.cast(mask, tf.int32), shape),
                input_type_ids=tf.reshape(tf.cast(type_ids, tf.int32), shape))


class Tokenize(tf.Module):
    """Strings -> int32 RaggedTensor `[batch, words, wordpieces]`."""

    def __init__(self, tokenizer, special_tokens):
        super().__init__()
        self._tokenizer = tokenizer
        self.get_special_tokens_dict = tf.function(
            lambda: {k: tf.constant(v) for k, v in special_tokens.items()}, input_signature=[])

    @tf.function(input_signature=[STRINGS], autograph=False)
    def __call__(self, strings):
        tokens = tf.cast(self._tokenizer.tokenize(strings), tf.int32)
        return _with_batch_rows(tokens, tf.shape(strings)[0])


def lower_case_normalize(strings):
    """What `text.BertTokenizer(lower_case=True)` does to text before splitting it into words."""
    strings = text.normalize_utf8(text.case_fold_utf8(strings), "NFD")
    return tf.strings.regex_replace(strings, r"\p{Mn}", "")


def _to_source_offsets(strings, starts, limits):
    """Maps byte offsets into `lower_case_normalize(strings)` back to byte offsets into `strings`.

    Case folding, NFD and accent stripping act on each character alone, so normalizing the
    characters one by one rebuilds the normalized string; the running sum of their normalized
    byte lengths says which source character every normalized byte came from.
    """
    chars, char_starts = tf.strings.unicode_split_with_offsets(strings, "UTF-8")
    char_limits = char_starts + tf.cast(tf.strings.length(chars), tf.int64)
    normalized_ends = tf.cast(tf.strings.length(lower_case_normalize(chars)), tf.int64)
    normalized_ends = _ragged_cumsum(normalized_ends)
    big = tf.int64.max
    ends = normalized_ends.to_tensor(default_value=big)
    flat_starts = starts.merge_dims(1, -1)
    flat_limits = limits.merge_dims(1, -1)
    # Character holding normalized byte b: the first one whose running end exceeds b.
    start_chars = tf.searchsorted(ends, flat_starts.to_tensor(), side="right")
    last_chars = tf.searchsorted(ends, tf.maximum(flat_limits.to_tensor() - 1, 0), side="right")
    source_starts = tf.gather(char_starts.to_tensor(), start_chars, batch_dims=1)
    source_limits = tf.gather(char_limits.to_tensor(), last_chars, batch_dims=1)
    # back to ragged: the flat values of each row's first row_lengths entries, in row order
    kept = tf.sequence_mask(flat_starts.row_lengths(), tf.shape(source_starts)[1])
    return (starts.with_flat_values(tf.boolean_mask(source_starts, kept)),
            limits.with_flat_values(tf.boolean_mask(source_limits, kept)))


def _ragged_cumsum(rt):
    """Row-wise running sum of a 2-D RaggedTensor."""
    total = tf.cumsum(rt.flat_values)
    row_base = tf.gather(tf.concat([[0], total], 0), rt.row_starts())
    return rt.with_flat_values(total - tf.repeat(row_base, rt.row_lengths()))


class TokenizeWithOffsets(tf.Module):
    """Strings -> (int32 ids, int64 start offsets, int64 limit offsets), each `[batch, words, pieces]`.

    Offsets are byte offsets into the *input* strings (tensorflow_text's own offsets point into
    the lower-cased, accent-stripped text when `lower_case=True`; they are mapped back here).
    """

    def __init__(self, tokenizer, do_lower_case):
        super().__init__()
        self._tokenizer = tokenizer
        self._do_lower_case = do_lower_case

    @tf.function(input_signature=[STRINGS], autograph=False)
    def __call__(self, strings):
        tokens, starts, limits = self._tokenizer.tokenize_with_offsets(strings)
        if self._do_lower_case:
            starts, limits = _to_source_offsets(strings, starts, limits)
        batch_size = tf.shape(strings)[0]
        return (_with_batch_rows(tf.cast(tokens, tf.int32), batch_size),
                _with_batch_rows(starts, batch_size), _with_batch_rows(limits, batch_size))


class PackInputs(tf.Module):
    """`bert_pack_inputs(segments, seq_length=default)`, traced for 1-2 segments of rank 2 or 3;
    `pack(segments, seq_length, special_tokens)` packs them (BERT's way by default)."""

    def __init__(self, special_tokens, default_seq_length, pack=pack_inputs):
        super().__init__()
        ids = {k: special_tokens[k] for k in ("start_of_sequence_id", "end_of_segment_id",
                                              "padding_id")}

        @tf.function(autograph=False)
        def call(inputs, seq_length=default_seq_length):
            inputs = inputs if isinstance(inputs, (list, tuple)) else [inputs]
            return pack(inputs, seq_length, ids)

        self.__call__ = call
        for rank in (2, 3):
            for num_segments in (1, 2):
                spec = [tf.RaggedTensorSpec([None] * rank, tf.int32)] * num_segments
                call.get_concrete_function(spec, seq_length=tf.TensorSpec([], tf.int32))


class BertPreprocessor(tf.Module):
    """The root object of the preprocessor SavedModel (see the module docstring)."""

    def __init__(self, vocab_file, do_lower_case, default_seq_length=128):
        super().__init__()
        initializer = tf.lookup.TextFileInitializer(
            vocab_file, key_dtype=tf.string, key_index=tf.lookup.TextFileIndex.WHOLE_LINE,
            value_dtype=tf.int64, value_index=tf.lookup.TextFileIndex.LINE_NUMBER)
        # Keeping the initializer as an attribute keeps the vocab asset tracked when a model that
        # contains this preprocessor is loaded and saved again (tensorflow/tensorflow#46456).
        self._vocab_initializer = initializer
        self._vocab_table = tf.lookup.StaticHashTable(initializer, default_value=-1)
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.do_lower_case = tf.Variable(do_lower_case, trainable=False, name="do_lower_case")
        self.special_tokens = self._special_tokens(vocab_file)
        tokenizer = text.BertTokenizer(self._vocab_table, lower_case=do_lower_case,
                                       token_out_type=tf.int64)
        self.tokenize = Tokenize(tokenizer, self.special_tokens)
        self.tokenize_with_offsets = TokenizeWithOffsets(tokenizer, do_lower_case)
        self.bert_pack_inputs = PackInputs(self.special_tokens, default_seq_length)
        self.default_seq_length = default_seq_length

    def _special_tokens(self, vocab_file):
        ids = self._vocab_table.lookup(tf.constant(list(SPECIAL_TOKENS.values()))).numpy()
        missing = [tok for tok, i in zip(SPECIAL_TOKENS.values(), ids) if i < 0]
        if missing:
            raise ValueError(f"{vocab_file}: special tokens {missing} are not in the vocabulary")
        result = {k: int(i) for k, i in zip(SPECIAL_TOKENS, ids)}
        result["vocab_size"] = int(self._vocab_table.size())
        return result

    @tf.function(input_signature=[STRINGS], autograph=False)
    def __call__(self, strings):
        # The instance attribute `__call__` is what gets saved; before saving, call it by name.
        return self.bert_pack_inputs.__call__([self.tokenize(strings)], self.default_seq_length)
