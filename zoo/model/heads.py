"""Task heads: small tf_keras layers that sit on the outputs of any TF Hub BERT encoder."""
import tensorflow as tf
import tf_keras as keras

POOLINGS = ("cls", "mean", "cls_mean")


class SentencePooling(keras.layers.Layer):
    """One vector per text from a BERT encoder's outputs.

    Args:
        pooling: "cls": the encoder's `pooled_output` (its pooler on [CLS]); "mean": the mean of
            `sequence_output` over the real tokens (`input_mask`; padding never counts), as
            sentence-embedding models such as all-MiniLM-L6-v2 are trained; "cls_mean": both,
            concatenated.
        **kwargs: standard Keras layer arguments (`name`, `dtype`, ...).

    Example:
    ```python
    outputs = encoder(encoder_inputs)
    vector = zoo.heads.SentencePooling("mean")(outputs, encoder_inputs["input_mask"])
    logits = zoo.heads.ClassifierHead(num_classes=3)(vector)
    ```
    """

    def __init__(self, pooling="cls", **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, not {pooling!r}")
        self.pooling = pooling

    def call(self, encoder_outputs, input_mask):
        if self.pooling == "cls":
            return encoder_outputs["pooled_output"]
        sequence = encoder_outputs["sequence_output"]
        mask = tf.cast(input_mask, sequence.dtype)[..., tf.newaxis]
        mean = tf.reduce_sum(sequence * mask, axis=1) / tf.maximum(
            tf.reduce_sum(mask, axis=1), tf.ones([], sequence.dtype))
        if self.pooling == "mean":
            return mean
        return tf.concat([encoder_outputs["pooled_output"], mean], axis=-1)

    def get_config(self):
        return dict(super().get_config(), pooling=self.pooling)


class ClassifierHead(keras.layers.Layer):
    """Dropout and a dense layer from the encoder's `pooled_output` to class logits (or from
    its `sequence_output` to logits per token, for token tagging).

    Args:
        num_classes: number of classes (logits per example).
        dropout: dropout rate applied to `pooled_output` in training.
        initializer_range: stddev of the truncated-normal kernel initializer.
        **kwargs: standard Keras layer arguments (`name`, `dtype`, ...).

    Example:
    ```python
    encoder = hub.KerasLayer(encoder_handle, trainable=True)
    pooled = encoder(encoder_inputs)["pooled_output"]
    logits = zoo.heads.ClassifierHead(num_classes=3)(pooled)
    ```
    """

    def __init__(self, num_classes, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.initializer_range = initializer_range
        self._dropout_layer = keras.layers.Dropout(dropout)
        self._dense = keras.layers.Dense(
            num_classes, name="logits",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range))

    def call(self, pooled_output, training=None):
        return self._dense(self._dropout_layer(pooled_output, training=training))

    def get_config(self):
        return dict(super().get_config(), num_classes=self.num_classes, dropout=self.dropout,
                    initializer_range=self.initializer_range)


class SpanHead(keras.layers.Layer):
    """A dense layer from the encoder's `sequence_output` to start and end logits per token.

    Args:
        initializer_range: stddev of the truncated-normal kernel initializer.
        **kwargs: standard Keras layer arguments (`name`, `dtype`, ...).

    Returns a dict `{"start_logits": [batch, seq], "end_logits": [batch, seq]}`.

    Example:
    ```python
    sequence = encoder(encoder_inputs)["sequence_output"]
    spans = zoo.model.heads.SpanHead()(sequence)
    start, end = spans["start_logits"], spans["end_logits"]
    ```
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self._dense = keras.layers.Dense(
            2, name="span_logits",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range))

    def call(self, sequence_output):
        logits = self._dense(sequence_output)
        return dict(start_logits=logits[..., 0], end_logits=logits[..., 1])

    def get_config(self):
        return dict(super().get_config(), initializer_range=self.initializer_range)


class RegressionHead(ClassifierHead):
    """Dropout and a dense layer from the encoder's `pooled_output` to one score per example.

    Args:
        dropout: dropout rate applied to `pooled_output` in training.
        initializer_range: stddev of the truncated-normal kernel initializer.
        **kwargs: standard Keras layer arguments (`name`, `dtype`, ...).

    Returns scores of shape `[batch]`.

    Example:
    ```python
    pooled = encoder(encoder_inputs)["pooled_output"]
    similarity = zoo.model.heads.RegressionHead()(pooled)  # e.g. STS-B, 0 to 5
    ```
    """

    def __init__(self, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(1, dropout=dropout, initializer_range=initializer_range, **kwargs)

    def call(self, pooled_output, training=None):
        return super().call(pooled_output, training=training)[..., 0]

    def get_config(self):
        config = super().get_config()
        del config["num_classes"]
        return config
