"""zoo.evaluation.calibration on rows whose calibration is known."""
import numpy as np
import pytest

from zoo.evaluation import calibration


def _sampled(temperature, rows=4000, classes=4, seed=0):
    """Logits, and gold labels drawn from softmax(logits / temperature): the probabilities of
    temperature `temperature` are the calibrated ones."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 3, (rows, classes))
    probabilities = calibration.softmax(logits, temperature)
    targets = np.array([rng.choice(classes, p=p) for p in probabilities])
    return logits, targets


def test_the_fitted_temperature_is_the_one_the_labels_were_drawn_at():
    logits, targets = _sampled(2.5)
    assert calibration.fit_temperature(logits, targets) == pytest.approx(2.5, rel=0.1)
    logits, targets = _sampled(0.5, seed=1)
    assert calibration.fit_temperature(logits, targets) == pytest.approx(0.5, rel=0.1)


def test_scaling_lowers_ece_and_keeps_every_label():
    logits, targets = _sampled(3.0)
    record = calibration.fitted_record(logits, targets, "eval")
    assert record["before"]["ece"] > 0.1  # scores of T=1 are far surer than the labels
    assert record["after"]["ece"] < record["before"]["ece"] / 3
    assert record["after"]["nll"] < record["before"]["nll"]
    report = calibration.class_report(logits, targets, record["temperature"])
    assert report["ece"] == pytest.approx(record["after"]["ece"])
    assert report["uncalibrated"]["ece"] == pytest.approx(record["before"]["ece"])
    np.testing.assert_array_equal(calibration.softmax(logits, record["temperature"]).argmax(-1),
                                  logits.argmax(-1))


def test_ece_mce_and_brier_by_hand():
    # 4 rows, 2 bins of 2 (equal mass): scores .6 .7 (one right) and .8 .9 (both right)
    scores, right = [0.9, 0.6, 0.8, 0.7], [1, 0, 1, 1]
    table, ece, mce = calibration.reliability(scores, right, bins=2)
    assert [b["rows"] for b in table] == [2, 2]
    assert table[0]["score"] == pytest.approx(0.65) and table[0]["accuracy"] == 0.5
    assert ece == pytest.approx((2 * 0.15 + 2 * 0.15) / 4)
    assert mce == pytest.approx(0.15)
    logits = np.log([[0.9, 0.1], [0.5, 0.5]])
    report = calibration.class_report(logits, [0, 1])
    assert report["brier"] == pytest.approx(((0.1 ** 2 + 0.1 ** 2) + (0.5 ** 2 + 0.5 ** 2)) / 2)
    assert report["nll"] == pytest.approx(-(np.log(0.9) + np.log(0.5)) / 2)
    assert "uncalibrated" not in report  # T = 1: nothing to compare with


def test_coverage_keeps_the_surest_rows_and_names_their_lowest_score():
    scores = [0.95, 0.9, 0.9, 0.6, 0.5]
    right = [1, 1, 0, 0, 1]
    table = calibration.coverage(scores, right, coverages=(1.0, 0.4, 0.2))
    assert table[0] == dict(coverage=1.0, min_score=0.5, accuracy=0.6, rows=5)
    # 40% asks for 2 rows; the third has the same score, so that score keeps 3
    assert table[1] == dict(coverage=0.6, min_score=0.9, accuracy=pytest.approx(2 / 3), rows=3)
    assert table[2] == dict(coverage=0.2, min_score=0.95, accuracy=1.0, rows=1)


def test_multi_label_calibration_bins_every_class_probability():
    logits = np.log(np.array([[0.9, 0.2], [0.8, 0.1]]) / (1 - np.array([[0.9, 0.2],
                                                                          [0.8, 0.1]])))
    report = calibration.label_report(logits, [[1, 0], [1, 0]])
    assert report["brier"] == pytest.approx((0.01 + 0.04 + 0.04 + 0.01) / 4)
    assert report["temperature"] == 1.0 and sum(b["rows"] for b in report["reliability"]) == 4


def test_no_rows_to_fit_on_is_an_error():
    with pytest.raises(ValueError, match="no rows"):
        calibration.fit_temperature(np.zeros((0, 3)), np.zeros(0, np.int64))
