"""An export loaded into Python with only the functions Python runs.

A SavedModel's function library holds, beside the functions its objects own (the signatures,
the creators and initializers of lookup tables), the functions that only the MetaGraph's own
graph calls: the save and restore functions of its `saver_def` and the calls that initialize
its tables, which TF Serving and other C++ loaders run. TensorFlow's Python loader restores
variables and tables through the object graph instead and never calls those, but it turns every
function of the library back into a Python graph, and in a MiniLM export they are a third of
the nodes. `load(export_dir)` is `tf.saved_model.load(export_dir)` with the library cut, in
memory, to the functions the object graph reaches (`reached_functions`); the files are not
touched. A caller that reads the SavedModel proto itself first (`read`, as `zoo.serving` does to
find the TF Text ops the export runs) passes it on, and the file is read once; `runs_bfloat16`
tells from the same proto whether the export computes in bfloat16 (a bf16 export).
"""
import contextlib
import threading

import tensorflow as tf
from tensorflow.core.framework import types_pb2
from tensorflow.python.saved_model import loader_impl

_LOCK = threading.Lock()


def _attr_functions(attr):
    """The function names an AttrValue names, nested ones included."""
    kind = attr.WhichOneof("value")
    if kind == "func":
        named = [attr.func]
    elif kind == "list":
        named = list(attr.list.func)
    else:
        return set()
    names = {f.name for f in named}
    for f in named:
        for inner in f.attr.values():
            names |= _attr_functions(inner)
    return names


def _calls(function, library_names):
    """The library functions `function` (a FunctionDef) calls."""
    names = set()
    for node in function.node_def:
        if node.op in library_names:
            names.add(node.op)
        for attr in node.attr.values():
            names |= _attr_functions(attr)
    for attr in function.attr.values():
        names |= _attr_functions(attr)
    return names & library_names


def reached_functions(meta_graph):
    """Names of the library functions of `meta_graph` (a MetaGraphDef with an object graph)
    that its objects own, its gradients name, or those call, directly or not."""
    library = meta_graph.graph_def.library
    by_name = {f.signature.name: f for f in library.function}
    objects = meta_graph.object_graph_def
    roots = set(objects.concrete_functions)
    for node in objects.nodes:
        kind = node.WhichOneof("kind")
        if kind == "function":
            roots.update(node.function.concrete_functions)
        elif kind == "bare_concrete_function":
            roots.add(node.bare_concrete_function.concrete_function_name)
    roots.update(g.gradient_func for g in library.gradient)
    roots.update(g.gradient_func for g in library.registered_gradients)
    reached, todo = set(), [name for name in roots if name in by_name]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(_calls(by_name[name], by_name.keys()) - reached)
    return reached


def lean(saved_model):
    """Drops, in place, the library functions of `saved_model` (a SavedModel proto) that its
    object graph does not reach; returns their names. A SavedModel of TensorFlow 1 (without an
    object graph) is left whole."""
    dropped = []
    for meta_graph in saved_model.meta_graphs:
        if not meta_graph.HasField("object_graph_def"):
            continue
        functions = meta_graph.graph_def.library.function
        reached = reached_functions(meta_graph)
        # deleted where they are: a copy of the others would copy every constant they hold
        for i in reversed(range(len(functions))):
            if functions[i].signature.name not in reached:
                dropped.append(functions[i].signature.name)
                del functions[i]
    return dropped[::-1]


def nodes(saved_model):
    """Every node of `saved_model`'s graphs and of their functions (a SavedModel proto)."""
    for meta_graph in saved_model.meta_graphs:
        yield from meta_graph.graph_def.node
        for function in meta_graph.graph_def.library.function:
            yield from function.node_def


def runs_bfloat16(saved_model):
    """Whether a node of `saved_model`'s graphs or functions (a SavedModel proto) computes in
    bfloat16 (as a bf16 export's do)."""
    return any(attr.type == types_pb2.DT_BFLOAT16 or types_pb2.DT_BFLOAT16 in attr.list.type
               for node in nodes(saved_model) for attr in node.attr.values())


def read(export_dir):
    """The SavedModel proto of `export_dir`, as TensorFlow's loader reads it (an OSError when
    there is none or it is unreadable)."""
    return loader_impl.parse_saved_model(export_dir)


@contextlib.contextmanager
def _lean_parsing(export_dir, saved_model):
    """TensorFlow's loader, in the block, reads SavedModels through `lean`, and `export_dir`
    as `saved_model` where that is given."""
    parse = loader_impl.parse_saved_model

    def parse_lean(path):
        proto = saved_model if saved_model is not None and path == export_dir else parse(path)
        lean(proto)
        return proto

    with _LOCK:
        loader_impl.parse_saved_model = parse_lean
        try:
            yield
        finally:
            loader_impl.parse_saved_model = parse


def load(export_dir, saved_model=None):
    """`tf.saved_model.load(export_dir)`, turning into Python graphs only the functions the
    loaded objects reach; `saved_model`: the export's proto (`read`), where the caller has read
    it already, which this changes."""
    with _lean_parsing(export_dir, saved_model):
        return tf.saved_model.load(export_dir)
