"""tasks.classify.train --task_type=multi_label on a GoEmotions-style file (no header, CSV
quoting, label ids and a names file): train_and_eval, predict, export, an unknown label."""
import csv
import json
import os
import random

import pytest
import tensorflow as tf

from tests.helpers import check_the_model_dir_suffices, run_inline

NAMES = ["joy", "anger", "fear"]
WORDS = {"0": ["happy", "glad"], "1": ["furious", "mad"], "2": ["scared", "afraid"]}


def _rows(n, seed):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        labels = sorted(rng.sample(sorted(WORDS), rng.choice([1, 1, 2])))
        words = [rng.choice(WORDS[label]) for label in labels] + ["today", "really"]
        rng.shuffle(words)
        text = " ".join(words) + (' "quoted"' if i % 5 == 0 else "")
        rows.append([text, ",".join(labels), f"c{seed}-{i}"])
    return rows


def _write(path, rows):
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, delimiter="\t", lineterminator="\n").writerows(rows)  # quotes as CSV
    return str(path)


def _classify(model_dir, *extra):
    return run_inline("tasks.classify.train", "--task_type=multi_label", "--noheader",
                      "--quoting=csv", "--text_column=0", "--label_column=1", "--id_column=2",
                      f"--model_dir={model_dir}", "--encoder_handle=tiny", "--max_seq_length=16",
                      "--train_batch_size=16", "--pooling=mean", *extra)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_hub):
    root = tmp_path_factory.mktemp("goemotions")
    (root / "emotions.txt").write_text("\n".join(NAMES))
    files = dict(train=_write(root / "train.tsv", _rows(800, 1)),  # 100 steps in 2 epochs
                 dev=_write(root / "dev.tsv", _rows(40, 2)),
                 test=_write(root / "test.tsv", _rows(15, 3)), names=str(root / "emotions.txt"))
    model_dir = str(root / "model")
    result = _classify(model_dir, f"--train_file={files['train']}",
                       f"--eval_file={files['dev']}", f"--label_names_file={files['names']}",
                       "--num_train_epochs=2", "--learning_rate=3e-3",
                       "--warmup_proportion=0.05", f"--export_dir={model_dir}/export/1",
                       "--export_explain")
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(model_dir=model_dir, **files)


def test_micro_and_macro_f1_and_exact_match(trained):
    results = json.load(open(os.path.join(trained["model_dir"], "eval_results.json")))
    assert results["label_names"] == NAMES and len(results["f1_per_label"]) == 3
    # Each class has its own words: a model that learned nothing predicts all or none. (With
    # --pooling=cls the tiny random encoder's pooler tells only one class apart: f1 0.79,
    # exact match 0.375; the mean of its token vectors tells all three.)
    assert results["f1_micro"] > 0.9 and results["f1_macro"] > 0.9, results
    assert results["exact_match"] > 0.8 and results["threshold"] == 0.5
    # every class's probability measured against its gold; nothing scaled (labels would move)
    calibration = results["calibration"]
    assert 0 <= calibration["ece"] <= calibration["mce"] <= 1 and calibration["temperature"] == 1
    assert sum(b["rows"] for b in calibration["reliability"]) == 3 * results["num_examples"]
    fitted = json.load(open(os.path.join(trained["model_dir"], "temperature.json")))
    assert fitted["fitted_on"] is None and "measured, not scaled" in fitted["reason"]
    assert os.path.exists(os.path.join(trained["model_dir"], "reliability.png"))


def test_predict_lists_the_classes_over_the_threshold_and_the_export_agrees(trained):
    output = os.path.join(trained["model_dir"], "predictions.jsonl")
    result = _classify(trained["model_dir"], "--mode=predict",
                       f"--predict_file={trained['test']}", f"--output_file={output}")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in open(output)]
    test = list(csv.reader(open(trained["test"]), delimiter="\t"))
    assert [r["id"] for r in rows] == [t[2] for t in test]
    for row in rows:
        assert row["labels"] == [n for n in NAMES if row["probabilities"][n] >= 0.5]
    # (loaded in this process: an export loaded in a fresh process, as a server does, is in
    # tests/export/test_savedmodel.py and tests/tasks/test_squad.py)
    served = tf.saved_model.load(os.path.join(trained["model_dir"], "export", "1")).signatures[
        "serving_default"](text=tf.constant([t[0] for t in test]))
    out = dict(labels=[x.decode() for x in served["labels"].numpy()],
               probabilities=served["probabilities"].numpy().tolist())
    assert out["labels"] == [",".join(r["labels"]) for r in rows]
    for probabilities, row in zip(out["probabilities"], rows):
        assert probabilities == pytest.approx([row["probabilities"][n] for n in NAMES], abs=1e-4)
    right = sum(set(r["labels"]) == {NAMES[int(i)] for i in t[1].split(",")}
                for r, t in zip(rows, test))
    assert right >= 13  # of 15


def test_an_unknown_label_in_a_list_names_the_file_and_line(trained, tmp_path):
    rows = _rows(20, 5)
    rows[3][1] = "0,9"
    bad = _write(tmp_path / "bad.tsv", rows)
    result = _classify(trained["model_dir"], "--mode=eval", f"--eval_file={bad}")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"error: {bad}:4: unknown label '9'" in result.stderr


def test_the_export_takes_a_threshold_per_request_and_explains_a_class(trained):
    from zoo import serving
    model = serving.load(os.path.join(trained["model_dir"], "export", "1"))
    texts = ["happy today really", "furious glad today", "scared"]
    default = model.predict(texts)
    second = sorted(default[0]["probabilities"].values())[-2]  # of "happy today really"
    low, high = (model.predict(texts, threshold=t) for t in (second, 0.999999))
    for d, lo, hi in zip(default, low, high):
        assert lo["labels"] == [n for n in NAMES if lo["probabilities"][n] >= second]
        assert set(hi["labels"]) <= set(d["labels"]) <= set(lo["labels"])
    assert default[0]["labels"] == ["joy"] and len(low[0]["labels"]) == 2
    explained = model.explain(["today happy really furious"], target="anger")[0]
    assert explained["objective"] == "log_odds" and explained["target"] == "anger"
    assert max(explained["words"], key=lambda w: w["attribution"])["text"] == "furious"


def test_the_model_dir_gives_predict_eval_and_export_its_task_and_model(trained, tmp_path):
    # run.json gives the task type, columns, header, quoting, pooling and the label names
    check_the_model_dir_suffices(
        trained["model_dir"], lambda *flags: _classify(
            trained["model_dir"], f"--label_names_file={trained['names']}", *flags),
        dict(predict=[f"--predict_file={trained['test']}"],
             eval=[f"--eval_file={trained['dev']}"]), tmp_path, export=False)
