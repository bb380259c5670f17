"""The built encoder SavedModel: reference parity, the Hub interface, training through hub.KerasLayer."""
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras as keras

from tests.helpers import profiled_ops, reference_file
from zoo.hub_build.encoder import BertConfig, BertEncoder, gelu

INPUTS = ("input_word_ids", "input_mask", "input_type_ids")


def _inputs(word_ids, mask=None):
    word_ids = tf.constant(word_ids, tf.int32)
    mask = tf.ones_like(word_ids) if mask is None else tf.constant(mask, tf.int32)
    return dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=tf.zeros_like(word_ids))


def test_minilm_outputs_match_the_reference_implementation(minilm_hub):
    ref = np.load(reference_file("minilm_l6_h384_outputs.npz"))
    encoder = hub.KerasLayer(minilm_hub + "/encoder")
    out = encoder({k: tf.constant(ref[k], tf.int32) for k in INPUTS}, training=False)
    real = ref["input_mask"].astype(bool)
    np.testing.assert_allclose(out["pooled_output"].numpy(), ref["pooled_output"], atol=1e-4)
    np.testing.assert_allclose(out["default"].numpy(), ref["pooled_output"], atol=1e-4)
    sequence = out["sequence_output"].numpy()
    np.testing.assert_allclose(sequence[real], ref["sequence_output"][real], atol=1e-4)
    layers = np.stack([o.numpy()[:2] for o in out["encoder_outputs"]])
    assert layers.shape == ref["encoder_outputs"].shape
    np.testing.assert_allclose(layers[:, real[:2]], ref["encoder_outputs"][:, real[:2]], atol=1e-4)
    assert not layers[:, ~real[:2]].any()
    # Inference computes the real tokens alone: padding positions are zeros (the reference
    # computes values there that nothing downstream reads; heads use [CLS] or masked positions)
    assert (~real).any() and not sequence[~real].any()


def test_encoder_has_the_published_hub_interface(tiny_hub):
    loaded = hub.load(tiny_hub + "/encoder")
    assert loaded.vocab_file.asset_path.numpy().decode().endswith("vocab.txt")
    assert bool(loaded.do_lower_case.numpy()) is True
    # the Keras model it was written from is not in it (its serialization, every layer traced
    # again, doubled the time of a build), only its variables and functions
    assert not hasattr(loaded, "model") and not tf.io.gfile.exists(
        tiny_hub + "/encoder/keras_metadata.pb")
    assert len(loaded.variables) == len(loaded.trainable_variables) + 1  # and do_lower_case
    out = hub.KerasLayer(loaded)(_inputs([[101, 7592, 102, 0], [101, 2088, 999, 102]],
                                         [[1, 1, 1, 0], [1, 1, 1, 1]]))
    assert set(out) == {"pooled_output", "sequence_output", "encoder_outputs", "default"}
    assert out["pooled_output"].shape == (2, 32) and out["pooled_output"].dtype == tf.float32
    assert out["sequence_output"].shape == (2, 4, 32)
    assert len(out["encoder_outputs"]) == 2
    np.testing.assert_array_equal(out["encoder_outputs"][-1], out["sequence_output"])


def test_training_flag_switches_dropout(tiny_hub):
    encoder = hub.KerasLayer(tiny_hub + "/encoder", trainable=True)
    inputs = _inputs([[101, 7592, 1010, 2088, 102]])
    eval_a = encoder(inputs, training=False)["pooled_output"]
    eval_b = encoder(inputs, training=False)["pooled_output"]
    train = encoder(inputs, training=True)["pooled_output"]
    np.testing.assert_array_equal(eval_a, eval_b)
    assert not np.allclose(eval_a, train)


