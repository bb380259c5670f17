"""A core model frozen for serving, optionally rewritten to run in bfloat16 (`--export_precision`).

TF Serving runs an export as it was saved: the bf16 graph rewrite that `zoo.compute.precision` turns
on in a training process does not happen there. `FrozenCore` does that rewrite once, at export time:
the core's inference graph (Hub encoder included) with its variables made constants, then
TensorFlow's graph optimizer (Grappler) with its oneDNN bf16 pass, which runs the matmuls and the
ops around them in bfloat16 and (through constant folding) turns their weights into bf16 constants,
so no cast of a weight is left for the serving call. The embedding tables, which no matmul reads, go
back into variables that feed the graph (`weights_as_inputs`): the export's checkpoint holds them,
and the graph a serving process loads stays smaller. The inputs (packed int32 ids) and outputs (fp32
logits) do not change, so the serving modules of `zoo.export.savedmodel` take it where they took the
core.

A request of a few tokens takes a second copy of the computation (`zoo.export.small_requests`), made
for calls where a fixed cost per op, not arithmetic, decides the time; the two copies share
every matmul weight. For a fixed cost of the same kind (a oneDNN reorder) every transpose of
the graph is done on the bits as integers (`zoo.export.grappler.integer_transposes`, as in every
export's flat graph).

The export is fast on a CPU with native bf16 (AMX-BF16 or AVX512_BF16); elsewhere oneDNN would
emulate bf16 (not measured): fp32 stays the default. An fp32 export is the core itself unless it
asks for the small-request copy (`serving_core`): then it is a `FrozenCore` in fp32.
"""
import collections
import copy

import tensorflow as tf
# What TensorFlow's own converters (TFLite, TF-TRT) use to freeze a function; none of it has a
# public `tf.` name.
from tensorflow.python.framework import convert_to_constants, tensor_util

from zoo.base.errors import UsageError
from zoo.compute import precision as zoo_precision
from zoo.export import grappler
from zoo.export.small_requests import size_switched
from zoo.model.cores import INPUT_NAMES


def serving_core(core, precision, small_requests=None):
    """What an export of `precision` runs: for fp32, `core` itself (its variables are saved),
    or with `small_requests` a fp32 `FrozenCore` with the small-request copy; for bf16 a bf16
    `FrozenCore` (with the copy unless `small_requests` is False). One per task of a
    {task: core} dict (each then stores the encoder's weights of its own).

    `small_requests` unset (None) is on for bf16 and off for fp32: a frozen fp32 export answers
    one text faster where TensorFlow's oneDNN rewrites run (TF_ENABLE_ONEDNN_OPTS=1, which
    `import zoo` sets), but it takes longer to load and to answer its first call (BENCHMARKS.md,
    inference), so a plain fp32 export stays the default."""
    if small_requests is None:
        small_requests = precision != "fp32"
    if precision == "fp32" and not small_requests:
        return core
    if isinstance(core, dict):
        return {name: FrozenCore(one, precision, small_requests) for name, one in core.items()}
    return FrozenCore(core, precision, small_requests)


def inference_graph(core, specs):
    """(traced function, graph_def, input names, fetches): the core's inference on inputs of
    `specs` as one graph whose variables are constants (its placeholders' names, and its output
    tensors' names)."""
    traced = tf.function(lambda inputs: core(inputs, training=False)).get_concrete_function(specs)
    frozen = convert_to_constants.convert_variables_to_constants_v2(traced)
    return (traced, frozen.graph.as_graph_def(), [t.name.split(":")[0] for t in frozen.inputs],
            [t.name for t in frozen.outputs])


def bf16_graph(graph_def, fetches):
    """`graph_def` (constants, no variables) after Grappler's oneDNN bf16 pass and constant
    folding; `fetches` are the output tensor names to keep. Layout and fusion rewrites are
    left to the process that runs the graph (they depend on its CPU)."""
    return grappler.optimize(graph_def, fetches,
                             auto_mixed_precision_onednn_bfloat16=grappler.RewriterConfig.ON,
                             remapping=grappler.RewriterConfig.OFF,
                             layout_optimizer=grappler.RewriterConfig.OFF)


