"""Text classification end to end: train, eval, train_and_eval, predict, export (plain arguments).

`tasks/*/train.py` read flags and call `run(mode, settings, read_split)`, where `read_split(split)`
returns the source (`zoo.data.sources`) of 'train', 'eval' or 'predict', or raises `MissingSplit`.
Data is streamed, never loaded whole. Training and evaluation start with a data check of their
splits (`zoo.data.check`). Everything a run produces goes to the model dir: checkpoints,
`labels.json`, `data_check_<split>.json`, `rejected_rows_<split>.jsonl`, `history.json`,
`eval_results.json`, `train_results.json`, TensorBoard summaries and PNG plots.
"""
import dataclasses
import json
import os
import time

import tensorflow as tf
import tf_keras as keras
from absl import logging
from tqdm import tqdm

from zoo import distribute, export, hub, metrics, plots, predict, run_record, stages, train
from zoo.data import check
from zoo.data.labels import LabelVocab, parse_label_map
from zoo.data.pipeline import DEFAULT_SHUFFLE_BUFFER, classification_dataset
from zoo.data.sources import ListSource, MissingSplit
from zoo.files import save_json
from zoo.models import TextPacker, classifier_core
from zoo.settings import RunSettings, start_run
from zoo.errors import UsageError

TASK = "classification"  # in MODEL_DIR/run.json
PADDINGS = ("dynamic", "bucketed", "fixed")


@dataclasses.dataclass
class Settings(RunSettings):
    """Classification settings: the common ones plus text pairs, padding and label names."""

    pair: bool = False  # two texts per example (text_a, text_b)
    # "dynamic": batches cut to their longest row; "bucketed": dynamic, over training batches
    # of rows of similar length (zoo.data.pipeline.group_by_length); "fixed": max_seq_length
    padding: str = "bucketed"
    label_map: str = ""
    bad_rows: str = "error"  # "error": stop at the first bad row; "skip": set it aside
    dedupe: bool = False  # drop training rows whose text repeats an earlier one
    shuffle_buffer: int = DEFAULT_SHUFFLE_BUFFER  # rows


class Classifier:
    """The packer, core model and labels of one model dir, under a distribution strategy."""

    def __init__(self, settings: Settings, labels: LabelVocab, strategy=None, packer=None):
        self.settings = settings
        self.labels = labels
        if settings.padding not in PADDINGS:
            raise UsageError(f"padding must be one of {PADDINGS}, not {settings.padding!r}")
        self.strategy = strategy or distribute.strategy_for(settings)
        self.chief = distribute.is_chief(self.strategy)
        on_tpu = distribute.is_tpu(self.strategy)
        # TPUs compile one program per shape: keep every batch at max_seq_length.
        self.dynamic_padding = settings.padding != "fixed" and not on_tpu
        self.padding = settings.padding if self.dynamic_padding else "fixed"
        encoder, _ = hub.resolve_handles(settings.encoder_handle, settings.preprocessor_handle)
        self.packer = packer or make_packer(settings, self.strategy)
        keras.utils.set_random_seed(settings.seed)
        with self.strategy.scope():
            self.core = classifier_core(encoder, len(labels), settings.dropout, on_tpu=on_tpu)

    def logits_and_labels(self, source, rows=None):
        batch_size = self.settings.eval_batch_size
        ds = classification_dataset(source, self.packer, batch_size, labels=self.labels,
                                    dynamic_padding=self.dynamic_padding)
        logits, label_ids = [], []
        with tqdm(total=rows, unit="ex", desc="eval", dynamic_ncols=True,
                  mininterval=2, disable=not self.chief) as bar:
            for batch_logits, batch_labels in distribute.map_batches(
                    self.strategy, lambda b: (self.core(b[0], training=False), b[1]), ds,
                    batch_size):
                logits.append(batch_logits)
                label_ids.append(batch_labels)
                bar.update(len(batch_labels))
        return tf.concat(logits, 0), tf.concat(label_ids, 0)

    def evaluate(self, source, epoch=None, step=None, data_check=None):
        """Metrics on a source: eval_results.json, a confusion-matrix plot, and (with the
        training `step` they belong to) TensorBoard scalars in MODEL_DIR/eval."""
        if data_check is None:
            data_check = check_splits(self.settings, {"eval": source}, self.packer, self.labels,
                                      self.chief)[0]["eval"]
        logits, label_ids = self.logits_and_labels(source, data_check.kept)
        loss = float(tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
            label_ids, logits, from_logits=True)))
        results = metrics.classification_metrics(
            label_ids.numpy(), tf.nn.softmax(logits).numpy(), len(self.labels))
        results = dict(loss=loss, **results, label_names=self.labels.names,
                       examples=int(len(label_ids)), skipped_bad_rows=data_check.report["bad_rows"])
        if epoch is not None:
            results["epoch"] = epoch
        if not self.chief:  # every worker evaluates (same results); the chief writes them
            return results
        model_dir = self.settings.model_dir
        save_json(os.path.join(model_dir, "eval_results.json"), results)
        plots.plot_confusion(results["confusion_matrix"], self.labels.names,
                             os.path.join(model_dir, "confusion_matrix.png"))
        summary = {k: v for k, v in results.items() if isinstance(v, float)}
        if step is not None:
            results["step"] = step
            train.write_eval_summaries(model_dir, step, summary)
        logging.info("eval: %s", summary)
        print("eval:", json.dumps(summary))
        return results

    def export(self):
        return export.export_classifier(self.settings.export_dir, self.core, self.packer,
                                        self.labels.names, self.settings.pair)


