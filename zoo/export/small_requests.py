"""The small-request copy of a frozen graph: what a call of a few tokens runs (`size_switched`).

A request of one text does little arithmetic, and what decides its time is a fixed cost per
op, found by timing the bf16 MiniLM graph op by op (BENCHMARKS.md, inference). So the graph of
a `zoo.export.frozen_core.FrozenCore` gets a second copy of its computation, which calls of at most
SMALL_REQUEST_TOKENS ids (batch x length) take, changed in three ways:
- the layer norms' scales and offsets and the biases are read from variables: TensorFlow fuses
  a layer norm whose scale and offset are constants into one oneDNN op, faster on a batch but
  converting them anew on every call;
- the attention's batched matmuls and softmax run on TensorFlow's own kernels
  (`own_attention_kernels`);
- each feed-forward block runs in slices that oneDNN computes on one thread
  (`split_feed_forward`; the other copy runs the same slices, so that the two share weights).
The last two because a oneDNN op spreads its work over every intra-op thread however small the
tensors (TensorFlow runs a oneDNN inner product on one thread only when its operands fit in the
CPU's L2 cache), and for a few tokens waking the other threads costs more than the work.
Larger calls take the copy as it was: on a batch, oneDNN's fused and threaded ops are faster.
"""
import copy

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import tensor_util

from zoo.export import grappler

# ids in a call (batch x length) up to which the small-request copy runs: timing the bf16
# MiniLM-L6 graph on an AMD EPYC with AVX512_BF16, that copy was the faster one at 1 x 64, as
# fast at about 96 ids, slower from 128 on
SMALL_REQUEST_TOKENS = 64
# the bytes of a oneDNN inner product's input, weight and output up to which TensorFlow runs it
# on one thread (its test is the CPU's L2 cache size: 1 MiB on an AMD Zen 4 core and on Skylake
# and Cascade Lake Xeons, 2 MiB on Sapphire Rapids)
ONE_THREAD_BYTES = 2 ** 20
_CONTROL_FLOW = ("Switch", "Merge", "Enter", "Exit", "NextIteration")
# ops that `split_feed_forward` follows between the two matmuls of a feed-forward block
_ELEMENTWISE = ("Identity", "BiasAdd", "Add", "AddV2", "Sub", "Mul", "RealDiv", "Erf", "Tanh",
                "Sigmoid", "Relu", "Pow", "Square")


def own_attention_kernels(graph_def):
    """`graph_def`, changed in place: each BatchMatMulV2 made a BatchMatMulV3 of the same types,
    and each Softmax computed as exp(x - max x) / sum exp(x - max x) over its last axis, so that
    TensorFlow's own kernels run them instead of oneDNN's (its rewrite takes BatchMatMulV2 and
    Softmax, not these), and a small one on the calling thread."""
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
            _const(graph_def, f"{name}/axis", np.int32(-1))
            for op, inputs in (("Max", [logits, f"{name}/axis"]), ("Sub", [logits, f"{name}/Max"]),
                               ("Exp", [f"{name}/Sub"]), ("Sum", [f"{name}/Exp", f"{name}/axis"])):
                added = graph_def.node.add(name=f"{name}/{op}", op=op, input=inputs)
                added.attr["T"].type = dtype
                if op in ("Max", "Sum"):
                    added.attr["Tidx"].type, added.attr["keep_dims"].b = int32, True
            node.op = "RealDiv"
            del node.input[:]
            node.input.extend([f"{name}/Exp", f"{name}/Sum"])
    return graph_def


