"""zoo.export.frozen_core: a core frozen for serving, in fp32 or rewritten to bf16 (--export_precision)."""
import numpy as np
import pytest
import tensorflow as tf

from zoo.base.errors import UsageError
from zoo.compute import precision
from zoo.data.pipeline import trim_to_longest
from zoo.export import frozen_core, python_load, savedmodel, small_requests
from zoo.model import cores

needs_rewrite = pytest.mark.skipif(
    not precision.cpu_flags() & precision.REWRITE_CPU_FLAGS,
    reason="TensorFlow's oneDNN bf16 rewrite does not run on this CPU (no avx512f)")


def _inputs(packer, texts):
    return packer(tf.constant(texts))


@pytest.fixture(scope="module")
def classifier(tiny_hub):
    tf.keras.utils.set_random_seed(0)
    core = cores.classifier_core(tiny_hub + "/encoder", num_classes=3, pooling="mean")
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=32)
    return core, packer


TEXTS = ["a fine film", "a dull, long film that goes on", "yes"]


def _dtypes(frozen, ops):
    graph_def = frozen._graph_def
    return {dtype for (op, dtype) in frozen_core.op_dtypes(graph_def) if op in ops}


def _matmul_dtypes(frozen):
    return _dtypes(frozen, ("MatMul", "BatchMatMulV2"))


def test_fp32_frozen_core_computes_what_the_core_does(classifier):
    core, packer = classifier
    frozen = frozen_core.FrozenCore(core, "fp32")
    inputs = _inputs(packer, TEXTS)
    # to 1e-5 with TF_ENABLE_ONEDNN_OPTS=0; oneDNN fuses the inlined graph's ops otherwise
    np.testing.assert_allclose(frozen(inputs).numpy(), core(inputs, training=False).numpy(),
                               atol=2e-4)
    assert _matmul_dtypes(frozen) == {"float32"}
    # every transpose moves the bits as integers (see integer_transposes)
    assert _dtypes(frozen, ("Transpose",)) == {"int32"}
    # the embedding tables feed the frozen graph from (non-trainable) variables, and so do the
    # small-request copy's vectors (layer norm scales and offsets, biases)
    assert not frozen.trainable_variables
    assert sorted(v.shape.as_list() for v in frozen.variables if v.shape.rank == 2) == [
        [512, 32], [30522, 32]]
    assert {v.shape.rank for v in frozen.variables} == {1, 2}


def test_an_fp32_export_is_the_core_unless_it_asks_for_the_small_request_copy(classifier):
    core, _ = classifier
    assert frozen_core.serving_core(core, "fp32") is core
    assert frozen_core.serving_core(core, "fp32", small_requests=False) is core
    frozen = frozen_core.serving_core(core, "fp32", small_requests=True)
    assert isinstance(frozen, frozen_core.FrozenCore) and frozen.small_requests
    assert frozen.precision == "fp32" and _matmul_dtypes(frozen) == {"float32"}
    assert "is_small_request" in {node.name for node in frozen._graph_def.node}
    both = frozen_core.serving_core({"a": core, "b": core}, "fp32", small_requests=True)
    assert all(isinstance(one, frozen_core.FrozenCore) for one in both.values())


@pytest.mark.parametrize("precision", [
    "fp32", pytest.param("bf16", marks=needs_rewrite)])
def test_a_small_request_takes_the_small_request_copy(classifier, precision):
    core, packer = classifier
    frozen = frozen_core.FrozenCore(core, precision)
    small = trim_to_longest(_inputs(packer, ["yes"]))  # 1 x 3 ids
    large = _inputs(packer, TEXTS)  # 3 x 32 ids, over SMALL_REQUEST_TOKENS
    assert 3 * 32 > small_requests.SMALL_REQUEST_TOKENS >= 3
    tolerance = 2e-4 if precision == "fp32" else 0.03
    for inputs in (small, large):  # each copy computes what the core does
        expected = core(inputs, training=False).numpy()
        np.testing.assert_allclose(frozen(inputs).numpy(), expected,
                                   atol=tolerance * max(1.0, np.abs(expected).max()))
    # the small-request copy's attention runs on TensorFlow's own kernels, the other's on oneDNN's
    ops = {(node.name.split("/")[0], node.op)
           for node in frozen._graph_def.node}
    assert {("large", "BatchMatMulV2"), ("large", "Softmax"),
            ("small_request", "BatchMatMulV3"), ("small_request", "RealDiv")} <= ops
    assert not {("small_request", "BatchMatMulV2"), ("small_request", "Softmax")} & ops
    large_before = frozen(large).numpy()
    small_before = frozen(small).numpy()
    for vector in [v for v in frozen.variables if v.shape.rank == 1]:
        vector.assign(tf.zeros_like(vector))  # only the small-request copy reads these
    np.testing.assert_array_equal(frozen(large).numpy(), large_before)
    assert not np.allclose(frozen(small).numpy(), small_before)


