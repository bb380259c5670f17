"""zoo.serving: Python inference on an export, in a process that imports only tensorflow and
zoo.serving (TF Text's op libraries, not its Python); one dict per input in input order; its
command line (`zoo serve-predict`, `python -m zoo.serving`: zoo.cli.serve_predict)."""
import gc
import io
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.helpers import ROOT, executed_graphs
from zoo import serving
from zoo.cli import serve_predict
from zoo.export import python_load, savedmodel
from zoo.model import cores

PREDICT = """
import gc, json, sys
from zoo.serving import load
model = load(sys.argv[1], batch_size=3)
rows = model.predict(json.loads(sys.argv[2]))
light = ("zoo.serving", "zoo.base", "zoo.base.errors", "zoo.base.files", "zoo.base.fs",
         "zoo.compute", "zoo.compute.call_options", "zoo.compute.fusion", "zoo.compute.onednn",
         "zoo.compute.precision", "zoo.evaluation",
         "zoo.evaluation.explanations", "zoo.export", "zoo.export.python_load",
         "zoo.export.text_ops")
heavy = sorted(m for m in sys.modules if m.split(".")[0] in (
    "keras", "tf_keras", "matplotlib", "tensorflow_hub", "tensorflow_text")
    or (m.startswith("zoo.") and m not in light))
print(json.dumps(dict(rows=rows, heavy=heavy, input_names=model.input_names,
                      collecting=gc.isenabled())))
"""


def _python(*args, stdin=None):
    env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env, input=stdin)


def _predict(export_dir, inputs):
    result = _python("-c", PREDICT, export_dir, json.dumps(inputs))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def pair_export(tiny_hub, tmp_path_factory):
    core = cores.classifier_core(tiny_hub + "/encoder", num_classes=3)
    packer = cores.TextPacker(tiny_hub + "/preprocessor", seq_length=32)
    path = str(tmp_path_factory.mktemp("serving") / "export" / "1")
    savedmodel.export_classifier(path, core, packer, ["neg", "neu", "pos"], pair=True)
    return path


PAIRS = [["a fine film", "yes"], ["a dull, long and rather tiring film", "no"], ["ok", "fine"],
         ["the longest text of them all, by a good margin, it is", "hm"], ["short", "x"],
         ["medium length text", "y"], ["z", "z"]]


def test_predict_gives_one_row_per_input_in_order_without_the_training_stack(pair_export):
    out = _predict(pair_export, PAIRS)
    # no training stack, no Keras (neither TensorFlow's import nor tensorflow_text's brings
    # one); the garbage collector runs again after the import and the load
    assert out["heavy"] == [] and out["collecting"] is True
    assert out["input_names"] == ["text_a", "text_b"]
    signature = tf.saved_model.load(pair_export).signatures["serving_default"]
    expected = signature(text_a=tf.constant([a for a, _ in PAIRS]),
                         text_b=tf.constant([b for _, b in PAIRS]))
    rows = out["rows"]
    assert len(rows) == len(PAIRS)  # 7 inputs, in 3 batches sorted by length, back in order
    assert [r["label"] for r in rows] == [x.decode() for x in expected["label"].numpy()]
    for row, probabilities in zip(rows, expected["probabilities"].numpy()):
        assert list(row["probabilities"]) == ["neg", "neu", "pos"]
        np.testing.assert_allclose(list(row["probabilities"].values()), probabilities,
                                   atol=1e-5)
        assert row["score"] == pytest.approx(max(probabilities), abs=1e-5)
    # dicts by input name give the same (in other batches: trimmed to other lengths)
    named = _predict(pair_export, [{"text_a": a, "text_b": b} for a, b in PAIRS[:2]])
    _assert_same_rows(named["rows"], rows[:2])


