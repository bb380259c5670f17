"""Guards for the export's graph rewrites: the shapes of TensorFlow's own graphs they rely on.

`zoo.export.flat_serving`, `frozen_core` and `small_requests` read and change graphs that
TensorFlow produces (op names, what Grappler inlines, oneDNN's bf16 pass). Each test here checks
one such pattern on the real graph of an encoder zoo builds, and fails naming the pattern, the
installed TensorFlow and what relies on it, so that a TensorFlow upgrade that changes it is
caught here rather than as a slower or broken export. The small-request copy can be left out of
a bf16 export with `--noexport_small_requests` while a rewrite is being mended.
"""
import collections

import pytest
import tensorflow as tf

from zoo.compute import precision as zoo_precision
from zoo.export import frozen_core, grappler, small_requests
from zoo.export.flat_serving import flat_graph
from zoo.hub_build.build import TINY_CONFIG
from zoo.model import cores

LAYERS = TINY_CONFIG["num_hidden_layers"]
needs_rewrite = pytest.mark.skipif(
    not zoo_precision.cpu_flags() & zoo_precision.REWRITE_CPU_FLAGS,
    reason="TensorFlow's oneDNN bf16 rewrite does not run on this CPU (no avx512f)")


def _guard(condition, pattern, relies):
    assert condition, (f"TensorFlow {tf.__version__}: {pattern} no longer holds; {relies} "
                       "relies on it (mend it, or export with --noexport_small_requests)")


@pytest.fixture(scope="module")
def frozen(tiny_hub):
    """(graph_def, input names, fetches) of a tiny classifier's inference, variables frozen."""
    core = cores.classifier_core(tiny_hub + "/encoder", 3)
    specs = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in cores.INPUT_NAMES}
    _, graph_def, input_names, fetches = frozen_core.inference_graph(core, specs)
    return graph_def, input_names, fetches


def _ops(graph_def):
    return collections.Counter(node.op for node in graph_def.node)


def test_freezing_inlines_every_function_call(frozen):
    graph_def, _, _ = frozen
    calls = {op for op in _ops(graph_def) if op.endswith("PartitionedCall")}
    _guard(not calls and not graph_def.library.function,
           f"freezing a core inlines the Hub encoder's functions (left: {sorted(calls)})",
           "zoo.export.small_requests (it rewrites the nodes of one flat graph)")


def test_attention_is_batched_matmuls_and_a_softmax(frozen):
    ops = _ops(frozen[0])
    _guard(ops["BatchMatMulV2"] == 2 * LAYERS and ops["Softmax"] == LAYERS,
           f"each attention layer is 2 BatchMatMulV2 and 1 Softmax (found {ops['BatchMatMulV2']} "
           f"and {ops['Softmax']} for {LAYERS} layers)",
           "small_requests.own_attention_kernels")
    rewritten = _ops(small_requests.own_attention_kernels(tf.compat.v1.GraphDef.FromString(
        frozen[0].SerializeToString())))
    _guard(rewritten["BatchMatMulV3"] == 2 * LAYERS and not rewritten["Softmax"],
           "BatchMatMulV3 takes BatchMatMulV2's inputs and types",
           "small_requests.own_attention_kernels")


def test_every_feed_forward_block_is_found(frozen, monkeypatch):
    graph_def = tf.compat.v1.GraphDef.FromString(frozen[0].SerializeToString())
    before = _ops(graph_def)["MatMul"]
    monkeypatch.setattr(small_requests, "ONE_THREAD_BYTES", 64)  # split even the tiny blocks
    after = _ops(small_requests.split_feed_forward(graph_def))["MatMul"]
    _guard(after > before and len(grappler.upstream(graph_def, frozen[2])) > 0,
           f"a feed-forward block is MatMul -> bias/GELU ops -> MatMul with constant weights "
           f"(no block of the {before} MatMuls was found)", "small_requests.split_feed_forward")


def test_the_size_switch_runs_one_copy(frozen):
    graph_def, input_names, fetches = frozen
    switched, merged, _, _ = small_requests.size_switched(graph_def, input_names, fetches)
    ops = _ops(switched)
    _guard(ops["Switch"] >= len(input_names) and ops["Merge"] == len(merged),
           "tf.raw_ops.Switch/Merge route a call to one of the two copies",
           "small_requests.size_switched")


def test_the_serving_function_flattens(tiny_hub):
    core = cores.classifier_core(tiny_hub + "/encoder", 3)
    packer = cores.TextPacker(tiny_hub + "/preprocessor", 16)
    serve = tf.function(lambda text: core(packer(text), training=False),
                        input_signature=[tf.TensorSpec([None], tf.string)])
    concrete = serve.get_concrete_function()
    graph_def = flat_graph(concrete, [t.name.split(":")[0] for t in concrete.outputs])
    calls = {op for op in _ops(graph_def) if op.endswith("PartitionedCall")}
    _guard(not calls, f"Grappler's aggressive function inlining leaves no call ({sorted(calls)})",
           "zoo.export.flat_serving")


@needs_rewrite
def test_the_bf16_pass_turns_every_matmul_bf16(frozen):
    graph_def, _, fetches = frozen
    rewritten = frozen_core.bf16_graph(graph_def, fetches)
    kinds = collections.Counter((node.op, tf.dtypes.as_dtype(node.attr["T"].type).name)
                                for node in rewritten.node if node.op in grappler.MATMULS)
    _guard(kinds and all(dtype == "bfloat16" for _, dtype in kinds),
           f"oneDNN's bf16 pass runs every matmul in bfloat16 (found {dict(kinds)})",
           "zoo.export.frozen_core.bf16_graph")


@needs_rewrite
def test_a_bf16_core_without_the_small_request_copy(tiny_hub):
    core = cores.classifier_core(tiny_hub + "/encoder", 3)
    one = frozen_core.serving_core(core, "bf16", small_requests=False)
    two = frozen_core.serving_core(core, "bf16")
    names = lambda frozen: {node.name for node in frozen._graph_def.node}  # noqa: E731
    assert "is_small_request" in names(two) and "is_small_request" not in names(one)
    assert not one.small_requests and two.small_requests