def split_feed_forward(graph_def, max_tokens=SMALL_REQUEST_TOKENS):
    """`graph_def`, changed in place: each feed-forward block MatMul(f(MatMul(x, W1)), W2), with
    constant weights and f elementwise (a bias, an activation), computed in slices of its inner
    width: the sum over slices s of MatMul(f_s(MatMul(x, W1[:, s])), W2[s, :]), each f_s with
    its slice of f's bias. The same products, summed in slices; each slice's inner products
    small enough (at `max_tokens` rows, ONE_THREAD_BYTES) for oneDNN to run them on one thread,
    and the slices independent, so TensorFlow's executor can run them side by side. The
    slices' weights are new constants; the whole ones are left to be pruned."""
    nodes = {node.name: node for node in graph_def.node}
    readers = {}
    for node in graph_def.node:
        for name in node.input:
            readers.setdefault(grappler.node_name(name), []).append(node.name)
    for second in [node for node in graph_def.node if node.op == "MatMul"]:
        block = _feed_forward_block(nodes, readers, second)
        if block is None:
            continue
        first, between, w1, w2 = block
        slices = _slice_count(w1, w2, max_tokens)
        if slices == 1:
            continue
        width, cols = w2.shape
        step, partials = width // slices, []
        for s in range(slices):
            part = slice(s * step, (s + 1) * step)
            renamed = {first.name: f"{first.name}/slice_{s}"}
            renamed.update({node.name: f"{node.name}/slice_{s}" for node in between})
            for node in [first, *between, second]:
                copied = graph_def.node.add()
                copied.CopyFrom(node)
                copied.name = renamed.get(node.name, f"{node.name}/slice_{s}")
                for i, name in enumerate(node.input):
                    read = grappler.node_name(name)
                    if read in renamed:
                        copied.input[i] = renamed[read] + name[len(read):]
                    elif node.op == "BiasAdd" and i == 1:  # f's bias: its slice
                        copied.input[i] = _const(graph_def, f"{copied.name}/bias",
                                                 _value(nodes, name)[part])
                if node is first:
                    copied.input[1] = _const(graph_def, f"{copied.name}/weight", w1[:, part])
                elif node is second:
                    copied.input[1] = _const(graph_def, f"{copied.name}/weight", w2[part])
            # a zero bias keeps each slice's matmul a fused oneDNN inner product (whose weight
            # layout it caches) rather than a plain matmul
            biased = graph_def.node.add(name=f"{second.name}/slice_{s}/biased", op="BiasAdd",
                                        input=[f"{second.name}/slice_{s}", _const(
                                            graph_def, f"{second.name}/slice_{s}/zero",
                                            np.zeros(cols, w2.dtype))])
            biased.attr["T"].CopyFrom(second.attr["T"])
            partials.append(biased.name)
        dtype = second.attr["T"]
        second.op = "AddN"
        second.ClearField("attr")
        second.attr["T"].CopyFrom(dtype)
        second.attr["N"].i = slices
        del second.input[:]
        second.input.extend(partials)
    return graph_def


def _slice_count(w1, w2, max_tokens):
    """The fewest slices of the inner width (a divisor of it) whose two inner products, at
    `max_tokens` rows, each take at most ONE_THREAD_BYTES of input, weight and output; one
    slice per column if none do."""
    (rows, width), cols, itemsize = w1.shape, w2.shape[1], w1.dtype.itemsize
    for slices in range(1, width):
        step = width // slices
        if width % slices == 0 and itemsize * max(
                max_tokens * step + rows * (max_tokens + step),
                max_tokens * cols + step * (max_tokens + cols)) <= ONE_THREAD_BYTES:
            return slices
    return width


def _feed_forward_block(nodes, readers, second):
    """(the first MatMul, the elementwise nodes between, the two weights) of the feed-forward
    block that ends in MatMul `second`, or None: both read constant 2-D weights, untransposed;
    the nodes between read only each other, the first matmul, scalar constants and one bias of
    the inner width, and nothing but the block reads them."""
    if (second.attr["transpose_a"].b or second.attr["transpose_b"].b
            or _const_node(nodes, second.input[1]) is None):
        return None
    first, between, pending = None, {}, [second.input[0]]
    while pending:
        name = pending.pop()
        node = nodes.get(grappler.node_name(name))
        if name.startswith("^") or node is None:
            return None
        if node.name in between or node is first:
            continue
        if node.op == "MatMul" and first is None:
            first = node
            continue
        if node.op not in _ELEMENTWISE:
            return None
        between[node.name] = node
        for i, read in enumerate(node.input):
            const = _const_node(nodes, read)
            if const is None:
                pending.append(read)
            elif not (np.prod(_shape(const)) == 1 or (node.op == "BiasAdd" and i == 1)):
                return None
    if (first is None or first.attr["transpose_a"].b or first.attr["transpose_b"].b
            or _const_node(nodes, first.input[1]) is None):
        return None
    w1, w2 = _value(nodes, first.input[1]), _value(nodes, second.input[1])
    block = {first.name, *between, second.name}
    if (w1.ndim != 2 or w2.ndim != 2 or w1.shape[1] != w2.shape[0]
            or any(_shape(_const_node(nodes, node.input[1])) != [w1.shape[1]]
                   for node in between.values() if node.op == "BiasAdd")
            or any(reader not in block for name in [first.name, *between]
                   for reader in readers.get(name, []))):
        return None
    return first, list(between.values()), w1, w2


