"""Where examples come from: shards of files read as streams, or a list already in memory.

A source is a list of shards, each read row by row in a fixed order, yielding an `Example` for a
good row and a `BadRow` (where, why, raw text) for a bad one. Nothing is held in memory but the
row being read, so training and prediction over any number of rows keep a flat memory profile.

    source = FileSource("tweets/part-*.csv", Columns(text="tweet", label="sentiment"))
    for item in source.read(0):  # the first shard
        ...
"""
import json

import tensorflow as tf

from zoo.base import fs
from zoo.base.errors import UsageError
from zoo.base.files import PartialFile
from zoo.data.text_files import (BadRow, Columns, DataError, check_file, example_from_row,
                                 iter_file)

TFRECORD_SUFFIXES = (".tfrecord", ".tfrecords", ".tfrec")


def expand_shards(pattern):
    """Sorted files matching a glob, or a comma-separated list of globs/files."""
    shards = []
    for part in filter(None, (p.strip() for p in pattern.split(","))):
        fs.check(part)
        matched = fs.glob(part)
        if not matched:
            raise DataError(f"{part}: no such file" if not fs.has_magic(part)
                            else f"{part}: no file matches this pattern")
        for path in matched:
            check_file(path)  # a folder matched, say
        shards += [m for m in matched if m not in shards]
    if not shards:
        raise DataError(f"{pattern!r}: no files given")
    return shards


def _tfrecord_rows(path, columns, require_label):
    """Rows of a TFRecord file of `tf.train.Example`s whose features are named like columns."""
    check_file(path)
    try:
        for number, record in enumerate(tf.data.TFRecordDataset(path).as_numpy_iterator(), 1):
            where = f"{path}:record {number}"
            try:
                features = tf.train.Example.FromString(record).features.feature
            except Exception:  # protobuf's DecodeError
                yield BadRow(where, "not a tf.train.Example", repr(record[:200]))
                continue
            row = {}
            for name, feature in features.items():
                kind = feature.WhichOneof("kind")
                values = list(getattr(feature, kind).value) if kind else []
                if len(values) == 1:
                    value = values[0]
                    row[name] = value.decode("utf-8", "replace") if isinstance(value, bytes) \
                        else value
            yield example_from_row(row, columns, where, require_label)
    except tf.errors.DataLossError as e:
        raise DataError(f"{path}: corrupt TFRecord file ({e.message})") from None


def read_file(path, columns: Columns, require_label=True):
    """An `Example` or a `BadRow` for every row of one CSV, TSV, JSONL or TFRecord file."""
    if path.lower().endswith(TFRECORD_SUFFIXES):
        return _tfrecord_rows(path, columns, require_label)
    return iter_file(path, columns, require_label)


class MissingSplit(UsageError):
    """No data was given for a split (no `eval_file`, say)."""

    split, keys = None, ()

    @classmethod
    def of(cls, split, keys):
        """No data for `split`: any of the data `keys` (flags, or keys of a tasks.json entry)
        would give it."""
        error = cls(f"no {split} data: pass " + " or ".join(f"`{k}`" for k in keys))
        error.split, error.keys = split, tuple(keys)
        return error


class FileSource:
    """Shards of CSV, TSV, JSONL or TFRecord files, read row by row.

    Args:
        pattern: a glob (`data/part-*.csv`) or comma-separated globs/files; shards are sorted.
        columns: `Columns` naming the text, text_b, label and id columns and the delimiter.
        require_label: whether a row without a label is bad (True for training and eval).
    """

    def __init__(self, pattern, columns: Columns, require_label=True):
        self.pattern = pattern
        self.columns = columns
        self.require_label = require_label
        self.shards = expand_shards(pattern)
        self.pair = columns.text_b is not None
        self.has_id = columns.id is not None

    def read(self, shard_index):
        return read_file(self.shards[shard_index], self.columns, self.require_label)

    def __repr__(self):
        return f"FileSource({self.pattern!r}, {len(self.shards)} shard(s))"


class ListSource:
    """Examples already in memory (e.g. a TFDS split) as a one-shard source."""

    def __init__(self, examples, name="examples"):
        self.examples = list(examples)
        self.shards = [name]
        self.pair = bool(self.examples) and self.examples[0].text_b is not None
        self.has_id = any(e.id is not None for e in self.examples)

    def read(self, shard_index):
        if shard_index != 0:
            raise IndexError(shard_index)
        return iter(self.examples)

    def __repr__(self):
        return f"ListSource({self.shards[0]!r}, {len(self.examples)} examples)"


def with_valid_labels(items, labels):
    """`items` with every row (an `Example`, a `zoo.data.conll.Sentence`) whose label `labels`
    finds a problem with (an unknown class or tag, a score out of range: `zoo.data.labels`)
    turned into a `BadRow` saying why."""
    for item in items:
        if not isinstance(item, BadRow) and item.label is not None:  # an Example, a Sentence
            reason = labels.problem(item.label)
            if reason:
                item = BadRow(item.source, reason, item.text_a, item.id)
        yield item


def iterate(source, shards=None):
    """Every item (`Example` or `BadRow`) of `source`, shard after shard in the given order."""
    for index in range(len(source.shards)) if shards is None else shards:
        yield from source.read(index)


class Pending:
    """Items read on tf.data's thread and kept, by input index, until the consumer is done with
    them (predictions are written in input order). An exception the reader hits is kept and
    raised again by the consumer (`raise_error`): raised inside a tf.data generator it would
    come back wrapped, or not at all."""

    def __init__(self):
        # Shared with the consumer without a lock: each access is one dict operation, atomic
        # in CPython.
        self.items = {}
        self.error = None
        self.total = None  # items read in all, once the reader is done

    def read(self, items):
        """Yields (index, item) of `items`, keeping each; an exception ends it and is kept."""
        index = 0
        try:
            for index, item in enumerate(items, 1):
                self.items[index - 1] = item
                yield index - 1, item
        except Exception as e:  # raised again by the consumer
            self.error = e
        self.total = index

    def raise_error(self):
        if self.error is not None:
            raise self.error


class RejectedRows(PartialFile):
    """Writes rejected rows as JSON lines (source, reason, raw) as they come; `count` of them.

    The file appears complete (atomically) when `close` is called; nothing is kept in memory.
    """

    def add(self, bad: BadRow):
        self.file.write(json.dumps(dict(source=bad.source, reason=bad.reason, raw=bad.raw),
                                   ensure_ascii=False) + "\n")
        self.count += 1
