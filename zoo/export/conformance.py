"""Will an export serve under TF Serving? A check against what TF Serving does, for a machine
where no TF Serving binary runs (`zoo check-export DIR`).

- **Loading.** The export is loaded as TF Serving's C++ loader loads it: its MetaGraph imported
  into a TF1 `Session`, the variables restored, the init op run, and each signature called by
  `Session.run` on its tensor names, not through TF2's Python object graph.
- **Ops.** Every op of the graph and of its functions must be one TF Serving's model server
  links: TensorFlow's own ops (those registered by `import tensorflow` alone, less
  `PYTHON_ONLY_OPS`, whose kernels are Python's) and those of the TF Text libraries it bundles
  (`SERVING_TEXT_LIBRARIES`: tensorflow_text's `ops_lib` target, which tensorflow/serving's
  `model_servers/BUILD` links from TF Text `SERVING_TEXT_VERSION`; TF Text ops outside it fail
  there: tensorflow/serving#2267, #2064). An op outside both is named with where it comes from.
- **Requests.** Each signature is called through TF Serving's REST request and response
  formats (`rest_predict`: `{"instances": ...}` -> `predictions`, `{"inputs": ...}` ->
  `outputs`) and through a `PredictRequest` / `PredictResponse` of `tensorflow-serving-api`,
  encoded and decoded (`grpc_predict`); each must give the session's own outputs.
"""
import base64
import contextlib
import functools
import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf
import tensorflow_text

from zoo.base import files, fs
from zoo.base.cache import cache_dir
from zoo.base.errors import UsageError

SERVING_TEXT_VERSION = "2.20.0"
# tensorflow_text's `ops_lib` (its BUILD at v2.20.0): the op libraries TF Serving links.
SERVING_TEXT_LIBRARIES = (
    "boise_offset_converter", "byte_splitter", "constrained_sequence_op", "fast_bert_normalizer",
    "fast_sentencepiece_tokenizer", "fast_wordpiece_tokenizer", "mst_ops", "ngrams_op",
    "normalize_ops", "phrase_tokenizer", "regex_split_ops", "sentence_breaking_ops",
    "sentencepiece_tokenizer", "split_merge_from_logits_tokenizer", "split_merge_tokenizer",
    "state_based_sentence_breaker_op", "text_similarity_metric_ops", "trimmer_ops",
    "unicode_script_tokenizer", "utf8_binarize_op", "whitespace_tokenizer",
    "whitespace_tokenizer_v2", "wordpiece_tokenizer")
# Registered by TensorFlow's Python runtime (tensorflow/python/lib/core/py_func.cc): they call
# back into Python, which a C++ server does not have.
PYTHON_ONLY_OPS = ("PyFunc", "PyFuncStateless", "EagerPyFunc")
# What each kind of input gets when a signature is called (two rows); a `target` (the class an
# explanation is for) is left to the model ("": the predicted class).
SAMPLE_STRINGS = ["Paris is the capital of France.", "Café au lait, naïve façade: 東京 🙂"]
SAMPLE_BY_NAME = {"target": ["", ""]}

_REGISTRY = r"""
import glob, json, os, sys
from tensorflow.core.framework import op_def_pb2
from tensorflow.python.client import pywrap_tf_session as c
import tensorflow as tf

def names():
    ops = op_def_pb2.OpList()
    ops.ParseFromString(c.TF_GetBuffer(c.TF_GetAllOpList()))
    return {op.name for op in ops.op}

core = names()
libraries = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "**", "_*.so"), recursive=True)):
    before = names()
    tf.load_op_library(path)
    libraries[os.path.basename(path)[1:-3]] = sorted(names() - before)
print(json.dumps(dict(core=sorted(core), libraries=libraries)))
"""


@functools.lru_cache(maxsize=None)
def registry():
    """{"core": TensorFlow's op names, "libraries": {TF Text library: its op names}}, read in a
    fresh Python that imports tensorflow alone, then loads each of tensorflow_text's op
    libraries in turn. That takes seconds, and the answer depends only on the two packages: it
    is kept in zoo's cache folder (`zoo.base.cache`) under their versions, and read from there
    while the file is whole. A cache folder that cannot be written is left as it is."""
    path = os.path.join(cache_dir(), "op_registry",
                        f"tensorflow-{tf.__version__}-text-{tensorflow_text.__version__}.json")
    try:
        with open(path, encoding="utf-8") as f:
            known = json.load(f)
        if isinstance(known, dict) and {"core", "libraries"} <= set(known):
            return known
    except (OSError, ValueError):
        pass
    known = _read_registry()
    # staged under a name of this process's: two processes may write the same file at once
    staging = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(staging, "w", encoding="utf-8") as f:
            json.dump(known, f)
        os.replace(staging, path)
    except OSError:  # a cache folder that cannot be written (a read-only home): not kept
        with contextlib.suppress(OSError):
            os.remove(staging)
    return known


