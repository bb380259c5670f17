"""Streaming prediction: one output row per input row, in input order, written as it goes.

Rows are read from a source in chunks of `chunk_batches` batches; within a chunk, texts of similar
length are batched together, so each batch can be trimmed to its own longest row instead of
`max_seq_length` and short texts cost little. Results are put back in input order and written
out as soon as every row before them is done, so memory holds about one chunk, however long the
input. A bad row (with `bad_rows="skip"`) gets an output row with an `error` field instead of a
label; with `"error"` it stops the run, and no output file is left behind.

What a row says depends on the kind of label (`ClassLabels`: the class and its probability;
`Scores`: the predicted score; `LabelSets`: the classes over a threshold and every probability):
the model's outputs go through a `transform` in the graph (softmax, sigmoid, ...), then the
format turns each row's values into its columns.
"""
import csv
import json

import numpy as np
import tensorflow as tf

from zoo.base.errors import UsageError
from zoo.base.files import PartialFile, written
from zoo.compute.pipelines import eager_call
from zoo.data.pipeline import trim_to_longest
from zoo.data.sources import ListSource, Pending, iterate
from zoo.data.text_files import BadRow
from zoo.training import distribute

DEFAULT_CHUNK_BATCHES = 64


def length_order(examples):
    """Indices of `examples` sorted by text length (stable, so ties keep input order)."""
    lengths = [len(e.text_a) + len(e.text_b or "") for e in examples]
    return np.argsort(lengths, kind="stable")


class _Rows:
    """Reads a source on tf.data's thread in chunks of rows, each chunk's rows sorted by length
    if asked; every row is kept by its input index (`pending`) until it is written."""

    def __init__(self, source, batch_size, chunk_batches, sort_by_length):
        self.source = source
        self.batch_size = batch_size
        self.chunk_rows = batch_size * chunk_batches
        self.sort_by_length = sort_by_length
        self.pending = Pending()  # input index -> Example or BadRow

    def generate(self):
        chunk = []
        for index, item in self.pending.read(iterate(self.source)):
            if not isinstance(item, BadRow):
                chunk.append((index, item))
            if len(chunk) >= self.chunk_rows:
                yield from self._ordered(chunk)
                chunk = []
        yield from self._ordered(chunk)

    def _ordered(self, chunk):
        """The chunk's rows in batches (whole batches go through tf.data: far less overhead
        per row than single rows), sorted by length if asked."""
        order = length_order([e for _, e in chunk]) if self.sort_by_length else range(len(chunk))
        rows = [chunk[i] for i in order]
        for begin in range(0, len(rows), self.batch_size):
            batch = rows[begin:begin + self.batch_size]
            yield ([e.text_a for _, e in batch], [e.text_b or "" for _, e in batch],
                   np.array([i for i, _ in batch], np.int64))


def softmax(logits):
    return tf.nn.softmax(logits, axis=-1)


