"""Classification metrics against hand-computed values."""
import math

import numpy as np
import pytest

from zoo.metrics import classification_metrics


def _probs(predicted, num_classes):
    return np.eye(num_classes)[predicted] * 0.9 + 0.1 / num_classes


def test_binary_accuracy_f1_and_mcc_by_hand():
    y_true = [1, 1, 1, 0, 0, 1, 0, 1]
    y_pred = [1, 0, 1, 0, 1, 1, 0, 1]
    # tp=4, fn=1, fp=1, tn=2
    results = classification_metrics(y_true, _probs(y_pred, 2), 2)
    assert results["accuracy"] == pytest.approx(6 / 8)
    assert results["f1"] == pytest.approx(2 * 4 / (2 * 4 + 1 + 1))
    mcc = (4 * 2 - 1 * 1) / math.sqrt((4 + 1) * (4 + 1) * (2 + 1) * (2 + 1))
    assert results["mcc"] == pytest.approx(mcc)
    assert results["confusion_matrix"] == [[2, 1], [1, 4]]
    assert "f1_macro" not in results


def test_multiclass_macro_and_weighted_f1_by_hand():
    y_true = [0, 0, 0, 1, 1, 2]
    y_pred = [0, 0, 1, 1, 2, 2]
    f1 = [2 * 2 / (2 * 2 + 0 + 1), 2 * 1 / (2 * 1 + 1 + 1), 2 * 1 / (2 * 1 + 1 + 0)]
    results = classification_metrics(y_true, _probs(y_pred, 3), 3)
    assert results["f1_macro"] == pytest.approx(sum(f1) / 3, abs=1e-6)
    assert results["f1_weighted"] == pytest.approx((3 * f1[0] + 2 * f1[1] + 1 * f1[2]) / 6,
                                                   abs=1e-6)
    assert results["accuracy"] == pytest.approx(4 / 6)
    # Gorodkin's MCC: (c*s - sum p_k t_k) / sqrt((s^2 - sum p_k^2)(s^2 - sum t_k^2))
    t, p = [3, 2, 1], [2, 2, 2]
    mcc = (4 * 6 - sum(a * b for a, b in zip(p, t))) / math.sqrt(
        (36 - sum(x * x for x in p)) * (36 - sum(x * x for x in t)))
    assert results["mcc"] == pytest.approx(mcc)


def test_constant_prediction_has_zero_mcc_not_nan():
    results = classification_metrics([0, 1, 1], _probs([1, 1, 1], 2), 2)
    assert results["mcc"] == 0.0
