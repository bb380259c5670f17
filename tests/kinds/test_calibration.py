"""Calibrated scores end to end: a deliberately over-confident classifier (many epochs on a few
rows whose labels are often wrong) gets a temperature after training that makes its scores on
rows it never saw more honest without changing a label; predict, the SavedModel and the LiteRT
export give the same calibrated probabilities; `min_score` abstains on exactly the rows below
it in predict, the export, `zoo.serving` and batch-predict, with one output row per input."""
import csv
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.tweets import classify, write_csv
from zoo import serving
from zoo.cli import batch_predict
from zoo.evaluation import calibration


def _noisy_csv(path, n, seed, with_label=True):
    """Tweets whose words give the label away, 35% of them labelled at random."""
    return write_csv(path, n, seed, with_label, noise=0.35, longest=8)


def _copies(path, source, copies):
    """`copies` copies of the rows of `source` (ids made unique): an epoch of the copies trains
    as `copies` epochs of `source` do, with one input pipeline instead of `copies`."""
    with open(source, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        for copy in range(copies):
            writer.writerows(dict(row, id=f"{row['id']}-{copy}") for row in rows)
    return str(path)


def _classify(mode, model_dir, **values):
    return classify(mode, model_dir, **dict(dict(eval_batch_size=32, max_seq_length=16), **values))


@pytest.fixture(scope="module")
def overconfident(tmp_path_factory, tiny_hub):
    root = tmp_path_factory.mktemp("calibration")
    files = dict(train=_copies(root / "train.csv", _noisy_csv(root / "rows.csv", 48, 1), 5),
                 fit=_noisy_csv(root / "fit.csv", 200, 2),
                 held_out=_noisy_csv(root / "held_out.csv", 200, 3),
                 predict=_noisy_csv(root / "predict.csv", 60, 4, with_label=False))
    model_dir = root / "model"
    # (--mode=train with an eval split: no evaluation after each epoch, the fit at the end;
    # 6 epochs of 5 copies of 48 rows: each row seen 30 times)
    _classify("train", model_dir, train_file=files["train"], eval_file=files["fit"],
              num_train_epochs=6, learning_rate=3e-3, warmup_proportion=0.05,
              export_dir=str(model_dir / "export" / "1"))
    export = str(model_dir / "export" / "1")
    model = serving.load(export)
    texts = [r["tweet"] for r in csv.DictReader(open(files["predict"]))]
    scores = sorted(r["score"] for r in model.predict(texts))
    distinct = sorted(set(scores))  # (texts repeat: so do scores)
    middle = max(1, next(i for i, v in enumerate(distinct) if v >= scores[len(scores) // 2]))
    return dict(files, root=root, model_dir=str(model_dir), export=export, model=model,
                signatures=tf.saved_model.load(export).signatures, texts=texts,
                # a min_score between the predict rows' scores: about half fall below it
                minimum=(distinct[middle - 1] + distinct[middle]) / 2)


def _rows(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_the_temperature_makes_scores_on_unseen_rows_more_honest(overconfident):
    record = json.load(open(os.path.join(overconfident["model_dir"], "temperature.json")))
    assert record["fitted_on"] == "eval" and record["rows"] == 200
    assert record["temperature"] > 1.5  # over-confident: the scores are spread out
    train = json.load(open(os.path.join(overconfident["model_dir"], "train_results.json")))
    assert train["calibration"]["temperature"] == record["temperature"]
    results = _classify("eval", overconfident["model_dir"], eval_file=overconfident["held_out"])
    measured = results["calibration"]
    assert measured["temperature"] == record["temperature"]
    before, after = measured["uncalibrated"], measured
    assert before["ece"] > 0.1
    assert after["ece"] < 0.7 * before["ece"]
    assert after["nll"] < before["nll"] and after["brier"] < before["brier"]
    assert results["ece"] == after["ece"]
    coverage = measured["coverage"]
    assert coverage[0]["coverage"] == 1.0
    assert coverage[0]["accuracy"] == pytest.approx(results["accuracy"])
    for name in ("reliability.png", "coverage.png", "confusion_matrix.png"):
        assert os.path.getsize(os.path.join(overconfident["model_dir"], name)) > 1000


def test_the_labels_are_those_of_the_uncalibrated_model(overconfident):
    texts = [r["tweet"] for r in csv.DictReader(open(overconfident["held_out"]))]
    served = overconfident["signatures"]["serving_default"](
        text=tf.constant(texts))
    logits, probabilities = served["logits"].numpy(), served["probabilities"].numpy()
    np.testing.assert_array_equal(served["label_id"].numpy(), logits.argmax(-1))
    temperature = calibration.load_temperature(overconfident["model_dir"])
    np.testing.assert_allclose(probabilities, calibration.softmax(logits, temperature),
                               atol=1e-5)
    assert np.abs(probabilities - calibration.softmax(logits)).max() > 0.05  # T is applied


def test_predict_gives_the_exports_calibrated_probabilities(overconfident, tmp_path):
    output = str(tmp_path / "predictions.jsonl")
    _classify("predict", overconfident["model_dir"], predict_file=overconfident["predict"],
              output_file=output)
    rows = _rows(output)
    texts = [r["tweet"] for r in csv.DictReader(open(overconfident["predict"]))]
    served = overconfident["signatures"]["serving_default"](
        text=tf.constant(texts))
    names = ["negative", "neutral", "positive"]
    predicted = np.array([[r["probabilities"][n] for n in names] for r in rows])
    np.testing.assert_allclose(predicted, served["probabilities"].numpy(), atol=1e-5)


def test_the_litert_export_carries_the_temperature(overconfident, tmp_path):
    from zoo import litert

    export_dir = str(tmp_path / "litert")
    _classify("export", overconfident["model_dir"], export_dir=export_dir,
              export_format="litert", litert_quantization="none")
    texts = [r["tweet"] for r in csv.DictReader(open(overconfident["predict"]))]
    lite = litert.load(export_dir).predict(texts)
    saved = overconfident["model"].predict(texts)
    for a, b in zip(lite, saved):
        assert a["label"] == b["label"]
        assert a["probabilities"] == pytest.approx(b["probabilities"], abs=1e-4)


def test_min_score_abstains_on_exactly_the_rows_below_it(overconfident, tmp_path):
    minimum = overconfident["minimum"]
    texts = [r["tweet"] for r in csv.DictReader(open(overconfident["predict"]))]
    plain = overconfident["model"].predict(texts)
    below = [r["score"] < minimum for r in plain]
    assert 0 < sum(below) < len(below)

    # predict: JSONL null, CSV empty, every row there with its score
    for suffix in ("jsonl", "csv"):
        output = str(tmp_path / f"predictions.{suffix}")
        _classify("predict", overconfident["model_dir"], predict_file=overconfident["predict"],
                  output_file=output, min_score=minimum)
        rows = _rows(output) if suffix == "jsonl" else list(csv.DictReader(open(output)))
        assert len(rows) == len(texts)
        assert [r["label"] in (None, "") for r in rows] == below
        assert [float(r["score"]) for r in rows] == pytest.approx([r["score"] for r in plain],
                                                                  abs=1e-5)
    # zoo.serving
    kept = overconfident["model"].predict(texts, min_score=minimum)
    assert [r["label"] is None for r in kept] == below
    assert [r["label"] for r, b in zip(kept, below) if not b] == \
        [r["label"] for r, b in zip(plain, below) if not b]
    # the export's min_score signature: a value per row, 0 for the export's default (none)
    signature = overconfident["signatures"]["min_score"]
    served = signature(text=tf.constant(texts), min_score=tf.constant([minimum] * len(texts)))
    assert [x == b"" for x in served["label"].numpy()] == below
    assert [i == -1 for i in served["label_id"].numpy()] == below
    unset = signature(text=tf.constant(texts), min_score=tf.zeros([len(texts)]))
    assert b"" not in unset["label"].numpy().tolist()


def test_batch_predict_abstains_below_min_score(overconfident, tmp_path, capsys):
    minimum = overconfident["minimum"]
    batch_predict.main([f"--export_dir={overconfident['export']}",
                        f"--input={overconfident['predict']}", f"--output={tmp_path / 'out'}",
                        "--text_column=tweet", "--id_column=id", f"--min_score={minimum}",
                        "--direct_num_workers=1", "--direct_running_mode=in_memory"])
    assert "60 input rows = 60 predictions + 0 rejected" in capsys.readouterr().out
    rows = {}
    for name in os.listdir(tmp_path):
        if name.startswith("out-") and "rejected" not in name and name.endswith(".jsonl"):
            rows.update((r["id"], r) for r in _rows(tmp_path / name))
    ids = [r["id"] for r in csv.DictReader(open(overconfident["predict"]))]
    assert sorted(rows) == sorted(ids)
    for row in rows.values():
        prediction = row.get("prediction", row)
        assert (prediction["label"] is None) == (prediction["score"] < minimum)
    with pytest.raises(SystemExit, match=r"--min_score must be a number in \[0, 1\], not 2.0"):
        batch_predict.main([f"--export_dir={overconfident['export']}",
                            f"--input={overconfident['predict']}", f"--output={tmp_path / 'x'}",
                            "--text_column=tweet", "--min_score=2"])


def test_no_eval_split_fits_nothing_and_says_so(tmp_path, tiny_hub):
    train = _noisy_csv(tmp_path / "train.csv", 16, 5)
    model_dir = tmp_path / "model"
    timing = _classify("train", model_dir, train_file=train, num_train_epochs=1)
    assert timing["calibration"] == dict(temperature=1.0, fitted_on=None,
                                         reason="no eval split to fit on")
    off = tmp_path / "off"
    timing = _classify("train_and_eval", off, train_file=train, eval_file=train,
                       num_train_epochs=1, temperature_scaling=False)
    assert timing["calibration"]["reason"] == "--notemperature_scaling"
    assert json.load(open(off / "eval_results.json"))["calibration"]["temperature"] == 1.0
