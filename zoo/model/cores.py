"""Assembling raw strings -> preprocessor -> encoder -> head into Keras models.

Two views of one set of weights:
- the *core* model takes the packed int32 inputs (`input_word_ids`, `input_mask`,
  `input_type_ids`) and returns the head's outputs; training feeds it batches that tf.data
  packed. Every task's core model is built here, from an encoder layer and its head;
- the *text* model puts the preprocessor in front of the core model, so it takes raw strings
  (one text, or a pair) and is what users call and what export saves.
"""
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras as keras

from zoo.model import hub as zoo_hub
from zoo.model.heads import ClassifierHead, RegressionHead, SentencePooling, SpanHead

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def encoder_inputs():
    return {name: keras.Input(shape=(None,), dtype=tf.int32, name=name) for name in INPUT_NAMES}


def _encoder(encoder, on_tpu):
    """`encoder` as a trainable Keras layer: a layer is used as it is, a handle is loaded."""
    if isinstance(encoder, keras.layers.Layer):
        return encoder
    return zoo_hub.encoder_layer(encoder, trainable=True, on_tpu=on_tpu)


def head_variables(core):
    """The trainable variables of `core` (a core model, or a multi-task run's {task: core},
    cores sharing one encoder) that are not its encoder's (the layer named "encoder", as
    `zoo.model.hub.encoder_layer` names it): its heads' and poolings', each once."""
    found, seen = [], set()
    for one in (core.values() if isinstance(core, dict) else [core]):
        try:
            encoder = one.get_layer("encoder")
        except ValueError:
            continue
        seen.update(id(v) for v in encoder.trainable_variables)
        for v in one.trainable_variables:
            if id(v) not in seen:
                seen.add(id(v))
                found.append(v)
    return found


def encoder_variables(core):
    """The trainable variables of `core`'s encoder (a core model, or a multi-task run's
    {task: core} sharing one encoder)."""
    one = next(iter(core.values())) if isinstance(core, dict) else core
    return one.get_layer("encoder").trainable_variables


def pooled_core(encoder, head, name, pooling="cls", on_tpu=False):
    """Packed int32 inputs -> `head` on one vector per text (`SentencePooling(pooling)` of the
    encoder's outputs; `encoder`: a handle, or a layer to share). With "cls" pooling the
    encoder is asked for its pooled output alone (`zoo.model.hub.pooled_view`)."""
    inputs = encoder_inputs()
    encoder = _encoder(encoder, on_tpu)
    if pooling == "cls":
        encoder = zoo_hub.pooled_view(encoder)
    pooled = SentencePooling(pooling, name="pooling")(encoder(inputs), inputs["input_mask"])
    return keras.Model(inputs, head(pooled), name=name)


def after_encoder(core):
    """`fn(encoder outputs, input_mask)` -> `core`'s outputs in inference, for a core of
    `pooled_core` (its pooling, then its head): what a caller that runs the encoder itself
    (attributions, `zoo.export.explain`) puts after it."""
    pooling, head = core.get_layer("pooling"), core.layers[-1]
    return lambda outputs, mask: head(pooling(outputs, mask), training=False)


def classifier_core(encoder, num_classes, dropout=0.1, pooling="cls", on_tpu=False):
    """Packed int32 inputs -> class logits: a trainable Hub encoder (a handle, or a layer to
    share) and a `ClassifierHead` on its pooled outputs (`pooling`: see `SentencePooling`)."""
    return pooled_core(encoder, ClassifierHead(num_classes, dropout=dropout, name="classifier"),
                       "classifier_core", pooling, on_tpu)


def regression_core(encoder, dropout=0.1, pooling="cls", on_tpu=False):
    """Packed int32 inputs -> one score per example: a `RegressionHead` on the pooled
    outputs."""
    return pooled_core(encoder, RegressionHead(dropout=dropout, name="regressor"),
                       "regression_core", pooling, on_tpu)


def tagging_core(encoder, num_tags, dropout=0.1, on_tpu=False):
    """Packed int32 inputs -> tag logits per token `[batch, seq, tags]`: a `ClassifierHead`
    on the encoder's `sequence_output` (a handle, or a layer to share)."""
    inputs = encoder_inputs()
    logits = ClassifierHead(num_tags, dropout=dropout, name="tagger")(
        _encoder(encoder, on_tpu)(inputs)["sequence_output"])
    return keras.Model(inputs, logits, name="tagging_core")


