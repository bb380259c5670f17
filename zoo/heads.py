"""Task heads: small tf_keras layers that sit on the outputs of any TF Hub BERT encoder."""
import tf_keras as keras


class ClassifierHead(keras.layers.Layer):
    """Dropout and a dense layer from the encoder's `pooled_output` to class logits.

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
    spans = zoo.heads.SpanHead()(sequence)
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
