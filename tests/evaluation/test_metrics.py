"""Classification metrics against hand-computed values."""
import math

import numpy as np
import pytest

from zoo.evaluation.metrics import classification_metrics, confused_pairs, per_class


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


def test_pearson_and_spearman_by_hand():
    from zoo.evaluation.metrics import regression_metrics
    gold = [1.0, 2.0, 3.0, 4.0, 5.0]
    results = regression_metrics(gold, [2.0, 4.0, 6.0, 8.0, 10.0])  # linear: both 1
    assert results["pearson"] == pytest.approx(1.0) and results["spearman"] == pytest.approx(1.0)
    monotone = regression_metrics(gold, [1.0, 4.0, 9.0, 16.0, 100.0])  # ranks agree only
    assert monotone["spearman"] == pytest.approx(1.0) and monotone["pearson"] < 0.95
    # ties get their mean rank: ranks of [1, 1, 2] are [0.5, 0.5, 2] -> Spearman = Pearson of
    # ranks with [0, 1, 2]: (0.5-1)(0-1) + (0.5-1)(1-1) + (2-1)(2-1) = 1.5 over
    # sqrt(1.5 * 2) -> 0.866
    tied = regression_metrics([0.0, 1.0, 2.0], [1.0, 1.0, 2.0])
    assert tied["spearman"] == pytest.approx(1.5 / math.sqrt(1.5 * 2))
    errors = regression_metrics([0.0, 0.0], [1.0, -3.0])
    assert (errors["mse"], errors["mae"]) == (5.0, 2.0)


def test_multi_label_f1_and_exact_match_by_hand():
    from zoo.evaluation.metrics import multi_label_metrics
    gold = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0]], np.float32)
    probabilities = np.array([[0.9, 0.2, 0.7], [0.1, 0.4, 0.6], [0.8, 0.9, 0.1]], np.float32)
    # predicted at 0.5: [1,0,1] (exact), [0,0,1] (wrong), [1,1,0] (exact)
    results = multi_label_metrics(gold, probabilities, threshold=0.5)
    assert results["exact_match"] == pytest.approx(2 / 3)
    # micro: tp=4 (1,3 / - / 1,2), fp=1, fn=1 -> F1 = 8 / 10
    assert results["f1_micro"] == pytest.approx(0.8)
    # per label: l0 tp2 -> 1.0; l1 tp1 fn1 -> 2/3; l2 tp1 fp1 -> 2/3
    assert results["f1_per_label"] == pytest.approx([1.0, 2 / 3, 2 / 3], abs=1e-6)
    assert results["f1_macro"] == pytest.approx((1.0 + 2 / 3 + 2 / 3) / 3, abs=1e-6)
    lower = multi_label_metrics(gold, probabilities, threshold=0.35)  # [0,0.4,0.6] -> l1 right
    assert lower["exact_match"] == pytest.approx(2 / 3) and lower["f1_micro"] > 0.8


def test_entity_f1_and_token_accuracy_by_hand():
    from zoo.evaluation.metrics import entity_metrics
    tags = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    gold = [np.array([3, 4, 0, 1]), np.array([1, 2, 0])]  # PER(0-1) LOC(3) | LOC(0-1)
    predicted = [np.array([3, 0, 0, 1]), np.array([1, 2, 0])]  # PER(0) LOC(3) | LOC(0-1)
    results = entity_metrics(gold, predicted, tags, ["LOC", "PER"])
    # 3 gold, 3 predicted, 2 right (both LOCs): P = R = F1 = 2/3
    assert (results["precision"], results["recall"]) == pytest.approx((2 / 3, 2 / 3))
    assert results["f1"] == pytest.approx(2 / 3) and results["entities"] == 3
    assert results["per_type"]["LOC"]["f1"] == 1.0 and results["per_type"]["PER"]["f1"] == 0.0
    assert results["token_accuracy"] == pytest.approx(6 / 7)


def test_per_class_scores_and_the_most_confused_pairs_by_hand():
    confusion = [[5, 3, 0],   # gold a: 5 right, 3 called b
                 [1, 4, 0],   # gold b: 1 called a
                 [0, 2, 0]]   # gold c: never right, 2 called b; c never predicted
    scores = per_class(confusion, ["a", "b", "c"])
    assert scores["a"] == pytest.approx(dict(precision=5 / 6, recall=5 / 8,
                                             f1=2 * (5 / 6) * (5 / 8) / (5 / 6 + 5 / 8),
                                             support=8))
    assert scores["b"]["precision"] == pytest.approx(4 / 9) and scores["b"]["recall"] == 0.8
    assert scores["c"] == dict(precision=0.0, recall=0.0, f1=0.0, support=2)
    assert confused_pairs(confusion, ["a", "b", "c"]) == [
        dict(gold="a", predicted="b", count=3), dict(gold="c", predicted="b", count=2),
        dict(gold="b", predicted="a", count=1)]
    assert len(confused_pairs(confusion, ["a", "b", "c"], count=2)) == 2