def multi_head_core(encoder, heads, on_tpu=False):
    """Packed int32 inputs -> {name: head output}: one trainable encoder (a handle, or a layer
    to share) under a dict of heads, for custom multi-task Keras code.

    A head reads the encoder's `sequence_output` if it is a `SpanHead` or comes as
    `("sequence_output", head)` (e.g. a `ClassifierHead` tagging tokens); otherwise one vector
    per text, `pooled_output`, or `SentencePooling(kind)` of the outputs with
    `("mean", head)` / `("cls_mean", head)`.
    """
    inputs = encoder_inputs()
    outputs = _encoder(encoder, on_tpu)(inputs)
    results = {}
    for name, head in heads.items():
        source, head = head if isinstance(head, tuple) else (
            "sequence_output" if isinstance(head, SpanHead) else "cls", head)
        if source == "sequence_output":
            results[name] = head(outputs["sequence_output"])
        else:
            results[name] = head(SentencePooling(source, name=f"{name}_pooling")(
                outputs, inputs["input_mask"]))
    return keras.Model(inputs, results, name="multi_head_core")


def span_core(encoder, on_tpu=False):
    """Packed int32 inputs -> {"start_logits", "end_logits"}: a trainable Hub encoder (a
    handle, or a layer to share) and a `SpanHead` on its `sequence_output`."""
    inputs = encoder_inputs()
    outputs = SpanHead(name="span")(_encoder(encoder, on_tpu)(inputs)["sequence_output"])
    return keras.Model(inputs, outputs, name="span_core")


_SHARED_PACKERS = {}  # (`zoo.model.hub.preprocessor_key`, length) -> `TextPacker.shared`'s


