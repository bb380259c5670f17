"""zoo.precision: choosing bf16 or fp32, and the bf16 graph rewrite really acting on matmuls."""
import numpy as np
import pytest
import tensorflow as tf

from zoo import precision


@pytest.fixture
def restore_precision():
    before = precision.current()
    yield
    precision.apply(before)


def test_auto_picks_bf16_only_on_an_amx_cpu_without_accelerators():
    assert precision.resolve("auto", flags={"avx512f", "amx_bf16"}, accelerators=0) == "bf16"
    assert precision.resolve("auto", flags={"avx512f", "avx512_bf16"}, accelerators=0) == "fp32"
    assert precision.resolve("auto", flags={"amx_bf16"}, accelerators=1) == "fp32"
    assert precision.resolve("fp32", flags={"amx_bf16"}, accelerators=0) == "fp32"
    assert precision.resolve("bf16", flags=set(), accelerators=2) == "bf16"
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
    training = precision.resolve("auto")  # bf16 on an AMX CPU, else fp32
    assert precision.apply("auto", training=True) == training
    with precision.for_evaluation():
        assert precision.current() == "fp32"
    assert precision.current() == training
    assert precision.apply("auto", training=False) == "fp32"
    assert precision.apply("bf16", training=False) == "bf16"  # asked for explicitly
    with precision.for_evaluation():
        assert precision.current() == "bf16"
