"""Whether a model's probabilities mean what they say, and a temperature that makes them.

A class model's score is the probability of its predicted class. It is *calibrated* when, of
the rows scored about 0.9, about 90% are right. Measured here, from the model's logits and the
gold labels:
- `ece`: expected calibration error over `BINS` equal-mass bins (each bin holds the same number
  of rows, sorted by score): the mean over rows of |accuracy - mean score| of the row's bin.
  Class models bin the predicted class's score against whether it is right ("top-label");
  multi-label models bin every class's probability against whether the class is gold.
- `mce`: the largest of those gaps (maximum calibration error).
- `brier`: the mean squared distance between the probabilities and the one-hot gold labels
  (summed over classes for a class model; per class for a multi-label model).
- `nll`: the negative log-likelihood of the gold labels (the cross-entropy loss).

Temperature scaling (Guo et al., 2017) divides a class model's logits by one number T > 0,
fitted to minimise `nll` on held-out rows; dividing by T keeps every row's most probable class,
so the labels never change, only how sure the model says it is. A multi-label model is measured
but not scaled: its `--threshold` is chosen on its probabilities as they are, and scaling would
move the label set of any threshold but 0.5.

`coverage` answers "how right is the model on the rows it is surest of": for each coverage c,
the lowest score that keeps a fraction c of the rows, and the accuracy of the rows kept, so a
user can pick `--min_score` from data.
"""
import math

import numpy as np

from zoo.base import fs
from zoo.base.files import load_json, save_json

BINS = 15
BINNING = f"equal-mass, {BINS} bins"
COVERAGES = (1.0, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5)
TEMPERATURE_FILE = "temperature.json"
_LOW, _HIGH = math.log(0.05), math.log(20.0)  # the temperatures searched (T in [0.05, 20])


def log_softmax(logits):
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def softmax(logits, temperature=1.0):
    return np.exp(log_softmax(np.asarray(logits, np.float64) / temperature))


def sigmoid(logits):
    return 1.0 / (1.0 + np.exp(-np.asarray(logits, np.float64)))


def class_nll(logits, targets, temperature=1.0):
    """The mean negative log-likelihood of the gold classes `targets` under softmax(logits / T)."""
    scaled = log_softmax(np.asarray(logits, np.float64) / temperature)
    return float(-scaled[np.arange(len(targets)), np.asarray(targets, np.int64)].mean())


def fit_temperature(logits, targets, iterations=80):
    """The T in [0.05, 20] that minimises `class_nll` on these rows (golden-section search on
    log T: the NLL is convex in 1/T, so it has one minimum along log T)."""
    if len(targets) == 0:
        raise ValueError("no rows to fit a temperature on")
    ratio = (math.sqrt(5) - 1) / 2
    low, high = _LOW, _HIGH
    a, b = high - ratio * (high - low), low + ratio * (high - low)
    fa, fb = class_nll(logits, targets, math.exp(a)), class_nll(logits, targets, math.exp(b))
    for _ in range(iterations):
        if fa <= fb:
            high, b, fb = b, a, fa
            a = high - ratio * (high - low)
            fa = class_nll(logits, targets, math.exp(a))
        else:
            low, a, fa = a, b, fb
            b = low + ratio * (high - low)
            fb = class_nll(logits, targets, math.exp(b))
    return float(math.exp((low + high) / 2))


def reliability(scores, outcomes, bins=BINS):
    """Equal-mass bins of `scores` (probabilities) against `outcomes` (1: right / gold):
    [{rows, score, accuracy}] from the least sure bin to the surest, and the ECE and MCE."""
    scores, outcomes = np.asarray(scores, np.float64), np.asarray(outcomes, np.float64)
    order = np.argsort(scores, kind="stable")
    table = []
    for chosen in np.array_split(order, min(bins, len(order))):
        if len(chosen):
            table.append(dict(rows=int(len(chosen)), score=float(scores[chosen].mean()),
                              accuracy=float(outcomes[chosen].mean())))
    gaps = [abs(b["accuracy"] - b["score"]) for b in table]
    total = sum(b["rows"] for b in table)
    ece = sum(g * b["rows"] for g, b in zip(gaps, table)) / total if total else 0.0
    return table, float(ece), float(max(gaps, default=0.0))