def _const_node(nodes, tensor):
    """The Const node that `tensor` names (directly or through Identity nodes, as a frozen
    variable reads), or None."""
    node = nodes.get(grappler.node_name(tensor))
    while node is not None and node.op == "Identity":
        node = nodes.get(grappler.node_name(node.input[0]))
    return node if node is not None and node.op == "Const" else None


def _shape(const):
    """The shape of a Const node's value, as a list."""
    return [dim.size for dim in const.attr["value"].tensor.tensor_shape.dim]


def _value(nodes, tensor):
    """The value of the Const node that `tensor` names (`_const_node`)."""
    return tensor_util.MakeNdarray(_const_node(nodes, tensor).attr["value"].tensor)


def _const(graph_def, name, value):
    """Adds a Const node `name` of `value` to `graph_def`; returns its name."""
    node = graph_def.node.add(name=name, op="Const")
    node.attr["dtype"].type = tf.as_dtype(value.dtype).as_datatype_enum
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))
    return name


def size_switched(graph_def, input_names, fetches, max_small_tokens=SMALL_REQUEST_TOKENS):
    """(graph_def, fetches, names, values): `graph_def` computed by one of two copies, chosen
    per call by the size of `input_names[0]`. Up to `max_small_tokens` ids (batch x length),
    the small-request copy (the module docstring), which reads each float vector constant that
    no matmul reads (layer norm scales and offsets, biases) from a new placeholder (`names`, to
    be fed `values`); above, the copy as it was but for its feed-forward blocks, which are
    sliced in both copies (`split_feed_forward`) so that they share every matmul weight (a
    batch ran the slices as fast as the whole blocks: BENCHMARKS.md, inference). The copies
    share every constant of `graph_def` that both keep and its placeholders; the new `fetches`
    merge the outputs of the two (only the copy taken runs). A constant that no output needs
    is dropped."""
    if any(node.op in _CONTROL_FLOW for node in graph_def.node):
        return graph_def, fetches, [], []  # a graph with control flow of its own is left as is
    graph_def = split_feed_forward(copy.deepcopy(graph_def), max_small_tokens)
    for node in graph_def.node:
        if node.op == "Const":  # (control inputs of an inlined function's constants order
            del node.input[:]   # nothing here, but would make them dead in the other copy)
    matmul_inputs = grappler.matmul_inputs(graph_def)
    small_def = own_attention_kernels(copy.deepcopy(graph_def))
    names, values = [], []
    for node in small_def.node:
        if (node.op != "Const" or node.name in matmul_inputs
                or not tf.dtypes.as_dtype(node.attr["dtype"].type).is_floating):
            continue
        value = tensor_util.MakeNdarray(node.attr["value"].tensor)
        if value.ndim == 1 and value.size > 1:
            grappler.make_placeholder(node, value)
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
        shared = ({node.name for node in graph_def.node if node.op == "Const"}
                  & {node.name for node in small_def.node if node.op == "Const"})
        small_map.update({f"{name}:0": graph.get_tensor_by_name(f"large/{name}:0")
                          for name in shared})
        small_outputs = tf.graph_util.import_graph_def(small_def, input_map=small_map,
                                                       return_elements=fetches,
                                                       name="small_request")
        merged = [tf.identity(tf.raw_ops.Merge(inputs=[one, other]).output,
                              name=f"output_{i}")
                  for i, (one, other) in enumerate(zip(large, small_outputs))]
    whole = graph.as_graph_def()
    needed = grappler.upstream(whole, [t.name for t in merged])
    kept = tf.compat.v1.GraphDef(versions=whole.versions, library=whole.library)
    kept.node.extend(node for node in whole.node if node.name in needed)
    used = [i for i, name in enumerate(names) if name in needed]
    return kept, [t.name for t in merged], [names[i] for i in used], [values[i] for i in used]
