"""A serving module's function as one flat graph: what makes an export quick to load.

A serving process spends most of its time to a first answer loading the SavedModel, and the load
time grows with the functions and objects the export holds. A serving module saved as it is
brings the object graph of everything it reaches: the Keras core with every layer, the Hub
encoder and preprocessor with their own saved functions (about 320 functions and 1,300 objects
for a MiniLM classifier; TensorFlow turns each function back into a Python graph when it loads).
`FlatServing` saves instead one function per signature: the serving function with every call
inlined (Grappler's function inlining, then pruning, merging of nodes that compute the same
thing, such as the shape arithmetic each inlined layer repeats, and removal of the pass-through
nodes left; no rewrite that changes the arithmetic; float transposes moved as integers,
`grappler.integer_transposes`), reading the same variables and lookup tables, which the export
tracks in a plain list. The signature's inputs and outputs do not change. The merging takes a
MiniLM classifier's graph from about 1,780 nodes to 1,250, which TensorFlow then converts and
optimizes at load and first call in less time.
"""
import tensorflow as tf
from tensorflow.python.trackable import resource

from zoo.export import grappler


def owners(module):
    """{handle tensor ref: the variable or resource (a lookup table) that owns it} of every
    object `module` tracks."""
    owners = {}
    for obj in tf.train.TrackableView(module).descendants():
        if isinstance(obj, tf.Variable):
            owners[obj.handle.ref()] = obj
        elif isinstance(obj, resource.CapturableResource):
            owners[obj.resource_handle.ref()] = obj
    return owners


def _handle(owner):
    return owner.handle if isinstance(owner, tf.Variable) else owner.resource_handle


def flat_graph(concrete, keep):
    """The graph of `concrete` (a ConcreteFunction) with every function call inlined (control
    flow lowered to Switch/Merge), unused nodes pruned, common subexpressions merged and
    Identity/NoOp chains removed;
    `keep`: the node names it must keep (inputs, outputs)."""
    graph_def = grappler.optimize(concrete.graph.as_graph_def(), keep,
                                  optimizers=["function", "pruning",
                                              "common_subgraph_elimination", "dependency"],
                                  function_optimization=grappler.RewriterConfig.AGGRESSIVE)
    if graph_def.library.function:
        raise ValueError(f"{concrete.name}: Grappler left {len(graph_def.library.function)} "
                         "function(s) not inlined")
    return graph_def


class FlatServing(tf.Module):
    """`module.serve` (a tf.function with an input signature) as one flat graph (see the
    module docstring); the module's own variables (such as `label_names`) stay attributes of
    the same name.

    Args:
        module: a serving module of `zoo.export.savedmodel`.

    Example:
        savedmodel.save("/tmp/model/1", {"serving_default": FlatServing(TextServing(...))})
    """

    def __init__(self, module):
        super().__init__(name="flat_serving")
        concrete = module.serve.get_concrete_function()
        specs = tf.nest.flatten(concrete.structured_input_signature)
        input_names = [t.name for t in concrete.inputs[:len(specs)]]
        owned = owners(module)
        fed, constants, self.resources = {}, {}, []
        for outside, inside in concrete.graph.captures:
            if outside.dtype != tf.resource:
                constants[inside.name] = outside.numpy()
            elif outside.ref() in owned:
                fed[inside.name] = owned[outside.ref()]
                if not any(fed[inside.name] is r for r in self.resources):
                    self.resources.append(fed[inside.name])
            else:
                raise ValueError(f"{concrete.name} reads a resource ({inside.name}) that no "
                                 "object of the serving module owns")
        fetches = [t.name for t in concrete.outputs]
        graph_def = flat_graph(concrete, [name.split(":")[0] for name in
                                          input_names + list(fed) + list(constants) + fetches])
        grappler.drop_control_inputs(
            graph_def, [name.split(":")[0] for name in input_names + list(fed)])
        grappler.integer_transposes(graph_def)
        for node in graph_def.node:
            if node.name + ":0" in constants:
                value = constants[node.name + ":0"]
                node.op = "Const"
                node.ClearField("attr")
                node.attr["dtype"].type = tf.as_dtype(value.dtype).as_datatype_enum
                node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))
        for name, value in vars(module).items():
            if isinstance(value, tf.Variable) and not name.startswith("_"):
                setattr(self, name, value)
        structure = concrete.structured_outputs

        def serve(*inputs):
            feeds = dict(zip(input_names, inputs))
            feeds.update({name: tf.identity(_handle(owner)) for name, owner in fed.items()})
            flat = tf.graph_util.import_graph_def(graph_def, input_map=feeds,
                                                  return_elements=fetches, name="serve")
            return tf.nest.pack_sequence_as(structure, flat)

        self.serve = tf.function(serve, input_signature=specs)
        self._graph_def = graph_def  # for inspection (tests)
