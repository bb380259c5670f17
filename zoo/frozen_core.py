"""A core model frozen for serving, optionally rewritten to run in bfloat16 (`--export_precision`).

TF Serving runs an export as it was saved: the bf16 graph rewrite that `zoo.precision` turns on
in a training process does not happen there. `FrozenCore` does that rewrite once, at export
time: the core's inference graph (Hub encoder included) with its variables made constants, then
TensorFlow's graph optimizer (Grappler) with its oneDNN bf16 pass, which runs the matmuls and
the ops around them in bfloat16 and (through constant folding) turns their weights into bf16
constants, so no cast of a weight is left for the serving call. The embedding tables, which no
matmul reads, go back into variables that feed the graph (`weights_as_inputs`): the export's
checkpoint holds them, and the graph a serving process loads stays smaller. The inputs (packed
int32 ids) and outputs (fp32 logits) do not change, so the serving modules of `zoo.export` take
it where they took the core.

A request of a few tokens takes a second copy of the computation (`size_switched`): TensorFlow
fuses a layer normalization whose scale and offset are constants into one oneDNN op, which is
faster on a batch but has a fixed cost on every call (it converts the scale and offset anew
each time), which dominates when a call has a few tokens. The small-request copy reads the layer
norms' parameters and the biases from variables, so they stay plain ops; the matmul weights are
the same constants in both copies. For the same reason of a fixed cost (of a oneDNN reorder)
the attention's transposes are done on the bits as integers (`integer_transposes`): at batch
64 it made no difference, for one text it was as large a saving as the small-request copy's
(the effect on an export: BENCHMARKS.md, inference). The small-request copy also runs its
attention's batched matmuls and softmax on TensorFlow's own kernels (`own_attention_kernels`):
oneDNN's spread their work over every thread however small it is, and on a dozen heads of a
few tokens waking the other threads costs more than the work.

The export is fast on a CPU with native bf16 (AMX-BF16 or AVX512_BF16); elsewhere oneDNN would
emulate bf16 (not measured): fp32 stays the default.
"""
import collections
import copy

import tensorflow as tf
# What TensorFlow's own converters (TFLite, TF-TRT) use to freeze a function; none of it has a
# public `tf.` name.
from tensorflow.core.framework import tensor_shape_pb2
from tensorflow.python.framework import convert_to_constants, tensor_util

from zoo import grappler, precision as zoo_precision
from zoo.errors import UsageError
from zoo.models import INPUT_NAMES