def weights_as_inputs(graph_def, min_size=4096):
    """(graph_def with each constant of `min_size` elements or more that no matmul reads made a
    placeholder, the names of those placeholders, their values).

    That is the embedding tables: fed from variables, they are saved in the export's checkpoint, and
    the graph that a serving process parses and optimizes when it loads the export is a third of the
    size (MiniLM), which shortens the time to a first answer. The rest stay constants: oneDNN
    converts a constant matmul weight to its blocked layout once and caches it (a weight fed as an
    input is converted on every call), and fuses layer normalization only when its scale and offset
    are constants; in a batched bf16 call either costs more than the load time gained (for a small
    request, see `zoo.export.small_requests`).
    """
    graph_def = copy.deepcopy(graph_def)
    matmul_inputs = grappler.matmul_inputs(graph_def)
    names, values = [], []
    for node in graph_def.node:
        if node.op != "Const" or node.name in matmul_inputs:
            continue
        value = tensor_util.MakeNdarray(node.attr["value"].tensor)
        if value.size < min_size:
            continue
        grappler.make_placeholder(node, value)
        names.append(node.name)
        values.append(value)
    return graph_def, names, values


def op_dtypes(graph_def):
    """{(op, dtype name): count} of the graph's nodes that have a type attribute `T`."""
    return collections.Counter((node.op, tf.dtypes.as_dtype(node.attr["T"].type).name)
                               for node in graph_def.node if "T" in node.attr)


class FrozenCore(tf.Module):
    """A core model's inference (`core(inputs, training=False)`) as one frozen graph.

    Args:
        core: a Keras core of `zoo.model.cores` (packed int32 inputs -> logits, or a dict of them).
        precision: "fp32" (the core's own arithmetic) or "bf16" (see the module docstring).
            bf16 that the CPU at hand cannot write (TensorFlow's rewrite needs AVX-512 or
            AVX-NE-CONVERT) is a `UsageError`, not a silent fp32 export.
        small_requests: whether calls of a few tokens take a copy of the graph of their own
            (`zoo.export.small_requests`); False keeps one copy (`--noexport_small_requests`).

    Example:
        serving = savedmodel.TextServing(FrozenCore(core, "bf16"), packer,
                                         savedmodel.class_outputs,
                                         label_names=["negative", "positive"])
        savedmodel.save("/tmp/model/1", {"serving_default": serving})
    """

    def __init__(self, core, precision="bf16", small_requests=True):
        super().__init__(name="frozen_core")
        if precision not in zoo_precision.EXPORT_PRECISIONS:
            raise UsageError(f"export precision must be one of {zoo_precision.EXPORT_PRECISIONS}, "
                             f"not {precision!r}")
        self.precision = precision
        self.small_requests = small_requests
        specs = {name: tf.TensorSpec([None, None], tf.int32, name=name)
                 for name in INPUT_NAMES}
        traced, graph_def, input_names, fetches = inference_graph(core, specs)
        if precision == "bf16":
            graph_def = bf16_graph(graph_def, fetches)
            if not any(dtype == "bfloat16" for (op, dtype) in op_dtypes(graph_def)
                       if op in grappler.MATMULS):
                raise UsageError(
                    "`export_precision`=bf16: TensorFlow's oneDNN bf16 rewrite left every matmul "
                    "in fp32 on this CPU (it needs AVX-512 or AVX-NE-CONVERT); export in fp32, "
                    "or on a machine that has one")
        graph_def, weight_names, values = weights_as_inputs(graph_def)
        grappler.drop_control_inputs(graph_def, input_names + weight_names)
        graph_def, small_names, small_values = grappler.integer_transposes(graph_def), [], []
        if small_requests:
            graph_def, fetches, small_names, small_values = size_switched(
                graph_def, input_names, fetches)
        weight_names += small_names
        self.weights = [tf.Variable(value, trainable=False, name=name.replace("/", "_"))
                        for name, value in zip(weight_names, values + small_values)]
        output_structure = traced.structured_outputs

        @tf.function(input_signature=[specs])
        def run(inputs):
            feeds = {f"{name}:0": inputs[name] for name in input_names}
            feeds.update({f"{name}:0": tf.convert_to_tensor(weight)
                          for name, weight in zip(weight_names, self.weights)})
            flat = tf.graph_util.import_graph_def(graph_def, input_map=feeds,
                                                  return_elements=fetches, name="frozen")
            return tf.nest.pack_sequence_as(output_structure, flat)

        self._run = run
        self._graph_def = graph_def  # for inspection (tests); not saved on its own

    def __call__(self, inputs, training=False):
        del training  # frozen for inference
        return self._run({name: tf.cast(inputs[name], tf.int32) for name in INPUT_NAMES})
