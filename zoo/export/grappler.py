"""GraphDef work at export time: running TensorFlow's graph optimizer (Grappler), finding what
nodes read, and readying a graph's nodes to be fed by `tf.graph_util.import_graph_def`.

Grappler is run the way TensorFlow's own converters (TFLite, TF-TRT) run it; none of that has a
public `tf.` name.
"""
import copy

from tensorflow.core.framework import tensor_shape_pb2, types_pb2
from tensorflow.core.protobuf import config_pb2, meta_graph_pb2, rewriter_config_pb2
from tensorflow.python.grappler import tf_optimizer

RewriterConfig = rewriter_config_pb2.RewriterConfig
MATMULS = ("MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
_SAME_WIDTH_INTEGER = {types_pb2.DT_BFLOAT16: types_pb2.DT_INT16,
                       types_pb2.DT_FLOAT: types_pb2.DT_INT32}


def optimize(graph_def, keep, optimizers=None, **options):
    """`graph_def` after Grappler. `keep`: the tensor or node names it must not prune or rename
    (inputs, outputs, what is fed from outside). `optimizers`: the passes to run, in order
    (e.g. ["function", "pruning"]), instead of its default set; `options`: fields of its
    `RewriterConfig` (e.g. `remapping=RewriterConfig.OFF`)."""
    meta_graph = meta_graph_pb2.MetaGraphDef()
    meta_graph.graph_def.CopyFrom(graph_def)
    kept = meta_graph_pb2.CollectionDef()
    kept.node_list.value.extend(keep)
    meta_graph.collection_def["train_op"].CopyFrom(kept)  # what Grappler must not prune
    config = config_pb2.ConfigProto()
    rewrite = config.graph_options.rewrite_options
    rewrite.min_graph_nodes = -1  # also small graphs
    rewrite.optimizers.extend(optimizers or [])
    for name, value in options.items():
        setattr(rewrite, name, value)
    return tf_optimizer.OptimizeGraph(config, meta_graph)


def drop_control_inputs(graph_def, names):
    """Removes, in place, every control edge from the nodes `names` (node names): a feed
    (`import_graph_def(input_map=...)`) replaces a node's tensors, not the control edges from
    it, which would keep the unfed node (a placeholder) in the graph."""
    edges = {f"^{name}" for name in names}
    for node in graph_def.node:
        kept = [i for i in node.input if i not in edges]
        del node.input[:]
        node.input.extend(kept)


def node_name(tensor):
    """The node name in a tensor name ("node:1") or a control input ("^node")."""
    return tensor.split(":")[0].lstrip("^")


def upstream(graph_def, names, through=None):
    """Names of the nodes `names` and of those they read, following the inputs of every node
    (or, with `through`, only of nodes of those op types)."""
    nodes = {node.name: node for node in graph_def.node}
    pending, found = list(names), set()
    while pending:
        name = node_name(pending.pop())
        if name not in found and name in nodes:
            found.add(name)
            if through is None or nodes[name].op in through:
                pending.extend(nodes[name].input)
    return found


def matmul_inputs(graph_def):
    """Names of the nodes whose output a matmul reads, directly or through Identity nodes."""
    return upstream(graph_def, [name for node in graph_def.node if node.op in MATMULS
                                for name in node.input], through=("Identity",))


def make_placeholder(node, value):
    """Turns the Const `node` into a Placeholder of `value`'s type and shape."""
    dtype = node.attr["dtype"]
    node.op = "Placeholder"
    node.ClearField("attr")
    node.attr["dtype"].CopyFrom(dtype)
    node.attr["shape"].shape.CopyFrom(tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=n) for n in value.shape]))


def integer_transposes(graph_def):
    """`graph_def`, changed in place: each Transpose of a bf16 or fp32 tensor done on its bits
    as int16 or int32 (Bitcast, Transpose, Bitcast back): the same values. With its oneDNN
    rewrites on, TensorFlow hands a float transpose to a oneDNN reorder, which has a fixed cost
    a call however small the tensor; an integer one is a plain copy. (For one text a call of a
    MiniLM export that was 7% of the time; in batches of 64, no difference: BENCHMARKS.md,
    inference.)"""
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
