"""zoo.compute.fusion: when XLA fusion is on, and that it really clusters elementwise ops (not matmuls)."""
import collections

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from tests.helpers import profiled_ops
from zoo.compute import Compute, fusion, precision
from zoo.training import loop
from zoo.training.optimizer import create_optimizer


@pytest.fixture
def restore_fusion():
    before = tf.config.optimizer.get_jit()
    yield
    tf.config.optimizer.set_jit(before or False)


def test_auto_fuses_only_fixed_shape_training_on_a_cpu_with_amx():
    assert fusion.available()  # conftest imports zoo before TensorFlow
    amx = {"avx512f", "avx512_bf16", "amx_tile", "amx_bf16"}
    assert fusion.resolve("auto", "fixed", training=True, accelerators=0, flags=amx)
    # measured slower than the plain step on a Zen 4 EPYC (AVX512_BF16, no AMX): off there
    assert not fusion.resolve("auto", "fixed", training=True, accelerators=0,
                              flags={"avx512f", "avx512_bf16"})
    assert not fusion.resolve("auto", "fixed", training=True, accelerators=0, flags=set())
    assert not fusion.resolve("auto", "bucketed", training=True, accelerators=0, flags=amx)
    assert not fusion.resolve("auto", "dynamic", training=True, accelerators=0, flags=amx)
    assert not fusion.resolve("auto", "fixed", training=False, accelerators=0, flags=amx)
    assert not fusion.resolve("auto", "fixed", training=True, accelerators=1, flags=amx)
    assert not fusion.resolve("auto", "fixed", training=True, accelerators=0, flags=amx,
                              steps_per_execution=4)
    assert not fusion.resolve("auto", "fixed", training=True, accelerators=0, flags=amx,
                              replicas=2)
    assert fusion.resolve("on", "bucketed", training=False, accelerators=1, replicas=2)
    assert fusion.resolve("on", "fixed", training=True, accelerators=0, flags=set())
    assert not fusion.resolve("off", "fixed", training=True, accelerators=0, flags=amx)
    with pytest.raises(ValueError, match="xla_fusion must be one of"):
        fusion.resolve("yes", "fixed")
    with pytest.raises(ValueError, match="steps_per_execution=1"):
        fusion.resolve("on", "fixed", steps_per_execution=2)


def test_auto_reads_this_machines_cpu_flags():
    expected = "amx_bf16" in precision.cpu_flags()
    assert fusion.resolve("auto", "fixed", training=True, accelerators=0) is expected


def test_xla_flags_are_added_only_before_tensorflow_starts():
    environ = {"TF_XLA_FLAGS": "--tf_xla_ops_to_cluster=MUL --tf_xla_min_cluster_size=2"}
    assert not fusion.set_xla_flags(environ, modules={"tensorflow": object()})
    assert environ["TF_XLA_FLAGS"] == "--tf_xla_ops_to_cluster=MUL --tf_xla_min_cluster_size=2"
    assert fusion.set_xla_flags(environ, modules={})
    # the user's own choice of ops is kept; the missing flag is added
    assert environ["TF_XLA_FLAGS"].split() == [
        "--tf_xla_ops_to_cluster=MUL", "--tf_xla_min_cluster_size=2", "--tf_xla_cpu_global_jit"]
    empty = {}
    fusion.set_xla_flags(empty, modules={})
    assert empty["TF_XLA_FLAGS"].split() == list(fusion.XLA_FLAGS)


def _op_types(logdir, fn, *args, runs=3):
    """How many times each op type ran in `runs` calls of `fn` (after warm-up calls)."""
    counts = collections.Counter()
    for name, count in profiled_ops(logdir, fn, *args, runs=runs).items():
        counts[name.rsplit(":", 1)[1]] += count
    return counts


def _layer():
    @tf.function
    def layer(x, w):
        for _ in range(3):  # matmul, then a chain of elementwise ops
            x = tf.nn.gelu(tf.matmul(x, w) * 0.5 + 0.1, approximate=False)
        return x
    return layer


