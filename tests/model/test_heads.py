"""The heads: plain Keras layers whose arguments round-trip through get_config."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from zoo.model.heads import ClassifierHead, RegressionHead, SentencePooling


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


def test_regression_head_gives_one_score_per_example_and_round_trips():
    head = RegressionHead(dropout=0.3, initializer_range=0.05, name="similarity")
    assert head(tf.random.normal([5, 16], seed=2), training=False).shape == (5,)
    clone = RegressionHead.from_config(head.get_config())
    assert (clone.dropout, clone.initializer_range, clone.name) == (0.3, 0.05, "similarity")
    assert "num_classes" not in head.get_config()


def _encoder_outputs(sequence, pooled):
    return dict(sequence_output=tf.constant(sequence, tf.float32),
                pooled_output=tf.constant(pooled, tf.float32))


def test_mean_pooling_ignores_padding():
    rng = np.random.default_rng(0)
    tokens = rng.normal(size=(5, 8)).astype(np.float32)  # one text of 5 tokens
    pooled = rng.normal(size=(1, 8)).astype(np.float32)
    vectors = []
    for length in (5, 7, 16):  # the same text padded to three lengths, padding is garbage
        sequence = np.concatenate([tokens, rng.normal(size=(length - 5, 8)) * 100])[None]
        mask = tf.constant([[1] * 5 + [0] * (length - 5)], tf.int32)
        vectors.append(SentencePooling("mean")(_encoder_outputs(sequence, pooled), mask))
    for vector in vectors:
        np.testing.assert_allclose(vector[0], tokens.mean(axis=0), rtol=1e-5, atol=1e-6)


def test_cls_pooling_is_the_pooled_output_and_cls_mean_concatenates_both():
    sequence = np.arange(24, dtype=np.float32).reshape(1, 3, 8)
    pooled = -np.ones((1, 8), np.float32)
    mask = tf.constant([[1, 1, 0]])
    outputs = _encoder_outputs(sequence, pooled)
    np.testing.assert_array_equal(SentencePooling("cls")(outputs, mask), pooled)
    both = SentencePooling("cls_mean")(outputs, mask)
    np.testing.assert_array_equal(both, np.concatenate([pooled, sequence[:, :2].mean(1)], -1))


def test_pooling_round_trips_and_refuses_unknown_kinds():
    clone = SentencePooling.from_config(SentencePooling("mean", name="p").get_config())
    assert (clone.pooling, clone.name) == ("mean", "p")
    with pytest.raises(ValueError, match="pooling must be one of"):
        SentencePooling("max")