_MATMULS = ("MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
# ids in a call (batch x length) up to which the small-request copy runs: timing the bf16
# MiniLM-L6 graph on an AMD EPYC with AVX512_BF16, that copy was the faster one at 1 x 64, as
# fast at about 96 ids, slower from 128 on
SMALL_REQUEST_TOKENS = 64
_CONTROL_FLOW = ("Switch", "Merge", "Enter", "Exit", "NextIteration")
_SAME_WIDTH_INTEGER = {tf.bfloat16.as_datatype_enum: tf.int16.as_datatype_enum,
                       tf.float32.as_datatype_enum: tf.int32.as_datatype_enum}


def serving_core(core, precision):
    """What an export of `precision` runs: `core` itself for fp32 (its variables are saved);
    a bf16 `FrozenCore` of it for bf16, one per task of a {task: core} dict (each then stores
    the encoder's weights of its own)."""
    if precision == "fp32":
        return core
    if isinstance(core, dict):
        return {name: FrozenCore(one, precision) for name, one in core.items()}
    return FrozenCore(core, precision)


def bf16_graph(graph_def, fetches):
    """`graph_def` (constants, no variables) after Grappler's oneDNN bf16 pass and constant
    folding; `fetches` are the output tensor names to keep. Layout and fusion rewrites are
    left to the process that runs the graph (they depend on its CPU)."""
    return grappler.optimize(graph_def, fetches,
                             auto_mixed_precision_onednn_bfloat16=grappler.RewriterConfig.ON,
                             remapping=grappler.RewriterConfig.OFF,
                             layout_optimizer=grappler.RewriterConfig.OFF)


def _upstream(graph_def, names, through=None):
    """Names of the nodes `names` and of those they read, following the inputs of every node
    (or, with `through`, only of nodes of those op types)."""
    nodes = {node.name: node for node in graph_def.node}
    pending, found = list(names), set()
    while pending:
        name = pending.pop().split(":")[0].lstrip("^")
        if name not in found and name in nodes:
            found.add(name)
            if through is None or nodes[name].op in through:
                pending.extend(nodes[name].input)
    return found


def _matmul_inputs(graph_def):
    """Names of the nodes whose output a matmul reads, directly or through Identity nodes."""
    return _upstream(graph_def, [name for node in graph_def.node if node.op in _MATMULS
                                 for name in node.input], through=("Identity",))


def weights_as_inputs(graph_def, min_size=4096):
    """(graph_def with each constant of `min_size` elements or more that no matmul reads made a
    placeholder, the names of those placeholders, their values).

    That is the embedding tables: fed from variables, they are saved in the export's
    checkpoint, and the graph that a serving process parses and optimizes when it loads the
    export is a third of the size (MiniLM), which shortens the time to a first answer. The
    rest stay constants: oneDNN converts a constant matmul weight to its blocked layout once
    and caches it (a weight fed as an input is converted on every call), and fuses layer
    normalization only when its scale and offset are constants; in a batched bf16 call
    either costs more than the load time gained (for a small request, see `size_switched`).
    """
    graph_def = copy.deepcopy(graph_def)
    matmul_inputs = _matmul_inputs(graph_def)
    names, values = [], []
    for node in graph_def.node:
        if node.op != "Const" or node.name in matmul_inputs:
            continue
        value = tensor_util.MakeNdarray(node.attr["value"].tensor)
        if value.size < min_size:
            continue
        _placeholder(node, value)
        names.append(node.name)
        values.append(value)
    return graph_def, names, values


def _placeholder(node, value):
    """Turns the Const `node` into a Placeholder of `value`'s type and shape."""
    dtype = node.attr["dtype"]
    node.op = "Placeholder"
    node.ClearField("attr")
    node.attr["dtype"].CopyFrom(dtype)
    node.attr["shape"].shape.CopyFrom(tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=n) for n in value.shape]))


def integer_transposes(graph_def):
    """`graph_def`, changed in place: each Transpose of a bf16 or fp32 tensor done on its bits
    as int16 or int32 (Bitcast, Transpose, Bitcast back). TensorFlow hands a float transpose to
    a oneDNN reorder, which has a fixed cost a call however small the tensor; an integer one is
    a plain copy."""
    nodes = []
    for node in graph_def.node:
        if node.op == "Transpose" and node.attr["T"].type in _SAME_WIDTH_INTEGER:
            dtype, integer = node.attr["T"].type, _SAME_WIDTH_INTEGER[node.attr["T"].type]
            bits, moved = copy.deepcopy(node), copy.deepcopy(node)
            bits.name, bits.op = f"{node.name}/bits", "Bitcast"
            del bits.input[1:]
            bits.ClearField("attr")
            bits.attr["T"].type, bits.attr["type"].type = dtype, integer
            moved.name = f"{node.name}/moved"
            moved.input[0] = bits.name
            moved.attr["T"].type = integer
            node.op = "Bitcast"
            del node.input[:]
            node.input.append(moved.name)
            node.ClearField("attr")
            node.attr["T"].type, node.attr["type"].type = integer, dtype
            nodes += [bits, moved]
    graph_def.node.extend(nodes)
    return graph_def


