"""Token tagging (named entities, CoNLL-2003, WNUT-17): a task of the one runner (`zoo.runner`).

`read_split(split)` returns a `zoo.data.conll.ConllSource`. Sentences stream from it through
the tagging windower (`zoo.data.tagging`) into the encoder and a `ClassifierHead` on every
token of `sequence_output`. Training and evaluation start with a data check (sentences, tags,
bad sentences, duplicates, wordpiece lengths). Evaluation reports the CoNLL scorer's entity
precision, recall and F1 (overall and per type) and token accuracy; `predict` writes each
input token with its predicted tag, a blank line between sentences, sentences in order; the
export takes raw text and returns its entities (`zoo.export.TaggingServing`).
"""
import dataclasses
import os

import numpy as np
import tensorflow as tf

from zoo import export, metrics, run_record, runner
from zoo.data import check, tagging, windows
from zoo.data.conll import Sentence
from zoo.data.pipeline import trim_to_longest
from zoo.data.sources import ListSource, iterate
from zoo.errors import UsageError
from zoo.files import PartialFile
from zoo.models import tagging_core
from zoo.settings import RunSettings, override, setting


@dataclasses.dataclass
class Settings(RunSettings):
    """Tagging settings: the common ones plus windows of long sentences, head and bad rows."""

    doc_stride: int = setting(
        64, "Step, in wordpieces, between the windows of a sentence longer than "
        "--max_seq_length (each word is tagged where it has the most context).")
    dropout: float = setting(0.1, "Dropout rate of the tagging head.")
    bad_rows: str = setting(
        "error", "A bad sentence (a token line without a tag, a tag that is not O/B-/I-, a tag "
        "the training data does not have, invalid UTF-8): 'error' stops with file, line and "
        "problem; 'skip' goes on, writes it and its reason to "
        "MODEL_DIR/rejected_rows_<split>.jsonl, and in predict writes it with an error line.",
        choices=check.BAD_ROW_POLICIES)
    shuffle_buffer: int = setting(
        20_000, "Sentences in the training shuffle buffer.")
    output_file: str = override(
        RunSettings, "output_file", None, "Predictions of --mode=predict: each token and its "
        "tag on a line (tab-separated), a blank line between sentences.")


def masked_cross_entropy(labels, logits):
    """Per window: the mean cross-entropy over its tagged positions (labels >= 0)."""
    keep = tf.cast(labels >= 0, logits.dtype)
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(tf.maximum(labels, 0), logits)
    return tf.reduce_sum(losses * keep, axis=-1) / tf.maximum(tf.reduce_sum(keep, axis=-1), 1.0)


def _trimmed(inputs, labels):
    """Inputs cut to their longest window, and the labels of their positions with them."""
    trimmed = trim_to_longest(inputs)
    return trimmed, labels[:, :tf.shape(trimmed["input_mask"])[1]]


