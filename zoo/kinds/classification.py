"""Text classification: a task of the one runner (`zoo.run.runner`), and the base of the other
tasks on labelled text (`zoo.kinds.regression`, `zoo.kinds.multilabel`).

`read_split(split)` returns the source (`zoo.data.sources`) of 'train', 'eval' or 'predict'. Data
is streamed, never loaded whole. Training and evaluation start with a data check of their
splits (`zoo.data.check`): rows, labels, bad rows, duplicates, token lengths. The labels are
learned from the training data and saved as `labels.json` (`zoo.data.labels`). Besides what the
runner writes, a run leaves `data_check_<split>.json`, `rejected_rows_<split>.jsonl` (with
`--bad_rows=skip`) and plots of the evaluation in the model dir. Every evaluation measures the
calibration of the probabilities (`zoo.evaluation.calibration`); after training, a class model's
temperature is fitted on the eval split (`calibrate`, MODEL_DIR/temperature.json), and predict,
eval, explain and the export apply it; `--min_score` makes rows below it abstain.

A task on labelled text that predicts something else than one class changes only what depends on
the kind of label: `open_labels` / `vocabulary`, `build_core`, `loss`, `metrics`, `plot`,
`transform`, `row_format` and `serving_outputs`.
"""
import dataclasses
import itertools

import numpy as np
import tensorflow as tf
import tf_keras as keras

from zoo.base import fs
from zoo.base.fields import override, setting
from zoo.data import check, specs
from zoo.data.labels import LabelVocab, OpenLabels, class_weights, parse_label_map
from zoo.data.pipeline import DEFAULT_SHUFFLE_BUFFER, classification_dataset, evaluated_rows
from zoo.data.sources import MissingSplit
from zoo.evaluation import calibration, metrics, plots, predict
from zoo.evaluation import errors, explanations, explain_files
from zoo.export import explain, savedmodel
from zoo.export.explain import DEFAULT_STEPS
from zoo.kinds.kind import Kind
from zoo.kinds.labelled import LabelledRows
from zoo.model import hub
from zoo.model.cores import classifier_core, text_input_names
from zoo.model.heads import POOLINGS
from zoo.run.task import Capabilities, TrainingData
from zoo.run.settings import RunSettings
from zoo.training import run_record

PADDINGS = ("bucketed", "dynamic", "fixed")


