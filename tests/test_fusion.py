"""zoo.fusion: when XLA fusion is on, and that it really clusters elementwise ops (not matmuls)."""
import collections
import glob

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras
from tensorflow.tsl.profiler.protobuf import xplane_pb2

from zoo import fusion, train


@pytest.fixture
def restore_fusion():
    before = fusion.current()
    yield
    fusion.apply("on" if before else "off", "fixed")


def test_auto_fuses_only_fixed_shape_training_on_a_cpu():
    assert fusion.available()  # conftest imports zoo before TensorFlow
    assert fusion.resolve("auto", "fixed", training=True, accelerators=0)
    assert not fusion.resolve("auto", "bucketed", training=True, accelerators=0)
    assert not fusion.resolve("auto", "dynamic", training=True, accelerators=0)
    assert not fusion.resolve("auto", "fixed", training=False, accelerators=0)
    assert not fusion.resolve("auto", "fixed", training=True, accelerators=1)
    assert not fusion.resolve("auto", "fixed", training=True, accelerators=0,
                              steps_per_execution=4)
    assert not fusion.resolve("auto", "fixed", training=True, accelerators=0, replicas=2)
    assert fusion.resolve("on", "bucketed", training=False, accelerators=1, replicas=2)
    assert not fusion.resolve("off", "fixed", training=True, accelerators=0)
    with pytest.raises(ValueError, match="xla_fusion must be one of"):
        fusion.resolve("yes", "fixed")
    with pytest.raises(ValueError, match="steps_per_execution=1"):
        fusion.resolve("on", "fixed", steps_per_execution=2)


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
    for _ in range(3):  # XLA compiles a cluster lazily, after its first runs
        fn(*args)
    tf.profiler.experimental.start(logdir)
    for _ in range(runs):
        fn(*args).numpy()
    tf.profiler.experimental.stop()
    space = xplane_pb2.XSpace()
    with open(glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)[0], "rb") as f:
        space.ParseFromString(f.read())
    counts = collections.Counter()
    for plane in space.planes:
        names = {k: v.name for k, v in plane.event_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                name = names.get(event.metadata_id, "")
                if ":" in name:
                    counts[name.rsplit(":", 1)[1]] += 1
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

    assert not fusion.apply("off", "fixed")
    plain_result = _layer()(x, w).numpy()
    plain = _op_types(str(tmp_path / "plain"), _layer(), x, w)
    assert plain["Erfc"] + plain["Erf"] > 0 and not plain["_XlaRun"]

    assert fusion.apply("on", "fixed") and fusion.current()
    layer = _layer()
    fused = _op_types(str(tmp_path / "fused"), layer, x, w)
    assert fused["_XlaRun"] > 0  # the elementwise chains ran as compiled clusters ...
    assert not fused["Erfc"] and not fused["Erf"] and not fused["Mul"]
    assert sum(n for op, n in fused.items() if "MatMul" in op) == 3 * 3  # ... matmuls did not
    np.testing.assert_allclose(layer(x, w).numpy(), plain_result, rtol=1e-4, atol=1e-5)


def test_evaluation_inside_a_run_is_not_fused_under_auto(restore_fusion):
    assert fusion.apply("auto", "fixed", accelerators=0)
    with fusion.for_evaluation():
        assert not fusion.current()
    assert fusion.current()
    assert fusion.apply("on", "bucketed")
    with fusion.for_evaluation():
        assert fusion.current()  # asked for explicitly


def test_an_xla_compiled_optimizer_takes_the_same_step(restore_fusion):
    rng = np.random.default_rng(0)
    start = rng.normal(size=(16, 8)).astype(np.float32)
    grads = [tf.constant(rng.normal(size=(16, 8)).astype(np.float32)) for _ in range(3)]
    results = []
    for jit in (False, True):
        optimizer = train.create_optimizer(1e-2, 100, 0, jit_compile=jit)
        assert optimizer.jit_compile is jit
        kernel = tf.Variable(start, name="dense/kernel")
        for grad in grads:
            optimizer.apply_gradients([(grad, kernel)])
        results.append(kernel.numpy())
    assert np.abs(results[0] - start).max() > 1e-3  # the steps moved the weights
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)


def _fit(model_dir, fused):
    """A few steps of `train.fit` on a toy model, fused or not; returns the weights."""
    assert fusion.apply("on" if fused else "off", "fixed") is fused
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="gelu"),
                              keras.layers.LayerNormalization(), keras.layers.Dropout(0.1),
                              keras.layers.Dense(2)])
    optimizer = train.create_optimizer(0.01, total_steps=8, warmup_steps=1, jit_compile=fused)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 16)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)

    def loss_fn(labels, logits):
        return keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)

    timing = train.fit(model, optimizer, loss_fn,
                       lambda epoch: tf.data.Dataset.from_tensor_slices((x, y)).batch(16), 4, 2,
                       16, model_dir)
    assert timing["xla_fusion"] is fused
    return [w.numpy() for w in model.weights]


def test_a_fused_training_run_takes_the_same_steps(restore_fusion, tmp_path):
    plain = _fit(str(tmp_path / "plain"), fused=False)
    fused = _fit(str(tmp_path / "fused"), fused=True)
    for got, want in zip(fused, plain):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
