"""Text classification: a task of the one runner (`zoo.runner`).

`read_split(split)` returns the source (`zoo.data.sources`) of 'train', 'eval' or 'predict'. Data
is streamed, never loaded whole. Training and evaluation start with a data check of their
splits (`zoo.data.check`): rows, labels, bad rows, duplicates, token lengths. The label
vocabulary is learned from the training data and saved as `labels.json`. Besides what the runner
writes, a run leaves `data_check_<split>.json`, `rejected_rows_<split>.jsonl` (with
`--bad_rows=skip`) and `confusion_matrix.png` in the model dir.
"""
import dataclasses
import os

import tensorflow as tf
import tf_keras as keras

from zoo import export, metrics, plots, predict, run_record, runner
from zoo.data import check
from zoo.data.labels import LabelVocab, parse_label_map
from zoo.data.pipeline import DEFAULT_SHUFFLE_BUFFER, classification_dataset
from zoo.data.sources import ListSource, MissingSplit
from zoo.errors import UsageError
from zoo.files import save_json
from zoo.models import classifier_core
from zoo.settings import RunSettings, override, setting

PADDINGS = ("bucketed", "dynamic", "fixed")


@dataclasses.dataclass
class Settings(RunSettings):
    """Classification settings: the common ones plus text pairs, padding, labels and bad rows."""

    pair: bool = setting(False, "two texts per example (text_a, text_b)", flag=False)
    dropout: float = setting(0.1, "Dropout rate of the classifier head (on pooled_output).")
    padding: str = setting(
        "bucketed", "bucketed: cut each batch to its longest text, and make training batches "
        "of texts of similar length (least padding; rows are still shuffled, batches within "
        "windows of 50 batches); dynamic: cut each batch to its longest text; fixed: always "
        "pad to --max_seq_length. dynamic and fixed train on the same batches.",
        choices=PADDINGS)
    label_map: str = setting("", "names for raw labels, '-1:negative,...'", flag=False)
    bad_rows: str = setting(
        "error", "A bad row (malformed, wrong column count, missing column, empty text, "
        "unknown label, invalid UTF-8...): 'error' stops with file, line and problem; 'skip' "
        "goes on, writes each rejected row and its reason to "
        "MODEL_DIR/rejected_rows_<split>.jsonl, and in predict gives it an output row with an "
        "'error' field. --mode=check_data always reports every bad row.",
        choices=check.BAD_ROW_POLICIES)
    dedupe: bool = setting(False, "Drop training rows whose text repeats an earlier row's.")
    shuffle_buffer: int = setting(
        DEFAULT_SHUFFLE_BUFFER, "Rows in the training shuffle buffer (shards are read as "
        "streams, interleaved, and shuffled through this buffer).")
    output_file: str = override(RunSettings, "output_file", None,
                                "Predictions file (.csv or .jsonl) for --mode=predict.")


def dynamic_padding(settings, on_tpu):
    """Whether batches are cut to their longest row (TPUs compile one program per shape: no)."""
    return settings.padding != "fixed" and not on_tpu


def check_splits(settings, sources, packer, labels=None, chief=True, label_map=None,
                 bad_rows=None):
    """Data checks of {split: source} (train first): reports printed and saved in the model
    dir as data_check_<split>.json, rejected rows in rejected_rows_<split>.jsonl.

    Labels: a split is checked against `labels` if given; the train split, when there are no
    labels yet, against the label map (if any), and its labels then become the vocabulary the
    later splits are checked against. Returns ({split: SplitCheck}, that vocabulary or None).
    """
    results = {}
    for split, source in sources.items():
        if labels is not None:
            known = labels.known()
        elif label_map:
            known = set(label_map) | set(label_map.values())
        else:
            known = None
        rejected = os.path.join(settings.model_dir, f"rejected_rows_{split}.jsonl")
        result = check.check_split(
            split, source, packer, settings.max_seq_length, known_labels=known,
            bad_rows=bad_rows or settings.bad_rows, dedupe=settings.dedupe and split == "train",
            rejected_path=rejected if chief else None, progress=chief)
        results[split] = result
        if split == "train" and labels is None:
            labels = LabelVocab.from_labels(result.label_counts, label_map)
        if chief:
            save_json(os.path.join(settings.model_dir, f"data_check_{split}.json"), result.report)
            print("\n".join(check.summary_lines(result.report)))
    return results, labels


def _fingerprint(source):
    if isinstance(source, ListSource):
        return run_record.data_fingerprint(examples=source.examples)
    return run_record.data_fingerprint(files=source.shards)


def sparse_cross_entropy(label_ids, logits):
    return keras.losses.sparse_categorical_crossentropy(label_ids, logits, from_logits=True)