class TextPacker:
    """Raw strings (one or two segments) -> packed BERT inputs, with the preprocessor's own ops.

    Usable in a tf.data `map`, inside a Keras model, and inside an exported tf.function. The
    loaded preprocessor is `.preprocessor`; `.special_tokens` holds its special token ids.
    """

    @classmethod
    def shared(cls, preprocessor_handle, seq_length, on_tpu=False):
        """The process's packer of this preprocessor and length, made on first use: the
        functions traced on it (`compiled`, `derived`) serve every later run in the process
        (a notebook's, a test's) instead of being traced and instantiated again. Under a
        distribution strategy's scope, whose preprocessor is loaded for it, a packer of its
        own."""
        if tf.distribute.has_strategy():
            return cls(preprocessor_handle, seq_length, on_tpu)
        # the key of the process's loaded preprocessor (`zoo.model.hub.load_preprocessor`)
        key = (zoo_hub.preprocessor_key(preprocessor_handle, on_tpu), seq_length)
        if key not in _SHARED_PACKERS:
            _SHARED_PACKERS[key] = cls(preprocessor_handle, seq_length, on_tpu)
        return _SHARED_PACKERS[key]

    def __init__(self, preprocessor_handle, seq_length, on_tpu=False):
        self.handle = preprocessor_handle
        self.seq_length = seq_length
        with tf.init_scope():  # eager, also when first needed inside a tf.data map or tf.function
            self.preprocessor = zoo_hub.load_preprocessor(preprocessor_handle, on_tpu=on_tpu)
            self.special_tokens = {k: int(v) for k, v in
                                   self.preprocessor.tokenize.get_special_tokens_dict().items()}
            self.pair_separators, self.pair_types = self._pair_format()
        self._compiled, self._derived = {}, {}

    def _pair_format(self):
        """How the preprocessor packs a pair: (separators, whether the second segment's token
        type is 1). BERT's `[CLS] a [SEP] b [SEP]`: 2, True; XLM-R's `<s> a </s></s> b </s>`:
        3, False."""
        token = tf.ragged.constant([[self.special_tokens["padding_id"]]], dtype=tf.int32)
        packed = self.preprocessor.bert_pack_inputs([token, token], seq_length=8)
        ids = packed["input_word_ids"].numpy()[0]
        return (int((ids == self.special_tokens["end_of_segment_id"]).sum()),
                bool(packed["input_type_ids"].numpy().max() > 0))

    def __call__(self, *texts):
        segments = [self.preprocessor.tokenize(tf.reshape(t, [-1])) for t in texts]
        return self.preprocessor.bert_pack_inputs(segments, seq_length=self.seq_length)

    def compiled(self, segments, counts=False):
        """`self` (or with `counts`, `token_counts`) of `segments` string batches `[batch]` as a
        `tf.function`, traced once for this packer: what a `tf.data` pipeline calls through
        `zoo.compute.pipelines.eager_call`, and a data check eagerly."""
        if (segments, counts) not in self._compiled:
            self._compiled[segments, counts] = tf.function(
                self.token_counts if counts else self,
                input_signature=[tf.TensorSpec([None], tf.string)] * segments)
        return self._compiled[segments, counts]

    def derived(self, key, make):
        """`make()`, made once per packer and `key` (e.g. a SQuAD windower of one layout,
        with its traced functions) and kept with the packer."""
        if key not in self._derived:
            self._derived[key] = make()
        return self._derived[key]

    def tokens(self, text):
        """Wordpiece ids `[batch, (tokens)]` of a string batch (words merged)."""
        return self.preprocessor.tokenize(tf.reshape(text, [-1])).merge_dims(-2, -1)

    def tokens_with_offsets(self, text):
        """(ids, byte starts, byte limits), each `[batch, (tokens)]`: offsets into each string.

        Only preprocessors that `zoo-build-hub` writes have `tokenize_with_offsets`; a span
        task on another preprocessor is a `HandleError` naming it.
        """
        if not hasattr(self.preprocessor, "tokenize_with_offsets"):
            raise zoo_hub.HandleError(
                f"{self.handle}: this preprocessor has no tokenize_with_offsets, which answer "
                "spans need (to map tokens back to characters); use a preprocessor written by "
                "zoo-build-hub (e.g. from the same checkpoint)")
        ids, starts, limits = self.preprocessor.tokenize_with_offsets(tf.reshape(text, [-1]))
        return ids.merge_dims(-2, -1), starts.merge_dims(-2, -1), limits.merge_dims(-2, -1)

    @staticmethod
    def char_offsets(strings, byte_offsets):
        """Byte offsets `[batch, (n)]` into each string (at character boundaries) -> character
        offsets: the number of characters before each byte offset."""
        _, char_starts = tf.strings.unicode_decode_with_offsets(strings, "UTF-8",
                                                                errors="replace")
        counted = tf.searchsorted(char_starts.to_tensor(default_value=tf.int64.max),
                                  byte_offsets.to_tensor(), side="left", out_type=tf.int64)
        return tf.RaggedTensor.from_tensor(counted, lengths=byte_offsets.row_lengths())

    def token_counts(self, *texts):
        """Tokens each row would take untrimmed, with the special tokens of its packing."""
        counts = 2 if len(texts) == 1 else 1 + self.pair_separators
        for text in texts:
            counts += self.tokens(text).row_lengths()
        return counts

    def keras_layers(self):
        """(tokenize, pack) as hub.KerasLayer's, for functional Keras models."""
        return (hub.KerasLayer(self.preprocessor.tokenize, name="tokenize"),
                hub.KerasLayer(self.preprocessor.bert_pack_inputs, name="pack",
                               arguments=dict(seq_length=self.seq_length)))


def text_input_names(pair):
    return ("text_a", "text_b") if pair else ("text",)


def text_model(core, packer, pair=False):
    """Raw strings -> `core`'s outputs: the preprocessor in front of a core model."""
    texts = [keras.Input(shape=(), dtype=tf.string, name=n) for n in text_input_names(pair)]
    tokenize, pack = packer.keras_layers()
    packed = pack([tokenize(t) for t in texts])
    return keras.Model(texts, core(packed), name="text_" + core.name)


def build_text_classifier(encoder_handle, preprocessor_handle, num_classes, seq_length=128,
                          pair=False, dropout=0.1):
    """One Keras model: raw strings (`text`, or `text_a` and `text_b`) -> class logits.

    Example:
    ```python
    model = zoo.model.cores.build_text_classifier("minilm_l6_h384_uncased", None, num_classes=2)
    logits = model(tf.constant(["a fine film", "a dull film"]))
    ```
    Handles are resolved by `zoo.model.hub.resolve_handles` (names, URLs, directories).
    """
    encoder, preprocessor = zoo_hub.resolve_handles(encoder_handle, preprocessor_handle)
    core = classifier_core(encoder, num_classes, dropout)
    return text_model(core, TextPacker(preprocessor, seq_length), pair)
