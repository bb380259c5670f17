"""ClassifierHead: a plain Keras layer whose arguments round-trip through get_config."""
import numpy as np
import tensorflow as tf
import tf_keras as keras

from zoo.heads import ClassifierHead


def test_config_round_trip_keeps_constructor_arguments():
    head = ClassifierHead(num_classes=77, dropout=0.2, initializer_range=0.05, name="intent")
    clone = ClassifierHead.from_config(head.get_config())
    assert (clone.num_classes, clone.dropout, clone.initializer_range, clone.name) == (
        77, 0.2, 0.05, "intent")


def test_logits_shape_and_dropout_only_in_training():
    head = ClassifierHead(num_classes=3, dropout=0.5)
    pooled = tf.random.normal([4, 16], seed=1)
    eval_logits = head(pooled, training=False)
    assert eval_logits.shape == (4, 3)
    np.testing.assert_array_equal(eval_logits, head(pooled, training=False))
    assert not np.allclose(eval_logits, head(pooled, training=True))


def test_saved_and_loaded_inside_a_keras_model(tmp_path):
    inputs = keras.Input(shape=(8,))
    model = keras.Model(inputs, ClassifierHead(num_classes=2, name="head")(inputs))
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path, custom_objects={"ClassifierHead": ClassifierHead})
    x = np.ones((2, 8), np.float32)
    np.testing.assert_allclose(loaded(x), model(x), atol=1e-6)