class Tagging(runner.Task):
    """A tag per word, from the first wordpiece of the word."""

    NAME = "tagging"  # in MODEL_DIR/run.json
    MODES = runner.MODES
    OUTPUT_FILES = "a text file"

    @staticmethod
    def training_padding(settings):
        del settings
        return "dynamic"  # batches are cut to their longest window

    def __init__(self, run, read_split):
        super().__init__(run, read_split)
        self.vocab = None
        self.sources, self.checks = {}, {}
        self._windower = None

    @property
    def windower(self):
        if self._windower is None:
            self._windower = tagging.TagWindower(self.run.packer, self.settings.max_seq_length,
                                                 self.settings.doc_stride)
        return self._windower

    def check_splits(self, sources, labels=None, bad_rows=None):
        s = self.settings
        return check.check_splits(sources, self.run.packer, s.model_dir, s.max_seq_length,
                                  tagging.OpenTags(), lambda counts: tagging.TagVocab(counts),
                                  labels, bad_rows or s.bad_rows, False, self.run.chief)

    def prepare_training(self, evaluate_each_epoch):
        self.sources = {"train": self.read_split("train")}
        if evaluate_each_epoch:
            self.sources["eval"] = self.read_split("eval")
        self.checks, self.vocab = self.check_splits(self.sources)
        saved = os.path.join(self.settings.model_dir, tagging.LABELS_FILE)
        if os.path.exists(saved) and tagging.TagVocab.load(self.settings.model_dir).tags != \
                self.vocab.tags:
            raise UsageError(f"{saved}: tags differ from the training data's {self.vocab.tags}; "
                             "use a new --model_dir")
        if self.run.chief:
            self.vocab.save(self.settings.model_dir)
        count = tagging.count_windows(self.windower, self.sources["train"], self.vocab)
        report = self.checks["train"].report
        source = self.sources["train"]
        fingerprint = (run_record.data_fingerprint(examples=source.examples)
                       if isinstance(source, ListSource)
                       else run_record.data_fingerprint(files=source.shards))
        return runner.TrainingData(count, "windows", fingerprint,
                                   dict(train_sentences=self.checks["train"].kept,
                                        skipped_bad_rows=report["bad_rows"]))

    def prepare_restore(self):
        self.vocab = tagging.TagVocab.load(self.settings.model_dir)

    def outputs(self):
        return self.vocab.tags

    def build_core(self, encoder):
        return tagging_core(encoder, len(self.vocab), self.settings.dropout)

    def train_dataset(self, epoch):
        s = self.settings
        ds = tagging.training_windows(self.windower, self.vocab, self.sources["train"],
                                      s.train_batch_size, s.seed + epoch, s.shuffle_buffer,
                                      self.checks["train"].drop)
        return ds.map(_trimmed)

    def loss(self, targets, outputs):
        return masked_cross_entropy(targets, outputs)

    def predictions(self, core, source, description):
        """Yields (item, tag ids of its tokens, or None for a bad sentence) for every sentence
        of `source`, in order."""
        pending, problems = {}, []

        def usable(item):
            return isinstance(item, Sentence) and not (item.tags and self.vocab.problem(item.label))

        def rows():
            try:
                for index, item in enumerate(iterate(source)):
                    pending[index] = item
                    if usable(item):
                        yield index, item.tokens
            except Exception as e:  # pylint: disable=broad-except  # raised again below
                problems.append(e)

        ds = tagging.inference_windows(self.windower, rows, self.settings.eval_batch_size)

        def tag(batch):
            inputs, meta = batch
            trimmed = trim_to_longest(inputs)  # the model sees the batch's longest window...
            tags = tf.argmax(core(trimmed, training=False), axis=-1, output_type=tf.int32)
            width = tf.shape(inputs["input_mask"])[1] - tf.shape(tags)[1]
            # ... and its tags are padded back, so every batch has the windows' full width
            return dict(meta, tags=tf.pad(tags, [[0, 0], [0, width]], constant_values=-1))

        next_index, done = 0, {}
        # a token that gives no word is in no window: tagged O (the export has no word there)
        outside = self.vocab.tags.index("O")
        batches = self.run.infer(tag, ds, description, "window")
        for ready, bounds in windows.complete_groups(batches):
            for first, end in bounds:
                index = int(ready["index"][first])
                # each token's tag from its max-context window
                found = (ready["token"][first:end] >= 0) & ready["max_context"][first:end]
                tokens = ready["token"][first:end][found]
                tags = np.full(len(pending[index].tokens), outside, np.int32)
                tags[tokens] = ready["tags"][first:end][found]
                done[index] = tags
            while next_index in pending and (next_index in done
                                             or not usable(pending[next_index])):
                yield pending.pop(next_index), done.pop(next_index, None)
                next_index += 1
        if problems:
            raise problems[0]
        while next_index in pending:  # bad sentences at the end
            yield pending.pop(next_index), done.pop(next_index, None)
            next_index += 1

    def evaluate(self, core):
        """The CoNLL scorer's entity precision, recall and F1 and token accuracy."""
        source = self.sources.get("eval") or self.read_split("eval")
        data_check = self.checks.get("eval") or self.check_splits(
            {"eval": source}, self.vocab)[0]["eval"]
        gold, predicted = [], []
        for item, tags in self.predictions(core, source, "eval"):
            if tags is not None:
                gold.append(self.vocab.encode(item.tags))
                predicted.append(tags)
        results = metrics.entity_metrics(gold, predicted, self.vocab.tags, self.vocab.types)
        results["skipped_bad_rows"] = data_check.report["bad_rows"]
        return results

    def predict(self, core, path):
        """One line per token, `token<TAB>tag`, a blank line after each sentence; a bad
        sentence (with --bad_rows=skip) gets a `# error: FILE:LINE: reason` line and its
        tokens without tags."""
        writer = PartialFile(path)
        try:
            for item, tags in self.predictions(core, self.read_split("predict"), "predict"):
                if tags is None:  # a bad sentence
                    if self.settings.bad_rows != "skip":
                        raise item.error()
                    writer.file.write(f"# error: {item.source}: {item.reason}\n")
                    writer.file.writelines(f"{token}\t\n" for token in item.raw.split())
                else:
                    writer.file.writelines(f"{token}\t{self.vocab.tags[t]}\n"
                                           for token, t in zip(item.tokens, tags))
                writer.file.write("\n")
                writer.count += 1
        except BaseException:
            writer.abort()
            raise
        return writer.close()

    def serving(self, core):
        return export.TaggingServing(core, self.windower, self.vocab)

    def check_data(self):
        """Checks every split that was given, reporting every bad sentence."""
        sources = check.given_splits(self.read_split)
        labels = None
        if "train" not in sources and os.path.exists(
                os.path.join(self.settings.model_dir, tagging.LABELS_FILE)):
            labels = tagging.TagVocab.load(self.settings.model_dir)
        checks, _ = self.check_splits(sources, labels, bad_rows="skip")
        return {split: result.report for split, result in checks.items()}


def run(mode, settings: Settings, read_split):
    """Runs one mode of token tagging (`zoo.runner.run`)."""
    return runner.run(mode, Tagging, settings, read_split)
