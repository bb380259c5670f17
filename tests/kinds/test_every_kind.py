"""The harness every kind of `zoo.kinds.table.KINDS` passes, on the tiny encoder and a few rows
its data spec reads (`tests/kinds/samples.py`): train -> checkpoint -> resume -> eval ->
predict -> export -> `zoo.serving` gives what predict wrote -> the export answers as TF Serving
would (`zoo.export.conformance`), then what the kind declares it can do (`Task.CAN`): check its
data, explain, export to LiteRT (which labels as the SavedModel does). A new kind gets these
checks by being in the table; what is particular to a kind stays in its own tests."""
import contextlib
import io
import json
import os

import pytest
import tensorflow as tf

from tests.helpers import TOKENIZER_TEXTS, zoo_inline
from tests.kinds import samples
from zoo import litert as litert_runner
from zoo import serving
from zoo.export import conformance
from zoo.kinds import classification, multilabel, regression, squad, table, tagging

SETTINGS = dict(encoder_handle="tiny", max_seq_length=32, train_batch_size=8, eval_batch_size=8,
                learning_rate=1e-3)
KIND_SETTINGS = {"squad": dict(max_seq_length=48, max_query_length=12, doc_stride=16),
                 "tagging": dict(doc_stride=16)}
ROWS = 16  # two steps an epoch


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _same_rows(predicted, served, keys):
    """Predict's rows (JSON lines) and `zoo.serving`'s agree on `keys`; numbers to 1e-4."""
    assert len(predicted) == len(served)
    for row, got in zip(predicted, served):
        for key in keys:
            assert got[key] == pytest.approx(row[key], abs=1e-4), (key, row, got)


def _class_rows(output, served, inputs):
    del inputs
    _same_rows(_lines(output), served, ("label", "probabilities"))


def _labels_rows(output, served, inputs):
    del inputs
    _same_rows(_lines(output), served, ("labels", "probabilities"))


def _score_rows(output, served, inputs):
    del inputs
    _same_rows(_lines(output), served, ("score",))


def _answers(output, served, inputs):
    """The same answers, each where the export says it is in its context."""
    with open(output, encoding="utf-8") as f:
        answers = json.load(f)
    assert list(answers.values()) == [row["answer"] for row in served]
    for item, row in zip(inputs, served):
        assert item["context"][row["start"]:row["end"]] == row["answer"]


def _tags(output, served, inputs):
    """The same tag for each word; each entity where the export says it is in its text."""
    with open(output, encoding="utf-8") as f:
        sentences = f.read().strip("\n").split("\n\n")
    assert [[line.split("\t")[1] for line in s.split("\n")] for s in sentences] == \
        [row["tags"] for row in served]
    for text, row in zip(inputs, served):
        assert len(row["tags"]) == len(row["word_start"]) == len(row["word_end"])
        for entity in row["entities"]:
            assert text[entity["start"]:entity["end"]] == entity["text"]
            assert entity["type"] in ("PER", "LOC") and 0 < entity["score"] <= 1


# What predict writes ({task class: (output file name, check(output, zoo.serving's rows,
# inputs))}).
AGREES = {classification.Classification: ("predictions.jsonl", _class_rows),
          regression.Regression: ("predictions.jsonl", _score_rows),
          multilabel.MultiLabel: ("predictions.jsonl", _labels_rows),
          squad.Squad: ("predictions.json", _answers),
          tagging.Tagging: ("predictions.txt", _tags)}


@pytest.fixture(scope="module", params=sorted(table.KINDS))
def lifecycle(request, tiny_hub, tmp_path_factory):
    """One kind trained for an epoch, then resumed for a second with evaluation."""
    del tiny_hub
    kind = table.KINDS[request.param]
    root = tmp_path_factory.mktemp(kind.name)
    data, layout, inputs = samples.write(kind, root / "data", ROWS)
    model_dir = str(root / "model")
    values = dict(SETTINGS, **KIND_SETTINGS.get(kind.name, {}), **data, **layout,
                  model_dir=model_dir)
    table.run(kind.name, "train", num_train_epochs=1, **values)
    steps = int(tf.train.latest_checkpoint(f"{model_dir}/checkpoints").rsplit("-", 1)[1])
    with contextlib.redirect_stdout(io.StringIO()) as said:
        table.run(kind.name, "train_and_eval", num_train_epochs=2, allow_changed_settings=True,
                  **values)
    print(said.getvalue())  # (pytest shows it with a failure)
    return dict(kind=kind, data=data, layout=layout, inputs=inputs, model_dir=model_dir,
                steps=steps, root=root, said=said.getvalue())


