"""zoo.export.python_load: an export loaded into Python without its saver's functions, which
TensorFlow's Python loader never calls; what it loads works as `tf.saved_model.load`'s does."""
import os

import pytest
import tensorflow as tf
from tensorflow.python.saved_model import function_deserialization, loader_impl

from zoo.export import python_load


class Module(tf.Module):
    """A variable, a lookup table (a resource with creator and initializer functions), a
    function with a custom gradient and a signature that calls it."""

    def __init__(self):
        super().__init__()
        self.scale = tf.Variable(3.0)
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(["a", "b"], [1.0, 2.0]), default_value=0.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def clipped(self, x):
        @tf.custom_gradient
        def double_forward(x):
            return 2.0 * x, lambda dy: tf.clip_by_value(dy, -1.0, 1.0)
        return double_forward(x) * self.scale

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string),
                                  tf.TensorSpec([None], tf.float32)])
    def serve(self, keys, x):
        return {"looked_up": self.table.lookup(keys), "clipped": self.clipped(x)}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("python_load") / "model")
    module = Module()
    module.scale.assign(5.0)
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    return path


def _converted(monkeypatch):
    """The names of the functions TensorFlow's loader turns into graphs, as it does."""
    names = []
    convert = function_deserialization.function_def_lib.function_def_to_graph

    def counting(fdef, *args, **kwargs):
        names.append(fdef.signature.name)
        return convert(fdef, *args, **kwargs)

    monkeypatch.setattr(function_deserialization.function_def_lib, "function_def_to_graph",
                        counting)
    return names


def test_only_the_savers_functions_are_left_out(saved, monkeypatch):
    saved_model = loader_impl.parse_saved_model(saved)
    dropped = python_load.lean(saved_model)
    assert sorted(name.split("_traced_")[1].split("_")[0] for name in dropped) == [
        "restore", "save"], dropped
    names = _converted(monkeypatch)
    tf.saved_model.load(saved)
    whole = list(names)
    names.clear()
    python_load.load(saved)
    # the loader names each function it converts without its "__inference_" prefix and number
    assert sorted(names) == sorted(n for n in whole if n not in ("_traced_save", "_traced_restore"))
    assert len(names) == len(whole) - 2 and "internal_grad_fn" in names


def test_what_it_loads_works_as_the_whole_load_does(saved):
    lean, whole = python_load.load(saved), tf.saved_model.load(saved)
    keys, x = tf.constant(["b", "z", "a"]), tf.constant([0.5, -1.0])
    for loaded in (lean, whole):
        assert float(loaded.scale.numpy()) == 5.0
        out = loaded.signatures["serving_default"](keys=keys, x=x)
        assert out["looked_up"].numpy().tolist() == [2.0, 0.0, 1.0]
        assert out["clipped"].numpy().tolist() == [5.0, -10.0]
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = loaded.clipped(x * 10.0)
        # the custom gradient clips the upstream gradient (scale 5) to 1, then times 10
        assert tape.gradient(y, x).numpy().tolist() == [10.0, 10.0]


def test_the_files_stay_whole_and_the_parser_comes_back_after_an_error(saved, tmp_path):
    with open(os.path.join(saved, "saved_model.pb"), "rb") as f:
        before = f.read()
    parse = loader_impl.parse_saved_model
    python_load.load(saved)
    with pytest.raises(OSError):
        python_load.load(str(tmp_path))
    assert loader_impl.parse_saved_model is parse
    with open(os.path.join(saved, "saved_model.pb"), "rb") as f:
        assert f.read() == before


def test_a_proto_read_already_is_not_read_again(saved, monkeypatch):
    saved_model = python_load.read(saved)
    reads = []
    parse = loader_impl.parse_saved_model
    monkeypatch.setattr(loader_impl, "parse_saved_model",
                        lambda path: reads.append(path) or parse(path))
    loaded = python_load.load(saved, saved_model)
    assert reads == [] and float(loaded.scale.numpy()) == 5.0
    assert not any("_traced_" in f.signature.name
                   for f in saved_model.meta_graphs[0].graph_def.library.function)
    python_load.load(saved)
    assert reads == [saved]


def test_a_graph_that_computes_in_bfloat16_is_told_from_an_fp32_one(saved, tmp_path):
    class Halved(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def serve(self, x):
            return tf.cast(tf.cast(x, tf.bfloat16) * 2, tf.float32)

    path = str(tmp_path / "halved")
    tf.saved_model.save(Halved(), path)
    assert python_load.runs_bfloat16(python_load.read(path))
    assert not python_load.runs_bfloat16(python_load.read(saved))