@dataclasses.dataclass
class Settings(RunSettings):
    """Settings of tasks on labelled text: the common ones plus pairs, padding, labels, bad rows."""

    pair: bool = setting(False, "two texts per example (text_a, text_b)", flag=False, group="model")
    dropout: float = setting(0.1, "Dropout rate of the head (on the pooled vector).",
                             low=0, high=1, high_open=True, group="model")
    pooling: str = setting(
        "auto", "The vector per text the head reads: cls (the encoder's pooled_output, its "
        "pooler on [CLS]), mean (the mean of sequence_output over the real tokens; what "
        "sentence-embedding models such as all-MiniLM-L6-v2 were trained for), cls_mean "
        "(both, concatenated) or auto: the one the encoder was trained for (mean for the "
        "default MiniLM, cls for other BERTs; zoo.model.hub.default_pooling), or, for a model dir "
        "that was trained, the one it was trained with.", choices=("auto",) + POOLINGS,
        group="model")
    padding: str = setting(
        "bucketed", "bucketed: cut each batch to its longest text, and make training batches "
        "of texts of similar length (least padding; rows are still shuffled, batches within "
        "windows of 50 batches); dynamic: cut each batch to its longest text; fixed: always "
        "pad to --max_seq_length. dynamic and fixed train on the same batches.",
        choices=PADDINGS, group="trainer")
    label_map: str = setting("", "names for raw labels, '-1:negative,...'", flag=False,
                             group="model")
    class_weights: str = setting(
        "none", "Weights of the classes in the training loss: none (every example counts the "
        "same); balanced (class c weighs rows / (classes x rows of c) in the training data, so "
        "a rare class counts as much as a common one); or a JSON file {label: weight} (raw "
        "labels or names; others weigh 1). Reported in train_results.json.", group="trainer")
    bad_rows: str = setting(
        "error", "A bad row (malformed, wrong column count, missing column, empty text, "
        "unknown label, invalid UTF-8...): 'error' stops with file, line and problem; 'skip' "
        "goes on, writes each rejected row and its reason to "
        "MODEL_DIR/rejected_rows_<split>.jsonl, and in predict gives it an output row with an "
        "'error' field. --mode=check_data always reports every bad row.",
        choices=check.BAD_ROW_POLICIES, group="data")
    dedupe: bool = setting(False, "Drop training rows whose text repeats an earlier row's.",
                           group="data")
    shuffle_buffer: int = setting(
        DEFAULT_SHUFFLE_BUFFER, "Rows in the training shuffle buffer (shards are read as "
        "streams, interleaved, and shuffled through this buffer).", low=1, group="data")
    output_file: str = override(RunSettings, "output_file", None,
                                "Predictions file (.csv or .jsonl) for --mode=predict; "
                                "explanations (.jsonl) for --mode=explain.")
    top_k: int = setting(
        0, "Class tasks: --mode=predict also writes the N most probable classes of each row "
        "and their probabilities (0: the most probable only). The export's top_k signature "
        "gives a request's row that asks for 0 this many (every class when 0).", low=0,
        group="output")
    temperature_scaling: bool = setting(
        True, "Class models: after training, fit a temperature on the eval split (one number "
        "that divides the logits, chosen to minimise the eval rows' negative log-likelihood; "
        "it never changes a label) so that a score of 0.9 is right about 90% of the time; "
        "predict and the export apply it (MODEL_DIR/temperature.json). With no eval split "
        "nothing is fitted. --notemperature_scaling keeps the model's own softmax.",
        group="trainer")
    min_score: float = setting(
        0.0, "Class models: a row whose score (its class's probability, calibrated) is below "
        "this gets no label (null in JSONL, empty in CSV) and keeps its scores. The export's "
        "min_score signature takes one per row (0 there: this value). eval_results.json's "
        "`calibration.coverage` gives the accuracy of the rows each score keeps.",
        low=0, high=1, group="output")
    export_explain: bool = setting(
        False, "Give the export an `explain` signature (attributions per word, "
        "zoo.export.explain) beside serving_default. Off by default: its graph (the model's "
        "gradients) makes the export slower to load in a new process (zoo.serving, "
        "zoo serve-predict).", group="export")
    explain_steps: int = setting(
        DEFAULT_STEPS, "Integration points of integrated gradients in --mode=explain and the "
        "export's explain signature (zoo.export.explain); more is closer to exact and slower.",
        low=2, high=1024, group="output")
    learning_rate: float = override(
        RunSettings, "learning_rate", 1e-4,
        "Peak learning rate of AdamW (after warmup). The default was chosen on validation data "
        "for the default encoder, MiniLM-L6-H384 (docs/training.md); BERT-Base and larger are "
        "usually tuned between 2e-5 and 5e-5.")
    head_learning_rate_multiplier: float = override(
        RunSettings, "head_learning_rate_multiplier", 10.0,
        "The head's learning rate is this times --learning_rate (which the encoder keeps). The "
        "default suits a freshly initialised head on the default encoder (chosen on validation "
        "data: docs/training.md). 1 trains everything at one rate.")


@dataclasses.dataclass
class NotOneClassSettings(Settings):
    """Classification's settings for a kind whose rows get something else than one class (a
    score, a set of labels): the settings of one class a row (class weights, top-k, temperature
    scaling, a minimum score) stay off and are not its flags."""

    class_weights: str = override(Settings, "class_weights", "none", flag=False)
    top_k: int = override(Settings, "top_k", 0, flag=False)
    temperature_scaling: bool = override(Settings, "temperature_scaling", False, flag=False)
    min_score: float = override(Settings, "min_score", 0.0, flag=False)


def trained_pooling(model_dir, encoder_handle, name=None):
    """The pooling `model_dir` was trained with (its run.json; task `name`'s in a multi-task
    record), "cls" for a model dir trained before zoo had `--pooling`, or None for one not
    trained yet (or trained with another encoder: the restore check says so)."""
    saved = run_record.load(model_dir)
    if saved is not None and saved.get("encoder_handle") == encoder_handle:
        pooling = saved.get("pooling") or "cls"
        return pooling.get(name, "cls") if isinstance(pooling, dict) else pooling
    if saved is None and fs.isdir(fs.join(model_dir, "checkpoints")):
        return "cls"
    return None