def _read_registry():
    folder = os.path.dirname(tensorflow_text.__file__)
    result = subprocess.run([sys.executable, "-c", _REGISTRY, folder], capture_output=True,
                            text=True, check=False, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    if result.returncode:
        raise RuntimeError(f"listing TensorFlow's ops failed: {result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def export_ops(export_dir):
    """{op type: count} of every node of the export's graph and of its functions (calls of the
    graph's own functions are not ops)."""
    from tensorflow.core.protobuf import saved_model_pb2
    saved = saved_model_pb2.SavedModel()
    with fs.open(fs.join(export_dir, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    counts = {}
    for meta in saved.meta_graphs:
        library = meta.graph_def.library
        functions = {f.signature.name for f in library.function}
        nodes = list(meta.graph_def.node) + [n for f in library.function for n in f.node_def]
        for node in nodes:
            if node.op not in functions:
                counts[node.op] = counts.get(node.op, 0) + 1
    return counts


def op_problems(ops, known=None):
    """[(op, why TF Serving would not run it)] of the op names `ops`, in name order."""
    known = known or registry()
    core = set(known["core"]) - set(PYTHON_ONLY_OPS)
    library_of = {op: name for name, names in known["libraries"].items() for op in names}
    problems = []
    for op in sorted(ops):
        if op in core:
            continue
        if op in PYTHON_ONLY_OPS:
            why = ("calls back into Python (tf.py_function / tf.numpy_function), which TF "
                   "Serving has not")
        elif op in library_of and library_of[op] in SERVING_TEXT_LIBRARIES:
            continue
        elif op in library_of:
            why = (f"a TF Text op of {library_of[op]}, which TF Serving's bundled TF Text "
                   f"{SERVING_TEXT_VERSION} ops_lib does not link")
        else:
            why = ("registered by neither TensorFlow nor TF Text: a custom op library TF "
                   "Serving lacks")
        problems.append((op, why))
    return problems


class SessionModel:
    """An export loaded as TF Serving loads it (see the module docstring); `call(signature,
    {input name: array})` -> {output name: array}."""

    def __init__(self, export_dir):
        fs.check(export_dir, "the export")
        if not fs.exists(fs.join(export_dir, "saved_model.pb")):
            found = files.export_inside(export_dir)
            hint = f" (the export is {found})" if found else ""
            raise UsageError(f"{export_dir}: no saved_model.pb{hint}")
        incomplete = files.check_complete(export_dir)
        if incomplete:
            raise UsageError(f"{export_dir}: not a whole export ({incomplete})")
        self.graph = tf.Graph()
        self.session = tf.compat.v1.Session(graph=self.graph)
        with self.graph.as_default():
            meta = tf.compat.v1.saved_model.loader.load(
                self.session, [tf.saved_model.SERVING], export_dir)
        # `__saved_model_init_op` is the init op's entry, not a signature TF Serving serves
        self.signatures = {k: v for k, v in meta.signature_def.items() if not k.startswith("__")}

    def call(self, signature, inputs):
        definition = self.signatures[signature]
        feed = {definition.inputs[name].name: value for name, value in inputs.items()}
        fetch = {name: info.name for name, info in definition.outputs.items()}
        return self.session.run(fetch, feed)

    def close(self):
        self.session.close()


def sample_inputs(definition):
    """Two rows of inputs for a SignatureDef: texts for strings, 1 for ints, 0.5 for floats."""
    inputs = {}
    for name, info in definition.inputs.items():
        dtype = tf.dtypes.as_dtype(info.dtype)
        if dtype == tf.string:
            texts = SAMPLE_BY_NAME.get(name, SAMPLE_STRINGS)
            inputs[name] = np.array([t.encode() for t in texts], dtype=object)
        elif dtype.is_integer:
            inputs[name] = np.ones(2, dtype.as_numpy_dtype)
        else:
            inputs[name] = np.full(2, 0.5, dtype.as_numpy_dtype)
    return inputs


def _json_value(array):
    """An output array as TF Serving's REST API writes it: strings as UTF-8 text (base64 in
    `{"b64": ...}` when not valid UTF-8), numbers as numbers."""
    if array.dtype.kind in "SO":
        def text(value):
            if isinstance(value, str):
                return value
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError:
                return {"b64": base64.b64encode(value).decode("ascii")}
        return np.vectorize(text, otypes=[object])(array).tolist() if array.size else []
    return array.tolist()


def _from_json(values, info):
    dtype = tf.dtypes.as_dtype(info.dtype)
    if dtype == tf.string:
        def raw(value):
            return base64.b64decode(value["b64"]) if isinstance(value, dict) else value.encode()
        return np.array([raw(v) for v in values], dtype=object)
    return np.array(values, dtype=dtype.as_numpy_dtype)


def rest_predict(model, request, signature="serving_default"):
    """The JSON response TF Serving's REST `:predict` gives to `request` (a JSON string):
    the row format (`instances`: one object per row by input name, or bare values when the
    signature has one input) answers `predictions` (one object per row, or bare values when it
    has one output); the columnar format (`inputs`) answers `outputs`."""
    body = json.loads(request)
    signature = body.get("signature_name", signature)
    definition = model.signatures[signature]
    names = list(definition.inputs)
    if "instances" in body:
        rows = [r if isinstance(r, dict) else {names[0]: r} for r in body["instances"]]
        columns = {n: [r[n] for r in rows] for n in names}
    else:
        given = body["inputs"]
        columns = given if isinstance(given, dict) else {names[0]: given}
    inputs = {n: _from_json(columns[n], definition.inputs[n]) for n in names}
    values = {k: _json_value(v) for k, v in model.call(signature, inputs).items()}
    if "instances" in body:
        rows = [{k: v[i] for k, v in values.items()} for i in range(len(rows))]
        return json.dumps(dict(predictions=[
            next(iter(r.values())) if len(r) == 1 else r for r in rows]))
    return json.dumps(dict(outputs=next(iter(values.values())) if len(values) == 1 else values))


def grpc_predict(model, request_bytes):
    """The serialized `PredictResponse` TF Serving's gRPC `Predict` gives to a serialized
    `PredictRequest` (package tensorflow-serving-api)."""
    from tensorflow_serving.apis import predict_pb2
    request = predict_pb2.PredictRequest.FromString(request_bytes)
    signature = request.model_spec.signature_name or "serving_default"
    inputs = {name: tf.make_ndarray(proto) for name, proto in request.inputs.items()}
    response = predict_pb2.PredictResponse()
    response.model_spec.CopyFrom(request.model_spec)
    for name, value in model.call(signature, inputs).items():
        if not request.output_filter or name in request.output_filter:
            response.outputs[name].CopyFrom(tf.make_tensor_proto(value))
    return response.SerializeToString()


def client_requests(inputs, signature="serving_default"):
    """What a client sends for `inputs` ({input name: array of rows}): the REST row request,
    the REST columnar request, and a serialized `PredictRequest`."""
    from tensorflow_serving.apis import predict_pb2
    columns = {name: _json_value(value) for name, value in inputs.items()}
    count = len(next(iter(columns.values())))
    rows = [{name: values[i] for name, values in columns.items()} for i in range(count)]
    request = predict_pb2.PredictRequest()
    request.model_spec.name, request.model_spec.signature_name = "model", signature
    for name, value in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
    return (json.dumps(dict(signature_name=signature, instances=rows)),
            json.dumps(dict(signature_name=signature, inputs=columns)),
            request.SerializeToString())


def _reason(message):
    """The line of a TensorFlow error message that says what failed."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    said = [line for line in lines if not line.startswith(
        ("Graph execution error", "Detected at node", "File ", "[[", "Stack trace"))]
    return (said or lines or ["(no message)"])[0]


def _signature_report(model, signature):
    """How one signature fares: its inputs and outputs, then `error` (the session's failure)
    or whether each request format gave the session's outputs."""
    from tensorflow_serving.apis import predict_pb2
    definition = model.signatures[signature]
    report = dict(inputs=sorted(definition.inputs), outputs=sorted(definition.outputs))
    inputs = sample_inputs(definition)
    try:
        direct = model.call(signature, inputs)
    except tf.errors.OpError as e:
        report["error"] = _reason(e.message)
        return report
    expected = {k: _json_value(v) for k, v in direct.items()}
    row, columnar, request = client_requests(inputs, signature)
    predictions = json.loads(rest_predict(model, row))["predictions"]
    if len(expected) == 1:
        predictions = [{next(iter(expected)): p} for p in predictions]
    report["rest_rows"] = all(predictions[i] == {k: v[i] for k, v in expected.items()}
                              for i in range(len(predictions)))
    outputs = json.loads(rest_predict(model, columnar))["outputs"]
    report["rest_columns"] = outputs == (expected if len(expected) > 1 else
                                         next(iter(expected.values())))
    response = predict_pb2.PredictResponse.FromString(grpc_predict(model, request))
    report["grpc"] = set(response.outputs) == set(direct) and all(
        np.array_equal(tf.make_ndarray(response.outputs[k]), v) for k, v in direct.items())
    return report


def check(export_dir):
    """The conformance report of an export: `ops` (distinct op types), `problems` ([{op,
    why}]), `signatures` ({name: `_signature_report`}) and `ok`."""
    model = SessionModel(export_dir)
    try:
        ops = export_ops(export_dir)
        problems = [dict(op=op, why=why) for op, why in op_problems(ops)]
        signatures = {name: _signature_report(model, name) for name in sorted(model.signatures)}
    finally:
        model.close()
    ok = not problems and all(
        "error" not in s and s["rest_rows"] and s["rest_columns"] and s["grpc"]
        for s in signatures.values())
    return dict(export=fs.absolute(export_dir), ok=ok, ops=len(ops), problems=problems,
                signatures=signatures)
