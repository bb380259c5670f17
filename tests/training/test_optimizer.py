"""The optimizer: schedule, AdamW exclusions, the head's learning rate and the frozen encoder."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from zoo.base.errors import UsageError
from zoo.base.fields import group_of
from zoo.model import cores
from zoo.run.settings import RunSettings
from zoo.training.optimizer import WarmupDecay, create_optimizer, optimizer_for


def test_warmup_then_linear_or_exponential_decay():
    linear = WarmupDecay(1.0, total_steps=110, warmup_steps=10)
    assert [float(linear(s)) for s in (0, 5, 10, 60, 110, 200)] == pytest.approx(
        [0.0, 0.5, 1.0, 0.5, 0.0, 0.0])
    exponential = WarmupDecay(1.0, 110, 10, decay="exponential", final_fraction=0.01)
    assert [float(exponential(s)) for s in (10, 60, 110)] == pytest.approx([1.0, 0.1, 0.01])
    with pytest.raises(ValueError):
        WarmupDecay(1.0, 10, 1, decay="cosine")


def test_weight_decay_skips_layer_norm_and_bias():
    optimizer = create_optimizer(1e-3, 100, 0, weight_decay=0.5)
    kernel = tf.Variable(np.ones((2, 2), np.float32), name="dense/kernel")
    bias = tf.Variable(np.ones(2, np.float32), name="dense/bias")
    gamma = tf.Variable(np.ones(2, np.float32), name="encoder/layer_norm/gamma")
    variables = [kernel, bias, gamma]
    optimizer.build(variables)
    optimizer.iterations.assign(50)  # past warmup: a non-zero learning rate
    optimizer.apply_gradients([(tf.zeros_like(v), v) for v in variables])
    assert float(kernel[0, 0]) < 1.0  # decayed
    assert float(bias[0]) == 1.0 and float(gamma[0]) == 1.0


def _pair_run(steps, compiled=False, jit=False, **kwargs):
    """An "encoder" and a "head" kernel, equal at the start and given equal gradients each
    step: (encoder, head) values after each of `steps` steps (weight decay on both)."""
    start = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
    encoder = tf.Variable(start, name="encoder/kernel")
    head = tf.Variable(start, name="head/kernel")
    optimizer = create_optimizer(1e-2, 100, 0, weight_decay=0.1, jit_compile=jit,
                                 head_variables=[head], **kwargs)
    optimizer.build([encoder, head])

    def step(gradient):
        optimizer.apply_gradients([(gradient, encoder), (gradient, head)])

    if compiled:
        step = tf.function(step)
    gradients = np.random.default_rng(0).normal(size=(steps, 2, 2)).astype(np.float32)
    values = []
    for gradient in gradients:
        step(tf.constant(gradient))
        values.append((encoder.numpy() - start, head.numpy() - start))
    return values


@pytest.mark.parametrize("compiled,jit", [(False, False), (True, False), (True, True)])
def test_head_moves_the_multiple_of_the_encoder(compiled, jit):
    (encoder, head), = _pair_run(1, compiled, jit, head_multiplier=10.0)
    assert np.abs(encoder).min() > 0  # both moved (Adam step and weight decay)
    np.testing.assert_allclose(head, 10.0 * encoder, rtol=1e-5)
    (plain_encoder, plain_head), = _pair_run(1, compiled, jit)
    np.testing.assert_allclose(plain_head, plain_encoder)  # multiplier 1: one rate
    np.testing.assert_allclose(plain_encoder, encoder)  # the encoder keeps the schedule's rate


@pytest.mark.parametrize("compiled", [False, True])
def test_the_fused_dense_step_is_keras_adamw(compiled):
    """Each update is one ResourceApplyAdam kernel, also for a sparse gradient (an embedding
    lookup's, with a repeated row), and ends where keras.optimizers.AdamW's own ops do."""
    rng = np.random.default_rng(0)
    start = rng.normal(size=(6, 3)).astype(np.float32)
    ids = tf.constant([0, 2, 2, 5])
    gradients = rng.normal(size=(5, 6, 3)).astype(np.float32)

    def run(optimizer):
        kernel, table = (tf.Variable(start, name=n) for n in ("dense/kernel", "embeddings"))
        optimizer.build([kernel, table])

        def step(gradient):
            with tf.GradientTape() as tape:
                loss = (tf.reduce_sum(kernel * gradient)
                        + tf.reduce_sum(tf.gather(table, ids) * gradient[:4]))
            grads = tape.gradient(loss, [kernel, table])
            assert isinstance(grads[1], tf.IndexedSlices)
            optimizer.apply_gradients(zip(grads, [kernel, table]))

        step = tf.function(step) if compiled else step
        for gradient in gradients:
            step(tf.constant(gradient))
        return kernel.numpy(), table.numpy()

    ours = create_optimizer(1e-2, 100, 10, weight_decay=0.1)
    theirs = keras.optimizers.AdamW(learning_rate=WarmupDecay(1e-2, 100, 10), weight_decay=0.1,
                                    beta_1=0.9, beta_2=0.999, epsilon=1e-6, global_clipnorm=1.0)
    for mine, keras_own in zip(run(ours), run(theirs)):
        assert np.abs(mine - start).min() > 0
        np.testing.assert_allclose(mine, keras_own, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("jit", [False, True])
def test_an_update_is_one_kernel_unless_xla_compiles_it(jit):
    optimizer = create_optimizer(1e-2, 100, 0, jit_compile=jit)
    kernel = tf.Variable(np.ones((4, 4), np.float32), name="dense/kernel")
    table = tf.Variable(np.ones((9, 4), np.float32), name="embeddings")
    optimizer.build([kernel, table])
    step = tf.function(lambda g: optimizer.apply_gradients(
        [(g, kernel), (tf.IndexedSlices(g, tf.constant([1, 3, 3, 8]), tf.shape(table)), table)]))
    graph = step.get_concrete_function(tf.TensorSpec([4, 4])).graph
    kernels = [op for op in graph.get_operations() if op.type == "ResourceApplyAdam"]
    assert len(kernels) == (0 if jit else 2)
    if not jit:  # the weight decay: one multiplication by 1 - rate x decay, assigned
        subtracted = [op for op in graph.get_operations() if op.type == "AssignSubVariableOp"]
        assigned = [op for op in graph.get_operations()
                    if op.type == "AssignVariableOp" and op.name.startswith("AdamW/")]
        assert not subtracted and len(assigned) == 2


@pytest.mark.parametrize("compiled", [False, True])
def test_frozen_encoder_steps_train_the_head_alone_first(compiled):
    values = _pair_run(4, compiled, frozen_encoder_steps=2)
    for encoder, head in values[:2]:
        assert np.all(encoder == 0) and np.abs(head).min() > 0
    for (encoder, _), (before, _) in zip(values[2:], values[1:3]):
        assert np.abs(encoder - before).min() > 0  # moves from step 3 on


def test_head_variables_are_those_outside_the_encoder(tiny_hub):
    core = cores.classifier_core(tiny_hub + "/encoder", 3, pooling="mean")
    head = cores.head_variables(core)
    assert sorted(v.name for v in head) == ["classifier/logits/bias:0",
                                            "classifier/logits/kernel:0"]
    assert len(head) < len(core.trainable_variables)
    encoder = core.get_layer("encoder")  # a multi-task run: cores sharing the encoder
    other = cores.classifier_core(encoder, 2, pooling="mean")
    both = cores.head_variables({"a": core, "b": other})
    assert [v.ref() for v in both] == [v.ref() for v in head + cores.head_variables(other)]
    assert len(both) == 4


def _trainer(**values):
    return group_of(RunSettings(model_dir="unused", **values), "trainer")


def test_optimizer_for_checks_its_settings():
    with pytest.raises(UsageError, match="need a model with a head"):
        optimizer_for(_trainer(head_learning_rate_multiplier=5.0), 100, head_variables=[])
    with pytest.raises(UsageError, match="above 0"):
        optimizer_for(_trainer(head_learning_rate_multiplier=0.0), 100,
                      head_variables=[tf.Variable(1.0)])
    with pytest.raises(UsageError, match="leaves no step"):
        optimizer_for(_trainer(frozen_encoder_steps=100), 100, head_variables=[tf.Variable(1.0)])
    optimizer = optimizer_for(_trainer(frozen_encoder_steps=10, head_learning_rate_multiplier=5.0),
                              100, head_variables=[tf.Variable(1.0)])
    assert (optimizer.head_multiplier, optimizer.frozen_encoder_steps) == (5.0, 10)


@pytest.mark.parametrize("compiled,jit", [(False, False), (True, True)])
def test_a_variable_rate_scales_its_step(compiled, jit):
    def run(rate):
        start = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
        slow, plain = tf.Variable(start, name="encoder/a"), tf.Variable(start, name="encoder/b")
        optimizer = create_optimizer(1e-2, 100, 0, weight_decay=0.1, jit_compile=jit,
                                     variable_rates=[(slow, rate)])
        optimizer.build([slow, plain])
        step = lambda g: optimizer.apply_gradients([(g, slow), (g, plain)])  # noqa: E731
        (tf.function(step) if compiled else step)(tf.constant([[0.3, -1.0], [2.0, 0.1]]))
        return slow.numpy() - start, plain.numpy() - start

    slow, plain = run(0.25)
    assert np.abs(plain).min() > 0
    np.testing.assert_allclose(slow, 0.25 * plain, rtol=1e-4, atol=1e-6)