def test_the_load_leaves_out_only_what_the_main_graph_calls_and_predicts_as_a_whole_one(
        pair_export):
    """zoo.export.python_load on an export: the saver's functions and the main graph's call of
    the table initializer go; the signature predicts as it does loaded whole."""
    saved_model = python_load.read(pair_export)
    graph = saved_model.meta_graphs[0].graph_def
    called = {node.attr["f"].func.name for node in graph.node if "f" in node.attr}
    dropped = python_load.lean(saved_model)
    assert len(dropped) == 3 and set(dropped) <= called, dropped
    inputs = dict(text_a=tf.constant(["a fine film"]), text_b=tf.constant(["yes"]))
    lean = serving.load(pair_export)._serve(**inputs)
    whole = tf.saved_model.load(pair_export).signatures["serving_default"](**inputs)
    assert lean["probabilities"].numpy().tolist() == whole["probabilities"].numpy().tolist()


def test_one_input_is_predicted_without_grappler_and_as_in_a_batch(pair_export, monkeypatch):
    monkeypatch.setattr(serving, "ONE_INPUT_WITHOUT_GRAPPLER", True)  # (whatever this CPU has)
    model = serving.load(pair_export)
    alone = executed_graphs(lambda: model.predict([PAIRS[0]]))
    together = executed_graphs(lambda: model.predict(PAIRS[:2]))
    # each instantiated at its first call: alone without Grappler's passes (which prune the
    # graph), the batch with them
    assert alone and together
    assert sum(len(g.node) for g in alone) > sum(len(g.node) for g in together)
    _assert_same_rows(model.predict([PAIRS[0]]), model.predict(PAIRS[:2])[:1])


def test_one_input_of_a_bf16_export_keeps_grappler(pair_export, monkeypatch):
    monkeypatch.setattr(serving, "ONE_INPUT_WITHOUT_GRAPPLER", True)
    monkeypatch.setattr(python_load, "runs_bfloat16", lambda saved_model: True)  # (as if bf16)
    model = serving.load(pair_export)
    alone = executed_graphs(lambda: model.predict([PAIRS[0]]))
    together = executed_graphs(lambda: model.predict(PAIRS[:2]))
    # one instantiation, with Grappler's passes, made at the first call and reused by the batch
    assert alone and not together


def test_with_onednns_rewrites_off_one_input_keeps_grappler(monkeypatch):
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    result = _python("-c", "from zoo import serving; print(serving.ONE_INPUT_WITHOUT_GRAPPLER)")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["False"]


def _assert_same_rows(rows, expected):
    assert len(rows) == len(expected)
    for row, other in zip(rows, expected):
        assert row["label"] == other["label"] and row["probabilities"] == pytest.approx(
            other["probabilities"], abs=1e-5)


def test_the_command_line_prints_a_json_line_per_input_line(pair_export):
    lines = "".join(f"{a}\t{b}\n" for a, b in PAIRS)
    result = _python("-m", "zoo.serving", pair_export, "--batch_size=2", stdin=lines)
    assert result.returncode == 0, result.stderr[-3000:]
    printed = [json.loads(line) for line in result.stdout.strip().splitlines()]
    _assert_same_rows(printed, serving.load(pair_export).predict(PAIRS))


def test_bad_inputs_name_the_input_or_the_line(pair_export):
    from zoo.serving import load
    model = load(pair_export)
    with pytest.raises(ValueError, match=r"input 1: 1 text\(s\), but the model takes text_a, "
                                         "text_b"):
        model.predict([("a", "b"), "just one"])
    with pytest.raises(ValueError, match="input 0: no text_b"):
        model.predict([{"text_a": "a"}])
    result = _python("-m", "zoo.serving", pair_export, stdin="a\tb\nonly one\n")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "error: stdin:2: 1 text(s), but the model takes text_a, text_b" in result.stderr