def own_attention_kernels(graph_def):
    """`graph_def`, changed in place: each BatchMatMulV2 made a BatchMatMulV3 of the same types,
    and each Softmax computed as exp(x - max x) / sum exp(x - max x) over its last axis, so that
    TensorFlow's own kernels run them instead of oneDNN's (its rewrite takes BatchMatMulV2 and
    Softmax, not these). A oneDNN op splits its work over every intra-op thread however small
    the tensors (only its inner products run small ones single-threaded); TensorFlow's kernels
    run a small op on the calling thread. For the small-request copy: on a batch, oneDNN's are
    the faster."""
    int32 = tf.int32.as_datatype_enum
    for node in list(graph_def.node):
        if node.op == "BatchMatMulV2":
            dtype = node.attr["T"].type
            node.op = "BatchMatMulV3"
            del node.attr["T"]
            for key in ("Ta", "Tb", "Tout"):
                node.attr[key].type = dtype
        elif node.op == "Softmax":
            dtype, logits, name = node.attr["T"].type, node.input[0], node.name
            axis = graph_def.node.add(name=f"{name}/axis", op="Const")
            axis.attr["dtype"].type = int32
            axis.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(-1, tf.int32))
            for op, inputs in (("Max", [logits, axis.name]), ("Sub", [logits, f"{name}/Max"]),
                               ("Exp", [f"{name}/Sub"]), ("Sum", [f"{name}/Exp", axis.name])):
                added = graph_def.node.add(name=f"{name}/{op}", op=op, input=inputs)
                added.attr["T"].type = dtype
                if op in ("Max", "Sum"):
                    added.attr["Tidx"].type, added.attr["keep_dims"].b = int32, True
            node.op = "RealDiv"
            del node.input[:]
            node.input.extend([f"{name}/Exp", f"{name}/Sum"])
    return graph_def


def size_switched(graph_def, input_names, fetches, max_small_tokens=SMALL_REQUEST_TOKENS):
    """(graph_def, fetches, names, values): `graph_def` computed by one of two copies, chosen
    per call by the size of `input_names[0]`. Up to `max_small_tokens` ids (batch x length),
    the small-request copy, which reads each float vector constant that no matmul reads (layer
    norm scales and offsets, biases) from a new placeholder (`names`, to be fed `values`);
    above, the copy as it was. The small-request copy's attention runs on TensorFlow's own
    kernels (`own_attention_kernels`). The copies share every other constant of `graph_def`
    (the matmul weights among them) and its placeholders; the new `fetches` merge the outputs
    of the two (only the copy taken runs). A constant that no output needs is dropped."""
    if any(node.op in _CONTROL_FLOW for node in graph_def.node):
        return graph_def, fetches, [], []  # a graph with control flow of its own is left as is
    graph_def = copy.deepcopy(graph_def)
    for node in graph_def.node:
        if node.op == "Const":  # (control inputs of an inlined function's constants order
            del node.input[:]   # nothing here, but would make them dead in the other copy)
    matmul_inputs = _matmul_inputs(graph_def)
    small_def = own_attention_kernels(copy.deepcopy(graph_def))
    names, values = [], []
    for node in small_def.node:
        if (node.op != "Const" or node.name in matmul_inputs
                or not tf.dtypes.as_dtype(node.attr["dtype"].type).is_floating):
            continue
        value = tensor_util.MakeNdarray(node.attr["value"].tensor)
        if value.ndim == 1 and value.size > 1:
            _placeholder(node, value)
            names.append(f"small_request/{node.name}")
            values.append(value)
    graph = tf.Graph()
    with graph.as_default():
        fed = {f"{node.name}:0": tf.compat.v1.placeholder(
            node.attr["dtype"].type, tf.TensorShape(node.attr["shape"].shape), name=node.name)
            for node in graph_def.node if node.op == "Placeholder"}
        small = tf.less_equal(tf.size(fed[f"{input_names[0]}:0"]), max_small_tokens,
                              name="is_small_request")
        large_map, small_map = dict(fed), dict(fed)
        for name in input_names:
            large_map[f"{name}:0"], small_map[f"{name}:0"] = tf.raw_ops.Switch(
                data=fed[f"{name}:0"], pred=small)
        large = tf.graph_util.import_graph_def(graph_def, input_map=large_map,
                                               return_elements=fetches, name="large")
        in_both = ({node.name for node in graph_def.node if node.op == "Const"}
                   & {node.name for node in small_def.node if node.op == "Const"})
        small_map.update({f"{name}:0": graph.get_tensor_by_name(f"large/{name}:0")
                          for name in in_both})
        small_outputs = tf.graph_util.import_graph_def(small_def, input_map=small_map,
                                                       return_elements=fetches,
                                                       name="small_request")
        merged = [tf.identity(tf.raw_ops.Merge(inputs=[one, other]).output,
                              name=f"output_{i}")
                  for i, (one, other) in enumerate(zip(large, small_outputs))]
    whole = graph.as_graph_def()
    needed = _upstream(whole, [t.name for t in merged])
    kept = tf.compat.v1.GraphDef(versions=whole.versions, library=whole.library)
    kept.node.extend(node for node in whole.node if node.name in needed)
    used = [i for i, name in enumerate(names) if name in needed]
    return kept, [t.name for t in merged], [names[i] for i in used], [values[i] for i in used]


