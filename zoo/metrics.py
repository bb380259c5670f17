"""Classification metrics from label ids and predicted probabilities.

Accuracy and F1 come from tf_keras metrics; the Matthews correlation (Gorodkin's multi-class
form, which equals the binary MCC for two classes) is computed from `tf.math.confusion_matrix`.
"""
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