def test_the_api_refuses_what_it_cannot_predict_and_reads_bytes(pair_export):
    model = serving.load(pair_export)
    with pytest.raises(TypeError, match=r"predict takes a list of inputs, not one str: for a "
                                        r"single text, predict\(\[text\]\)"):
        model.predict("great film")  # not one prediction per character
    for bad, message in [([5], "expected a text, a tuple of texts or a dict, not 5"),
                         ([None], "expected a text, a tuple of texts or a dict, not None"),
                         ([("a", None)], "text_b is not a string: None"),
                         ([("a", "b\ud800")], "text_b is not valid Unicode"),
                         ([(b"\xff", "b")], "text_a is not valid UTF-8")]:
        with pytest.raises(ValueError, match=f"input 0: {re.escape(message)}"):
            model.predict(bad)
    as_bytes = model.predict([("a fine film".encode(), b"yes")])
    _assert_same_rows(as_bytes, model.predict([("a fine film", "yes")]))
    with pytest.raises(ValueError, match="batch_size must be a whole number, at least 1, not 0"):
        serving.load(pair_export, batch_size=0)


def test_a_missing_or_unreadable_export_is_named(pair_export, tmp_path):
    model_dir = os.path.dirname(os.path.dirname(pair_export))  # .../serving/export/1 -> serving
    with pytest.raises(FileNotFoundError, match="no such directory"):
        serving.load(str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match=f"not an export .*; the export is "
                                                f"{re.escape(pair_export)}"):
        serving.load(model_dir)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "saved_model.pb").write_bytes(b"not a protocol buffer")
    with pytest.raises(ValueError, match="broken: not a readable SavedModel"):
        serving.load(str(broken))


def _cli(monkeypatch, capsys, argv, stdin=""):
    """`zoo serve-predict` in this process: (exit message or None, stdout lines, stderr)."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    try:
        serve_predict.main(argv)
        code = None
    except SystemExit as e:
        code = str(e.code)
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_the_command_line_refuses_with_one_error_line(pair_export, monkeypatch, capsys, tmp_path):
    for argv, message in [([pair_export, "--batch_size=0"], "--batch_size must be a whole "
                           "number, at least 1, not '0'"),
                          ([pair_export, "--batch_size=x"], "not 'x'"),
                          ([pair_export, "--format=xml"], "--format must be one of"),
                          ([pair_export, "--batchsize=2"], "unknown flag --batchsize"),
                          ([str(tmp_path / "nowhere")], "error: " + str(tmp_path / "nowhere")
                           + ": no such directory")]:
        code, out, _ = _cli(monkeypatch, capsys, argv, "a\tb\n")
        assert code is not None and message in code and not out, (argv, code)
    code, out, _ = _cli(monkeypatch, capsys, [pair_export], "a\tb\nc\td\nonly one\ne\tf\n")
    assert code.startswith("error: stdin:3: 1 text(s)") and "2 lines before it were predicted" \
        in code and len(out) == 2  # the lines before the bad one keep their predictions


def test_min_score_on_the_command_line_leaves_rows_below_it_without_a_label(
        pair_export, monkeypatch, capsys):
    code, out, _ = _cli(monkeypatch, capsys, [pair_export, "--min_score=1"], "a\tb\nc\td\n")
    rows = [json.loads(line) for line in out]
    assert code is None and [r["label"] for r in rows] == [None, None]
    assert all(r["score"] < 1 and r["probabilities"] for r in rows)  # the scores are kept
    code, out, _ = _cli(monkeypatch, capsys, [pair_export, "--min_score=0"], "a\tb\n")
    assert code is None and json.loads(out[0])["label"] is not None
    for bad in ("1.5", "x"):
        code, out, _ = _cli(monkeypatch, capsys, [pair_export, f"--min_score={bad}"], "a\tb\n")
        assert code is not None and "--min_score must be a number in [0, 1]" in code and not out


def test_a_line_is_json_only_when_it_is_an_object_of_input_names(pair_export, monkeypatch,
                                                                   capsys):
    lines = '{"text_a": "a", "text_b": "b"}\n{not json}\tyes\n{"other": 1}\tno\n'
    code, out, err = _cli(monkeypatch, capsys, [pair_export], lines)
    assert code is None and len(out) == 3 and "3 lines in, 3 predictions out" in err
    model = serving.load(pair_export)
    expected = model.predict([("a", "b"), ("{not json}", "yes"), ('{"other": 1}', "no")])
    _assert_same_rows([json.loads(line) for line in out], expected)
    code, _, _ = _cli(monkeypatch, capsys, [pair_export, "--format=json"], "a\tb\n")
    assert code == "error: stdin:1: not a JSON object (0 lines before it were predicted)"
    code, out, _ = _cli(monkeypatch, capsys, [pair_export, "--format=text"],
                        '{"text_a": "a"}\tb\n')
    assert code is None and len(out) == 1


MINIMAL = """
import importlib.util, json, sys
assert importlib.util.find_spec("tf_keras") is None and importlib.util.find_spec(
    "tensorflow_hub") is None, "the environment is not minimal"
