"""A Keras (tf_keras) BERT encoder with the input/output interface of the published TF Hub BERT models.

This model is only used to *write* Hub-format SavedModels (see `zoo.hub_build.build`); everything
downstream loads the SavedModel through `hub.KerasLayer`, exactly as it would a tfhub.dev handle.

Inputs: a dict of int32 `[batch, seq]` tensors `input_word_ids`, `input_mask`, `input_type_ids`.
Outputs: a dict with `pooled_output` `[batch, hidden]`, `sequence_output` `[batch, seq, hidden]`,
`encoder_outputs` (a list with one `[batch, seq, hidden]` tensor per layer) and `default`
(= `pooled_output`).

In inference the encoder computes the real tokens only (`input_mask` 1): their rows are packed
into one `[tokens, hidden]` matrix for every dense layer, layer norm and residual, and spread
back to `[batch, seq]` only for the attention's batched matmuls (`Packing`): on SST-2 dev in
batches of 64, 24% fewer rows than the padded batch when sorted by length, 51% in file order.
The outputs at padding positions are zeros (a padded BERT computes values there that nothing
may read: attention and pooling ignore them). Training keeps the padded computation: XLA fusion
compiles a step per shape, and a packed batch has a new shape at every step.

Called with `pooled_only=True`, the encoder returns `pooled_output` (and `default`) alone and
computes its last layer at the first position of each sequence only: those queries attend to
every key and value, and the attention output, layer norms and feed-forward network run on
`batch` rows instead of every position's. The pooled output is the same (the pooler reads only
that position), for 14% fewer model FLOPs in a training step of 6-layer MiniLM on MRPC's
lengths (`bench/common.py`). A caller of the SavedModel asks for it with
`hub.KerasLayer(..., arguments=dict(pooled_only=True))` (`zoo.model.hub.pooled_view`).
"""
import dataclasses
import math

import tensorflow as tf
import tf_keras as keras

from zoo.hub_build.layers import Dropout, LayerNorm, by_mode


def gelu(x):
    """The exact GELU, x * P(X <= x) for a standard normal X, as 0.5 x (1 + erf(x / sqrt(2))):
    the formula PyTorch and Hugging Face compute. `tf.nn.gelu` computes the same through erfc,
    whose TensorFlow CPU kernel is several times slower than erf's in bfloat16, which made
    GELU one of the costliest ops of a bf16 training step."""
    return 0.5 * x * (1.0 + tf.math.erf(x * (1.0 / math.sqrt(2.0))))