def stream_predictions(core, packer, source, batch_size, sort_by_length=True,
                       chunk_batches=DEFAULT_CHUNK_BATCHES, strategy=None, progress=True,
                       transform=softmax):
    """Yields `(item, values)` for every row of `source` in input order: an `Example` with
    `transform` of the model's outputs (default: class probabilities), or a `BadRow` with
    None."""
    strategy = strategy or tf.distribute.get_strategy()
    rows = _Rows(source, batch_size, chunk_batches, sort_by_length)
    pending = rows.pending.items
    ds = tf.data.Dataset.from_generator(rows.generate, output_signature=(
        tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string),
        tf.TensorSpec([None], tf.int64)))
    trim = not distribute.is_tpu(strategy)  # TPUs want one shape: keep max_seq_length

    def pack(text_a, text_b, index):
        texts = [text_a, text_b] if source.pair else [text_a]
        packed = eager_call(packer.compiled(len(texts)), *texts)
        return (trim_to_longest(packed) if trim else packed), index

    ds = ds.map(pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
    done = {}  # input index -> probabilities, until every earlier row is written
    next_index = 0

    def ready():
        nonlocal next_index
        while True:
            item = pending.get(next_index)
            if item is None:
                return
            if isinstance(item, BadRow):
                probabilities = None
            elif next_index in done:
                probabilities = done.pop(next_index)
            else:
                return
            del pending[next_index]
            next_index += 1
            yield item, probabilities

    def predict_fn(batch):
        inputs, index = batch
        return transform(core(inputs, training=False)), index

    for probabilities, indices in distribute.map_batches(
            strategy, predict_fn, ds, batch_size, progress=("predict", "row") if progress else None):
        done.update(zip(indices.tolist(), probabilities))
        yield from ready()
    rows.pending.raise_error()
    yield from ready()
    if next_index != rows.pending.total:
        raise RuntimeError(f"predicted {next_index} of {rows.pending.total} rows")  # a bug, not bad data


def predict_probabilities(core, packer, examples, batch_size, sort_by_length=True,
                          strategy=None):
    """Class probabilities `[len(examples), classes]` of in-memory examples, in their order."""
    results = [p for _, p in stream_predictions(core, packer, ListSource(examples), batch_size,
                                                sort_by_length, strategy=strategy,
                                                progress=False)]
    return np.stack(results) if results else np.zeros((0, 0), np.float32)


class ClassLabels:
    """One class per row: `label` (its name) and `score` (its probability); JSONL adds every
    class's probability. With `top_k`, the `top_k` most probable classes too, most probable
    first: `top_k` in JSONL (a list of {label, score}), columns `label_1`, `score_1`, ...
    in CSV (at most one per class). A row whose score is below `min_score` abstains: its
    `label` is null in JSONL, empty in CSV, and its scores are kept."""

    def __init__(self, label_names, top_k=0, min_score=0.0):
        self.label_names = list(label_names)
        self.top_k = min(top_k, len(self.label_names))
        self.min_score = min_score
        self.columns = ["label", "score"] + [f"{c}_{i}" for i in range(1, self.top_k + 1)
                                             for c in ("label", "score")]

    def row(self, probabilities, jsonl):
        best = int(np.argmax(probabilities))
        score = float(probabilities[best])
        row = dict(label=self.label_names[best] if score >= self.min_score else None, score=score)
        if jsonl:
            row["probabilities"] = {n: float(p) for n, p in zip(self.label_names, probabilities)}
        if self.top_k:
            ranked = [(self.label_names[i], float(probabilities[i]))
                      for i in np.argsort(-np.asarray(probabilities), kind="stable")[:self.top_k]]
            if jsonl:
                row["top_k"] = [dict(label=name, score=score) for name, score in ranked]
            else:
                for i, (name, score) in enumerate(ranked, 1):
                    row.update({f"label_{i}": name, f"score_{i}": score})
        return row


class Scores:
    """A score per row (regression)."""

    columns = ["score"]

    def row(self, score, jsonl):
        del jsonl
        return dict(score=float(score))


class LabelSets:
    """Several classes per row: `labels`, the names whose probability is at least `threshold`
    (joined by `separator` in CSV, a list in JSONL), and each class's probability (a
    `p_<name>` column in CSV, a dict in JSONL)."""

    def __init__(self, label_names, threshold=0.5, separator=","):
        self.label_names = list(label_names)
        self.threshold = threshold
        self.separator = separator
        self.columns = ["labels"] + [f"p_{name}" for name in self.label_names]

    def row(self, probabilities, jsonl):
        names = [n for n, p in zip(self.label_names, probabilities) if p >= self.threshold]
        if jsonl:
            return dict(labels=names, probabilities={
                n: float(p) for n, p in zip(self.label_names, probabilities)})
        return dict(labels=self.separator.join(names), **{
            f"p_{n}": float(p) for n, p in zip(self.label_names, probabilities)})


class PredictionWriter(PartialFile):
    """Writes prediction rows to `.csv` or `.jsonl` (by extension) as they come.

    Columns: `id` (when the input has ids), then the format's (`ClassLabels` for a list of
    label names). With `with_errors`, an `error` column names the file, line and problem of a
    bad row, whose other columns are empty. The file appears under its name on `close`.
    """

    def __init__(self, path, row_format, has_id, with_errors=False):
        if not path.lower().endswith((".csv", ".jsonl")):
            raise UsageError(f"{path}: output file must end in .csv or .jsonl")
        self.jsonl = path.lower().endswith(".jsonl")
        super().__init__(path, newline=None if self.jsonl else "")
        if isinstance(row_format, (list, tuple)):
            row_format = ClassLabels(row_format)
        self.format = row_format
        self.fields = (["id"] if has_id else []) + list(row_format.columns) + (
            ["error"] if with_errors else [])
        self._csv = None if self.jsonl else csv.DictWriter(self.file, fieldnames=self.fields)
        if self._csv:
            self._csv.writeheader()

    def write(self, item, values):
        row = {"id": item.id} if "id" in self.fields else {}
        if values is None:
            row.update({column: None for column in self.format.columns},
                       error=f"{item.source}: {item.reason}")
        else:
            row.update(self.format.row(values, self.jsonl))
            if "error" in self.fields:
                row["error"] = None
        if self.jsonl:
            self.file.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            self._csv.writerow({k: "" if v is None else v for k, v in row.items()})
        self.count += 1


def write_predictions(path, examples, probabilities, label_names):
    """Writes in-memory examples and their probabilities; returns the row count."""
    if len(examples) != len(probabilities):
        raise ValueError(f"{len(examples)} inputs but {len(probabilities)} predictions")
    writer = PredictionWriter(path, label_names, any(e.id is not None for e in examples))
    for example, probs in zip(examples, probabilities):
        writer.write(example, probs)
    return writer.close()


def predict_to_file(core, packer, source, path, row_format, batch_size, bad_rows="error",
                    strategy=None, transform=softmax):
    """Predicts every row of `source` into `path`; returns the number of rows written.

    `row_format`: `ClassLabels`, `Scores`, `LabelSets` (or a list of label names: classes),
    given each row's `transform` of the model's outputs. `bad_rows="error"` stops at the first
    bad row with its `DataError` (no file is left); `"skip"` writes it as a row with an
    `error` field.
    """
    writer = PredictionWriter(path, row_format, source.has_id, with_errors=bad_rows == "skip")
    rejected = 0
    with written(writer):
        for item, values in stream_predictions(core, packer, source, batch_size,
                                               strategy=strategy, transform=transform):
            if values is None:
                if bad_rows != "skip":
                    raise item.error()
                rejected += 1
            writer.write(item, values)
    print(account(writer.count, rejected, "row"))
    return writer.count


def account(rows, rejected, unit, mode="predict", done="predicted"):
    """The line a prediction (or explanation) run ends with: every input `unit` is an output
    row, a prediction or a rejected one (with its error)."""
    return (f"{mode}: {rows} input {unit}s = {rows - rejected} {done} + {rejected} rejected "
            f"(each rejected {unit} has an error in the output)")
