"""zoo.compute.precision: choosing bf16 or fp32, and the bf16 graph rewrite really acting on matmuls."""
import re

import numpy as np
import pytest
import tensorflow as tf

from tests.helpers import profiled_ops
from zoo.compute import precision
from zoo.model import hub

BF16_FLAGS = {"amx_bf16", "avx512_bf16"}
needs_bf16 = pytest.mark.skipif(
    not precision.cpu_flags() & BF16_FLAGS,
    reason="this CPU has no bf16 instructions (neither amx_bf16 nor avx512_bf16)")
needs_rewrite = pytest.mark.skipif(
    not precision.cpu_flags() & precision.REWRITE_CPU_FLAGS,
    reason="TensorFlow's oneDNN bf16 rewrite does not run on this CPU (no avx512f)")


def test_a_bf16_export_is_refused_up_front_where_the_rewrite_does_not_run():
    precision.check_export_cpu("fp32", flags=set())
    precision.check_export_cpu("bf16", flags={"avx512f"})
    precision.check_export_cpu("bf16", flags={"avx_ne_convert"})
    with pytest.raises(ValueError, match="export_precision=bf16 needs a CPU .* avx512f"):
        precision.check_export_cpu("bf16", flags={"avx2", "fma"})


@pytest.fixture
def restore_precision():
    before = precision.current()
    yield
    precision.apply(before)


def test_auto_picks_bf16_only_on_a_cpu_with_bf16_matmuls_and_no_accelerator():
    assert precision.resolve("auto", flags={"avx512f", "amx_bf16"}, accelerators=0) == "bf16"
    assert precision.resolve("auto", flags={"avx512f", "avx512_bf16"}, accelerators=0) == "bf16"
    assert precision.resolve("auto", flags={"avx512f", "avx2"}, accelerators=0) == "fp32"
    assert precision.resolve("auto", flags={"avx512_bf16"}, accelerators=1) == "fp32"
    assert precision.resolve("auto", flags={"amx_bf16"}, accelerators=1) == "fp32"
    assert precision.resolve("fp32", flags={"amx_bf16"}, accelerators=0) == "fp32"
    assert precision.resolve("bf16", flags=set(), accelerators=2) == "bf16"
    assert precision.resolve("bf16", flags={"avx512f"}, accelerators=0) == "bf16"
    with pytest.raises(ValueError, match="precision=bf16 needs a CPU .* avx512f"):
        precision.resolve("bf16", flags={"avx2", "fma"}, accelerators=0)  # AMD Zen 3, say
    with pytest.raises(ValueError, match="precision must be one of"):
        precision.resolve("fp16")


def test_cpu_flags_reads_the_flags_line(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse avx512f amx_bf16\nbugs\t\t: none\n")
    assert precision.cpu_flags(str(info)) == {"fpu", "sse", "avx512f", "amx_bf16"}
    assert precision.cpu_flags(str(tmp_path / "missing")) == set()


def _matmul(a, b):
    @tf.function
    def product(x, y):
        return tf.matmul(x, y)
    return product(a, b).numpy()


@needs_rewrite
def test_bf16_rewrites_matmuls_of_graphs_built_after_it(restore_precision):
    rng = np.random.default_rng(0)
    a = tf.constant(rng.normal(size=(64, 256)).astype(np.float32))
    b = tf.constant(rng.normal(size=(256, 64)).astype(np.float32))
    exact = a.numpy().astype(np.float64) @ b.numpy().astype(np.float64)

    assert precision.apply("fp32") == "fp32" and precision.current() == "fp32"
    fp32 = _matmul(a, b)
    assert precision.apply("bf16") == "bf16" and precision.current() == "bf16"
    bf16 = _matmul(a, b)

    assert bf16.dtype == np.float32  # inputs and outputs stay fp32
    fp32_error = np.abs(fp32 - exact).max()
    bf16_error = np.abs(bf16 - exact).max()
    # bf16 keeps 8 mantissa bits: sums of 256 products of N(0,1) values are off by ~0.1, while
    # fp32 is off by ~1e-5. Both stay close to the exact product.
    assert fp32_error < 1e-3
    assert 1e-2 < bf16_error < 1.0


def test_auto_keeps_evaluation_and_prediction_in_fp32(restore_precision):
    assert precision.for_inference("auto") == "fp32"
    assert precision.for_inference("bf16") == "bf16"  # asked for explicitly
    assert precision.for_inference("fp32") == "fp32"
    with precision.scope("bf16"):
        assert precision.current() == "bf16"
        with precision.scope("fp32"):
            assert precision.current() == "fp32"
        assert precision.current() == "bf16"  # the setting before the block comes back
    with pytest.raises(ValueError, match="'bf16' or 'fp32'"):
        precision.apply("auto")


@needs_bf16
def test_bf16_reaches_inside_a_hub_encoder(restore_precision, tiny_hub, tmp_path):
    """A Keras mixed-precision policy stops at a Hub encoder (tensorflow/hub#466); the graph
    rewrite does not: every dense layer's weight inside the encoder is cast to bf16."""
    encoder = hub.encoder_layer(tiny_hub + "/encoder")
    ids = tf.constant(np.random.default_rng(0).integers(1000, 5000, size=(8, 64)), tf.int32)
    inputs = dict(input_word_ids=ids, input_mask=tf.ones_like(ids), input_type_ids=tf.zeros_like(ids))

    def forward():
        return tf.function(lambda x: encoder(x)["sequence_output"])

    runs = {}
    for chosen in ("fp32", "bf16"):
        precision.apply(chosen)
        fn = forward()
        runs[chosen] = (fn(inputs).numpy(), profiled_ops(str(tmp_path / chosen), fn, inputs))
    (fp32, fp32_ops), (bf16, bf16_ops) = runs["fp32"], runs["bf16"]
    dense = {n for n in fp32_ops if "bert_encoder" in n and n.endswith(":_MklNativeFusedMatMul")}
    assert len(dense) == 2 * 6  # 2 layers: query, key, value, attention output, two FFN
    cast = re.compile(r"bert_encoder/.*/MatMul/ReadVariableOp-0-CastToBf16-0-AutoMixedPrecision:")
    assert not [n for n in fp32_ops if "CastToBf16" in n]
    assert len({n for n in bf16_ops if cast.search(n)}) == len(dense)
    assert bf16.dtype == np.float32  # outputs stay fp32, computed with bf16 matmuls:
    assert 1e-3 < np.abs(bf16 - fp32).max() < 0.5