def make_packer(settings, strategy):
    _, preprocessor = hub.resolve_handles(settings.encoder_handle, settings.preprocessor_handle)
    return TextPacker(preprocessor, settings.max_seq_length, on_tpu=distribute.is_tpu(strategy))


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


def _keep_labels(settings, labels, chief):
    """Saves the training data's vocabulary, unless a resumed run's saved one differs."""
    saved = os.path.join(settings.model_dir, "labels.json")
    if os.path.exists(saved):
        previous = LabelVocab.load(settings.model_dir)
        if previous.raw_labels != labels.raw_labels:
            raise UsageError(f"{saved}: labels {previous.raw_labels} differ from the training "
                             f"data's {labels.raw_labels}; use a new --model_dir")
    if chief:
        labels.save(settings.model_dir)


def _train(settings, read_split, evaluate_each_epoch, strategy, compute):
    chief = distribute.is_chief(strategy)
    sources = {"train": read_split("train")}
    if evaluate_each_epoch:
        sources["eval"] = read_split("eval")
    packer = make_packer(settings, strategy)
    checks, labels = check_splits(settings, sources, packer, chief=chief,
                                  label_map=parse_label_map(settings.label_map))
    _keep_labels(settings, labels, chief)
    run_record.start_training(
        settings.model_dir, run_record.describe(TASK, settings, labels.raw_labels,
                                                _fingerprint(sources["train"])),
        settings.allow_changed_settings, chief)
    clf = Classifier(settings, labels, strategy, packer)
    batch = settings.train_batch_size
    plan = train.plan_epochs(checks["train"].kept, settings)
    with clf.strategy.scope():
        optimizer = train.optimizer_for(settings, plan.total_steps, compute.xla_fusion)
        train_metrics = {"accuracy": keras.metrics.SparseCategoricalAccuracy()}

    def dataset_fn(epoch):
        return classification_dataset(sources["train"], clf.packer, batch, labels,
                                      shuffle_seed=settings.seed + epoch, drop_remainder=True,
                                      dynamic_padding=clf.dynamic_padding,
                                      group_by_lengths=clf.padding == "bucketed",
                                      shuffle_buffer=settings.shuffle_buffer,
                                      drop=checks["train"].drop)

    def on_epoch_end(epoch, record):
        if not evaluate_each_epoch:
            return {}
        return clf.evaluate(sources["eval"], epoch + 1, record["step"], checks["eval"])

    def loss_fn(label_ids, logits):
        return keras.losses.sparse_categorical_crossentropy(label_ids, logits, from_logits=True)

    began = time.time()
    timing = train.fit(clf.core, optimizer, loss_fn, dataset_fn, plan.steps_per_epoch,
                       plan.epochs, batch,
                       settings.model_dir, settings.checkpoint_every, on_epoch_end,
                       metrics=train_metrics, strategy=clf.strategy,
                       steps_per_execution=settings.steps_per_execution,
                       xla_fusion=compute.xla_fusion, total_steps=plan.total_steps)
    report = checks["train"].report
    timing.update(wall_seconds=time.time() - began, train_examples=checks["train"].kept,
                  skipped_bad_rows=report["bad_rows"],
                  duplicates_dropped=report["duplicates_dropped"],
                  batch_size=batch, padding=clf.padding,
                  max_seq_length=settings.max_seq_length,
                  strategy=type(clf.strategy).__name__,
                  replicas=clf.strategy.num_replicas_in_sync)
    print("train:", json.dumps(timing))
    if not clf.chief:
        return clf
    save_json(os.path.join(settings.model_dir, "train_results.json"), timing)
    history = train.load_history(settings.model_dir)
    if history:
        plots.plot_history(history, os.path.join(settings.model_dir, "training_curves.png"))
    if settings.export_dir:
        with stages.stage("export"):
            print("exported to", clf.export())
    return clf


