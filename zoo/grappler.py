"""GraphDef work at export time: running TensorFlow's graph optimizer (Grappler), and
readying a graph's nodes to be fed by `tf.graph_util.import_graph_def`.

Grappler is run the way TensorFlow's own converters (TFLite, TF-TRT) run it; none of that has a
public `tf.` name.
"""
from tensorflow.core.protobuf import config_pb2, meta_graph_pb2, rewriter_config_pb2
from tensorflow.python.grappler import tf_optimizer

RewriterConfig = rewriter_config_pb2.RewriterConfig


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
