"""Classification metrics from label ids and predicted probabilities.

Accuracy and F1 come from tf_keras metrics; the Matthews correlation (Gorodkin's multi-class
form, which equals the binary MCC for two classes) is computed from `tf.math.confusion_matrix`.
"""
import collections

import numpy as np
import tensorflow as tf
import tf_keras as keras


def _f1(y_true, probabilities, num_classes, average):
    metric = keras.metrics.F1Score(average=average, threshold=None)
    metric.update_state(tf.one_hot(y_true, num_classes), probabilities)
    result = metric.result().numpy()
    return float(result if average else result[1])


def matthews_correlation(confusion):
    """Multi-class MCC from a confusion matrix (rows: true, columns: predicted)."""
    c = tf.cast(confusion, tf.float64)
    correct, total = tf.linalg.trace(c), tf.reduce_sum(c)
    true_counts, predicted_counts = tf.reduce_sum(c, axis=1), tf.reduce_sum(c, axis=0)
    numerator = correct * total - tf.tensordot(true_counts, predicted_counts, 1)
    denominator = tf.sqrt(total ** 2 - tf.tensordot(predicted_counts, predicted_counts, 1)) * \
        tf.sqrt(total ** 2 - tf.tensordot(true_counts, true_counts, 1))
    return float(tf.math.divide_no_nan(numerator, denominator))


def classification_metrics(y_true, probabilities, num_classes):
    """accuracy, F1 (binary for 2 classes, macro and weighted otherwise), MCC, confusion matrix."""
    y_true = np.asarray(y_true, np.int64)
    probabilities = np.asarray(probabilities, np.float32)
    y_pred = probabilities.argmax(axis=-1)
    accuracy = keras.metrics.Accuracy()
    accuracy.update_state(y_true, y_pred)
    confusion = tf.math.confusion_matrix(y_true, y_pred, num_classes=num_classes)
    results = dict(accuracy=float(accuracy.result()), mcc=matthews_correlation(confusion),
                   num_examples=int(len(y_true)))
    # F1Score with threshold=None marks each row's argmax as the predicted class.
    if num_classes == 2:
        results["f1"] = _f1(y_true, probabilities, 2, None)
    else:
        results["f1_macro"] = _f1(y_true, probabilities, num_classes, "macro")
        results["f1_weighted"] = _f1(y_true, probabilities, num_classes, "weighted")
    results["confusion_matrix"] = confusion.numpy().tolist()
    return results


def per_class(confusion, names):
    """{class name: precision, recall, f1, support} from a confusion matrix (rows: gold,
    columns: predicted); a class never predicted has precision 0, one never seen recall 0."""
    confusion = np.asarray(confusion, np.float64)
    found, predicted, support = np.diag(confusion), confusion.sum(0), confusion.sum(1)
    result = {}
    for i, name in enumerate(names):
        precision = found[i] / predicted[i] if predicted[i] else 0.0
        recall = found[i] / support[i] if support[i] else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        result[name] = dict(precision=float(precision), recall=float(recall), f1=float(f1),
                            support=int(support[i]))
    return result


def confused_pairs(confusion, names, count=10):
    """The `count` most frequent mistakes, as [{gold, predicted, count}], most frequent first
    (ties in class order)."""
    confusion = np.array(confusion, np.int64)
    np.fill_diagonal(confusion, 0)
    order = np.argsort(-confusion, axis=None, kind="stable")[:count]
    pairs = [np.unravel_index(i, confusion.shape) for i in order]
    return [dict(gold=names[g], predicted=names[p], count=int(confusion[g, p]))
            for g, p in pairs if confusion[g, p]]


def _ranks(values):
    """Ranks from 0, ties given the mean of their ranks (as Spearman's correlation needs)."""
    values = np.asarray(values, np.float64)
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), np.float64)
    _, starts, counts = np.unique(values[order], return_index=True, return_counts=True)
    for start, count in zip(starts, counts):
        ranks[order[start:start + count]] = start + (count - 1) / 2.0
    return ranks


def pearson(x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / denominator) if denominator else 0.0


def regression_metrics(y_true, y_pred):
    """Pearson and Spearman correlation (GLUE STS-B's metrics), MSE, RMSE and MAE."""
    y_true, y_pred = np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64)
    errors = y_pred - y_true
    return dict(pearson=pearson(y_true, y_pred), spearman=pearson(_ranks(y_true), _ranks(y_pred)),
                mse=float(np.mean(errors ** 2)), rmse=float(np.sqrt(np.mean(errors ** 2))),
                mae=float(np.mean(np.abs(errors))), num_examples=int(len(y_true)))


def multi_label_metrics(y_true, probabilities, threshold=0.5):
    """Micro and macro F1 over the labels, the exact-match ratio (every label of a row right),
    and each label's F1, for multi-hot `y_true` and per-label `probabilities`."""
    y_true = np.asarray(y_true, np.float32)
    probabilities = np.asarray(probabilities, np.float32)

    def f1(average):
        metric = keras.metrics.F1Score(average=average, threshold=threshold)
        metric.update_state(y_true, probabilities)
        return metric.result().numpy()

    predicted = probabilities >= threshold
    return dict(f1_micro=float(f1("micro")), f1_macro=float(f1("macro")),
                exact_match=float(np.mean(np.all(predicted == (y_true > 0.5), axis=1))),
                f1_per_label=[float(v) for v in f1(None)], threshold=float(threshold),
                num_examples=int(len(y_true)))


def entity_metrics(gold, predicted, tags, types):
    """The CoNLL scorer's entity-level precision, recall and F1 (per type and overall: an
    entity counts when its words and type are both right) and token accuracy.

    `gold`, `predicted`: per sentence, the tag ids of its tokens; `tags`: the tag names
    (IOB2), `types`: the entity types (`zoo.data.tagging.TagVocab`).
    """
    from zoo.data.tagging import decode_entities

    tag_type = tf.constant([types.index(t[2:]) if t != "O" else -1 for t in tags], tf.int64)
    tag_begins = tf.constant([t.startswith("B-") for t in tags])

    def entities(sequences):
        ragged = tf.ragged.constant([list(map(int, s)) for s in sequences], tf.int32,
                                    ragged_rank=1) if sequences else tf.ragged.constant(
                                        [], tf.int32, ragged_rank=1)
        found = {k: v.numpy() for k, v in decode_entities(ragged, tag_type, tag_begins).items()}
        return collections.Counter(zip(found["row"], found["start"], found["end"], found["type"]))

    gold_entities, predicted_entities = entities(gold), entities(predicted)
    right = gold_entities & predicted_entities

    def scores(keep):
        hits = sum(n for e, n in right.items() if keep(e))
        guessed = sum(n for e, n in predicted_entities.items() if keep(e))
        wanted = sum(n for e, n in gold_entities.items() if keep(e))
        precision = hits / guessed if guessed else 0.0
        recall = hits / wanted if wanted else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return dict(precision=precision, recall=recall, f1=f1, entities=wanted)

    overall = scores(lambda e: True)
    tokens = sum(len(s) for s in gold)
    same = sum(int(np.sum(np.asarray(g) == np.asarray(p))) for g, p in zip(gold, predicted))
    return dict(precision=overall["precision"], recall=overall["recall"], f1=overall["f1"],
                token_accuracy=same / tokens if tokens else 0.0, entities=overall["entities"],
                per_type={t: scores(lambda e, i=i: e[3] == i) for i, t in enumerate(types)},
                num_sentences=len(gold), num_tokens=tokens)