def op_dtypes(graph_def):
    """{(op, dtype name): count} of the graph's nodes that have a type attribute `T`."""
    return collections.Counter((node.op, tf.dtypes.as_dtype(node.attr["T"].type).name)
                               for node in graph_def.node if "T" in node.attr)


class FrozenCore(tf.Module):
    """A core model's inference (`core(inputs, training=False)`) as one frozen graph.

    Args:
        core: a Keras core of `zoo.models` (packed int32 inputs -> logits, or a dict of them).
        precision: "fp32" (the core's own arithmetic) or "bf16" (see the module docstring).
            bf16 that the CPU at hand cannot write (TensorFlow's rewrite needs AVX-512 or
            AVX-NE-CONVERT) is a `UsageError`, not a silent fp32 export.

    Example:
        serving = export.TextServing(FrozenCore(core, "bf16"), packer, export.class_outputs,
                                     label_names=["negative", "positive"])
        export.save("/tmp/model/1", {"serving_default": serving})
    """

    def __init__(self, core, precision="bf16"):
        super().__init__(name="frozen_core")
        if precision not in zoo_precision.EXPORT_PRECISIONS:
            raise UsageError(f"export precision must be one of {zoo_precision.EXPORT_PRECISIONS}, "
                             f"not {precision!r}")
        self.precision = precision
        specs = {name: tf.TensorSpec([None, None], tf.int32, name=name)
                 for name in INPUT_NAMES}
        traced = tf.function(lambda inputs: core(inputs, training=False)).get_concrete_function(
            specs)
        frozen = convert_to_constants.convert_variables_to_constants_v2(traced)
        graph_def = frozen.graph.as_graph_def()
        fetches = [t.name for t in frozen.outputs]
        if precision == "bf16":
            graph_def = bf16_graph(graph_def, fetches)
            if not any(dtype == "bfloat16" for (op, dtype) in op_dtypes(graph_def)
                       if op in _MATMULS):
                raise UsageError(
                    "--export_precision=bf16: TensorFlow's oneDNN bf16 rewrite left every matmul "
                    "in fp32 on this CPU (it needs AVX-512 or AVX-NE-CONVERT); export in fp32, "
                    "or on a machine that has one")
        graph_def, weight_names, values = weights_as_inputs(graph_def)
        input_names = [t.name.split(":")[0] for t in frozen.inputs]
        grappler.drop_control_inputs(graph_def, input_names + weight_names)
        graph_def, fetches, small_names, small_values = size_switched(
            integer_transposes(graph_def), input_names, fetches)
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