def test_gradients_reach_every_encoder_weight_through_hub_keras_layer(tiny_hub):
    encoder = hub.KerasLayer(tiny_hub + "/encoder", trainable=True)
    inputs = {k: keras.Input(shape=(None,), dtype=tf.int32, name=k) for k in INPUTS}
    logits = keras.layers.Dense(2)(encoder(inputs)["pooled_output"])
    model = keras.Model(inputs, logits)
    encoder_vars = encoder.trainable_variables
    assert len(encoder_vars) == 3 + 2 + 2 * 16 + 2  # embeddings, LayerNorm, 2 layers, pooler
    batch = _inputs([[101, 7592, 1010, 2088, 102], [101, 2088, 999, 102, 0]],
                    [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]])
    with tf.GradientTape() as tape:
        loss = keras.losses.sparse_categorical_crossentropy(
            [0, 1], model(batch, training=True), from_logits=True)
    grads = tape.gradient(loss, encoder_vars)
    assert all(g is not None for g in grads)
    assert all(float(tf.reduce_max(tf.abs(tf.convert_to_tensor(g)))) > 0 for g in grads)
    before = [v.numpy().copy() for v in encoder_vars]
    keras.optimizers.SGD(0.1).apply_gradients(zip(grads, encoder_vars))
    assert all(not np.array_equal(b, v.numpy()) for b, v in zip(before, encoder_vars))


def test_frozen_encoder_has_no_trainable_weights(tiny_hub):
    encoder = hub.KerasLayer(tiny_hub + "/encoder", trainable=False)
    encoder(_inputs([[101, 102]]))
    assert not encoder.trainable_weights and encoder.non_trainable_weights


def test_encoder_layer_config_round_trip():
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32, hidden_act="gelu_new")
    layer = BertEncoder(config, name="enc")
    clone = BertEncoder.from_config(layer.get_config())
    assert clone.config == config and clone.name == "enc"


@pytest.mark.parametrize("bad", [dict(hidden_act="swishy"), dict(num_attention_heads=5)])
def test_bad_architecture_is_rejected(bad):
    with pytest.raises(ValueError):
        BertConfig(**dict(dict(vocab_size=50, hidden_size=16, num_attention_heads=2), **bad))


def test_gelu_is_tensorflows_exact_gelu():
    x = tf.linspace(-8.0, 8.0, 4001)
    np.testing.assert_allclose(gelu(x), tf.nn.gelu(x, approximate=False), atol=1e-6)
    # in bfloat16 as well, to bfloat16's precision (8 bits of mantissa)
    np.testing.assert_allclose(tf.cast(gelu(tf.cast(x, tf.bfloat16)), tf.float32),
                               tf.nn.gelu(x, approximate=False), rtol=1e-2, atol=1e-2)
    assert not np.allclose(gelu(x), tf.nn.gelu(x, approximate=True), atol=1e-6)  # not tanh's


def test_embeddings_are_gathered_from_the_tables_values():
    """A ResourceGather puts a variable in copy-on-read mode, in which every dense read (the
    optimizer's update of the table) copies it: a training step gathers from the values."""
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32)
    encoder = BertEncoder(config)
    inputs = _inputs([[5, 6, 7, 8], [9, 10, 11, 0]], mask=[[1, 1, 1, 1], [1, 1, 1, 0]])

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(encoder(x, training=True)["pooled_output"])
        return tape.gradient(loss, encoder.trainable_variables)

    ops = {op.type for op in step.get_concrete_function(inputs).graph.get_operations()}
    assert "GatherV2" in ops and "ResourceGather" not in ops
    word_gradient = step(inputs)[0]
    assert isinstance(word_gradient, tf.IndexedSlices)  # still the rows looked up alone


def test_attention_scales_queries_in_training_and_scores_in_inference():
    """Training scales the [tokens, hidden] queries (cheaper both ways); inference scales the
    scores, a multiplication of the batched matmul's output that oneDNN fuses into it."""
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    encoder = BertEncoder(config)
    inputs = _inputs([[5, 6, 7, 8], [9, 10, 11, 0]], mask=[[1, 1, 1, 1], [1, 1, 1, 0]])
    outputs = {}
    for training in (True, False):
        fn = tf.function(lambda x, t=training: encoder(x, training=t)["sequence_output"])
        graph = fn.get_concrete_function(inputs).graph
        multiplied = {("queries" if "query/BiasAdd" in op.inputs[0].name else
                       op.inputs[0].op.type) for op in graph.get_operations() if op.type == "Mul"}
        assert ("queries" in multiplied) == training
        assert ("BatchMatMulV2" in multiplied) == (not training)
        outputs[training] = fn(inputs)
    real = inputs["input_mask"].numpy().astype(bool)
    np.testing.assert_allclose(outputs[True][real], outputs[False][real], rtol=1e-5, atol=1e-5)