@needs_rewrite
def test_bf16_frozen_core_runs_its_matmuls_in_bf16_and_stays_close(classifier):
    core, packer = classifier
    frozen = frozen_core.FrozenCore(core, "bf16")
    assert _matmul_dtypes(frozen) == {"bfloat16"}
    assert _dtypes(frozen, ("Transpose",)) == {"int16"}
    inputs = _inputs(packer, TEXTS)
    expected = core(inputs, training=False).numpy()
    got = frozen(inputs).numpy()
    assert got.dtype == np.float32  # outputs stay fp32 for the serving code around them
    # bf16 keeps 8 bits of mantissa: logits agree to a few hundredths of their scale
    np.testing.assert_allclose(got, expected, atol=0.03 * np.abs(expected).max() + 1e-3)
    assert not np.allclose(got, expected, atol=1e-6)  # and the arithmetic did change


@needs_rewrite
def test_a_bf16_export_stores_its_matmul_weights_in_bf16(classifier, tmp_path):
    core, packer = classifier
    frozen = frozen_core.serving_core(core, "bf16")
    export_dir = savedmodel.export_classifier(str(tmp_path / "bf16"), frozen, packer,
                                          ["neg", "neu", "pos"])
    fp32_dir = savedmodel.export_classifier(str(tmp_path / "fp32"), core, packer,
                                        ["neg", "neu", "pos"])
    loaded = tf.saved_model.load(export_dir)
    served = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
    reference = tf.saved_model.load(fp32_dir).signatures["serving_default"](
        text=tf.constant(TEXTS))
    np.testing.assert_allclose(served["probabilities"].numpy(),
                               reference["probabilities"].numpy(), atol=0.02)
    # the weights its matmuls read are bf16 constants of the graph; the embedding tables
    # (fp32: the bf16 pass leaves gathers alone) are variables of the checkpoint, and so are
    # the small-request copy's vectors
    bf16_weights = [node for node in frozen._graph_def.node
                    if node.op == "Const"
                    and node.attr["dtype"].type == tf.bfloat16.as_datatype_enum]
    assert len(bf16_weights) >= 4 * 2  # 4 dense layers a block, 2 blocks
    # (what zoo.serving reads to keep Grappler's passes for a bf16 export's one-input calls)
    assert python_load.runs_bfloat16(python_load.read(export_dir))
    assert not python_load.runs_bfloat16(python_load.read(fp32_dir))
    tables = [tf.train.load_variable(f"{export_dir}/variables/variables", name)
              for name, _ in tf.train.list_variables(f"{export_dir}/variables/variables")
              if name.startswith("tasks/0/resources/")]
    assert sorted(t.shape for t in tables if len(t.shape) == 2) == [(512, 32), (30522, 32)]
    assert [x.decode() for x in served["label"].numpy()] == [
        ["neg", "neu", "pos"][i] for i in served["label_id"].numpy()]


@pytest.mark.parametrize("precision", [
    "fp32", pytest.param("bf16", marks=needs_rewrite)])
def test_span_cores_keep_their_dict_of_outputs(tiny_hub, precision):
    core = cores.span_core(tiny_hub + "/encoder")
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=24)
    inputs = packer(tf.constant(["who went?", "where?"]),
                    tf.constant(["ann went home early", "to the sea"]))
    # int64 ids (as some windowing gives them) are taken as the int32 the core traced with
    got = frozen_core.FrozenCore(core, precision)(
        {k: tf.cast(v, tf.int64) for k, v in inputs.items()})
    expected = core(inputs, training=False)
    assert sorted(got) == sorted(expected) == ["end_logits", "start_logits"]
    for key in expected:
        scale = np.abs(expected[key].numpy()).max()
        np.testing.assert_allclose(got[key].numpy(), expected[key].numpy(),
                                   atol=2e-4 if precision == "fp32" else 0.03 * scale + 1e-3)


def test_fp32_serving_core_is_the_core_itself_and_a_bad_precision_is_refused(classifier):
    core, _ = classifier
    assert frozen_core.serving_core(core, "fp32") is core
    assert frozen_core.serving_core({"a": core}, "fp32") == {"a": core}
    with pytest.raises(UsageError, match="export precision must be one of"):
        frozen_core.FrozenCore(core, "fp16")


@needs_rewrite
def test_a_multi_task_core_is_frozen_task_by_task(classifier):
    core, packer = classifier
    frozen = frozen_core.serving_core({"a": core, "b": core}, "bf16")
    assert sorted(frozen) == ["a", "b"]
    inputs = _inputs(packer, TEXTS)
    for one in frozen.values():
        assert isinstance(one, frozen_core.FrozenCore) and one.precision == "bf16"
        np.testing.assert_allclose(one(inputs).numpy(), frozen["a"](inputs).numpy())
