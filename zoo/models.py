"""Assembling raw strings -> preprocessor -> encoder -> head into Keras models.

Two views of one set of weights:
- the *core* model takes the packed int32 inputs (`input_word_ids`, `input_mask`,
  `input_type_ids`) and returns logits; training feeds it batches that tf.data packed;
- the *text* model puts the preprocessor in front of the core model, so it takes raw strings
  (one text, or a pair) and is what users call and what export saves.
"""
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras as keras

from zoo import hub as zoo_hub
from zoo.heads import ClassifierHead

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def encoder_inputs():
    return {name: keras.Input(shape=(None,), dtype=tf.int32, name=name) for name in INPUT_NAMES}


def classifier_core(encoder_handle, num_classes, dropout=0.1, on_tpu=False):
    """Packed int32 inputs -> class logits, with a trainable Hub encoder and a `ClassifierHead`."""
    inputs = encoder_inputs()
    encoder = zoo_hub.encoder_layer(encoder_handle, trainable=True, on_tpu=on_tpu)
    logits = ClassifierHead(num_classes, dropout=dropout, name="classifier")(
        encoder(inputs)["pooled_output"])
    return keras.Model(inputs, logits, name="classifier_core")


class TextPacker:
    """Raw strings (one or two segments) -> packed BERT inputs, with the preprocessor's own ops.

    Usable in a tf.data `map`, inside a Keras model, and inside an exported tf.function.
    """

    def __init__(self, preprocessor_handle, seq_length, on_tpu=False):
        self.preprocessor = zoo_hub.load_preprocessor(preprocessor_handle, on_tpu=on_tpu)
        self.seq_length = seq_length

    def __call__(self, *texts):
        segments = [self.preprocessor.tokenize(tf.reshape(t, [-1])) for t in texts]
        return self.preprocessor.bert_pack_inputs(segments, seq_length=self.seq_length)

    def token_counts(self, *texts):
        """Tokens each row would take untrimmed, with [CLS] and one [SEP] per segment."""
        counts = len(texts) + 1
        for text in texts:
            tokens = self.preprocessor.tokenize(tf.reshape(text, [-1]))
            counts += tokens.merge_dims(-2, -1).row_lengths()
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
    model = zoo.models.build_text_classifier("minilm_l6_h384_uncased", None, num_classes=2)
    logits = model(tf.constant(["a fine film", "a dull film"]))
    ```
    Handles are resolved by `zoo.hub.resolve_handles` (names, URLs, directories).
    """
    encoder, preprocessor = zoo_hub.resolve_handles(encoder_handle, preprocessor_handle)
    core = classifier_core(encoder, num_classes, dropout)
    return text_model(core, TextPacker(preprocessor, seq_length), pair)