def _no_dropout_encoder(**config):
    config = BertConfig(**{**dict(vocab_size=50, hidden_size=16, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=32,
                                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
                           **config})
    return BertEncoder(config)


def test_inference_computes_the_real_tokens_alone():
    """Inference packs the real tokens (mask 1, wherever they are in a row) into the rows of its
    dense layers, plus one spare row; its outputs there are the padded computation's (that of
    training, without dropout), its padding positions zeros, and a row of padding alone (or a
    batch of it) is no error."""
    encoder = _no_dropout_encoder()
    mask = [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 1, 1, 0], [0, 0, 0, 0, 0]]
    inputs = _inputs([[5, 6, 7, 8, 9], [9, 10, 11, 3, 3], [12, 13, 14, 15, 16], [4, 4, 4, 4, 4]],
                     mask)
    padded = encoder(inputs, training=True)
    rows_seen = []
    query_call = encoder.blocks[0].query.call
    encoder.blocks[0].query.call = lambda x: rows_seen.append(x.shape[0]) or query_call(x)
    packed = encoder(inputs, training=False)
    assert rows_seen == [sum(map(sum, mask)) + 1]
    real = np.array(mask, bool)
    for name in ("sequence_output", "encoder_outputs"):
        for one, other in zip(tf.nest.flatten(padded[name]), tf.nest.flatten(packed[name])):
            np.testing.assert_allclose(one.numpy()[real], other.numpy()[real], atol=1e-5)
            assert not other.numpy()[~real].any()
    np.testing.assert_allclose(padded["pooled_output"][:3], packed["pooled_output"][:3],
                               atol=1e-5)
    nothing = encoder(_inputs([[4, 4, 4]], [[0, 0, 0]]), training=False)
    assert nothing["sequence_output"].shape == (1, 3, 16)
    assert not nothing["sequence_output"].numpy().any()


def test_packed_inference_of_the_saved_encoder_in_a_graph(tmp_path, tiny_hub):
    """Through the SavedModel, traced into a tf.function with unknown shapes (as serving and
    evaluation call it): the outputs at real tokens do not depend on the batch's padding."""
    encoder = hub.KerasLayer(tiny_hub + "/encoder")
    fn = tf.function(lambda x: encoder(x, training=False)["sequence_output"],
                     input_signature=[{k: tf.TensorSpec([None, None], tf.int32) for k in INPUTS}])
    alone = fn(_inputs([[101, 7592, 2088, 102]]))
    beside = fn(_inputs([[101, 2088, 999, 1010, 2088, 102], [101, 7592, 2088, 102, 0, 0]],
                        [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]))
    np.testing.assert_allclose(beside[1, :4], alone[0], atol=1e-5)
    assert not beside[1, 4:].numpy().any()


def test_evaluation_spreads_no_layer_output_that_nothing_reads(tmp_path, tiny_hub):
    """Each layer's output is spread back to `[batch, length]` (a gather) for `encoder_outputs`;
    through `hub.KerasLayer` in a tf.function, as evaluation and prediction call the encoder,
    TensorFlow prunes the spreads that no output uses: a model reading `sequence_output` alone
    runs one gather fewer per layer but the last than one reading every layer's output."""
    encoder = hub.KerasLayer(tiny_hub + "/encoder")
    inputs = _inputs([[101, 7592, 2088, 102], [101, 2088, 102, 0]],
                     [[1, 1, 1, 1], [1, 1, 1, 0]])
    gathers = {}
    for name, read in (("last", lambda out: out["sequence_output"]),
                       ("every", lambda out: tf.add_n(out["encoder_outputs"]))):
        fn = tf.function(lambda x, read=read: read(encoder(x, training=False)))
        counts = profiled_ops(str(tmp_path / name), fn, inputs, runs=1)
        gathers[name] = sum(n for op, n in counts.items() if op.endswith(":GatherV2"))
    layers = len(encoder(inputs)["encoder_outputs"])
    assert layers > 1 and gathers["last"] > 0
    assert gathers["every"] - gathers["last"] == layers - 1


