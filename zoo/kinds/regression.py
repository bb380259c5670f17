"""Regression on text or text pairs (GLUE STS-B): a score per example, on the classification
task's plumbing (`zoo.kinds.classification`): the same data checks, streams, padding and bad rows.

A `RegressionHead` on `pooled_output`; mean squared error; Pearson and Spearman correlation
(and MSE, RMSE, MAE) in `eval_results.json` with a scatter plot of predicted against gold
scores (`scatter.png`); predictions and the export give `score`. With a score range
(`--score_range=0,5`), a score outside it, like one that is not a number, is a bad row.
"""
import dataclasses

import tensorflow as tf
import tf_keras as keras

from zoo.base import fs
from zoo.base.fields import setting
from zoo.data import specs
from zoo.data.labels import ScoreLabels
from zoo.evaluation import metrics, plots, predict
from zoo.export import explain, savedmodel
from zoo.kinds import classification
from zoo.kinds.kind import Kind
from zoo.model.cores import regression_core
from zoo.run.task import Capabilities, Task


@dataclasses.dataclass
class Settings(classification.NotOneClassSettings):
    """Classification's settings plus the range of the scores."""

    score_range: str = setting(
        "", "Regression (--task_type=regression): LOW,HIGH of valid scores, e.g. 0,5; a score "
        "outside it is a bad row ('' for no range).", group="model")


class Regression(classification.Classification):
    """One score per example (mean squared error)."""

    NAME = "regression"
    CAN = Capabilities(check_data=True, explain=True, litert=True)  # a score: no request sets
    EXPLAIN = explain.SCORE
    METRICS = ("pearson", "spearman", "mse", "rmse", "mae", "loss")

    def open_labels(self):
        return ScoreLabels.from_range(self.settings.score_range)

    def vocabulary(self, counts):
        del counts
        return self.open_labels()

    def weights(self, counts):
        del counts  # scores have no classes to weigh
        return None

    def build_core(self, encoder):
        return regression_core(encoder, self.settings.dropout, self.settings.pooling)

    def loss(self, targets, outputs):
        return tf.square(tf.cast(targets, outputs.dtype) - outputs)

    def train_metrics(self):
        return {"rmse": keras.metrics.RootMeanSquaredError()}

    def metrics(self, outputs, targets):
        results = metrics.regression_metrics(targets, outputs)
        return dict(loss=results["mse"], **results)

    def plot(self, results, outputs, targets):
        plots.plot_scatter(targets, outputs, fs.join(self.settings.model_dir, "scatter.png"),
                           f"predicted vs gold (Pearson {results['pearson']:.3f}, "
                           f"Spearman {results['spearman']:.3f})")

    def report_errors(self, source, outputs, targets):
        del source, outputs, targets  # (errors.csv lists one-class mistakes)

    transform = staticmethod(tf.identity)

    def calibration_report(self, outputs, targets):
        del outputs, targets  # a score, not a probability
        return None

    calibrate = Task.calibrate

    def row_format(self):
        return predict.Scores()

    def serving_outputs(self):
        return savedmodel.score_outputs

    def serving(self, core):
        return savedmodel.TextServing(core, self.run.packer, self.serving_outputs(),
                                      self.settings.pair)

    def litert_outputs(self):
        return self.serving_outputs(), None



KIND = Kind("regression", Regression, Settings, specs.TextColumns, ("pearson",))
STSB = Kind("stsb", Regression, Settings, specs.GlueFolder, ("pearson",),
            defaults={"score_range": "0,5"}, data_values={"layout": "stsb"})