def _zoo(mode, lifecycle, *flags):
    """`zoo MODE --model_dir=... DATA FLAGS... FLAGS...`: the command line given the model dir
    and where the data is alone (no task, no model flags, no columns: run.json gives them)."""
    data = [f"--{key}={value}" for key, value in lifecycle["data"].items()]
    result = zoo_inline(mode, f"--model_dir={lifecycle['model_dir']}", *data, *flags)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _export(lifecycle):
    """The SavedModel `zoo export --model_dir=...` writes, made once a kind."""
    if "export" not in lifecycle:
        export = str(lifecycle["root"] / "export")
        result = zoo_inline("export", f"--model_dir={lifecycle['model_dir']}",
                            f"--export_dir={export}")
        assert result.returncode == 0, result.stderr[-3000:]
        lifecycle["export"] = export
    return lifecycle["export"]


def _read(model_dir, name):
    with open(os.path.join(model_dir, name), encoding="utf-8") as f:
        return json.load(f)


def test_a_second_run_resumes_from_the_first_runs_checkpoint(lifecycle):
    model_dir = lifecycle["model_dir"]
    assert lifecycle["steps"] == ROWS // SETTINGS["train_batch_size"]
    assert _read(model_dir, "train_results.json")["steps"] == lifecycle["steps"]  # the rest
    assert tf.train.latest_checkpoint(f"{model_dir}/checkpoints").endswith(
        f"-{2 * lifecycle['steps']}")
    assert "warning: resuming with a changed setting: num_train_epochs: 1.0 -> 2.0" in \
        lifecycle["said"]
    assert _read(model_dir, "run.json")["num_train_epochs"] == 2.0


def test_eval_mode_reproduces_the_last_evaluation(lifecycle):
    kind, model_dir = lifecycle["kind"], lifecycle["model_dir"]
    last = _read(model_dir, "eval_results.json")
    _zoo("eval", lifecycle)
    again = _read(model_dir, "eval_results.json")
    assert kind.main_metric(again) is not None
    numbers = {k: v for k, v in last.items() if isinstance(v, float)}
    assert numbers and {k: again[k] for k in numbers} == pytest.approx(numbers, abs=1e-5)


def test_the_export_serves_what_predict_wrote_and_tf_serving_would_load_it(lifecycle):
    kind = lifecycle["kind"]
    if kind.task not in AGREES:
        raise AssertionError(f"{kind.name}: tests/kinds/test_every_kind.py does not know what "
                             f"{kind.task.__name__} predicts: add it to AGREES")
    name, agrees = AGREES[kind.task]
    output = str(lifecycle["root"] / name)
    _zoo("predict", lifecycle, f"--output_file={output}")
    export = _export(lifecycle)
    served = serving.load(export).predict(lifecycle["inputs"])
    assert len(served) == len(lifecycle["inputs"])
    agrees(output, served, lifecycle["inputs"])
    report = conformance.check(export)
    assert report["ok"] and report["problems"] == [], report


def _litert_rows_agree(expected, got):
    """A LiteRT export's rows and the SavedModel's: the same keys, numbers to 1e-4, and the
    same label where the two most probable classes are not a near tie."""
    assert len(got) == len(expected)
    for want, row in zip(expected, got):
        assert set(row) == set(want)
        for key, value in want.items():
            if key in ("label", "label_id"):
                ranked = sorted(want["probabilities"].values())
                if ranked[-2] < ranked[-1] - 1e-3:
                    assert row[key] == value, (key, want, row)
            else:
                assert row[key] == pytest.approx(value, abs=1e-4), (key, want, row)


def test_what_the_kind_can_do_besides(lifecycle):
    kind, model_dir = lifecycle["kind"], lifecycle["model_dir"]
    can, data = kind.task.CAN, lifecycle["data"]
    if can.check_data:  # every split given, read as training reads it
        reports = table.run(kind.name, "check_data", model_dir=str(lifecycle["root"] / "check"),
                            **dict(SETTINGS, **data, **lifecycle["layout"]))
        assert reports["train"]["rows"] == ROWS and reports["train"]["bad_rows"] == 0, reports
        assert reports["eval"]["rows"] == ROWS // 2, reports
    if can.explain:
        output = str(lifecycle["root"] / "explain.jsonl")
        table.run(kind.name, "explain", model_dir=model_dir, output_file=output, explain_steps=4,
                  **data)
        lines = _lines(output)
        assert len(lines) == len(lifecycle["inputs"]) and all(line["words"] for line in lines)
    if can.litert:  # the harness's inputs and texts that test a tokenizer
        path = table.run(kind.name, "export", model_dir=model_dir, export_format="litert",
                         litert_quantization="none", export_dir=str(lifecycle["root"] / "lite"))
        saved = serving.load(_export(lifecycle))
        texts = TOKENIZER_TEXTS if len(saved.input_names) == 1 else list(
            zip(TOKENIZER_TEXTS, TOKENIZER_TEXTS[::-1]))
        lite = litert_runner.load(path)
        inputs = lifecycle["inputs"] + texts
        _litert_rows_agree(saved.predict(inputs), lite.predict(inputs))
        assert lite.metadata == dict(label_names=saved.label_names, seq_length=32,
                                     input_names=saved.input_names, quantization="none")