def test_pooled_only_computes_the_last_layer_at_the_first_positions():
    """`pooled_only` returns the pooled output alone; the last layer's feed-forward network
    runs on one row per sequence, the layers before it on every position in training (on the
    real tokens and a spare row in inference), and the output and its gradients are those of
    the full computation."""
    encoder = _no_dropout_encoder()
    inputs = _inputs([[5, 6, 7, 8, 9], [9, 10, 11, 3, 3], [12, 13, 14, 15, 16]],
                     [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]])
    full = encoder(inputs, training=True)
    rows = {i: [] for i in range(len(encoder.blocks))}
    for i, block in enumerate(encoder.blocks):
        block.intermediate.call = (lambda call, seen: lambda x: seen.append(x.shape[0])
                                   or call(x))(block.intermediate.call, rows[i])
    with tf.GradientTape(persistent=True) as tape:
        first = encoder(inputs, training=True, pooled_only=True)
        full_loss = tf.reduce_sum(encoder(inputs, training=True)["pooled_output"] ** 2)
        first_loss = tf.reduce_sum(first["pooled_output"] ** 2)
    assert set(first) == {"pooled_output", "default"}
    assert rows == {0: [15, 15], 1: [3, 15]}  # pooled_only, then the full call
    np.testing.assert_allclose(first["pooled_output"], full["pooled_output"], atol=1e-6)
    for one, other in zip(tape.gradient(first_loss, encoder.trainable_variables),
                          tape.gradient(full_loss, encoder.trainable_variables)):
        np.testing.assert_allclose(tf.convert_to_tensor(one), tf.convert_to_tensor(other),
                                   atol=1e-5)
    rows[0].clear()
    rows[1].clear()
    inference = encoder(inputs, training=False, pooled_only=True)
    assert rows == {0: [5 + 3 + 4 + 1], 1: [3]}
    np.testing.assert_allclose(inference["pooled_output"], encoder(inputs)["pooled_output"],
                               atol=1e-5)


def test_the_saved_encoder_takes_pooled_only_through_hub_keras_layer(tiny_hub):
    """`hub.KerasLayer(..., arguments=dict(pooled_only=True))` on the SavedModel: the pooled
    output alone, the full call's in inference, and every encoder weight trained by it."""
    inputs = _inputs([[101, 7592, 1010, 2088, 102], [101, 2088, 999, 102, 0]],
                     [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]])
    full = hub.KerasLayer(tiny_hub + "/encoder", trainable=True)
    pooled = hub.KerasLayer(tiny_hub + "/encoder", trainable=True,
                            arguments=dict(pooled_only=True))
    out = pooled(inputs, training=False)
    assert set(out) == {"pooled_output", "default"}
    np.testing.assert_allclose(out["pooled_output"], full(inputs)["pooled_output"], atol=1e-6)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(pooled(inputs, training=True)["pooled_output"] ** 2)
    grads = tape.gradient(loss, pooled.trainable_variables)
    assert len(grads) == len(full.trainable_variables)
    assert all(float(tf.reduce_max(tf.abs(tf.convert_to_tensor(g)))) > 0 for g in grads)


def test_the_saved_encoder_opens_at_its_embedding_layer(tiny_hub):
    """`embed` then `call_embedded` is `__call__` (what attributions interpolate between), and
    gradients reach the embeddings."""
    loaded = tf.saved_model.load(tiny_hub + "/encoder")
    inputs = _inputs([[101, 2023, 2003, 1037, 102, 0], [101, 2204, 102, 0, 0, 0]],
                     [[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]])
    whole = loaded(inputs, False, False)
    embedded = loaded.embed({k: inputs[k] for k in ("input_word_ids", "input_type_ids")})
    assert embedded.shape == (2, 6, 32)
    with tf.GradientTape() as tape:
        tape.watch(embedded)
        parts = loaded.call_embedded(dict(input_embeddings=embedded,
                                          input_mask=inputs["input_mask"]))
        total = tf.reduce_sum(parts["pooled_output"])
    for key in ("pooled_output", "sequence_output"):
        np.testing.assert_allclose(parts[key].numpy(), whole[key].numpy(), atol=1e-6)
    gradient = tape.gradient(total, embedded).numpy()
    assert np.abs(gradient[0, :5]).sum(axis=-1).min() > 0  # every real token of the first text
    assert not gradient[1, 3:].any()  # padding reaches nothing
