"""Flat serving functions: the same answers as the serving module, from a much smaller export."""
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from zoo.export import savedmodel
from zoo.export.flat_serving import FlatServing
from zoo.model import cores

TEXTS = ["a fine film", "a dull, long film", "yes"]


class _TableModule(tf.Module):
    """A lookup table, a variable and a captured constant, read by one serving function."""

    def __init__(self, stray=None):
        super().__init__()
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(["x", "y"], tf.constant([0, 1], tf.int64)), -1)
        self.weights = tf.Variable([2.0, 3.0])
        self.label_names = tf.Variable(["ex", "why"])
        scale = tf.constant([10.0, 100.0])  # eager: captured by the function

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def serve(text):
            found = tf.maximum(self.table.lookup(text), 0)
            score = tf.gather(self.weights * scale, found)
            if stray is not None:
                score += stray
            return dict(score=score, label=tf.gather(self.label_names, found))

        self.serve = serve


def _functions(export_dir):
    saved = saved_model_pb2.SavedModel()
    with open(f"{export_dir}/saved_model.pb", "rb") as f:
        saved.ParseFromString(f.read())
    return saved.meta_graphs[0].graph_def.library.function


def test_tables_variables_and_captured_constants_are_served_from_the_flat_graph(tmp_path):
    module = _TableModule()
    flat = FlatServing(module)
    assert not any(node.op in ("PartitionedCall", "StatefulPartitionedCall")
                   for node in flat._graph_def.node)
    export_dir = savedmodel.save(str(tmp_path / "e"), {"serving_default": module})
    loaded = tf.saved_model.load(export_dir)
    served = loaded.signatures["serving_default"](text=tf.constant(["y", "x", "z"]))
    np.testing.assert_allclose(served["score"].numpy(), [300.0, 20.0, 20.0])
    assert served["label"].numpy().tolist() == [b"why", b"ex", b"ex"]
    assert loaded.tasks[0].label_names.numpy().tolist() == [b"ex", b"why"]


def test_the_same_computation_in_two_inlined_calls_is_done_once():
    @tf.function
    def root(x):
        return tf.sqrt(tf.abs(x))

    class Twice(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
        def serve(self, x):  # each call of `root` is a function of its own until inlined
            return dict(y=root(x) + 2.0 * root(x))

    flat = FlatServing(Twice())
    ops = [node.op for node in flat._graph_def.node]
    assert ops.count("Sqrt") == 1 and ops.count("Abs") == 1
    np.testing.assert_allclose(flat.serve(tf.constant([[4.0, -9.0]]))["y"].numpy(), [[6.0, 9.0]])


def test_a_resource_the_module_does_not_own_is_an_error():
    with pytest.raises(ValueError, match="reads a resource .* that no object of the serving "
                       "module owns"):
        FlatServing(_TableModule(stray=tf.Variable(1.0)))


@pytest.mark.parametrize("pair", [False, True])
def test_a_flat_classifier_answers_as_its_module(tiny_hub, tmp_path, pair):
    core = cores.classifier_core(tiny_hub + "/encoder", num_classes=3)
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=32)
    module = savedmodel.ClassifierServing(core, packer, ["neg", "neu", "pos"], pair=pair)
    inputs = ({"text_a": TEXTS, "text_b": ["no", "yes, it is", "maybe"]} if pair
              else {"text": TEXTS})
    inputs = {k: tf.constant(v) for k, v in inputs.items()}
    export_dir = savedmodel.save(str(tmp_path / "flat"), {"serving_default": module})
    served = tf.saved_model.load(export_dir).signatures["serving_default"](**inputs)
    expected = module.serve(*inputs.values())
    np.testing.assert_allclose(served["probabilities"].numpy(),
                               expected["probabilities"].numpy(), atol=1e-6)
    assert served["label"].numpy().tolist() == expected["label"].numpy().tolist()
    # the encoder's float transposes move their bits as integers (grappler.integer_transposes):
    # the same values, no oneDNN reorder per call
    transposed = {tf.as_dtype(node.attr["T"].type).name
                  for node in FlatServing(module)._graph_def.node if node.op == "Transpose"}
    assert "int32" in transposed and "float32" not in transposed
    # the module saved as it is holds a function for every Keras layer and Hub object it
    # reaches; the flat export one for its signature, and the few a lookup table and the
    # checkpoint need
    tf.saved_model.save(module, str(tmp_path / "module"), signatures=module.serve)
    assert len(_functions(export_dir)) <= 20 < 100 <= len(_functions(str(tmp_path / "module")))


def test_a_flat_span_model_answers_as_its_module(tiny_hub, tmp_path):
    core = cores.span_core(tiny_hub + "/encoder")
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=32)
    from zoo.data.squad_windows import Windower
    module = savedmodel.SpanServing(core, Windower(packer, 32, 8, 8))
    question = tf.constant(["who sat?", "where?"])
    context = tf.constant(["the cat sat on the mat " * 6, "in the house by the lake"])
    export_dir = savedmodel.save(str(tmp_path / "flat"), {"serving_default": module})
    served = tf.saved_model.load(export_dir).signatures["serving_default"](
        question=question, context=context)
    expected = module.serve(question, context)
    for key in ("answer", "start", "end"):
        assert served[key].numpy().tolist() == expected[key].numpy().tolist()
    np.testing.assert_allclose(served["score"].numpy(), expected["score"].numpy(), atol=1e-5)


def test_a_flat_export_runs_in_a_session_as_tf_serving_loads_it(tiny_hub, tmp_path):
    # TF Serving's loader: the MetaGraphDef in a Session, the variables restored by its saver,
    # the lookup tables filled by its init op, the signature's tensors fed and fetched by name
    core = cores.classifier_core(tiny_hub + "/encoder", num_classes=3)
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=32)
    module = savedmodel.ClassifierServing(core, packer, ["neg", "neu", "pos"])
    export_dir = savedmodel.save(str(tmp_path / "flat"), {"serving_default": module})
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
        signature = meta_graph.signature_def["serving_default"]
        served = session.run(
            {k: v.name for k, v in signature.outputs.items()},
            {signature.inputs["text"].name: TEXTS})
    expected = module.serve(tf.constant(TEXTS))
    np.testing.assert_allclose(served["probabilities"], expected["probabilities"].numpy(),
                               atol=1e-6)
    assert served["label"].tolist() == expected["label"].numpy().tolist()