from zoo.serving import load
print(json.dumps(load(sys.argv[1]).predict([("a fine film", "yes")])))
"""


def _closure(names):
    """The installed distributions `names` need, with theirs (markers of extras left out)."""
    from importlib import metadata
    from packaging.requirements import Requirement
    found, todo = {}, list(names)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in found:
            continue
        try:
            found[name] = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for line in found[name].requires or []:
            requirement = Requirement(line)
            if not requirement.marker or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found.values()


def test_serving_needs_only_tensorflow_and_tensorflow_text(pair_export, tmp_path):
    """In a fresh virtualenv that sees only tensorflow, tensorflow_text and what they require
    (no tf_keras, no tensorflow_hub), zoo.serving loads an export and predicts."""
    packages = tmp_path / "packages"
    packages.mkdir()
    for dist in _closure(["tensorflow", "tensorflow-text"]):
        for top in {str(f).split("/")[0] for f in dist.files or []} - {"..", ""}:
            if not (packages / top).exists() and os.path.exists(dist.locate_file(top)):
                (packages / top).symlink_to(dist.locate_file(top))
    (packages / "zoo").symlink_to(os.path.join(ROOT, "zoo"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import site; "
                           "print(site.getsitepackages()[0])"], capture_output=True, text=True,
                          check=True).stdout.strip()
    with open(os.path.join(site, "only_tf.pth"), "w", encoding="utf-8") as f:
        f.write(str(packages) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("TF_USE_LEGACY_KERAS", "PYTHONPATH")}
    result = subprocess.run([str(venv / "bin" / "python"), "-c", MINIMAL, pair_export],
                            capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads(result.stdout.strip().splitlines()[-1])
    _assert_same_rows(rows, serving.load(pair_export).predict([("a fine film", "yes")]))


@pytest.mark.parametrize("running", [True, False])
def test_the_collector_is_paused_in_the_block_and_left_as_it_was_even_after_an_error(running):
    was = gc.isenabled()
    (gc.enable if running else gc.disable)()
    try:
        with serving.paused_collector():
            assert not gc.isenabled()
        assert gc.isenabled() is running
        with pytest.raises(KeyError):
            with serving.paused_collector():
                raise KeyError("x")
        assert gc.isenabled() is running
    finally:
        (gc.enable if was else gc.disable)()


def test_run_as_a_module_it_starts_quietly_and_names_bad_bytes(pair_export):
    done = subprocess.run([sys.executable, "-m", "zoo.serving", pair_export],
                          input=b"a\tb\nbad \xff byte\tc\n", capture_output=True, cwd=ROOT,
                          timeout=300, check=False)
    stderr = done.stderr.decode()
    assert done.returncode == 1 and len(done.stdout.splitlines()) == 1
    assert stderr.strip().splitlines() == [
        "error: stdin:2: not valid UTF-8 (byte 4) (1 lines before it were predicted)"], stderr
