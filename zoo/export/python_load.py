"""An export loaded into Python with only the functions Python runs.

A SavedModel's function library holds, beside the functions its objects own (the signatures,
the creators and initializers of lookup tables), the functions that only the MetaGraph's own
graph calls: the save and restore functions of its `saver_def` and the calls that initialize
its tables, which TF Serving and other C++ loaders run. TensorFlow's Python loader restores
variables and tables through the object graph instead and never calls those, but it turns every
function of the library back into a Python graph, and in a MiniLM export they are a third of
the nodes. `load(export_dir)` is `tf.saved_model.load(export_dir)` with the library cut, in
memory, to the functions the object graph reaches (`reached_functions`); the files are not
touched.
"""
import contextlib
import threading

import tensorflow as tf
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
        library = meta_graph.graph_def.library
        reached = reached_functions(meta_graph)
        kept = [f for f in library.function if f.signature.name in reached]
        dropped += [f.signature.name for f in library.function
                    if f.signature.name not in reached]
        del library.function[:]
        library.function.extend(kept)
    return dropped


@contextlib.contextmanager
def _lean_parsing():
    """TensorFlow's loader, in the block, reads SavedModels through `lean`."""
    parse = loader_impl.parse_saved_model_with_debug_info

    def parse_lean(export_dir):
        saved_model, debug_info = parse(export_dir)
        lean(saved_model)
        return saved_model, debug_info

    with _LOCK:
        loader_impl.parse_saved_model_with_debug_info = parse_lean
        try:
            yield
        finally:
            loader_impl.parse_saved_model_with_debug_info = parse


def load(export_dir):
    """`tf.saved_model.load(export_dir)`, turning into Python graphs only the functions the
    loaded objects reach."""
    with _lean_parsing():
        return tf.saved_model.load(export_dir)