def dynamic_padding(settings, on_tpu):
    """Whether batches are cut to their longest row (TPUs compile one program per shape: no)."""
    return settings.padding != "fixed" and not on_tpu


def sparse_cross_entropy(label_ids, logits):
    return keras.losses.sparse_categorical_crossentropy(label_ids, logits, from_logits=True)


class Classification(LabelledRows):
    """A classifier head on `pooled_output`, over labelled text or text pairs."""

    NAME = "classification"  # in MODEL_DIR/run.json
    CAN = Capabilities(check_data=True, explain=True, litert=True, requests=True)
    EXPLAIN = explain.CLASS  # what `--mode=explain` and the explain signature explain
    METRICS = ("accuracy", "f1", "f1_macro", "f1_weighted", "mcc", "loss")
    OUTPUT_FILES = ".csv or .jsonl"
    PREDICTIONS = "predictions.csv"
    DEDUPE = True
    SCALED = True  # whether a temperature is fitted (`calibrate`); else only measured

    @classmethod
    def resolve_settings(cls, settings, record_dir=None, name=None):
        """`pooling="auto"` made concrete: the pooling the model dir was trained with
        (`trained_pooling` of `record_dir`, task `name`), else the one the encoder was trained
        for (`zoo.model.hub.default_pooling`)."""
        if settings.pooling != "auto":
            return settings
        pooling = (trained_pooling(record_dir or settings.model_dir, settings.encoder_handle,
                                   name) or hub.default_pooling(settings.encoder_handle))
        return dataclasses.replace(settings, pooling=pooling)

    @staticmethod
    def training_padding(settings):
        return settings.padding

    def __init__(self, run, read_split):
        super().__init__(run, read_split)
        self.dynamic_padding = dynamic_padding(self.settings, run.on_tpu)
        self.padding = self.settings.padding if self.dynamic_padding else "fixed"
        self.class_weights = None  # per class id, from the training data (`weights`)
        self.temperature = 1.0  # what divides the logits (`calibrate`, MODEL_DIR/temperature.json)
        self._last_eval = None  # (outputs, targets, source, data check) of the last evaluation
        self._reuse_eval = False  # the next evaluation is of the same weights (`calibrate`)

    # What depends on the kind of label (overridden by zoo.kinds.regression, zoo.kinds.multilabel).

    def open_labels(self):
        """What a training row's label may be before the vocabulary is known."""
        label_map = parse_label_map(self.settings.label_map)
        return OpenLabels(set(label_map) | set(label_map.values()) if label_map else None)

    def vocabulary(self, counts):
        """The labels learned from the training data's label `counts`."""
        return LabelVocab.from_labels(counts, parse_label_map(self.settings.label_map))

    def load_labels(self):
        return LabelVocab.load(self.settings.model_dir)

    def build_core(self, encoder):
        return classifier_core(encoder, len(self.labels), self.settings.dropout,
                               self.settings.pooling)

    def prepare_restore(self):
        super().prepare_restore()
        self.temperature = calibration.load_temperature(self.settings.model_dir)

    def weights(self, counts):
        """Loss weights per class (`--class_weights`), or None."""
        return class_weights(self.settings.class_weights, self.labels, counts)

    def loss(self, targets, outputs):
        losses = sparse_cross_entropy(targets, outputs)
        if self.class_weights is None:
            return losses
        return losses * tf.gather(tf.constant(self.class_weights, losses.dtype), targets)

    def train_metrics(self):
        return {"accuracy": keras.metrics.SparseCategoricalAccuracy()}

    def metrics(self, outputs, targets):
        """The evaluation's metrics from the model's outputs and the targets (NumPy)."""
        results = metrics.classification_metrics(
            targets, tf.nn.softmax(outputs).numpy(), len(self.labels))
        names = self.labels.names
        return dict(loss=float(tf.reduce_mean(sparse_cross_entropy(targets, outputs))),
                    **results, label_names=names,
                    per_class=metrics.per_class(results["confusion_matrix"], names),
                    most_confused=metrics.confused_pairs(results["confusion_matrix"], names))

    def plot(self, results, outputs, targets):
        del outputs, targets
        plots.plot_confusion(results["confusion_matrix"], self.labels.names,
                             fs.join(self.settings.model_dir, "confusion_matrix.png"))

    def calibration_report(self, outputs, targets):
        """How far the eval rows' probabilities are from what they say
        (`zoo.evaluation.calibration`), or None for a kind without probabilities."""
        return calibration.class_report(outputs, targets, self.temperature)

    def plot_calibration(self, report, outputs, targets):
        """reliability.png and, for class models, coverage.png in the model dir."""
        model_dir = self.settings.model_dir
        plots.plot_reliability(report, fs.join(model_dir, "reliability.png"))
        _, scores, correct = calibration.class_scores(outputs, targets, self.temperature)
        plots.plot_coverage(scores, correct, fs.join(model_dir, "coverage.png"))

    def report_errors(self, source, outputs, targets):
        """MODEL_DIR/errors.csv: the eval rows the model got wrong (`zoo.evaluation.errors`)."""
        errors.write_errors(fs.join(self.settings.model_dir, errors.ERRORS_FILE),
                            evaluated_rows(source, self.labels), self.transform(outputs).numpy(),
                            targets, self.labels.names)

    def transform(self, outputs):
        """Model outputs -> what predictions report: the probabilities at the temperature."""
        return predict.softmax(tf.cast(outputs, tf.float32) / self.temperature)

    def row_format(self):
        return predict.ClassLabels(self.labels.names, self.settings.top_k, self.settings.min_score)

    def serving_outputs(self):
        return savedmodel.calibrated_class_outputs(self.temperature)

    # The same for every kind of label.

    def prepare_training(self, evaluate_each_epoch):
        self.read_training(evaluate_each_epoch)
        if self.run.chief:  # a temperature fitted before is of other weights
            calibration.remove(self.settings.model_dir)
        self.class_weights = self.weights(self.checks["train"].label_counts)
        report = self.checks["train"].report
        extra = {} if self.class_weights is None else dict(
            class_weights=dict(zip(self.labels.names, self.class_weights)))
        return TrainingData(
            self.checks["train"].kept, "examples", self.fingerprint(),
            dict(skipped_bad_rows=report["bad_rows"],
                 duplicates_dropped=report["duplicates_dropped"], padding=self.padding,
                 **extra))

    def train_dataset(self, epoch):
        s = self.settings
        return classification_dataset(
            self.sources["train"], self.run.packer, s.train_batch_size, self.labels,
            shuffle_seed=s.seed + epoch, drop_remainder=True,
            dynamic_padding=self.dynamic_padding, group_by_lengths=self.padding == "bucketed",
            shuffle_buffer=s.shuffle_buffer, drop=self.checks["train"].drop)

    def eval_outputs(self, core, reuse=False):
        """(outputs, targets, source, data check) of the eval split; `reuse`: the last
        evaluation's, if there was one."""
        if reuse and self._last_eval is not None:
            return self._last_eval
        source, data_check = self.eval_data()
        ds = classification_dataset(source, self.run.packer, self.settings.eval_batch_size,
                                    labels=self.labels, dynamic_padding=self.dynamic_padding)
        outputs, targets = [], []
        for batch_outputs, batch_targets in self.run.infer(
                lambda b: (core(b[0], training=False), b[1]), ds, "eval", "ex", data_check.kept,
                key=(core, "classification.eval")):
            outputs.append(batch_outputs)
            targets.append(batch_targets)
        self._last_eval = (np.concatenate(outputs), np.concatenate(targets), source, data_check)
        return self._last_eval

    def evaluate(self, core):
        """The eval split's metrics (`metrics`), its calibration, its row counts, and plots."""
        outputs, targets, source, data_check = self.eval_outputs(core, self._reuse_eval)
        self._reuse_eval = False
        results = dict(self.metrics(outputs, targets), examples=int(len(targets)),
                       skipped_bad_rows=data_check.report["bad_rows"])
        report = self.calibration_report(outputs, targets)
        if report is not None:
            results.update(ece=report["ece"], calibration=report)
        if self.run.chief:
            self.plot(results, outputs, targets)
            if report is not None:
                self.plot_calibration(report, outputs, targets)
            self.report_errors(source, outputs, targets)
        return results

    def calibrate(self, core, reuse=False):
        """After training: fits the temperature on the eval split (`--temperature_scaling`,
        `zoo.evaluation.calibration`) and keeps it in MODEL_DIR/temperature.json, which
        predict, eval and export read; returns the record. `reuse`: the last evaluation was of
        these weights. The next evaluation reuses the outputs this one computed."""
        if not self.SCALED:
            record = calibration.unfitted_record(
                f"{self.NAME} probabilities are measured, not scaled (zoo.evaluation.calibration)")
        elif not self.settings.temperature_scaling:
            record = calibration.unfitted_record("--notemperature_scaling")
        else:
            try:
                outputs, targets, _, _ = self.eval_outputs(core, reuse)
            except MissingSplit:
                outputs = None
            record = (calibration.unfitted_record("no eval split to fit on") if outputs is None
                      else calibration.fitted_record(outputs, targets, "eval"))
            self._reuse_eval = outputs is not None
        self.temperature = record["temperature"]
        if self.run.chief:
            calibration.save(self.settings.model_dir, record)
        return record

    def predict(self, core, path):
        return predict.predict_to_file(core, self.run.packer, self.read_split("predict"), path,
                                       self.row_format(), self.settings.eval_batch_size,
                                       self.settings.bad_rows, self.run.strategy,
                                       transform=self.transform)

    def serving(self, core):
        return savedmodel.TextServing(core, self.run.packer, self.serving_outputs(),
                                      self.settings.pair, label_names=self.labels.names)

    def request_serving(self, core):
        """{name: serving module} of the signatures whose requests set a value per row: top_k
        and min_score (one class per row)."""
        def signature(outputs, name, dtype):
            return savedmodel.TextServing(core, self.run.packer, outputs, self.settings.pair,
                                          label_names=self.labels.names,
                                          extra=[tf.TensorSpec([None], dtype, name=name)])

        s = self.settings
        return {"top_k": signature(savedmodel.top_k_outputs(
                    s.top_k or len(self.labels.names), self.temperature), "top_k", tf.int32),
                "min_score": signature(savedmodel.min_score_outputs(
                    s.min_score, self.temperature), "min_score", tf.float32)}

    def explain_serving(self, core):
        """The explain signature's module (`zoo.export.explain.ExplainServing`) of the trained
        Keras `core`."""
        names = None if self.EXPLAIN is explain.SCORE else self.labels.names
        objective = (explain.class_objective(self.temperature) if self.EXPLAIN is explain.CLASS
                     else self.EXPLAIN)
        return explain.ExplainServing(core, self.run.packer, objective, names,
                                      self.settings.pair, self.settings.explain_steps)

    def signatures(self, core, trained=None):
        result = {"serving_default": self.serving(core)}
        if self.CAN.requests:
            result.update(self.request_serving(core))
        if trained is not None and self.settings.export_explain:
            result["explain"] = self.explain_serving(trained)
        return result

    def litert_outputs(self):
        """(outputs, label names) of the LiteRT export (`zoo.export.litert`): the SavedModel's
        `serving_default` outputs where LiteRT has their ops."""
        return self.serving_outputs(), self.labels.names

    def calibration_texts(self, count):
        """The first `count` good rows of the training split as LiteRT calibration inputs:
        [{input name: [text]}]."""
        names = text_input_names(self.settings.pair)
        rows = itertools.islice(evaluated_rows(self.read_split("train"), None), count)
        return [{n: [t] for n, t in zip(names, (row.text_a, row.text_b))} for row in rows]

    def explain(self, core, path):
        module = self.explain_serving(core)

        def explain_texts(texts):
            inputs = [tf.constant(t) for t in texts]
            if module.targeted:
                inputs.append(tf.constant([""] * len(texts[0])))
            outputs = {k: v.numpy() for k, v in module.serve(*inputs).items()}
            return explanations.rows(outputs, len(texts[0]), self.settings.pair)

        return explain_files.explain_to_file(explain_texts, self.read_split("predict"), path,
                                             self.settings.bad_rows)


KIND = Kind("classify", Classification, Settings, specs.TextColumns, ("f1", "accuracy"))
MRPC = Kind("mrpc", Classification, Settings, specs.GlueFolder, ("f1", "accuracy"),
            data_values={"layout": "mrpc"})
SST2 = Kind("sst2", Classification, Settings, specs.GlueFolder, ("f1", "accuracy"),
            data_values={"layout": "sst2"})