ACTIVATIONS = {
    "gelu": gelu,
    "gelu_new": lambda x: keras.activations.gelu(x, approximate=True),
    "gelu_pytorch_tanh": lambda x: keras.activations.gelu(x, approximate=True),
    "relu": keras.activations.relu,
}


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Architecture of a BERT encoder (the fields of a Hugging Face BERT `config.json`)."""

    vocab_size: int
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    initializer_range: float = 0.02

    def __post_init__(self):
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(
                f"hidden_act {self.hidden_act!r} is not supported; use one of {sorted(ACTIVATIONS)}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not a multiple of "
                f"num_attention_heads {self.num_attention_heads}")


def _init(config):
    """A new initializer for each weight: one shared unseeded instance repeats its values."""
    return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


def _lookup(table, ids):
    """The rows `ids` of the embedding variable `table`, gathered from its value. Gathering from
    the variable itself (a ResourceGather) puts it in copy-on-read mode, in which every dense
    read copies it: the optimizer's dense update of the table then copied all of it at each
    training step."""
    return tf.gather(tf.convert_to_tensor(table), ids)


class BertEmbeddings(keras.layers.Layer):
    """Word + position + token-type embeddings, then LayerNorm and dropout."""

    def __init__(self, config: BertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.layer_norm = LayerNorm(epsilon=config.layer_norm_eps, name="layer_norm")
        self.dropout = Dropout(config.hidden_dropout_prob)

    def build(self, input_shape):
        config = self.config
        self.word_embeddings = self.add_weight(
            "word_embeddings", [config.vocab_size, config.hidden_size], initializer=_init(config))
        self.position_embeddings = self.add_weight(
            "position_embeddings", [config.max_position_embeddings, config.hidden_size],
            initializer=_init(config))
        self.type_embeddings = self.add_weight(
            "type_embeddings", [config.type_vocab_size, config.hidden_size],
            initializer=_init(config))
        super().build(input_shape)

    def call(self, word_ids, type_ids, position_ids=None, training=None):
        """`[tokens, hidden]` embeddings of `word_ids` and `type_ids`: `[batch, seq]` at positions
        0 to seq - 1 (tokens = batch * seq), or `[tokens]` at `position_ids`."""
        x = _lookup(self.word_embeddings, word_ids)
        x += _lookup(self.type_embeddings, type_ids)
        if position_ids is None:
            x += self.position_embeddings[tf.newaxis, :tf.shape(word_ids)[1]]
        else:
            x += tf.gather(self.position_embeddings, position_ids)
        x = tf.reshape(x, [-1, self.config.hidden_size])
        return self.dropout(self.layer_norm(x), training=training)


class Packing:
    """Where the real tokens of a `[batch, seq]` mask are, to compute them alone.

    The packed rows are the real tokens in order, then one spare row (a copy of the first
    position's token), so that every padding position has a row to read and a batch with no
    real token still has one.

    Attributes:
        positions: int64 `[tokens + 1]`, each packed row's index into the flattened
            `[batch * seq]` positions (the spare row's: 0).
        rows: int64 `[batch * seq]`, each position's packed row (padding: the spare row).
        first: int64 `[batch]`, the packed row of each sequence's first position.
        real: `[batch * seq, 1]` of 1 at a real token, 0 at padding.
    """

    def __init__(self, mask, dtype):
        real = tf.reshape(mask, [-1]) > 0
        positions = tf.where(real)[:, 0]
        self.positions = tf.concat([positions, tf.zeros([1], tf.int64)], 0)
        self.rows = tf.where(real, tf.cumsum(tf.cast(real, tf.int64), exclusive=True),
                             tf.size(positions, out_type=tf.int64))
        self.real = tf.cast(real, dtype)[:, tf.newaxis]
        shape = tf.shape(mask, out_type=tf.int64)  # not unstacked: LiteRT has no int64 Unpack
        batch, seq = shape[0], shape[1]
        self.first = tf.gather(self.rows, tf.range(batch) * seq)

    def pack(self, padded):
        """`[batch * seq, ...]` -> `[tokens + 1, ...]`."""
        return tf.gather(padded, self.positions)

    def spread(self, packed):
        """`[tokens + 1, ...]` -> `[batch * seq, ...]`; padding positions get the spare row."""
        return tf.gather(packed, self.rows)


class TransformerBlock(keras.layers.Layer):
    """One post-LayerNorm BERT layer: self-attention, then the feed-forward network."""

    def __init__(self, config: BertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        hidden = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_size = hidden // self.num_heads
        self.query = keras.layers.Dense(hidden, kernel_initializer=_init(config), name="query")
        self.key = keras.layers.Dense(hidden, kernel_initializer=_init(config), name="key")
        self.value = keras.layers.Dense(hidden, kernel_initializer=_init(config), name="value")
        self.attention_output = keras.layers.Dense(
            hidden, kernel_initializer=_init(config), name="attention_output")
        self.attention_layer_norm = LayerNorm(
            epsilon=config.layer_norm_eps, name="attention_layer_norm")
        self.intermediate = keras.layers.Dense(
            config.intermediate_size, kernel_initializer=_init(config), name="intermediate")
        self.activation = ACTIVATIONS[config.hidden_act]
        self.output_dense = keras.layers.Dense(hidden, kernel_initializer=_init(config), name="output")
        self.output_layer_norm = LayerNorm(epsilon=config.layer_norm_eps, name="output_layer_norm")
        self.attention_dropout = Dropout(config.attention_probs_dropout_prob)
        self.hidden_dropout = Dropout(config.hidden_dropout_prob)

    def _split_heads(self, x, batch, seq):
        x = tf.reshape(x, [batch, seq, self.num_heads, self.head_size])
        return tf.transpose(x, [0, 2, 1, 3])

    def call(self, x, attention_bias, batch, seq, packing=None, first_rows=False,
             training=None):
        """`x`: `[batch * seq, hidden]`, or with a `Packing` its packed rows. Activations stay
        2-D between layers, so every dense layer is one MatMul + BiasAdd (which oneDNN fuses)
        rather than Keras' 3-D Tensordot. With `first_rows`, the `[batch, hidden]` output at
        each sequence's first position alone: its queries attend to the keys and values of
        every position."""
        spread = (lambda t: t) if packing is None else packing.spread
        every, rows, spread_queries = x, seq, spread
        if first_rows:  # each sequence's first position: [batch, hidden], in the batch's order
            x = (tf.reshape(x, [batch, seq, self.config.hidden_size])[:, 0] if packing is None
                 else tf.gather(x, packing.first))
            rows, spread_queries = 1, (lambda t: t)
        queries = spread_queries(self.query(x))
        k = self._split_heads(spread(self.key(every)), batch, seq)
        v = self._split_heads(spread(self.value(every)), batch, seq)
        scale = 1.0 / math.sqrt(self.head_size)

        def scaled_queries():  # training: [batch * rows, hidden] values to scale, both ways
            return tf.matmul(self._split_heads(queries * scale, batch, rows), k, transpose_b=True)

        def scaled_scores():  # inference: oneDNN fuses this scale into the batched matmul
            return tf.matmul(self._split_heads(queries, batch, rows), k, transpose_b=True) * scale

        scores = by_mode(training, scaled_queries, scaled_scores)
        probs = tf.nn.softmax(scores + attention_bias, axis=-1)
        probs = self.attention_dropout(probs, training=training)
        context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])
        context = tf.reshape(context, [batch * rows, self.num_heads * self.head_size])
        if packing is not None and not first_rows:
            context = packing.pack(context)
        attended = self.hidden_dropout(self.attention_output(context), training=training)
        x = self.attention_layer_norm(x + attended)
        ffn = self.output_dense(self.activation(self.intermediate(x)))
        ffn = self.hidden_dropout(ffn, training=training)
        return self.output_layer_norm(x + ffn)


class BertEncoder(keras.layers.Layer):
    """The BERT stack: embeddings, `num_hidden_layers` transformer blocks and the pooler."""

    def __init__(self, config: BertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.embeddings = BertEmbeddings(config, name="embeddings")
        self.blocks = [TransformerBlock(config, name=f"transformer_{i}")
                       for i in range(config.num_hidden_layers)]
        self.pooler = keras.layers.Dense(
            config.hidden_size, activation="tanh", kernel_initializer=_init(config), name="pooler")

    def call(self, inputs, training=None, pooled_only=False):
        """The Hub outputs of `inputs`: `input_word_ids`, `input_mask` and `input_type_ids`,
        or `input_embeddings` (`[batch, seq, hidden]`, what `embed` gives) and `input_mask`,
        to run the layers on embeddings the caller chose (attributions interpolate them)."""
        mask = tf.cast(inputs["input_mask"], self.compute_dtype)
        # Padding keys get a large negative bias, so softmax gives them zero weight.
        attention_bias = (1.0 - mask[:, tf.newaxis, tf.newaxis, :]) * -1e9
        batch, seq = tf.shape(mask)[0], tf.shape(mask)[1]
        hidden = self.config.hidden_size
        encoded = by_mode(
            training,
            lambda: self._padded(inputs, attention_bias, batch, seq, training, pooled_only),
            lambda: self._packed(inputs, attention_bias, batch, seq, pooled_only))
        if pooled_only:
            pooled = self.pooler(encoded)
            return dict(pooled_output=pooled, default=pooled)
        encoder_outputs = [tf.reshape(x, [batch, seq, hidden]) for x in encoded]
        x = encoder_outputs[-1]
        pooled = self.pooler(x[:, 0, :])
        return dict(pooled_output=pooled, sequence_output=x,
                    encoder_outputs=encoder_outputs, default=pooled)

    def embed(self, inputs):
        """The embedding layer's `[batch, seq, hidden]` output on `input_word_ids` and
        `input_type_ids` in inference (word, position and token-type embeddings, normalized)."""
        shape = tf.shape(inputs["input_word_ids"])
        x = self.embeddings(inputs["input_word_ids"], inputs["input_type_ids"], training=False)
        return tf.reshape(x, tf.concat([shape, [self.config.hidden_size]], 0))

    def _padded(self, inputs, attention_bias, batch, seq, training, pooled_only=False):
        """`_encode` with every position computed."""
        if "input_embeddings" in inputs:
            x = tf.reshape(inputs["input_embeddings"], [-1, self.config.hidden_size])
        else:
            x = self.embeddings(inputs["input_word_ids"], inputs["input_type_ids"],
                                training=training)
        return self._encode(x, attention_bias, batch, seq, None, training, pooled_only)

    def _packed(self, inputs, attention_bias, batch, seq, pooled_only=False):
        """`_encode` in inference, the real tokens alone computed (`Packing`)."""
        packing = Packing(inputs["input_mask"], self.compute_dtype)
        flat = lambda t: packing.pack(tf.reshape(t, [-1]))  # noqa: E731
        if "input_embeddings" in inputs:
            x = packing.pack(tf.reshape(inputs["input_embeddings"], [-1, self.config.hidden_size]))
        else:
            x = self.embeddings(flat(inputs["input_word_ids"]), flat(inputs["input_type_ids"]),
                                position_ids=packing.positions % tf.cast(seq, tf.int64),
                                training=False)
        return self._encode(x, attention_bias, batch, seq, packing, False, pooled_only)

    def _encode(self, x, attention_bias, batch, seq, packing, training, pooled_only):
        """Each layer's `[batch * seq, hidden]` output from embeddings `x` (zeros at padding
        with a `Packing`); with `pooled_only`, the last layer's `[batch, hidden]` output at the
        first positions alone."""
        if not pooled_only:
            return self._layers(x, attention_bias, batch, seq, packing, training, self.blocks)[0]
        x = self._layers(x, attention_bias, batch, seq, packing, training, self.blocks[:-1])[1]
        return self.blocks[-1](x, attention_bias, batch, seq, packing=packing, first_rows=True,
                               training=training)

    def _layers(self, x, attention_bias, batch, seq, packing, training, blocks):
        """`blocks` on embeddings `x`: each one's output, spread to `[batch * seq, hidden]`
        (zeros at padding) when `packing` says which rows `x` holds, and the last one's rows as
        computed."""
        outputs = []
        for block in blocks:
            x = block(x, attention_bias, batch, seq, packing=packing, training=training)
            outputs.append(x if packing is None else packing.spread(x) * packing.real)
        return outputs, x

    def get_config(self):
        return dict(super().get_config(), config=dataclasses.asdict(self.config))

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig(**config.pop("config")), **config)


def build_encoder_model(config: BertConfig) -> keras.Model:
    """Returns a functional Keras model: dict of int32 inputs -> dict of Hub BERT outputs."""
    inputs = {name: keras.Input(shape=(None,), dtype=tf.int32, name=name)
              for name in ("input_word_ids", "input_mask", "input_type_ids")}
    encoder = BertEncoder(config, name="bert_encoder")
    return keras.Model(inputs=inputs, outputs=encoder(inputs), name="bert_encoder_model")
