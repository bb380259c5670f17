"""The encoder's layer norm and dropout: tf_keras's functions, computed by cheaper training kernels."""
import glob

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras as keras

from zoo.compute import precision
from zoo.hub_build import build
from zoo.hub_build.encoder import BertConfig
from zoo.hub_build.layers import Dropout, LayerNorm, dropout

SCALE = 65536 / (65536 - 6554)  # the kept values' factor at rate 0.1 (6554 of 65536 dropped)


def _graph_ops(fn, *args):
    return {op.type for op in tf.function(fn).get_concrete_function(*args).graph.get_operations()}


def _norms(shape, epsilon=1e-12):
    ours, theirs = LayerNorm(epsilon=epsilon), keras.layers.LayerNormalization(epsilon=epsilon)
    ours.build(shape)
    theirs.build(shape)
    rng = np.random.default_rng(0)
    weights = [rng.normal(size=w.shape).astype(np.float32) for w in ours.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    return ours, theirs


@pytest.mark.parametrize("shape", [(3, 7, 32), (5, 16)])
def test_layer_norm_trains_as_keras_layer_normalization(shape):
    ours, theirs = _norms(shape)
    x = tf.random.stateless_normal(shape, seed=[1, 2]) * 3.0 + 1.0
    results = []
    for norm in (ours, theirs):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = norm(x, training=True)
            loss = tf.reduce_sum(y * tf.sin(y))
        results.append([y] + tape.gradient(loss, [x, norm.gamma, norm.beta]))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(ours(x, training=False), theirs(x, training=False))


def test_layer_norm_without_scale_or_offset_trains_as_keras_does():
    x = tf.random.stateless_normal((6, 16), seed=[5, 6]) * 2.0 - 1.0
    ours = LayerNorm(epsilon=1e-12, center=False, scale=False)
    theirs = keras.layers.LayerNormalization(epsilon=1e-12, center=False, scale=False)
    ours.build(x.shape)
    assert not ours.weights
    np.testing.assert_allclose(ours(x, training=True), theirs(x, training=True), atol=1e-5)


def test_layer_norm_trains_with_one_kernel_and_infers_with_keras_ops():
    norm, _ = _norms((4, 8, 32))
    x = tf.ones([4, 8, 32])
    training = _graph_ops(lambda t: norm(t, training=True), x)
    assert "FusedBatchNormV3" in training and "SquaredDifference" not in training
    inference = _graph_ops(lambda t: norm(t, training=False), x)
    assert "SquaredDifference" in inference and "FusedBatchNormV3" not in inference


def test_layer_norm_keeps_keras_weights_and_config():
    norm, theirs = _norms((2, 32))
    assert [w.name for w in norm.weights] == [w.name.replace("layer_normalization", "layer_norm")
                                              for w in theirs.weights]
    clone = LayerNorm.from_config(norm.get_config())
    assert clone.epsilon == 1e-12 and clone.axis == norm.axis
    with pytest.raises(ValueError, match="last axis"):
        LayerNorm(axis=1).build((2, 3, 4))


def test_dropout_drops_a_tenth_and_keeps_the_mean():
    y = Dropout(0.1)(tf.ones([1000, 1001]), training=True).numpy()
    assert set(np.unique(y)) == {0.0, np.float32(SCALE)}
    # 1,001,000 draws: the kept fraction's standard deviation is 3e-4
    assert abs((y > 0).mean() - (1 - 6554 / 65536)) < 2e-3
    assert abs(y.mean() - 1.0) < 3e-3


def test_dropout_gradient_is_the_mask():
    x = tf.random.stateless_normal([64, 33], seed=[3, 4])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = dropout(x, 0.25)
    grad = tape.gradient(y, x, output_gradients=tf.fill(x.shape, 2.0)).numpy()
    mask = np.where(y.numpy() != 0, 65536 / (65536 - 16384), 0.0)
    np.testing.assert_allclose(grad, 2.0 * mask, rtol=1e-6)
    np.testing.assert_allclose(y, x.numpy() * mask, rtol=1e-6)


def test_dropout_is_seeded_by_keras_and_new_at_each_call():
    layer = Dropout(0.5)
    x = tf.ones([256])
    draws = []
    for _ in range(2):
        keras.utils.set_random_seed(7)
        draws.append([layer(x, training=True).numpy() for _ in range(2)])
    np.testing.assert_array_equal(draws[0][0], draws[1][0])
    np.testing.assert_array_equal(draws[0][1], draws[1][1])
    assert not np.array_equal(draws[0][0], draws[0][1])


def test_dropout_draws_16_bit_random_numbers_only_in_training():
    layer = Dropout(0.1)
    x = tf.ones([8, 5])
    training = _graph_ops(lambda t: layer(t, training=True), x)
    assert "StatelessRandomUniformFullIntV2" in training and "RandomUniform" not in training
    np.testing.assert_array_equal(layer(x, training=False), x)
    np.testing.assert_array_equal(Dropout(0.0)(x, training=True), x)


@pytest.mark.parametrize("bad", [dict(rate=0.1, noise_shape=(1, 5)), dict(rate=1.0)])
def test_dropout_rejects_what_it_does_not_do(bad):
    with pytest.raises(ValueError):
        Dropout(**bad)(tf.ones([2, 5]), training=True)


def test_saved_encoder_without_dropout_trains_as_it_infers(tmp_path, tiny_hub):
    """Through a SavedModel and hub.KerasLayer: the training computation (one-kernel layer
    norms) gives the inference one's outputs when no dropout is drawn."""
    del tiny_hub  # its build checks the vocabulary's package is there
    _, _, vocab, lower = build.source_checkpoint(build.TINY)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    build.save_encoder(str(tmp_path / "encoder"), config, vocab, lower)
    encoder = hub.KerasLayer(str(tmp_path / "encoder"), trainable=True)
    ids = tf.constant([[101, 7592, 1010, 2088, 102], [101, 2088, 999, 102, 0]], tf.int32)
    inputs = dict(input_word_ids=ids, input_mask=tf.cast(ids > 0, tf.int32),
                  input_type_ids=tf.zeros_like(ids))
    trained, inferred = (encoder(inputs, training=t)["sequence_output"] for t in (True, False))
    real = inputs["input_mask"].numpy().astype(bool)
    np.testing.assert_allclose(trained.numpy()[real], inferred.numpy()[real], atol=1e-5)


@pytest.mark.skipif(not precision.REWRITE_CPU_FLAGS & precision.cpu_flags(),
                    reason="TensorFlow's bf16 rewrite does not run on this CPU")
def test_dropout_counts_without_a_size_op_under_the_bf16_rewrite(tmp_path, monkeypatch):
    """TensorFlow's graph optimizer turns `tf.size`, or the product of a shape, into a Size op,
    and the bf16 rewrite keeps a Size op's input in fp32 (a cast of the whole tensor, to count
    it). The rewritten graph of a bf16 dropout between two matmuls, shapes known at run time
    only, has no floating-point Size op."""
    from tensorflow.core.framework import graph_pb2
    monkeypatch.setenv("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LOG_PATH", str(tmp_path))
    w = tf.ones([16, 16])

    @tf.function(input_signature=[tf.TensorSpec([None, 16])])
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.matmul(dropout(tf.matmul(x, w), 0.1), w))
        return tape.gradient(loss, x)

    with precision.scope("bf16"):
        step(tf.ones([4, 16]))
    graph = graph_pb2.GraphDef()
    [rewritten] = glob.glob(str(tmp_path / "graphdef_AutoMixedPrecision_*step*.pb"))
    with open(rewritten, "rb") as f:
        graph.ParseFromString(f.read())
    floats = (tf.float32.as_datatype_enum, tf.bfloat16.as_datatype_enum)
    assert [n.op for n in graph.node if n.op == "MatMul"]
    assert not [n.name for n in graph.node if n.op == "Size" and n.attr["T"].type in floats]
