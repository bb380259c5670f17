"""zoo.export.small_requests: the copy of a frozen graph that calls of a few tokens run."""
import copy

import numpy as np
import pytest
import tensorflow as tf

from zoo.compute import precision as zoo_precision
from zoo.data.pipeline import trim_to_longest
from zoo.export import frozen_core, grappler, small_requests
from zoo.model import cores


def _run(graph_def, feeds, output):
    """`output` of `graph_def` with its placeholders fed `feeds` ({tensor name: value})."""
    return tf.function(lambda feeds: tf.graph_util.import_graph_def(
        graph_def, input_map=feeds, return_elements=[output])[0])(feeds).numpy()


def _ops(graph_def, output):
    """Op types of the nodes that `output` needs, with their counts."""
    needed = grappler.upstream(graph_def, [output])
    ops = [node.op for node in graph_def.node if node.name in needed]
    return {op: ops.count(op) for op in ops}


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
def test_own_attention_kernels_compute_the_same_attention(dtype):
    graph = tf.Graph()
    with graph.as_default():
        q, k, v = (tf.compat.v1.placeholder(dtype, [1, 2, None, 4], name=name)
                   for name in "qkv")
        probs = tf.nn.softmax(tf.matmul(q, k, transpose_b=True) * 0.5 - 3.0)
        tf.identity(tf.matmul(probs, v), name="context")
    graph_def = graph.as_graph_def()
    rewritten = small_requests.own_attention_kernels(copy.deepcopy(graph_def))
    assert _ops(graph_def, "context")["BatchMatMulV2"] == 2
    ops = _ops(rewritten, "context")
    assert ops["BatchMatMulV3"] == 2 and not {"BatchMatMulV2", "Softmax"} & set(ops)
    rng = np.random.default_rng(0)
    feeds = {f"{name}:0": tf.constant(rng.normal(size=(1, 2, 5, 4)) * 3, dtype)
             for name in "qkv"}
    expected = _run(graph_def, feeds, "context:0").astype(np.float32)
    got = _run(rewritten, feeds, "context:0")
    assert got.dtype == dtype.as_numpy_dtype
    # bf16: a few units of its last place (8 bits of mantissa) on values up to about 10
    np.testing.assert_allclose(got.astype(np.float32), expected,
                               atol=1e-5 if dtype == tf.float32 else 0.15)


def _feed_forward_graph(extra_reader=False):
    """x [tokens, 8] -> dense to 32 with the exact GELU -> dense to 8 (-> and a second reader
    of the first dense layer's output, with `extra_reader`)."""
    rng = np.random.default_rng(1)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 8], name="x")
        inner = tf.nn.bias_add(tf.matmul(x, tf.constant(rng.normal(size=(8, 32)), tf.float32)),
                               tf.constant(rng.normal(size=32), tf.float32))
        inner = 0.5 * inner * (1.0 + tf.math.erf(inner * 0.7071))
        out = tf.nn.bias_add(tf.matmul(inner, tf.constant(rng.normal(size=(32, 8)), tf.float32)),
                             tf.constant(rng.normal(size=8), tf.float32))
        if extra_reader:
            out += tf.reduce_sum(inner)
        tf.identity(out, name="out")
    return graph.as_graph_def()


def test_split_feed_forward_sums_slices_that_fit_the_one_thread_size(monkeypatch):
    graph_def = _feed_forward_graph()
    # fp32, 4 tokens: the whole block's first inner product takes 4 x (4 x 32 + 8 x (4 + 32))
    # = 1664 bytes, in 2 slices 896, in 4 slices 512 (the second's the same)
    monkeypatch.setattr(small_requests, "ONE_THREAD_BYTES", 600)
    split = small_requests.split_feed_forward(copy.deepcopy(graph_def), max_tokens=4)
    assert _ops(graph_def, "out")["MatMul"] == 2
    ops = _ops(split, "out")
    assert ops["MatMul"] == 2 * 4 and ops["Erf"] == 4 and ops["AddN"] == 1
    feeds = {"x:0": tf.constant(np.random.default_rng(2).normal(size=(3, 8)), tf.float32)}
    np.testing.assert_allclose(_run(split, feeds, "out:0"), _run(graph_def, feeds, "out:0"),
                               rtol=1e-5, atol=1e-5)
    monkeypatch.setattr(small_requests, "ONE_THREAD_BYTES", 1000)
    split = small_requests.split_feed_forward(copy.deepcopy(graph_def), max_tokens=4)
    assert _ops(split, "out")["MatMul"] == 2 * 2


def test_split_feed_forward_leaves_blocks_that_fit_or_are_read_elsewhere(monkeypatch):
    graph_def = _feed_forward_graph()
    unchanged = small_requests.split_feed_forward(copy.deepcopy(graph_def), max_tokens=4)
    assert _ops(unchanged, "out") == _ops(graph_def, "out")  # 1664 bytes fit in 1 MiB
    monkeypatch.setattr(small_requests, "ONE_THREAD_BYTES", 600)
    read_elsewhere = _feed_forward_graph(extra_reader=True)
    split = small_requests.split_feed_forward(copy.deepcopy(read_elsewhere), max_tokens=4)
    assert _ops(split, "out") == _ops(read_elsewhere, "out")


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_frozen_core_answers_through_sliced_feed_forward_blocks(
        tiny_hub, monkeypatch, precision):
    if precision == "bf16" and not zoo_precision.cpu_flags() & zoo_precision.REWRITE_CPU_FLAGS:
        pytest.skip("TensorFlow's oneDNN bf16 rewrite does not run on this CPU (no avx512f)")
    # at 64 tokens the tiny encoder's feed-forward blocks (32 -> 64 -> 32) take 4 slices
    itemsize = 4 if precision == "fp32" else 2
    monkeypatch.setattr(small_requests, "ONE_THREAD_BYTES", 4000 * itemsize)
    tf.keras.utils.set_random_seed(0)
    core = cores.classifier_core(tiny_hub + "/encoder", num_classes=3, pooling="cls")
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=32)
    frozen = frozen_core.FrozenCore(core, precision)
    graph_def = frozen._graph_def
    matmuls = {part: sum(1 for node in graph_def.node if node.op == "MatMul"
                         and node.name.startswith(part + "/") and "/transformer_" in node.name)
               for part in ("large", "small_request")}
    # 2 blocks of 6 matmuls, each block's 2 feed-forward ones in 4 slices, in both copies
    assert matmuls == {"large": 12 + 2 * 2 * 3, "small_request": 12 + 2 * 2 * 3}
    # which share their weights: the small-request copy has no matrix of its own
    assert not [node.name for node in graph_def.node if node.op == "Const"
                and node.name.startswith("small_request/")
                and len(node.attr["value"].tensor.tensor_shape.dim) == 2]
    large = packer(tf.constant(["a fine film", "a dull, long film that goes on", "yes"]))
    small = trim_to_longest(packer(tf.constant(["a fine film", "yes"])))
    for inputs in (large, small):  # 3 x 32 ids, and 2 x 5: each copy answers as the core does
        expected = core(inputs, training=False).numpy()
        tolerance = 2e-4 if precision == "fp32" else 0.03 * max(1.0, np.abs(expected).max())
        np.testing.assert_allclose(frozen(inputs).numpy(), expected, atol=tolerance)
