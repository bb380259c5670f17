"""Token tagging (named entities, CoNLL-2003, WNUT-17): a task of the one runner (`zoo.run.runner`).

`read_split(split)` returns a `zoo.data.conll.ConllSource`. Sentences stream from it through
the tagging windower (`zoo.data.tagging`) into the encoder and a `ClassifierHead` on every
token of `sequence_output`. Training and evaluation start with a data check (sentences, tags,
bad sentences, duplicates, wordpiece lengths). Evaluation reports the CoNLL scorer's entity
precision, recall and F1 (overall and per type) and token accuracy; `predict` writes each
input token with its predicted tag, a blank line between sentences, sentences in order; the
export takes raw text and returns its entities (`zoo.export.savedmodel.TaggingServing`).
"""
import dataclasses

import numpy as np
import tensorflow as tf

from zoo.base.fields import override, setting
from zoo.base.files import PartialFile, written
from zoo.data import check, specs, tagging, windows
from zoo.data.conll import Sentence
from zoo.data.pipeline import trim_to_longest
from zoo.data.sources import Pending, iterate
from zoo.data.text_files import DataError
from zoo.evaluation import metrics
from zoo.evaluation.predict import account
from zoo.export import savedmodel
from zoo.kinds.kind import Kind
from zoo.kinds.labelled import LabelledRows
from zoo.model.cores import tagging_core
from zoo.run.task import TrainingData
from zoo.run.settings import RunSettings


@dataclasses.dataclass
class Settings(RunSettings):
    """Tagging settings: the common ones plus windows of long sentences, head and bad rows."""

    doc_stride: int = setting(
        64, "Step, in wordpieces, between the windows of a sentence longer than "
        "--max_seq_length (each word is tagged where it has the most context).", low=1,
        group="model")
    dropout: float = setting(0.1, "Dropout rate of the tagging head.", low=0, high=1,
                             high_open=True, group="model")
    bad_rows: str = setting(
        "error", "A bad sentence (a token line without a tag, a tag that is not O/B-/I-, a tag "
        "the training data does not have, invalid UTF-8): 'error' stops with file, line and "
        "problem; 'skip' goes on, writes it and its reason to "
        "MODEL_DIR/rejected_rows_<split>.jsonl, and in predict writes it with an error line.",
        choices=check.BAD_ROW_POLICIES, group="data")
    shuffle_buffer: int = setting(
        20_000, "Sentences in the training shuffle buffer.", low=1, group="data")
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


class Tagging(LabelledRows):
    """A tag per word, from the first wordpiece of the word."""

    NAME = "tagging"  # in MODEL_DIR/run.json
    METRICS = ("f1", "precision", "recall", "token_accuracy")
    OUTPUT_FILES = "a text file"

    @staticmethod
    def training_padding(settings):
        del settings
        return "dynamic"  # batches are cut to their longest window

    @property
    def windower(self):
        layout = (self.settings.max_seq_length, self.settings.doc_stride)
        return self.run.packer.derived(
            ("tagging", *layout), lambda: tagging.TagWindower(self.run.packer, *layout))

    def open_labels(self):
        return tagging.OpenTags()

    def vocabulary(self, counts):
        vocabulary = tagging.TagVocab(counts)
        if not vocabulary.types:
            raise DataError(f"{self.read_split('train')!r}: every tag of the training data is "
                            "O; a tagger needs entity tags (B-X, I-X) to learn")
        return vocabulary

    def load_labels(self):
        return tagging.TagVocab.load(self.settings.model_dir)

    def prepare_training(self, evaluate_each_epoch):
        self.read_training(evaluate_each_epoch)
        count = tagging.count_windows(self.windower, self.sources["train"], self.labels)
        return TrainingData(count, "windows", self.fingerprint(),
                            dict(train_sentences=self.checks["train"].kept,
                                 skipped_bad_rows=self.checks["train"].report["bad_rows"]))

    def build_core(self, encoder):
        return tagging_core(encoder, len(self.labels), self.settings.dropout)

    def train_dataset(self, epoch):
        s = self.settings
        ds = tagging.training_windows(self.windower, self.labels, self.sources["train"],
                                      s.train_batch_size, s.seed + epoch, s.shuffle_buffer,
                                      self.checks["train"].drop)
        return ds.map(_trimmed)

    def loss(self, targets, outputs):
        return masked_cross_entropy(targets, outputs)

    def predictions(self, core, source, description):
        """Yields (item, tag ids of its tokens, or None for a bad sentence) for every sentence
        of `source`, in order."""
        sentences = Pending()
        pending = sentences.items

        def usable(item):
            return isinstance(item, Sentence) and not (item.tags and self.labels.problem(item.label))

        def rows():
            return ((index, item.tokens) for index, item in sentences.read(iterate(source))
                    if usable(item))

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
        outside = self.labels.tags.index("O")
        batches = self.run.infer(tag, ds, description, "window", key=(core, "tagging.tag"))
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
        sentences.raise_error()
        while next_index in pending:  # bad sentences at the end
            yield pending.pop(next_index), done.pop(next_index, None)
            next_index += 1

    def evaluate(self, core):
        """The CoNLL scorer's entity precision, recall and F1 and token accuracy."""
        source, data_check = self.eval_data()
        gold, predicted = [], []
        for item, tags in self.predictions(core, source, "eval"):
            if tags is not None:
                gold.append(self.labels.encode(item.tags))
                predicted.append(tags)
        results = metrics.entity_metrics(gold, predicted, self.labels.tags, self.labels.types)
        results["skipped_bad_rows"] = data_check.report["bad_rows"]
        return results

    def predict(self, core, path):
        """One line per token, `token<TAB>tag`, a blank line after each sentence; a bad
        sentence (with --bad_rows=skip) gets a `# error: FILE:LINE: reason` line and its
        tokens without tags."""
        writer, rejected = PartialFile(path), 0
        with written(writer):
            for item, tags in self.predictions(core, self.read_split("predict"), "predict"):
                if tags is None:  # a bad sentence
                    if self.settings.bad_rows != "skip":
                        raise item.error()
                    rejected += 1
                    writer.file.write(f"# error: {item.source}: {item.reason}\n")
                    writer.file.writelines(f"{token}\t\n" for token in item.raw.split())
                else:
                    writer.file.writelines(f"{token}\t{self.labels.tags[t]}\n"
                                           for token, t in zip(item.tokens, tags))
                writer.file.write("\n")
                writer.count += 1
        print(account(writer.count, rejected, "sentence"))
        return writer.count

    def serving(self, core):
        return savedmodel.TaggingServing(core, self.windower, self.labels)


KIND = Kind("tagging", Tagging, Settings, specs.ConllFiles, ("f1",))