class Classification(runner.Task):
    """A classifier head on `pooled_output`, over labelled text or text pairs."""

    NAME = "classification"  # in MODEL_DIR/run.json
    MODES = runner.MODES
    OUTPUT_FILES = ".csv or .jsonl"

    @staticmethod
    def training_padding(settings):
        return settings.padding

    def __init__(self, run, read_split):
        super().__init__(run, read_split)
        self.dynamic_padding = dynamic_padding(self.settings, run.on_tpu)
        self.padding = self.settings.padding if self.dynamic_padding else "fixed"
        self.labels = None
        self.sources, self.checks = {}, {}

    def prepare_training(self, evaluate_each_epoch):
        s = self.settings
        self.sources = {"train": self.read_split("train")}
        if evaluate_each_epoch:
            self.sources["eval"] = self.read_split("eval")
        self.checks, self.labels = check_splits(s, self.sources, self.run.packer,
                                                chief=self.run.chief,
                                                label_map=parse_label_map(s.label_map))
        self._keep_labels()
        report = self.checks["train"].report
        return runner.TrainingData(
            self.checks["train"].kept, "examples", _fingerprint(self.sources["train"]),
            dict(skipped_bad_rows=report["bad_rows"],
                 duplicates_dropped=report["duplicates_dropped"], padding=self.padding))

    def _keep_labels(self):
        """Saves the training data's vocabulary, unless a resumed run's saved one differs."""
        model_dir = self.settings.model_dir
        saved = os.path.join(model_dir, "labels.json")
        if os.path.exists(saved):
            previous = LabelVocab.load(model_dir)
            if previous.raw_labels != self.labels.raw_labels:
                raise UsageError(f"{saved}: labels {previous.raw_labels} differ from the "
                                 f"training data's {self.labels.raw_labels}; use a new "
                                 "--model_dir")
        if self.run.chief:
            self.labels.save(model_dir)

    def prepare_restore(self):
        self.labels = LabelVocab.load(self.settings.model_dir)

    def outputs(self):
        return self.labels.raw_labels

    def build_core(self, encoder):
        return classifier_core(encoder, len(self.labels), self.settings.dropout)

    def train_dataset(self, epoch):
        s = self.settings
        return classification_dataset(
            self.sources["train"], self.run.packer, s.train_batch_size, self.labels,
            shuffle_seed=s.seed + epoch, drop_remainder=True,
            dynamic_padding=self.dynamic_padding, group_by_lengths=self.padding == "bucketed",
            shuffle_buffer=s.shuffle_buffer, drop=self.checks["train"].drop)

    def loss(self, targets, outputs):
        return sparse_cross_entropy(targets, outputs)

    def train_metrics(self):
        return {"accuracy": keras.metrics.SparseCategoricalAccuracy()}

    def evaluate(self, core):
        """Loss, accuracy, F1, MCC and the confusion matrix (also as a PNG) of the eval split."""
        source = self.sources.get("eval") or self.read_split("eval")
        data_check = self.checks.get("eval") or check_splits(
            self.settings, {"eval": source}, self.run.packer, self.labels,
            self.run.chief)[0]["eval"]
        ds = classification_dataset(source, self.run.packer, self.settings.eval_batch_size,
                                    labels=self.labels, dynamic_padding=self.dynamic_padding)
        logits, label_ids = [], []
        for batch_logits, batch_labels in self.run.infer(
                lambda b: (core(b[0], training=False), b[1]), ds, "eval", "ex", data_check.kept):
            logits.append(batch_logits)
            label_ids.append(batch_labels)
        logits, label_ids = tf.concat(logits, 0), tf.concat(label_ids, 0)
        results = metrics.classification_metrics(
            label_ids.numpy(), tf.nn.softmax(logits).numpy(), len(self.labels))
        results = dict(loss=float(tf.reduce_mean(sparse_cross_entropy(label_ids, logits))),
                       **results, label_names=self.labels.names, examples=int(len(label_ids)),
                       skipped_bad_rows=data_check.report["bad_rows"])
        if self.run.chief:
            plots.plot_confusion(results["confusion_matrix"], self.labels.names,
                                 os.path.join(self.settings.model_dir, "confusion_matrix.png"))
        return results

    def predict(self, core, path):
        return predict.predict_to_file(core, self.run.packer, self.read_split("predict"), path,
                                       self.labels.names, self.settings.eval_batch_size,
                                       self.settings.bad_rows, self.run.strategy)

    def serving(self, core):
        return export.ClassifierServing(core, self.run.packer, self.labels.names,
                                        self.settings.pair)

    def check_data(self):
        """Checks every split that was given, reporting every bad row (as `--bad_rows=skip`
        does) instead of stopping at the first. Returns {split: report}."""
        sources = {}
        for split in ("train", "eval", "predict"):
            try:
                sources[split] = self.read_split(split)
            except MissingSplit:
                continue
        if not sources:
            raise UsageError("--mode=check_data needs data: --train_file, --eval_file, "
                             "--predict_file or --data_dir")
        labels = None
        model_dir = self.settings.model_dir
        if "train" not in sources and os.path.exists(os.path.join(model_dir, "labels.json")):
            labels = LabelVocab.load(model_dir)
        checks, _ = check_splits(self.settings, sources, self.run.packer, labels,
                                 label_map=parse_label_map(self.settings.label_map),
                                 bad_rows="skip")
        return {split: result.report for split, result in checks.items()}


def run(mode, settings: Settings, read_split):
    """Runs one mode of classification (`zoo.runner.run`)."""
    return runner.run(mode, Classification, settings, read_split)