def test_fusion_clusters_elementwise_ops_and_leaves_matmuls_to_onednn(restore_fusion, tmp_path):
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(64, 128)).astype(np.float32))
    w = tf.constant(rng.normal(size=(128, 128)).astype(np.float32) / 11)

    assert not fusion.current()
    plain_result = _layer()(x, w).numpy()
    plain = _op_types(str(tmp_path / "plain"), _layer(), x, w)
    assert plain["Erfc"] + plain["Erf"] > 0 and not plain["_XlaRun"]

    layer = _layer()
    with fusion.scope(True):
        assert fusion.current()
        fused = _op_types(str(tmp_path / "fused"), layer, x, w)
        fused_result = layer(x, w).numpy()
    assert fused["_XlaRun"] > 0  # the elementwise chains ran as compiled clusters ...
    assert not fused["Erfc"] and not fused["Erf"] and not fused["Mul"]
    assert sum(n for op, n in fused.items() if "MatMul" in op) == 3 * 3  # ... matmuls did not
    np.testing.assert_allclose(fused_result, plain_result, rtol=1e-4, atol=1e-5)

    # The same function called after the block runs unclustered: the setting is read per call.
    assert not fusion.current()
    after = _op_types(str(tmp_path / "after"), layer, x, w)
    assert not after["_XlaRun"] and after["Erfc"] + after["Erf"] > 0


def test_scope_restores_the_setting_before_it(restore_fusion):
    with fusion.scope(True):
        assert fusion.current()
        with fusion.scope(False):
            assert fusion.current()  # off means "leave as it is", not "turn off"
    assert not fusion.current()
    tf.config.optimizer.set_jit("autoclustering")
    with fusion.scope(True):
        pass
    assert fusion.current()


def test_an_xla_compiled_optimizer_takes_the_same_step(restore_fusion):
    rng = np.random.default_rng(0)
    start = rng.normal(size=(16, 8)).astype(np.float32)
    grads = [tf.constant(rng.normal(size=(16, 8)).astype(np.float32)) for _ in range(3)]
    results = []
    for jit in (False, True):
        optimizer = create_optimizer(1e-2, 100, 0, jit_compile=jit)
        assert optimizer.jit_compile is jit
        kernel = tf.Variable(start, name="dense/kernel")
        for grad in grads:
            optimizer.apply_gradients([(grad, kernel)])
        results.append(kernel.numpy())
    assert np.abs(results[0] - start).max() > 1e-3  # the steps moved the weights
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)


def _fit(model_dir, fused, on_epoch_end=None, seen=None):
    """A few steps of `loop.fit` on a toy model, fused or not; returns the weights.

    `seen` (a list) gets `fusion.current()` as the training step is traced and as each epoch's
    dataset is built.
    """
    seen = [] if seen is None else seen
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="gelu"),
                              keras.layers.LayerNormalization(), keras.layers.Dropout(0.1),
                              keras.layers.Dense(2)])
    optimizer = create_optimizer(0.01, total_steps=8, warmup_steps=1, jit_compile=fused)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 16)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)

    def loss_fn(labels, logits):
        seen.append(("step", fusion.current()))  # runs as the step is traced (its first call)
        return keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)

    def dataset_fn(epoch):
        seen.append(("dataset", fusion.current()))
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(16)

    timing = loop.fit(model, optimizer, loss_fn, dataset_fn,
                      loop.FitConfig(4, 2, 16, model_dir, compute=Compute(xla_fusion=fused)),
                      on_epoch_end=on_epoch_end)
    assert timing["xla_fusion"] is fused
    return [w.numpy() for w in model.weights]


def test_a_fused_training_run_takes_the_same_steps(restore_fusion, tmp_path):
    plain = _fit(str(tmp_path / "plain"), fused=False)
    fused = _fit(str(tmp_path / "fused"), fused=True)
    for got, want in zip(fused, plain):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_fusion_is_on_only_inside_the_training_step(restore_fusion, tmp_path):
    """Datasets, evaluation (`on_epoch_end`) and what runs after `fit` are never clustered:
    XLA cannot compile tensorflow_text's ragged ops (issue 20)."""
    seen = []

    def on_epoch_end(epoch, record):
        seen.append(("evaluation", fusion.current()))
        return {}

    _fit(str(tmp_path), True, on_epoch_end, seen)
    assert set(seen) == {("dataset", False), ("step", True), ("evaluation", False)}
    assert [s for s in seen if s[0] != "step"] == [("dataset", False), ("evaluation", False)] * 2
    assert not fusion.current()


def test_fusion_needs_one_step_per_call(tmp_path):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="steps_per_execution=1"):
        loop.fit(model, create_optimizer(0.01, 4, 0), None, None, loop.FitConfig(
            2, 2, 4, str(tmp_path), steps_per_execution=2, compute=Compute(xla_fusion=True)))
