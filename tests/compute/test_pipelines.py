"""zoo.compute.pipelines in a fresh process (its eager context not started): tf.data's functions
run without grappler's rewrites, the model's tf.functions with them (oneDNN's fused matmul)."""
import json
import subprocess
import sys

from tests.helpers import ROOT

SCRIPT = """
import json, sys
import zoo
import tensorflow as tf
from tests.helpers import profiled_ops
from zoo.compute import pipelines

if sys.argv[2] == "zoo":
    assert not pipelines.started()
    assert pipelines.start_context(lambda: "strategy") == "strategy" and pipelines.started()
w, b = tf.random.normal([64, 64]), tf.random.normal([64])
layer = lambda x: tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b))
x = tf.ones([8, 64])
dataset = tf.data.Dataset.from_tensors(x).map(layer)
ops = dict(model=profiled_ops(sys.argv[1] + "/model", tf.function(layer), x),
           data=profiled_ops(sys.argv[1] + "/data", lambda: next(iter(dataset))))
print(json.dumps({k: sorted({name.split(":")[-1] for name in v}) for k, v in ops.items()}))
"""


def _op_types(tmp_path, setup):
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / setup), setup], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _fused(op_types):
    return any("FusedMatMul" in op for op in op_types)


def test_data_functions_skip_grappler_and_the_models_functions_keep_it(tmp_path):
    default, zoo = _op_types(tmp_path, "default"), _op_types(tmp_path, "zoo")
    assert _fused(default["model"]) and _fused(default["data"])  # TensorFlow's own behaviour
    assert _fused(zoo["model"]), zoo  # the model's functions keep grappler's fusion
    assert not _fused(zoo["data"]) and "BiasAdd" in str(zoo["data"]), zoo  # tf.data's do not


def test_eager_call_in_a_map_gives_the_functions_values_with_its_static_shapes():
    import tensorflow as tf
    from zoo.compute.pipelines import eager_call

    traces = []

    @tf.function(input_signature=[tf.RaggedTensorSpec([None, None], tf.int64),
                                  tf.TensorSpec([None], tf.string)])
    def pieces(ids, words):
        traces.append(1)
        return dict(total=tf.reduce_sum(ids, axis=1), doubled=ids * 2,
                    padded=tf.pad(ids.to_tensor(shape=[None, 4]), [[0, 0], [0, 1]]),
                    words=tf.strings.upper(words))

    rows = tf.data.Dataset.from_tensor_slices(
        (tf.ragged.constant([[1, 2], [3], [4, 5, 6], [7]], tf.int64), ["a", "b", "c", "d"]))
    for _ in range(2):  # a second dataset and iterator: no new trace
        ds = rows.batch(3).map(lambda ids, words: eager_call(pieces, ids, words))
        assert ds.element_spec["padded"].shape.as_list() == [None, 5]
        assert isinstance(ds.element_spec["doubled"], tf.RaggedTensorSpec)
        for (ids, words), got in zip(rows.batch(3), ds):
            want = pieces(ids, words)
            for key in want:
                assert tf.reduce_all(tf.equal(got[key], want[key])), key
    assert len(traces) == 1
    eager = eager_call(pieces, tf.ragged.constant([[1, 2]], tf.int64), tf.constant(["x"]))
    assert eager["words"].numpy().tolist() == [b"X"]  # eagerly, the plain call
