"""tasks.squad.train as a user runs it: train_and_eval, predict (complete), export + reload."""
import json
import os
import subprocess
import sys

import pytest

from tests.helpers import run_module

SERVE = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
fn = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
questions, contexts = json.loads(sys.argv[2])
out = fn(question=tf.constant(questions), context=tf.constant(contexts))
print(json.dumps(dict(answer=[a.decode() for a in out["answer"].numpy()],
                      start=out["start"].numpy().tolist(), end=out["end"].numpy().tolist(),
                      score=out["score"].numpy().tolist())))
"""
CITIES = ["Paris", "Berlin", "Madrid", "Rome", "Vienna", "Lisbon", "Dublin", "Prague"]


def _squad(path, n, long_every=0):
    paragraphs = []
    for i in range(n):
        city = CITIES[i % len(CITIES)]
        filler = " ".join(f"word{j}" for j in range(400)) if long_every and i % long_every == 0 else ""
        context = f"{filler} The capital is {city}. Café façade {i}, naïve ünïcödé.".strip()
        start = context.index(city)
        paragraphs.append({"context": context, "qas": [{
            "id": f"q{i}", "question": f"What is the capital number {i}?",
            "answers": [{"text": city, "answer_start": start}]}]})
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}))
    return str(path)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_hub):
    root = tmp_path_factory.mktemp("squad")
    train, dev = _squad(root / "train.json", 48), _squad(root / "dev.json", 9, long_every=3)
    model_dir = str(root / "model")
    result = run_module("tasks.squad.train", f"--train_file={train}", f"--eval_file={dev}",
                        f"--model_dir={model_dir}", "--encoder_handle=tiny",
                        "--max_seq_length=64", "--doc_stride=24", "--train_batch_size=8",
                        "--eval_batch_size=16", "--num_train_epochs=2", "--learning_rate=1e-3",
                        f"--export_dir={model_dir}/export/1", "--mode=train_and_eval")
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(model_dir=model_dir, dev=dev, root=root)


def test_train_and_eval_reports_the_official_metric(trained):
    results = json.load(open(os.path.join(trained["model_dir"], "eval_results.json")))
    assert results["num_questions"] == 9 and 0 <= results["f1"] <= 100
    assert {"exact_match", "f1"} <= set(results)
    timing = json.load(open(os.path.join(trained["model_dir"], "train_results.json")))
    assert timing["train_windows"] >= 48 and timing["windows_per_second"] > 0
    # windows all have one shape: the default fuses the training step with XLA
    assert timing["xla_fusion"] is True


def test_predict_answers_every_question_and_export_agrees_in_a_fresh_process(trained):
    output = os.path.join(trained["root"], "out", "predictions.json")
    result = run_module("tasks.squad.train", "--mode=predict", f"--predict_file={trained['dev']}",
                        f"--model_dir={trained['model_dir']}", "--encoder_handle=tiny",
                        "--max_seq_length=64", "--doc_stride=24", f"--output_file={output}")
    assert result.returncode == 0, result.stderr[-3000:]
    predictions = json.load(open(output))
    nbest = json.load(open(os.path.join(os.path.dirname(output), "nbest_predictions.json")))
    dev = json.load(open(trained["dev"]))["data"][0]["paragraphs"]
    ids = [p["qas"][0]["id"] for p in dev]
    assert sorted(predictions) == sorted(ids) and sorted(nbest) == sorted(ids)
    for p in dev:  # answers are cut from the context
        assert predictions[p["qas"][0]["id"]] in p["context"]
    questions = [p["qas"][0]["question"] for p in dev]
    contexts = [p["context"] for p in dev]
    env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
    served = subprocess.run(
        [sys.executable, "-c", SERVE, os.path.join(trained["model_dir"], "export", "1"),
         json.dumps([questions, contexts])], capture_output=True, text=True, timeout=600, env=env)
    assert served.returncode == 0, served.stderr[-3000:]
    out = json.loads(served.stdout.strip().splitlines()[-1])
    # In-graph windowing and span search give the same answers as Python post-processing,
    # also for contexts of several windows (every third context is ~400 words).
    assert out["answer"] == [predictions[i] for i in ids]
    for answer, start, end, context in zip(out["answer"], out["start"], out["end"], contexts):
        assert context[start:end] == answer


def test_bad_squad_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"data": [{"paragraphs": [{"context": "abc", "qas": [
        {"id": "x", "question": "q?", "answers": [{"text": "zz", "answer_start": 1}]}]}]}]}))
    result = run_module("tasks.squad.train", f"--train_file={bad}", f"--model_dir={tmp_path}/m",
                        "--encoder_handle=tiny", "--mode=train")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "answer 'zz' is not at character 1" in result.stderr
