"""Multi-label classification (GoEmotions): any number of classes per example, on the
classification task's plumbing (`zoo.kinds.classification`).

A row's label is a `--label_separator`-separated list (`0,15`); an unknown class in the list is
a bad row. A `ClassifierHead` gives a logit per class; each class is a yes/no question (sigmoid,
binary cross-entropy) and the classes at or over `--threshold` are the prediction. Evaluation
reports micro and macro F1, the exact-match ratio (every class of a row right) and each class's
F1; `predict` writes the classes over the threshold and every probability; the export returns
`labels` (their names, joined by the separator), `label_mask` and `probabilities`. The
probabilities' calibration is measured (`zoo.evaluation.calibration`), not changed.
"""
import dataclasses

import tensorflow as tf
import tf_keras as keras

from zoo.base import fs
from zoo.base.fields import setting
from zoo.data import specs
from zoo.data.labels import MultiLabelVocab, OpenLabels, parse_label_map
from zoo.evaluation import calibration, metrics, plots, predict
from zoo.export import explain, litert, savedmodel
from zoo.kinds import classification
from zoo.kinds.kind import Kind


@dataclasses.dataclass
class Settings(classification.NotOneClassSettings):
    """Classification's settings plus the label list's separator and the decision threshold."""

    label_separator: str = setting(
        ",", "Multi-label (--task_type=multi_label): what separates the classes in a row's "
        "label column.", group="model")
    threshold: float = setting(
        0.5, "Multi-label: a class is predicted when its probability is at least this (for "
        "every class).", low=0, high=1, low_open=True, high_open=True, group="model")


def binary_cross_entropy(targets, logits):
    """Per example: the mean over classes of each class's sigmoid cross-entropy."""
    return keras.losses.binary_crossentropy(tf.cast(targets, logits.dtype), logits,
                                            from_logits=True)


class MultiLabel(classification.Classification):
    """Any number of classes per example (a sigmoid per class)."""

    NAME = "multi_label"
    EXPLAIN = explain.LABEL_SET
    METRICS = ("f1_micro", "f1_macro", "exact_match", "loss")
    SCALED = False  # calibration measured only: a threshold is chosen on these probabilities

    def open_labels(self):
        label_map = parse_label_map(self.settings.label_map)
        return OpenLabels(set(label_map) | set(label_map.values()) if label_map else None,
                          self.settings.label_separator)

    def vocabulary(self, counts):
        return MultiLabelVocab.from_labels(counts, parse_label_map(self.settings.label_map),
                                           separator=self.settings.label_separator)

    def weights(self, counts):
        del counts  # (--class_weights is for one class per row)
        return None

    def loss(self, targets, outputs):
        return binary_cross_entropy(targets, outputs)

    def train_metrics(self):
        return {}

    def metrics(self, outputs, targets):
        probabilities = tf.math.sigmoid(outputs).numpy()
        results = metrics.multi_label_metrics(targets, probabilities, self.settings.threshold)
        return dict(loss=float(tf.reduce_mean(binary_cross_entropy(targets, outputs))),
                    **results, label_names=self.labels.names)

    def plot(self, results, outputs, targets):
        del results, outputs, targets

    def calibration_report(self, outputs, targets):
        return calibration.label_report(outputs, targets)

    def plot_calibration(self, report, outputs, targets):
        del outputs, targets
        plots.plot_reliability(report, fs.join(self.settings.model_dir, "reliability.png"))

    def report_errors(self, source, outputs, targets):
        del source, outputs, targets  # (errors.csv lists one-class mistakes)

    transform = staticmethod(tf.math.sigmoid)

    def row_format(self):
        return predict.LabelSets(self.labels.names, self.settings.threshold,
                                 self.settings.label_separator)

    def serving_outputs(self):
        return savedmodel.label_set_outputs(self.settings.threshold, self.settings.label_separator)

    def litert_outputs(self):
        return litert.mask_outputs(self.settings.threshold), self.labels.names

    def request_serving(self, core):
        """The threshold signature: a request's `threshold` per row (0: --threshold)."""
        return {"threshold": savedmodel.TextServing(
            core, self.run.packer, self.serving_outputs(), self.settings.pair,
            label_names=self.labels.names,
            extra=[tf.TensorSpec([None], tf.float32, name="threshold")])}


KIND = Kind("multi_label", MultiLabel, Settings, specs.TextColumns, ("f1_micro",))
