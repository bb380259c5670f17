"""zoo.export.conformance and `zoo check-export`: every kind of export loads in a TF1 session
and answers TF Serving's REST and gRPC requests; an op TF Serving lacks is named."""
import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text

from tests.helpers import ROOT
from zoo.base.errors import UsageError
from zoo.compute import precision
from zoo.data import squad_windows, tagging
from zoo.export import conformance, explain, frozen_core, savedmodel
from zoo.model import cores

NAMES = ["neg", "neu", "pos"]


def _text_modules(core, packer):
    """The class and multi-label signatures of the tasks' exports, on `core`."""
    top_k = tf.TensorSpec([None], tf.int32, name="top_k")
    threshold = tf.TensorSpec([None], tf.float32, name="threshold")
    labels = savedmodel.label_set_outputs(0.5)
    return {
        "class": savedmodel.TextServing(core, packer, savedmodel.class_outputs,
                                                 label_names=NAMES),
        "top_k": savedmodel.TextServing(core, packer, savedmodel.top_k_outputs(3),
                                                 label_names=NAMES, extra=[top_k]),
        "labels": savedmodel.TextServing(core, packer, labels, label_names=NAMES),
        "threshold": savedmodel.TextServing(core, packer, labels, label_names=NAMES,
                                                     extra=[threshold]),
        "pairs": savedmodel.TextServing(core, packer, savedmodel.class_outputs,
                                                 pair=True, label_names=NAMES)}


@pytest.fixture(scope="module")
def every_kind(tiny_hub, tmp_path_factory):
    """One export with a signature of every kind the tasks write (a multi-task export is
    several in one), fp32, and bf16 where this CPU can write it."""
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=32)
    core = cores.classifier_core(tiny_hub + "/encoder", num_classes=3)
    vocab = tagging.TagVocab(["O", "B-LOC", "I-LOC"])
    modules = dict(_text_modules(core, packer))
    modules.update(
        score=savedmodel.TextServing(cores.regression_core(tiny_hub + "/encoder"), packer,
                                     savedmodel.score_outputs),
        squad2=savedmodel.SpanServing(cores.span_core(tiny_hub + "/encoder"),
                                      squad_windows.Windower(packer, 48, 16, 12),
                                      null_score_diff_threshold=0.0),
        tags=savedmodel.TaggingServing(cores.tagging_core(tiny_hub + "/encoder", len(vocab)),
                                       tagging.TagWindower(packer, 24, 8), vocab),
        explain=explain.ExplainServing(core, packer, explain.CLASS, NAMES, steps=4))
    if not _bf16_refused():  # the bf16 graph (its small-request copy included)
        modules["class_bf16"] = savedmodel.TextServing(
            frozen_core.serving_core(core, "bf16"), packer, savedmodel.class_outputs,
            label_names=NAMES)
    path = str(tmp_path_factory.mktemp("conformance") / "export" / "1")
    return savedmodel.save(path, modules), sorted(modules)


def _bf16_refused():
    try:
        precision.check_export_cpu("bf16")
    except UsageError:
        return True
    return False


def test_every_kind_of_export_loads_in_a_session_and_answers_rest_and_grpc(every_kind):
    path, names = every_kind
    report = conformance.check(path)
    assert report["problems"] == [] and report["ops"] > 30
    assert sorted(report["signatures"]) == sorted(names + ["serving_default"])
    for name, signature in report["signatures"].items():
        assert "error" not in signature, (name, signature)
        assert signature["rest_rows"] and signature["rest_columns"] and signature["grpc"], name
    assert report["ok"]


def test_a_clients_rest_request_gets_tf_servings_response(every_kind):
    model = conformance.SessionModel(every_kind[0])
    try:
        rows = json.loads(conformance.rest_predict(model, json.dumps(
            {"signature_name": "class", "instances": [{"text": "a great film"}, "a dull one"]})))
        columns = json.loads(conformance.rest_predict(model, json.dumps(
            {"signature_name": "top_k", "inputs": {"text": ["a great film"], "top_k": [2]}})))
        direct = model.call("top_k", {"text": np.array([b"a great film"], dtype=object),
                                      "top_k": np.array([2], np.int32)})
    finally:
        model.close()
    assert [sorted(r) for r in rows["predictions"]] == [["label", "label_id", "logits", "probabilities"]] * 2
    assert rows["predictions"][0]["label"] in NAMES
    assert columns["outputs"]["top_k_labels"] == [[n.decode() for n in direct["top_k_labels"][0]]]
    assert columns["outputs"]["top_k_probabilities"] == direct["top_k_probabilities"].tolist()