def check_data(settings, read_split, strategy):
    """`--mode=check_data`: checks every split that was given, reporting every bad row (as
    `--bad_rows=skip` does) instead of stopping at the first. Returns {split: report}."""
    sources = {}
    for split in ("train", "eval", "predict"):
        try:
            sources[split] = read_split(split)
        except MissingSplit:
            continue
    if not sources:
        raise UsageError("--mode=check_data needs data: --train_file, --eval_file, "
                         "--predict_file or --data_dir")
    labels = None
    if "train" not in sources and os.path.exists(os.path.join(settings.model_dir, "labels.json")):
        labels = LabelVocab.load(settings.model_dir)
    checks, _ = check_splits(settings, sources, make_packer(settings, strategy), labels,
                             label_map=parse_label_map(settings.label_map), bad_rows="skip")
    return {split: result.report for split, result in checks.items()}


def _fingerprint(source):
    if isinstance(source, ListSource):
        return run_record.data_fingerprint(examples=source.examples)
    return run_record.data_fingerprint(files=source.shards)


def restored(settings, strategy=None):
    """The classifier of a trained model dir, its latest checkpoint loaded."""
    labels = LabelVocab.load(settings.model_dir)
    run_record.check_restore(settings.model_dir,
                             run_record.describe(TASK, settings, labels.raw_labels))
    clf = Classifier(settings, labels, strategy)
    checkpoint = train.restore_model(clf.core, settings.model_dir)
    clf.step = int(checkpoint.rsplit("-", 1)[1])
    return clf


def run(mode, settings: Settings, read_split):
    """Runs one mode; returns what it produced (eval results, prediction count, export dir)."""
    strategy, compute = start_run(mode, settings, padding=settings.padding)
    with stages.stage(f"--mode={mode}"):
        return _run(mode, settings, read_split, strategy, compute)


def _run(mode, settings, read_split, strategy, compute):
    if mode == "check_data":
        return check_data(settings, read_split, strategy)
    if mode in ("train", "train_and_eval"):
        _train(settings, read_split, mode == "train_and_eval", strategy, compute)
        return None
    clf = restored(settings, strategy)
    if mode == "eval":
        return clf.evaluate(read_split("eval"), step=clf.step)
    if not clf.chief:  # predictions and exports are the chief's to write
        return None
    if mode == "predict":
        if not settings.output_file:
            raise UsageError("--mode=predict needs --output_file (.csv or .jsonl)")
        source = read_split("predict")
        count = predict.predict_to_file(clf.core, clf.packer, source, settings.output_file,
                                        clf.labels.names, settings.eval_batch_size,
                                        settings.bad_rows, clf.strategy)
        print(f"wrote {count} predictions to {settings.output_file}")
        return count
    if not settings.export_dir:
        raise UsageError("--mode=export needs --export_dir")
    path = clf.export()
    print("exported to", path)
    return path