def coverage(scores, correct, coverages=COVERAGES):
    """[{coverage, min_score, accuracy, rows}]: for each wanted coverage, the lowest score that
    keeps that fraction of the rows (rows tied with it are kept too, so `coverage` is the
    fraction it really keeps) and the accuracy of the rows it keeps."""
    scores, correct = np.asarray(scores, np.float64), np.asarray(correct, np.float64)
    ranked = np.sort(scores)[::-1]
    table = []
    for wanted in coverages:
        if not len(ranked):
            break
        threshold = ranked[max(int(math.ceil(wanted * len(ranked))), 1) - 1]
        kept = scores >= threshold
        table.append(dict(coverage=float(kept.mean()), min_score=float(threshold),
                          accuracy=float(correct[kept].mean()), rows=int(kept.sum())))
    return table


def class_scores(logits, targets, temperature=1.0):
    """(probabilities at `temperature`, each row's score: its most probable class's
    probability, whether that class is the gold one)."""
    probabilities = softmax(logits, temperature)
    correct = probabilities.argmax(axis=-1) == np.asarray(targets, np.int64)
    return probabilities, probabilities.max(axis=-1), correct


def _class_measures(logits, targets, temperature):
    probabilities, scores, correct = class_scores(logits, targets, temperature)
    targets = np.asarray(targets, np.int64)
    table, ece, mce = reliability(scores, correct)
    one_hot = np.eye(probabilities.shape[-1])[targets]
    measures = dict(ece=ece, mce=mce,
                    brier=float(((probabilities - one_hot) ** 2).sum(axis=-1).mean()),
                    nll=class_nll(logits, targets, temperature))
    return measures, table, scores, correct


def class_report(logits, targets, temperature=1.0):
    """The calibration of a class model's eval rows at `temperature` (the probabilities it
    gives) and, when T is not 1, as the model's own softmax (`uncalibrated`); the reliability
    bins of both and the coverage table of the probabilities it gives."""
    measures, table, scores, correct = _class_measures(logits, targets, temperature)
    report = dict(temperature=float(temperature), binning=BINNING, **measures,
                  reliability=table, coverage=coverage(scores, correct))
    if temperature != 1.0:
        before, before_table, _, _ = _class_measures(logits, targets, 1.0)
        report["uncalibrated"] = dict(before, reliability=before_table)
    return report


def label_report(logits, targets):
    """The calibration of a multi-label model's eval rows: every (row, class) probability
    against whether the class is gold."""
    probabilities = sigmoid(logits)
    targets = np.asarray(targets, np.float64)
    table, ece, mce = reliability(probabilities.ravel(), targets.ravel())
    p = np.clip(probabilities, 1e-12, 1 - 1e-12)
    nll = -(targets * np.log(p) + (1 - targets) * np.log(1 - p)).mean()
    return dict(temperature=1.0, binning=BINNING, ece=ece, mce=mce,
                brier=float(((probabilities - targets) ** 2).mean()), nll=float(nll),
                reliability=table)


def fitted_record(logits, targets, split):
    """temperature.json's record of a temperature fitted on `split`'s rows."""
    temperature = fit_temperature(logits, targets)
    before, _, _, _ = _class_measures(logits, targets, 1.0)
    after, _, _, _ = _class_measures(logits, targets, temperature)
    return dict(temperature=temperature, fitted_on=split, rows=int(len(targets)),
                binning=BINNING, before={k: before[k] for k in ("ece", "nll")},
                after={k: after[k] for k in ("ece", "nll")})


def unfitted_record(reason):
    """temperature.json's record of a model whose probabilities are left as they are."""
    return dict(temperature=1.0, fitted_on=None, reason=reason)


def save(model_dir, record):
    save_json(fs.join(model_dir, TEMPERATURE_FILE), record)


def load_temperature(model_dir):
    """The temperature of the model dir's temperature.json, 1.0 when it has none."""
    record = load_json(fs.join(model_dir, TEMPERATURE_FILE))
    return float(record["temperature"]) if record else 1.0


def remove(model_dir):
    """Forgets a temperature fitted before (training goes on: the model changes)."""
    fs.remove(fs.join(model_dir, TEMPERATURE_FILE))