class PythonInside(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def serve(self, text):
        length = tf.py_function(lambda t: np.array([len(s) for s in t.numpy()], np.int64),
                                [text], tf.int64)
        return {"length": length}


def test_an_op_tf_serving_lacks_is_named_and_the_command_fails(tmp_path):
    module = PythonInside()
    path = str(tmp_path / "broken" / "1")
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    report = conformance.check(path)
    assert not report["ok"]
    assert [p["op"] for p in report["problems"]] == ["EagerPyFunc"]
    assert "Python" in report["problems"][0]["why"]
    result = subprocess.run([sys.executable, "-m", "zoo.cli.main", "check-export", path],
                            cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "would NOT serve" in result.stdout and "op EagerPyFunc:" in result.stdout


def test_op_problems_tell_tensorflow_tf_text_inside_and_outside_tf_serving_and_others():
    known = {"core": ["Const", "MatMul", "EagerPyFunc"],
             "libraries": {"wordpiece_tokenizer": ["WordpieceTokenizeWithOffsets"],
                           "a_newer_library": ["NewTextOp"]}}
    problems = dict(conformance.op_problems(
        ["Const", "MatMul", "WordpieceTokenizeWithOffsets", "NewTextOp", "EagerPyFunc",
         "MyCustomOp"], known))
    assert sorted(problems) == ["EagerPyFunc", "MyCustomOp", "NewTextOp"]
    assert "a_newer_library" in problems["NewTextOp"]
    assert conformance.SERVING_TEXT_VERSION in problems["NewTextOp"]
    assert "custom op" in problems["MyCustomOp"]


def test_the_registry_splits_tensorflows_ops_from_each_tf_text_librarys():
    known = conformance.registry()
    assert {"MatMul", "StringSplitV2", "EagerPyFunc"} <= set(known["core"])
    assert "FastWordpieceTokenizeWithOffsets" in known["libraries"]["fast_wordpiece_tokenizer"]
    assert "NormalizeUTF8" in known["libraries"]["normalize_ops"]
    assert set(conformance.SERVING_TEXT_LIBRARIES) <= set(known["libraries"])


@pytest.fixture
def fresh_registry(monkeypatch, tmp_path):
    """An empty cache folder, and `registry()` as a new process finds it (not yet read); the
    op lists read in its place are counted."""
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path))
    reads = []
    monkeypatch.setattr(conformance, "_read_registry", lambda: reads.append(1) or dict(
        core=["MatMul"], libraries={"normalize_ops": ["NormalizeUTF8"]}))
    conformance.registry.cache_clear()
    yield tmp_path / "op_registry", reads
    conformance.registry.cache_clear()


def test_the_registry_is_read_once_and_kept_under_the_packages_versions(fresh_registry):
    folder, reads = fresh_registry
    first = conformance.registry()
    conformance.registry.cache_clear()  # another process
    assert conformance.registry() == first and len(reads) == 1
    (kept,) = folder.iterdir()
    assert kept.name == f"tensorflow-{tf.__version__}-text-{tensorflow_text.__version__}.json"
    kept.write_text('{"core": ["MatMul"')  # cut short
    conformance.registry.cache_clear()
    assert conformance.registry() == first and len(reads) == 2
    assert json.loads(kept.read_text()) == first and [p.name for p in folder.iterdir()] == [
        kept.name]


def test_a_cache_folder_that_cannot_be_written_still_gives_the_registry(fresh_registry,
                                                                         monkeypatch, tmp_path):
    _, reads = fresh_registry
    blocked = tmp_path / "a_file"
    blocked.write_text("")
    monkeypatch.setenv("ZOO_CACHE_DIR", str(blocked))  # op_registry/ cannot be made in it
    assert conformance.registry()["core"] == ["MatMul"] and len(reads) == 1
    assert blocked.read_text() == ""


def test_a_folder_without_an_export_is_named(tmp_path, every_kind):
    parent = every_kind[0].rsplit("/", 1)[0]
    with pytest.raises(UsageError, match=r"no saved_model.pb \(the export is .*/1\)"):
        conformance.SessionModel(parent)
